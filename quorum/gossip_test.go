package quorum

import (
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
)

// fastGossip shortens memberlist's rounds for tests, but keeps probes slow
// enough that a loaded 2-core machine (other suites alongside) does not
// time them out and fence a live broker (25 ms probes did).
func fastGossip(mc *memberlist.Config) {
	mc.ProbeInterval = 200 * time.Millisecond
	mc.ProbeTimeout = 100 * time.Millisecond
	mc.GossipInterval = 20 * time.Millisecond
	mc.SuspicionMult = 2
	mc.SuspicionMaxTimeoutMult = 2
	mc.PushPullInterval = time.Second
	mc.TCPTimeout = time.Second
}

// TestGossipFencing: every controller node is also a broker with gossip; a
// broker that stops is fenced and leaves every ISR and leadership.
func TestGossipFencing(t *testing.T) {
	const session = 3 * time.Second
	nodes := startQuorum(t, 3, nil)
	leader := leaderOf(t, nodes)
	gs := map[int32]*Gossip{}
	for _, n := range nodes {
		g, err := StartGossip(GossipConfig{NodeID: n.id, BindAddr: "127.0.0.1", SessionTimeout: session, Tick: 50 * time.Millisecond, Tune: fastGossip}, n.c)
		if err != nil {
			t.Fatal(err)
		}
		gs[n.id] = g
		t.Cleanup(func() { g.Close() })
	}
	for _, n := range nodes[1:] {
		if _, err := gs[n.id].Join([]string{gs[nodes[0].id].Addr()}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range nodes {
		r := propose(t, n, &RegisterBroker{ID: n.id}).(*RegisterBrokerReply)
		if err := gs[n.id].SetBrokerEpoch(r.Epoch); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 30*time.Second, "every broker unfenced by the controller", func() bool {
		im := leader.c.Image()
		for _, n := range nodes {
			if b := im.Brokers[n.id]; b == nil || b.Fenced {
				return false
			}
		}
		return true
	})
	createTopics(t, leader, "g", 2)

	victim := followerOf(nodes, leader)
	start := time.Now()
	gs[victim.id].Close()
	victim.stop(t)
	waitFor(t, session+20*time.Second, "the stopped broker fenced and moved off", func() bool {
		im := leader.c.Image()
		if !im.Brokers[victim.id].Fenced {
			return false
		}
		for _, tp := range im.Topics {
			for _, p := range tp.Partitions {
				if p.Leader == victim.id || slices.Contains(p.ISR, victim.id) {
					return false
				}
			}
		}
		return true
	})
	t.Logf("broker %d fenced and its partitions moved %v after it stopped (session timeout %v)", victim.id, time.Since(start).Round(time.Millisecond), session)

	// The broker restarts: it registers again (new epoch, fenced), gossips
	// its new epoch, and the active controller unfences it.
	victim.start(t, nil, nil, nil)
	g, err := StartGossip(GossipConfig{NodeID: victim.id, BindAddr: "127.0.0.1", SessionTimeout: session, Tick: 50 * time.Millisecond, Tune: fastGossip}, victim.c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	if _, err := g.Join([]string{gs[leader.id].Addr()}); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	r := propose(t, victim, &RegisterBroker{ID: victim.id, CleanShutdown: true}).(*RegisterBrokerReply)
	if err := g.SetBrokerEpoch(r.Epoch); err != nil {
		t.Fatal(err)
	}
	waitFor(t, session+20*time.Second, "the restarted broker unfenced with its new epoch", func() bool {
		b := leader.c.Image().Brokers[victim.id]
		return b.Epoch == r.Epoch && !b.Fenced
	})
	t.Logf("restarted broker %d (new address) registered and unfenced in %v", victim.id, time.Since(start).Round(time.Millisecond))
}

// TestGossipJoinRetried: a node whose seed was not listening yet when it
// joined keeps trying, so it does not stay an island the active controller
// never hears from (three nodes started at once hit this).
func TestGossipJoinRetried(t *testing.T) {
	nodes := startQuorum(t, 1, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cfg := func(id int32, port int) GossipConfig {
		return GossipConfig{NodeID: id, BindAddr: "127.0.0.1", BindPort: port, SessionTimeout: time.Second, Tick: 50 * time.Millisecond, Tune: fastGossip}
	}
	early, err := StartGossip(cfg(1, 0), nodes[0].c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { early.Close() })
	if _, err := early.Join([]string{net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}); err == nil {
		t.Fatal("join of a seed that is not listening succeeded")
	}
	late, err := StartGossip(cfg(2, port), nodes[0].c) // joins no one itself
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { late.Close() })
	waitFor(t, 30*time.Second, "the early node joined the late one", func() bool {
		return early.ml.NumMembers() == 2 && late.ml.NumMembers() == 2
	})
}

// TestGossipOtherClusterNotMerged: gossip is labelled with the cluster id,
// so a node of another cluster (a wrong seed, a stale process on a reused
// port) cannot join the membership, where its name and epoch would stand
// for one of our brokers.
func TestGossipOtherClusterNotMerged(t *testing.T) {
	nodes := startQuorum(t, 1, nil)
	cfg := func(id int32, cluster string) GossipConfig {
		return GossipConfig{NodeID: id, ClusterID: cluster, BindAddr: "127.0.0.1", SessionTimeout: time.Second, Tick: 50 * time.Millisecond, Tune: fastGossip}
	}
	ours, err := StartGossip(cfg(1, "cluster-a"), nodes[0].c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ours.Close() })
	theirs, err := StartGossip(cfg(2, "cluster-b"), nodes[0].c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { theirs.Close() })
	if _, err := theirs.Join([]string{ours.Addr()}); err == nil {
		t.Fatal("a node of another cluster joined our gossip")
	}
	same, err := StartGossip(cfg(3, "cluster-a"), nodes[0].c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { same.Close() })
	if _, err := same.Join([]string{ours.Addr()}); err != nil {
		t.Fatalf("a node of the same cluster could not join: %v", err)
	}
	waitFor(t, 30*time.Second, "the same-cluster node is a member", func() bool { return ours.ml.NumMembers() == 2 })
	if n := ours.ml.NumMembers(); n != 2 {
		t.Fatalf("members = %d, want 2 (the other cluster's node kept out)", n)
	}
}
