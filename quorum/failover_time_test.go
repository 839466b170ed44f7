package quorum

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
)

// TestControllerFailoverTimes measures what the active controller's death
// costs under two sets of raft timeouts, alternating in one run so that
// both see the same machine: hashicorp/raft's defaults (the node's
// defaults: heartbeat 1 s, election 1 s, lease 500 ms) and lowered ones
// (controller.quorum.fetch.timeout.ms=300, election 400, lease 150).
// Each round stops the leader of a 3-voter quorum, times until another
// voter leads, and restarts it. A measurement, not a check: it runs only
// with SLUICE_CONTROLLER_FAILOVERS=N (rounds per setting) and prints
// p50/p99/max and the ratio to the default, then the elections each
// setting held in 15 s without faults (false failovers under load).
func TestControllerFailoverTimes(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("SLUICE_CONTROLLER_FAILOVERS"))
	if rounds <= 0 {
		t.Skip("set SLUICE_CONTROLLER_FAILOVERS=N to measure N controller failovers per raft setting")
	}
	type setting struct {
		name                       string
		heartbeat, election, lease time.Duration
	}
	settings := []setting{
		{"default 1000/1000/500ms", time.Second, time.Second, 500 * time.Millisecond},
		{"lowered 300/400/150ms", 300 * time.Millisecond, 400 * time.Millisecond, 150 * time.Millisecond},
	}
	clusters := make([][]*testNode, len(settings))
	for i, s := range settings {
		clusters[i] = startQuorum(t, 3, func(c *Config) {
			c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = s.heartbeat, s.election, s.lease
		})
		leaderOf(t, clusters[i])
	}
	took := make([][]time.Duration, len(settings))
	for range rounds {
		for i, s := range settings {
			nodes := clusters[i]
			old := leaderOf(t, nodes)
			start := time.Now()
			old.stop(t)
			deadline := start.Add(30 * time.Second)
			for {
				if slices.ContainsFunc(nodes, func(n *testNode) bool { return n != old && n.c != nil && n.c.IsLeader() }) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s: no new leader 30 s after stopping %d", s.name, old.id)
				}
				time.Sleep(2 * time.Millisecond) // lint:allow-sleep: polling for a measurement; the wait has a deadline
			}
			took[i] = append(took[i], time.Since(start))
			old.start(t, nil, nil, func(c *Config) {
				c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = s.heartbeat, s.election, s.lease
			})
		}
	}
	// Then no faults for a while: every term change now is an election
	// the machine's stalls caused (a false failover).
	terms := func(nodes []*testNode) uint64 {
		var m uint64
		for _, n := range nodes {
			m = max(m, n.c.RaftStats().Term)
		}
		return m
	}
	quiet := 15 * time.Second
	before := make([]uint64, len(settings))
	for i := range settings {
		leaderOf(t, clusters[i])
		before[i] = terms(clusters[i])
	}
	time.Sleep(quiet) // lint:allow-sleep: the quiet window is what is measured
	for i, s := range settings {
		fmt.Printf("controller failover, %-24s %d elections in %v without faults\n", s.name, terms(clusters[i])-before[i], quiet)
	}
	pct := func(d []time.Duration, p float64) time.Duration {
		s := slices.Clone(d)
		slices.Sort(s)
		return s[min(len(s)-1, int(p*float64(len(s))))]
	}
	base := pct(took[0], 0.5)
	for i, s := range settings {
		fmt.Printf("controller failover, %-24s rounds %d: p50 %v p99 %v max %v (p50 x%.2f of the default)\n",
			s.name, len(took[i]), pct(took[i], 0.5).Round(time.Millisecond), pct(took[i], 0.99).Round(time.Millisecond),
			slices.Max(took[i]).Round(time.Millisecond), float64(pct(took[i], 0.5))/float64(base))
	}
}
