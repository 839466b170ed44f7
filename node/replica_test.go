package node

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-log/sluice/node/config"
	"github.com/sluice-log/sluice/node/kafka"
	"github.com/sluice-log/sluice/partition"
	"github.com/sluice-log/sluice/quorum"
	"github.com/sluice-log/sluice/segment"
)

// openTestReplica is a replica of broker 1 on a real log, driven without a
// running node (no fetcher or AlterPartition goroutines: they would only
// queue).
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
	n := &Node{cfg: &config.Config{NodeID: 1}, log: slog.New(slog.DiscardHandler), ctx: context.Background()}
	n.fetch.fetchers, n.fetch.stopped = map[int32]*fetcher{}, true
	n.sig.appended = make(chan struct{})
	n.alterer = newAlterer(n)
	r, err := newReplica(n, &quorum.Topic{Name: "t", ID: quorum.NewUUID()}, 0, l, partition.Config{ID: 1, LagTicks: 100}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestReplicaAcks: acks=all is refused up front while the ISR is below
// min.insync.replicas; acks=1 is served at once; a follower answers
// NOT_LEADER_OR_FOLLOWER and appends nothing.
func TestReplicaAcks(t *testing.T) {
	r := openTestReplica(t)
	ctx := context.Background()
	var epoch int32
	for _, tc := range []struct {
		leader      int32
		isr         []int32
		minISR      int
		acks        int16
		want        error
		leoAfterRun int64
	}{
		{leader: 2, isr: []int32{2}, minISR: 1, acks: 1, want: kerr.NotLeaderForPartition, leoAfterRun: 0},
		{leader: 1, isr: []int32{1}, minISR: 2, acks: -1, want: kerr.NotEnoughReplicas, leoAfterRun: 0},
		{leader: 1, isr: []int32{1, 2}, minISR: 1, acks: 1, want: nil, leoAfterRun: 1},
		{leader: 1, isr: []int32{1}, minISR: 1, acks: -1, want: nil, leoAfterRun: 2},
	} {
		epoch++
		r.become(&quorum.Partition{Replicas: []int32{1, 2}, ISR: tc.isr, Leader: tc.leader, LeaderEpoch: epoch},
			partition.Config{ID: 1, LagTicks: 100, MinInsyncReplicas: tc.minISR}, nil)
		res := r.produce(ctx, kafka.ProducePartition{Topic: "t", Acks: tc.acks, Records: segment.BuildBatch(1, []byte("v"))})
		err := res.Err
		if err == nil && res.Pending != nil {
			err = <-res.Pending
		}
		if err != tc.want {
			t.Fatalf("%+v: %v, want %v", tc, err, tc.want)
		}
		if leo := r.log.LogEndOffset(); leo != tc.leoAfterRun {
			t.Fatalf("%+v: log end %d, want %d", tc, leo, tc.leoAfterRun)
		}
	}
}

// TestReplicaAcksAllWaitsForFollower: an acks=all append with a follower
// in the ISR completes only when that follower's next fetch acknowledges
// it, and consumers see the records only then.
func TestReplicaAcksAllWaitsForFollower(t *testing.T) {
	r := openTestReplica(t)
	r.become(&quorum.Partition{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 3},
		partition.Config{ID: 1, LagTicks: 100, MinInsyncReplicas: 2}, nil)
	res := r.produce(context.Background(), kafka.ProducePartition{Topic: "t", Acks: -1, Records: segment.BuildBatch(1, []byte("a"), []byte("b"))})
	if res.Err != nil || res.Pending == nil || res.BaseOffset != 0 {
		t.Fatalf("produce: %+v", res)
	}
	consumer := func() int {
		f := r.fetch(kafka.FetchPartition{Topic: "t", CurrentLeaderEpoch: -1, MaxBytes: 1 << 20, ReplicaID: -1})
		if f.Err != nil {
			t.Fatal(f.Err)
		}
		return len(f.Records)
	}
	if n := consumer(); n != 0 || r.highWatermark() != 0 {
		t.Fatalf("before the follower fetched: consumer got %d bytes, HW %d", n, r.highWatermark())
	}
	// The follower fetches from 0: it gets the batch, acknowledges nothing yet.
	f := r.fetch(kafka.FetchPartition{Topic: "t", CurrentLeaderEpoch: 3, MaxBytes: 1 << 20, ReplicaID: 2, LastFetchedEpoch: -1})
	if f.Err != nil || len(f.Records) == 0 {
		t.Fatalf("follower fetch: %+v", f)
	}
	select {
	case err := <-res.Pending:
		t.Fatalf("acks=all answered (%v) before the follower had the records", err)
	default:
	}
	// A stale leader epoch is fenced.
	if f := r.fetch(kafka.FetchPartition{Topic: "t", CurrentLeaderEpoch: 2, Offset: 2, MaxBytes: 1 << 20, ReplicaID: 2, LastFetchedEpoch: 3}); f.Err != kerr.FencedLeaderEpoch {
		t.Fatalf("fetch at a stale epoch: %v", f.Err)
	}
	// Its next fetch, from 2, acknowledges both records.
	if f := r.fetch(kafka.FetchPartition{Topic: "t", CurrentLeaderEpoch: 3, Offset: 2, MaxBytes: 1 << 20, ReplicaID: 2, LastFetchedEpoch: 3}); f.Err != nil || f.HighWatermark != 2 {
		t.Fatalf("second follower fetch: %+v", f)
	}
	if err := <-res.Pending; err != nil {
		t.Fatalf("acks=all: %v", err)
	}
	if n := consumer(); n == 0 || r.highWatermark() != 2 {
		t.Fatalf("after commit: consumer got %d bytes, HW %d", n, r.highWatermark())
	}
	// A broker that is not a replica may not fetch.
	if f := r.fetch(kafka.FetchPartition{Topic: "t", CurrentLeaderEpoch: 3, Offset: 0, MaxBytes: 1 << 20, ReplicaID: 9, LastFetchedEpoch: -1}); f.Err != kerr.NotLeaderForPartition {
		t.Fatalf("fetch by a non-replica: %v", f.Err)
	}
}

// idemBatch is a batch of an idempotent producer.
func idemBatch(pid int64, seq int32, values ...[]byte) []byte {
	b := segment.BuildBatch(1, values...)
	be := binary.BigEndian
	be.PutUint64(b[43:], uint64(pid))
	be.PutUint16(b[51:], 0)
	be.PutUint32(b[53:], uint32(seq))
	be.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// TestProducerStateRebuiltFromLog: a replica opened on a log that already
// holds an idempotent producer's batches (a restart) recognises a retry of
// the last one as a duplicate and answers its original offset.
func TestProducerStateRebuiltFromLog(t *testing.T) {
	r := openTestReplica(t)
	lead := func(r *replica, epoch int32) {
		r.become(&quorum.Partition{Replicas: []int32{1}, ISR: []int32{1}, Leader: 1, LeaderEpoch: epoch}, partition.Config{ID: 1, LagTicks: 100}, nil)
	}
	lead(r, 1)
	ctx := context.Background()
	for seq := int32(0); seq < 6; seq += 2 {
		if res := r.produce(ctx, kafka.ProducePartition{Topic: "t", Acks: 1, Records: idemBatch(7, seq, []byte("a"), []byte("b"))}); res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	r2, err := newReplica(r.n, &quorum.Topic{Name: "t", ID: r.topicID}, 0, r.log, partition.Config{ID: 1, LagTicks: 100}, 6)
	if err != nil {
		t.Fatal(err)
	}
	lead(r2, 2)
	res := r2.produce(ctx, kafka.ProducePartition{Topic: "t", Acks: 1, Records: idemBatch(7, 4, []byte("a"), []byte("b"))})
	if res.Err != nil || res.BaseOffset != 4 || r2.log.LogEndOffset() != 6 {
		t.Fatalf("retry of the last batch after reopening: %+v, log end %d; want its original offset 4 and nothing written", res, r2.log.LogEndOffset())
	}
	if res := r2.produce(ctx, kafka.ProducePartition{Topic: "t", Acks: 1, Records: idemBatch(7, 8, []byte("c"))}); res.Err != kerr.OutOfOrderSequenceNumber {
		t.Fatalf("a sequence gap after reopening: %v", res.Err)
	}
}
