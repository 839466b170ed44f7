package config

import (
	"errors"
	"testing"
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
	for _, bad := range []string{"2", "-1", "yes"} {
		if _, err := load(t, minimal+"eligible.leader.replicas.version="+bad+"\n", nil); !errors.Is(err, ErrInvalid) {
			t.Errorf("eligible.leader.replicas.version=%s: %v, want ErrInvalid", bad, err)
		}
	}
}
