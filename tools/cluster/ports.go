package cluster

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// FreeBasePort picks a base port (Options.BasePort) at random among first,
// first+10, …, first+10*(slots-1) whose derived ports for nodes nodes
// (each node's Kafka, controller, gossip and HTTP port, as the layout
// assigns them) are all free now. For tests that start clusters beside
// others: give each suite its own first and slots, and keep every derived
// port below the kernel's ephemeral range (32768+), where a port free now
// could become some connection's source port before a node restarts on it.
func FreeBasePort(first, slots, nodes int) (int, error) {
	for range 50 {
		base := first + rand.IntN(slots)*10
		if portsFree(base, nodes) {
			return base, nil
		}
	}
	return 0, fmt.Errorf("no base port in %d-%d with %d nodes' ports free", first, first+10*(slots-1), nodes)
}

func portsFree(base, nodes int) bool {
	for i := 1; i <= nodes; i++ {
		off := base - KafkaPort + PortStep*i
		for _, p := range []int{KafkaPort, ControllerPort, GossipPort, HTTPPort} {
			ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p+off))
			if err != nil {
				return false
			}
			_ = ln.Close()
		}
	}
	return true
}

// ephemeralWarning names the ports of l that lie in the kernel's
// ephemeral range (rangeFile: /proc/sys/net/ipv4/ip_local_port_range),
// with what to do; "" when none do or the range cannot be read. A node
// port in that range can be taken as the source port of some outgoing
// connection while the node is down, and then the node cannot restart on
// it ("address already in use": a 60-minute soak on base port 36092 lost
// node 1 for 110 s that way).
func ephemeralWarning(l Layout, rangeFile string) string {
	b, err := os.ReadFile(rangeFile)
	if err != nil {
		return ""
	}
	var lo, hi int
	if _, err := fmt.Sscan(string(b), &lo, &hi); err != nil || lo <= 0 || hi < lo {
		return ""
	}
	var in []string
	for _, n := range l.Nodes {
		for _, addr := range []string{n.Kafka, n.Controller, n.Gossip, n.HTTP} {
			_, ps, err := net.SplitHostPort(addr)
			if err != nil {
				continue
			}
			if p, err := strconv.Atoi(ps); err == nil && p >= lo && p <= hi {
				in = append(in, ps)
			}
		}
	}
	if len(in) == 0 {
		return ""
	}
	return fmt.Sprintf("warning: port(s) %s in the kernel's ephemeral range %d-%d: an outgoing connection may take one while its node is down, and the node then cannot restart; choose a base port (--base-port) below %d",
		strings.Join(in, ", "), lo, hi, lo-PortStep*len(l.Nodes)-HTTPPort+KafkaPort)
}
