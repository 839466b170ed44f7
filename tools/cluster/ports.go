package cluster

import (
	"fmt"
	"math/rand/v2"
	"net"
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
