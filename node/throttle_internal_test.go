package node

import "testing"

// TestThrottledReplicasConfig: the *.replication.throttled.replicas
// values Kafka takes, and which replicas they name.
func TestThrottledReplicasConfig(t *testing.T) {
	for _, ok := range []string{"", "*", "0:1", "0:1,0:2, 3:4"} {
		if err := checkThrottledReplicas(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"0", "a:1", "0:b", "0:1,", "-1:2", "0:1:2"} {
		if err := checkThrottledReplicas(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	for _, tc := range []struct {
		v       string
		p, self int32
		want    bool
	}{
		{"*", 7, 3, true}, {"", 0, 1, false}, {"0:1,1:2", 1, 2, true}, {"0:1,1:2", 1, 1, false}, {"10:1", 0, 1, false},
	} {
		if got := throttledHere(tc.v, tc.p, tc.self); got != tc.want {
			t.Errorf("throttledHere(%q, %d, %d) = %v", tc.v, tc.p, tc.self, got)
		}
	}
}
