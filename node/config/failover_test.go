package config

import (
	"errors"
	"testing"
	"time"
)

// TestFailoverKeys: eligible.leader.replicas.version defaults to 1 (on,
// as Kafka 4.1 has it on new clusters), takes 0, and refuses what this
// build does not know.
func TestFailoverKeys(t *testing.T) {
	c, err := load(t, minimal, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Failover.ELRVersion != 1 {
		t.Errorf("default eligible.leader.replicas.version %d, want 1", c.Failover.ELRVersion)
	}
	if c, err = load(t, minimal+"eligible.leader.replicas.version=0\n", nil); err != nil || c.Failover.ELRVersion != 0 {
		t.Errorf("eligible.leader.replicas.version=0: %v, %+v", err, c.Failover)
	}
	if c.Failover.RaftHeartbeatTimeout != time.Second || c.Failover.RaftElectionTimeout != time.Second || c.Failover.RaftLeaderLease() != 500*time.Millisecond {
		t.Errorf("raft timeouts %+v, lease %v: want hashicorp/raft's 1s, 1s, 500ms", c.Failover, c.Failover.RaftLeaderLease())
	}
	c, err = load(t, minimal+"controller.quorum.fetch.timeout.ms=300\ncontroller.quorum.election.timeout.ms=400\n", nil)
	if err != nil || c.Failover.RaftHeartbeatTimeout != 300*time.Millisecond || c.Failover.RaftElectionTimeout != 400*time.Millisecond || c.Failover.RaftLeaderLease() != 150*time.Millisecond {
		t.Errorf("lowered raft timeouts: %v %+v", err, c.Failover)
	}
	for _, bad := range []string{"controller.quorum.fetch.timeout.ms=10", "controller.quorum.fetch.timeout.ms=500\ncontroller.quorum.election.timeout.ms=300"} {
		if _, err := load(t, minimal+bad+"\n", nil); !errors.Is(err, ErrInvalid) {
			t.Errorf("%q: %v, want ErrInvalid", bad, err)
		}
	}
	for _, bad := range []string{"2", "-1", "yes"} {
		if _, err := load(t, minimal+"eligible.leader.replicas.version="+bad+"\n", nil); !errors.Is(err, ErrInvalid) {
			t.Errorf("eligible.leader.replicas.version=%s: %v, want ErrInvalid", bad, err)
		}
	}
}
