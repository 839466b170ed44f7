package soak

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sluice-log/sluice/tools/cluster"
)

// netFaults partitions the network between node processes that all listen
// on 127.0.0.1: each node runs in its own cgroup v2 group, and iptables
// rules in the OUTPUT chain (every loopback packet is locally generated)
// drop TCP and UDP packets that one node's group sends to another node's
// ports (`-m cgroup --path`). Only packets of the soak's own node
// processes to the soak's own ports match, so nothing else on the machine
// is touched; every rule is removed at heal and at exit.
//
// Two shapes: the leader cut off from its followers (Kafka and gossip
// ports both ways) but not from the metadata quorum (controller ports
// stay open), and the reverse: the leader cut off from the active
// controller (controller and gossip ports) but not from its followers.
type netFaults struct {
	l     cluster.Layout
	root  string // cgroup v2 mount
	group string // our group under root, e.g. sluice-soak-123
	chain string // our iptables chain, jumped to from OUTPUT for lo
	mu    sync.Mutex
	// dropped counts the packets the rules dropped, summed at each heal.
	dropped int64
}

// newNetFaults reports why network partitions are not possible here ("" if
// they are); it makes the cluster start each node in its own group.
func newNetFaults(want bool, copts *cluster.Options) (*netFaults, string) {
	if !want {
		return nil, "not asked for"
	}
	if os.Geteuid() != 0 {
		return nil, "not root (iptables and cgroups need root)"
	}
	if _, err := exec.LookPath("iptables"); err != nil {
		return nil, "iptables not found (apt-get install iptables)"
	}
	root, err := cgroup2Mount()
	if err != nil {
		return nil, err.Error()
	}
	group := fmt.Sprintf("sluice-soak-%d", os.Getpid())
	if err := os.MkdirAll(filepath.Join(root, group), 0o755); err != nil {
		return nil, fmt.Sprintf("cannot create a cgroup: %v", err)
	}
	n := &netFaults{root: root, group: group, chain: fmt.Sprintf("SLUICE-SOAK-%d", os.Getpid())}
	if err := iptables("-N", n.chain); err != nil {
		return nil, err.Error()
	}
	if err := iptables("-I", "OUTPUT", "-o", "lo", "-j", n.chain); err != nil {
		_ = iptables("-X", n.chain)
		return nil, err.Error()
	}
	// A probe rule shows the cgroup match works with this iptables.
	if err := iptables("-A", n.chain, "-p", "tcp", "--dport", "1", "-m", "cgroup", "--path", group, "-j", "DROP"); err != nil {
		n.close()
		return nil, "iptables cgroup match unavailable: " + err.Error()
	}
	_ = iptables("-F", n.chain)
	// And a process can be started inside a group of ours (containers may
	// refuse it), as every node will be.
	if err := probeCgroup(filepath.Join(root, group, "probe")); err != nil {
		n.close()
		return nil, "cannot start a process in a cgroup of ours: " + err.Error()
	}
	copts.NodeCgroup = func(nd cluster.Node) string {
		dir := filepath.Join(root, n.nodeGroup(nd.ID))
		_ = os.MkdirAll(dir, 0o755) // a failure shows when the node starts
		return dir
	}
	return n, ""
}

// probeCgroup starts /bin/true inside a new group dir (CLONE_INTO_CGROUP)
// and removes the group again.
func probeCgroup(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	defer os.Remove(dir)
	cg, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer cg.Close()
	exe, err := exec.LookPath("true")
	if err != nil {
		return err
	}
	cmd := exec.Command(exe)
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(cg.Fd())}
	return cmd.Run()
}

func iptables(args ...string) error {
	if out, err := exec.Command("iptables", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("iptables %s: %s", strings.Join(args, " "), strings.TrimSpace(string(out)))
	}
	return nil
}

func cgroup2Mount() (string, error) {
	f, err := os.Open("/proc/mounts")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fl := strings.Fields(sc.Text())
		if len(fl) >= 3 && fl[2] == "cgroup2" {
			return fl[1], nil
		}
	}
	return "", errors.New("no cgroup v2 hierarchy mounted")
}

func (n *netFaults) nodeGroup(id int32) string { return fmt.Sprintf("%s/node-%d", n.group, id) }

// A socket belongs to the cgroup its process was in when it opened it, so
// the nodes are started in their groups (cluster.Node.Cgroup,
// CLONE_INTO_CGROUP) rather than moved there later.

func (n *netFaults) node(id int32) (cluster.Node, bool) {
	for _, nd := range n.l.Nodes {
		if nd.ID == id {
			return nd, true
		}
	}
	return cluster.Node{}, false
}

func port(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

// cut drops what from's group sends to the given ports of to, and back.
func (n *netFaults) cut(a, b int32, ports func(cluster.Node) []string) error {
	for _, pair := range [][2]int32{{a, b}, {b, a}} {
		dst, ok := n.node(pair[1])
		if !ok {
			return fmt.Errorf("no node %d", pair[1])
		}
		for _, p := range ports(dst) {
			for _, proto := range []string{"tcp", "udp"} {
				if err := iptables("-A", n.chain, "-p", proto, "--dport", p, "-m", "cgroup", "--path", n.nodeGroup(pair[0]), "-j", "DROP"); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// isolate cuts leader off from others (data path and gossip, quorum kept)
// or, when fromController, from the active controller (quorum and gossip,
// data path kept), for hold; then heals. It returns the packets dropped.
func (n *netFaults) isolate(ctx context.Context, leader int32, others []int32, controller int32, fromController bool, hold time.Duration) (dropped int64, err error) {
	defer func() { dropped = n.healAll() }()
	if fromController {
		err = n.cut(leader, controller, func(nd cluster.Node) []string { return []string{port(nd.Controller), port(nd.Gossip)} })
	} else {
		for _, o := range others {
			if err = n.cut(leader, o, func(nd cluster.Node) []string { return []string{port(nd.Kafka), port(nd.Gossip)} }); err != nil {
				break
			}
		}
	}
	if err != nil {
		return 0, err
	}
	wait(ctx, hold)
	return 0, nil
}

// healAll deletes every rule of the chain and returns the packets they
// dropped.
func (n *netFaults) healAll() int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	var dropped int64
	if out, err := exec.Command("iptables", "-L", n.chain, "-v", "-n", "-x").Output(); err == nil {
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Fields(line)
			if len(f) > 2 && f[2] == "DROP" {
				if v, err := strconv.ParseInt(f[0], 10, 64); err == nil {
					dropped += v
				}
			}
		}
	}
	_ = iptables("-F", n.chain)
	n.dropped += dropped
	return dropped
}

// close heals, removes the chain and the cgroups (once the nodes are gone).
func (n *netFaults) close() {
	n.healAll()
	_ = iptables("-D", "OUTPUT", "-o", "lo", "-j", n.chain)
	_ = iptables("-X", n.chain)
	for _, nd := range n.l.Nodes {
		_ = os.Remove(filepath.Join(n.root, n.nodeGroup(nd.ID)))
	}
	_ = os.Remove(filepath.Join(n.root, n.group))
}
