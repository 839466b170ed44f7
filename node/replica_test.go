package node

import (
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-log/sluice/node/kafka"
	"github.com/sluice-log/sluice/quorum"
	"github.com/sluice-log/sluice/segment"
)

func openTestReplica(t *testing.T) *replica {
	t.Helper()
	dir := t.TempDir()
	idx, err := segment.OpenIndex(vfs.Default, filepath.Join(dir, "index"), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idx.Close() })
	l, _, err := segment.Open(vfs.Default, filepath.Join(dir, "t-0"), "t-0", idx, segment.Options{RetentionBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return newReplica("t", quorum.NewUUID(), 0, l)
}

// TestReplicaAcks: acks=all is refused up front while the ISR is below
// min.insync.replicas, and while it names followers that do not replicate
// yet; acks=1 is served; a follower answers NOT_LEADER_OR_FOLLOWER.
func TestReplicaAcks(t *testing.T) {
	r := openTestReplica(t)
	produce := func(acks int16) error {
		return r.produce(kafka.ProducePartition{Topic: "t", Acks: acks, Records: segment.BuildBatch(1, []byte("v"))}).Err
	}
	for _, tc := range []struct {
		leader      int32
		isr         []int32
		minISR      int32
		acks        int16
		want        error
		leoAfterRun int64
	}{
		{leader: 2, isr: []int32{2}, minISR: 1, acks: 1, want: kerr.NotLeaderForPartition, leoAfterRun: 0},
		{leader: 1, isr: []int32{1}, minISR: 2, acks: -1, want: kerr.NotEnoughReplicas, leoAfterRun: 0},
		{leader: 1, isr: []int32{1, 2}, minISR: 1, acks: -1, want: kerr.NotEnoughReplicas, leoAfterRun: 0},
		{leader: 1, isr: []int32{1, 2}, minISR: 1, acks: 1, want: nil, leoAfterRun: 1},
		{leader: 1, isr: []int32{1}, minISR: 1, acks: -1, want: nil, leoAfterRun: 2},
	} {
		r.become(&quorum.Partition{Replicas: tc.isr, ISR: tc.isr, Leader: tc.leader, LeaderEpoch: 1}, 1, tc.minISR)
		if err := produce(tc.acks); err != tc.want {
			t.Fatalf("%+v: %v, want %v", tc, err, tc.want)
		}
		if leo := r.log.LogEndOffset(); leo != tc.leoAfterRun {
			t.Fatalf("%+v: log end %d, want %d", tc, leo, tc.leoAfterRun)
		}
	}
}
