package node

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/sluice-log/sluice/node/kafka"
	"github.com/sluice-log/sluice/partition"
)

// TestIdleReplicasCostNothing is issue 21's guard for idle partitions,
// counted rather than timed: three nodes host 1,002 replicas of 334 RF=3
// partitions with no traffic. Once every leader has its full ISR and
// every follower fetches, the replicas' clock wakes none of them over a
// window of seconds (nothing is due: the followers' fetches keep moving
// each leader's lag deadline), and the partitions added no goroutines of
// their own (the fetchers and their connections are per broker).
// No segment file is opened in the window either (idle fetches read no
// log). make bench-scale measures the CPU this saves.
func TestIdleReplicasCostNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 1,002 logs")
	}
	const partitions = 334
	nodes := startCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	goroutines := runtime.NumGoroutine()
	cl := newClient(t, nodes[0])
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 3, nil, "idle"); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	for !scaleReady(nodes, partitions) {
		// Each node's Appended changes with every reconciliation, and
		// the metadata moves until every replica is open; the followers'
		// first fetches come within a long poll.
		select {
		case <-ctx.Done():
			t.Fatalf("%d partitions not ready: %v", partitions, ctx.Err())
		case <-(*broker)(nodes[0].Node).Appended():
		case <-time.After(100 * time.Millisecond):
		}
	}
	// A first window lets every follower's fetch settle into its long
	// poll; the second is measured.
	wait(ctx, time.Second)
	w0, o0 := scaleWakeups(nodes), segmentOpens(nodes)
	s0 := make([]kafka.FetchSessionStats, len(nodes))
	for i, tn := range nodes {
		s0[i] = tn.srv.FetchSessionStats()
	}
	wait(ctx, 3*time.Second)
	if w := scaleWakeups(nodes) - w0; w != 0 {
		t.Errorf("%d replicas with no traffic: %d wake-ups in 3 s, want none", 3*partitions, w)
	}
	// Nor do their followers' polls open a segment file: an idle fetch
	// is answered from the log's bounds, so idle files may stay closed
	// under sluice.log.max.open.files.
	if o := segmentOpens(nodes) - o0; o != 0 {
		t.Errorf("%d replicas with no traffic: %d segment files opened in 3 s, want none", 3*partitions, o)
	}
	// Fetch sessions (KIP-227): each leader holds one session per
	// follower broker with every partition it leads for it, and the
	// idle followers' incremental fetches carry nothing back.
	for i, tn := range nodes {
		st := tn.srv.FetchSessionStats()
		led := 0
		for _, r := range tn.rm.Replicas() {
			if r.Status().Role == partition.Leader {
				led++
			}
		}
		if st.Sessions != 2 || st.Partitions != 2*led {
			t.Errorf("node %d leads %d partitions; its fetch sessions: %+v, want 2 holding %d", tn.cfg.NodeID, led, st, 2*led)
		}
		if n := st.IncrementalFetches - s0[i].IncrementalFetches; n == 0 {
			t.Errorf("node %d answered no incremental fetch in 3 s", tn.cfg.NodeID)
		}
		if n := st.IncrementalPartitions - s0[i].IncrementalPartitions; n != 0 {
			t.Errorf("node %d: idle followers' incremental fetches carried %d partitions back in 3 s, want none", tn.cfg.NodeID, n)
		}
	}
	for _, tn := range nodes {
		if n := tn.rm.Len(); n != partitions {
			t.Fatalf("node %d hosts %d replicas, want %d", tn.cfg.NodeID, n, partitions)
		}
	}
	// Every wake-up that is due is one a leader's lag check needs if its
	// followers stop: the scheduler holds the leaders, not the followers.
	var scheduled int
	for _, tn := range nodes {
		scheduled += tn.rm.Scheduled()
	}
	if scheduled != partitions {
		t.Errorf("replicas the clock will wake: %d, want the %d leaders", scheduled, partitions)
	}
	if d := runtime.NumGoroutine() - goroutines; d > 100 {
		t.Errorf("%d partitions added %d goroutines: one per partition?", partitions, d)
	}
}

// segmentOpens sums the nodes' segment file opens (segment.Files).
func segmentOpens(nodes []*testNode) int64 {
	var n int64
	for _, tn := range nodes {
		n += tn.files.Stats().Opened
	}
	return n
}
