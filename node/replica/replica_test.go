package replica

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-log/sluice/node/kafka"
	"github.com/sluice-log/sluice/partition"
	"github.com/sluice-log/sluice/quorum"
	"github.com/sluice-log/sluice/segment"
)

// testHost is a Host for replicas driven without a node: broker 1, epoch
// 1, no controller, no other brokers.
type testHost struct{}

func (testHost) BrokerEpoch() int64                { return 1 }
func (testHost) KafkaEndpoint(broker int32) string { return "" }
func (testHost) AlterPartitions(context.Context, *quorum.AlterPartitions) (*quorum.AlterPartitionsReply, error) {
	return nil, kerr.NotController
}
func (testHost) Poke()                    {}
func (testHost) Signal()                  {}
func (testHost) DiskError(err error) bool { return false }

// openTestReplica is a replica of broker 1 on a real log, driven without a
// running Manager (no fetcher or AlterPartition goroutines: they would only
// queue).
func openTestReplica(t testing.TB) *Replica {
	t.Helper()
	return openTestReplicaOn(t, 1, &quorum.Topic{Name: "t", ID: quorum.NewUUID()})
}

// openTestReplicaOn is openTestReplica for broker id on topic t.
func openTestReplicaOn(t testing.TB, id int32, topic *quorum.Topic) *Replica {
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
	m, err := NewManager(testHost{}, Options{NodeID: id, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	m.fetch.stopped = true
	m.clock = func() int64 { return 0 } // tests move it; nothing runs the clock loop
	r, err := newReplica(m, topic, 0, l, partition.Config{ID: id, LagTicks: 100}, 0)
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
		r.Become(&quorum.Partition{Replicas: []int32{1, 2}, ISR: tc.isr, Leader: tc.leader, LeaderEpoch: epoch},
			partition.Config{ID: 1, LagTicks: 100, MinInsyncReplicas: tc.minISR}, nil)
		res := r.Produce(ctx, kafka.ProducePartition{Topic: "t", Acks: tc.acks, Records: segment.BuildBatch(1, []byte("v"))})
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
	r.Become(&quorum.Partition{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 3},
		partition.Config{ID: 1, LagTicks: 100, MinInsyncReplicas: 2}, nil)
	res := r.Produce(context.Background(), kafka.ProducePartition{Topic: "t", Acks: -1, Records: segment.BuildBatch(1, []byte("a"), []byte("b"))})
	if res.Err != nil || res.Pending == nil || res.BaseOffset != 0 {
		t.Fatalf("produce: %+v", res)
	}
	consumer := func() int {
		f := r.Fetch(kafka.FetchPartition{Topic: "t", CurrentLeaderEpoch: -1, MaxBytes: 1 << 20, ReplicaID: -1})
		if f.Err != nil {
			t.Fatal(f.Err)
		}
		return len(f.Records)
	}
	if n := consumer(); n != 0 || r.HighWatermark() != 0 {
		t.Fatalf("before the follower fetched: consumer got %d bytes, HW %d", n, r.HighWatermark())
	}
	// The follower fetches from 0: it gets the batch, acknowledges nothing yet.
	f := r.Fetch(kafka.FetchPartition{Topic: "t", CurrentLeaderEpoch: 3, MaxBytes: 1 << 20, ReplicaID: 2, LastFetchedEpoch: -1})
	if f.Err != nil || len(f.Records) == 0 {
		t.Fatalf("follower fetch: %+v", f)
	}
	select {
	case err := <-res.Pending:
		t.Fatalf("acks=all answered (%v) before the follower had the records", err)
	default:
	}
	// A stale leader epoch is fenced.
	if f := r.Fetch(kafka.FetchPartition{Topic: "t", CurrentLeaderEpoch: 2, Offset: 2, MaxBytes: 1 << 20, ReplicaID: 2, LastFetchedEpoch: 3}); f.Err != kerr.FencedLeaderEpoch {
		t.Fatalf("fetch at a stale epoch: %v", f.Err)
	}
	// Its next fetch, from 2, acknowledges both records.
	if f := r.Fetch(kafka.FetchPartition{Topic: "t", CurrentLeaderEpoch: 3, Offset: 2, MaxBytes: 1 << 20, ReplicaID: 2, LastFetchedEpoch: 3}); f.Err != nil || f.HighWatermark != 2 {
		t.Fatalf("second follower fetch: %+v", f)
	}
	if err := <-res.Pending; err != nil {
		t.Fatalf("acks=all: %v", err)
	}
	if n := consumer(); n == 0 || r.HighWatermark() != 2 {
		t.Fatalf("after commit: consumer got %d bytes, HW %d", n, r.HighWatermark())
	}
	// A broker that is not a replica may not fetch.
	if f := r.Fetch(kafka.FetchPartition{Topic: "t", CurrentLeaderEpoch: 3, Offset: 0, MaxBytes: 1 << 20, ReplicaID: 9, LastFetchedEpoch: -1}); f.Err != kerr.NotLeaderForPartition {
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
	lead := func(r *Replica, epoch int32) {
		r.Become(&quorum.Partition{Replicas: []int32{1}, ISR: []int32{1}, Leader: 1, LeaderEpoch: epoch}, partition.Config{ID: 1, LagTicks: 100}, nil)
	}
	lead(r, 1)
	ctx := context.Background()
	for seq := int32(0); seq < 6; seq += 2 {
		if res := r.Produce(ctx, kafka.ProducePartition{Topic: "t", Acks: 1, Records: idemBatch(7, seq, []byte("a"), []byte("b"))}); res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	r2, err := newReplica(r.m, &quorum.Topic{Name: "t", ID: r.topicID}, 0, r.log, partition.Config{ID: 1, LagTicks: 100}, 6)
	if err != nil {
		t.Fatal(err)
	}
	lead(r2, 2)
	res := r2.Produce(ctx, kafka.ProducePartition{Topic: "t", Acks: 1, Records: idemBatch(7, 4, []byte("a"), []byte("b"))})
	if res.Err != nil || res.BaseOffset != 4 || r2.log.LogEndOffset() != 6 {
		t.Fatalf("retry of the last batch after reopening: %+v, log end %d; want its original offset 4 and nothing written", res, r2.log.LogEndOffset())
	}
	if res := r2.Produce(ctx, kafka.ProducePartition{Topic: "t", Acks: 1, Records: idemBatch(7, 8, []byte("c"))}); res.Err != kerr.OutOfOrderSequenceNumber {
		t.Fatalf("a sequence gap after reopening: %v", res.Err)
	}
}

// TestFencedLeaderIsReported: a leader whose ISR change the controller
// refuses as stale (a newer leader epoch exists) stops serving until the
// metadata catches up; the node logs it, counts it as not serving, and
// logs the recovery.
func TestFencedLeaderIsReported(t *testing.T) {
	r := openTestReplica(t)
	var now int64
	r.m.clock = func() int64 { return now }
	var logs strings.Builder
	r.m.log = slog.New(slog.NewTextHandler(&logs, nil))
	r.Become(&quorum.Partition{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 3},
		partition.Config{ID: 1, LagTicks: 1}, map[int32]int64{1: 1, 2: 1})
	// The silent follower lags past LagTicks: woken at its due tick, the
	// leader proposes an ISR shrink.
	r.mu.Lock()
	due := r.mu.due
	r.mu.Unlock()
	if due != 2 {
		t.Fatalf("a leader with a silent follower and LagTicks 1: due at tick %d, want 2", due)
	}
	now = due
	r.wake()
	r.mu.Lock()
	err := r.step(partition.AlterPartitionResult{Err: kerr.FencedLeaderEpoch})
	r.process()
	r.mu.Unlock()
	if err != nil || !r.NotServing() || !strings.Contains(logs.String(), "partition leader fenced") {
		t.Fatalf("after a refused ISR change: err %v, not serving %v, log %q", err, r.NotServing(), logs.String())
	}
	r.Become(&quorum.Partition{Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 4},
		partition.Config{ID: 1, LagTicks: 1}, map[int32]int64{1: 1, 2: 1})
	if r.NotServing() || !strings.Contains(logs.String(), "partition no longer fenced") {
		t.Fatalf("after new metadata: not serving %v, log %q", r.NotServing(), logs.String())
	}
}

// TestKafkaError: every error of the log maps to the Kafka error its
// table names, wrapped or not; an unknown one is KAFKA_STORAGE_ERROR
// and keeps its text.
func TestKafkaError(t *testing.T) {
	for _, e := range segmentErrors {
		if got := kafkaError(fmt.Errorf("append: %w", e.err)); got != e.kafka {
			t.Errorf("%v: got %v, want %v", e.err, got, e.kafka)
		}
	}
	got := kafkaError(errors.New("disk on fire"))
	if !errors.Is(got, kerr.KafkaStorageError) || !strings.Contains(got.Error(), "disk on fire") {
		t.Errorf("unknown error: got %v", got)
	}
}

// TestIdleFetchAllocatesNothing is issue 21's guard for the leader's
// idle poll, counted rather than timed: a follower's fetch at the log
// end (each idle partition of its session, every poll) and a consumer's
// at the high watermark read no segment and allocate at most what the
// state machine's step does, and answer the log's bounds.
func TestIdleFetchAllocatesNothing(t *testing.T) {
	r := openIdleLeader(t)
	follower := kafka.FetchPartition{Topic: "t", CurrentLeaderEpoch: 3, Offset: 1, MaxBytes: 1 << 20, ReplicaID: 2, LastFetchedEpoch: 3}
	if f := r.Fetch(follower); f.Err != nil || f.HighWatermark != 1 || f.LogStartOffset != 0 || f.LastStableOffset != 1 || f.File != nil || len(f.Records) != 0 {
		t.Fatalf("idle follower fetch: %+v", f)
	}
	consumer := kafka.FetchPartition{Topic: "t", CurrentLeaderEpoch: -1, Offset: 1, MaxBytes: 1 << 20, ReplicaID: -1}
	if f := r.Fetch(consumer); f.Err != nil || f.HighWatermark != 1 || f.File != nil || len(f.Records) != 0 {
		t.Fatalf("caught-up consumer fetch: %+v", f)
	}
	if n := testing.AllocsPerRun(200, func() { r.Fetch(follower) }); n > 1 {
		t.Errorf("an idle follower fetch allocates %v times, want at most 1 (the state machine's message)", n)
	}
	if n := testing.AllocsPerRun(200, func() { r.Fetch(consumer) }); n != 0 {
		t.Errorf("a caught-up consumer fetch allocates %v times, want none", n)
	}
	// Not idle: the follower behind gets the batch.
	follower.Offset = 0
	if f := r.Fetch(follower); f.Err != nil || len(f.Records) == 0 {
		t.Fatalf("follower fetch from 0: %+v", f)
	}
}

// openIdleLeader is a leader at epoch 3 with follower 2 in its ISR and
// one record.
func openIdleLeader(t testing.TB) *Replica {
	r := openTestReplica(t)
	r.Become(&quorum.Partition{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 3},
		partition.Config{ID: 1, LagTicks: 100, MinInsyncReplicas: 1}, nil)
	if res := r.Produce(context.Background(), kafka.ProducePartition{Topic: "t", Acks: 1, Records: segment.BuildBatch(1, []byte("a"))}); res.Err != nil {
		t.Fatal(res.Err)
	}
	return r
}

// BenchmarkIdleFollowerFetch is the leader's cost of one idle partition
// in a follower's poll: "bounds" is Fetch as it is (answered from
// segment.Log.Bounds), "read" the same fetch answered the way it was
// before, through a log read at the log end and separate lookups of the
// last stable and log start offsets. Report the ratio of the two, from
// one run.
func BenchmarkIdleFollowerFetch(b *testing.B) {
	r := openIdleLeader(b)
	follower := kafka.FetchPartition{Topic: "t", CurrentLeaderEpoch: 3, Offset: 1, MaxBytes: 1 << 20, ReplicaID: 2, LastFetchedEpoch: 3}
	b.Run("bounds", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			r.Fetch(follower)
		}
	})
	b.Run("read", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			r.mu.Lock()
			r.mu.nextID++
			id := r.mu.nextID
			_ = r.step(partition.FollowerFetch{ReqID: id, Replica: 2, BrokerEpoch: -1, FetchOffset: 1, LastFetchedEpoch: 3, CurrentLeaderEpoch: 3})
			r.process()
			a := r.mu.answers[id]
			delete(r.mu.answers, id)
			r.mu.Unlock()
			res := kafka.FetchResult{}
			res, _ = r.read(res, a.ReadFrom, 1<<20, math.MaxInt64, a.HW, r.LastStable(a.HW))
			_ = r.log.LogStartOffset()
		}
	})
}
