package node

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/segment"
)

// produceRaw sends one Produce request for one partition to broker 1 and
// returns that partition's answer.
func produceRaw(ctx context.Context, t testing.TB, cl *kgo.Client, topic string, partition int32, acks int16, batch []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = acks, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl.Broker(1))
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0]
}

func fetchRaw(ctx context.Context, t testing.TB, cl *kgo.Client, topic string, partition int32, offset int64, epoch int32, maxWait, minBytes int32) (kmsg.FetchResponseTopicPartition, time.Duration) {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = maxWait, minBytes, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	// Fetch v13+ (what kgo picks) names the topic by ID.
	td, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	if err != nil || td.Error() != nil {
		t.Fatalf("topic id of %s: %v %v", topic, err, td.Error())
	}
	rt.Topic, rt.TopicID = topic, td[topic].ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.CurrentLeaderEpoch, rp.PartitionMaxBytes = partition, offset, epoch, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	start := time.Now()
	resp, err := req.RequestWith(ctx, cl.Broker(1))
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 0 {
		t.Fatalf("fetch: top-level error %d", resp.ErrorCode)
	}
	return resp.Topics[0].Partitions[0], time.Since(start)
}

// idempotent makes batch an idempotent producer's batch and fixes its CRC.
func idempotent(batch []byte, pid int64, epoch int16, seq int32) []byte {
	be := binary.BigEndian
	be.PutUint64(batch[43:], uint64(pid))
	be.PutUint16(batch[51:], uint16(epoch))
	be.PutUint32(batch[53:], uint32(seq))
	be.PutUint32(batch[17:], crc32.Checksum(batch[21:], crc32.MakeTable(crc32.Castagnoli)))
	return batch
}

func createTopic(ctx context.Context, t testing.TB, cl *kgo.Client, name string, partitions int32) {
	t.Helper()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, name); err != nil {
		t.Fatal(err)
	}
}

// TestProduceErrors: a bad CRC writes nothing (CORRUPT_MESSAGE); unknown
// partitions are refused per partition; acks=0 writes.
func TestProduceErrors(t *testing.T) {
	tn := startNode(t, t.TempDir())
	ctx := testCtx(t)
	cl := newClient(t, tn)
	createTopic(ctx, t, cl, "t", 1)

	bad := segment.BuildBatch(1, []byte("a"), []byte("b"))
	bad[len(bad)-1] ^= 0xff
	if pr := produceRaw(ctx, t, cl, "t", 0, 1, bad); pr.ErrorCode != kerr.CorruptMessage.Code {
		t.Fatalf("bad crc: %+v", pr)
	}
	if leo := tn.replica("t", 0).Log().LogEndOffset(); leo != 0 {
		t.Fatalf("log end after a corrupt batch: %d", leo)
	}
	if pr := produceRaw(ctx, t, cl, "t", 7, 1, segment.BuildBatch(1, []byte("a"))); pr.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown partition: %+v", pr)
	}
	if pr := produceRaw(ctx, t, cl, "t", 0, 1, segment.BuildBatch(1, []byte("a"), []byte("b"))); pr.ErrorCode != 0 || pr.BaseOffset != 0 {
		t.Fatalf("good batch: %+v", pr)
	}

	noack := newClient(t, tn, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite(), kgo.DefaultProduceTopic("t"))
	if err := noack.ProduceSync(ctx, &kgo.Record{Value: []byte("c")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// acks=0 has no answer: wait for the record to be readable.
	p, _ := fetchRaw(ctx, t, cl, "t", 0, 2, -1, 10_000, 1)
	if p.ErrorCode != 0 || p.HighWatermark != 3 {
		t.Fatalf("after acks=0: %+v", p)
	}
}

// TestIdempotentProduce: duplicates answer their first offsets without
// writing; a gap is OUT_OF_ORDER_SEQUENCE_NUMBER; an old epoch is fenced.
func TestIdempotentProduce(t *testing.T) {
	tn := startNode(t, t.TempDir())
	ctx := testCtx(t)
	cl := newClient(t, tn)
	createTopic(ctx, t, cl, "idem", 1)
	const pid = 42
	send := func(epoch int16, seq int32, n int) kmsg.ProduceResponseTopicPartition {
		vals := make([][]byte, n)
		for i := range vals {
			vals[i] = []byte{byte(seq), byte(i)}
		}
		return produceRaw(ctx, t, cl, "idem", 0, -1, idempotent(segment.BuildBatch(1, vals...), pid, epoch, seq))
	}
	steps := []struct {
		epoch    int16
		seq      int32
		n        int
		code     int16
		base     int64
		leoAfter int64
	}{
		{0, 0, 3, 0, 0, 3},
		{0, 3, 2, 0, 3, 5},
		{0, 0, 3, 0, 0, 5}, // duplicate of the first
		{0, 3, 2, 0, 3, 5}, // duplicate of the second
		{0, 9, 1, kerr.OutOfOrderSequenceNumber.Code, -1, 5},
		{0, 5, 1, 0, 5, 6},
		{1, 4, 1, kerr.OutOfOrderSequenceNumber.Code, -1, 6}, // new epoch must start at 0
		{1, 0, 1, 0, 6, 7},
		{0, 6, 1, kerr.InvalidProducerEpoch.Code, -1, 7},
	}
	for i, s := range steps {
		pr := send(s.epoch, s.seq, s.n)
		if pr.ErrorCode != s.code || (s.code == 0 && pr.BaseOffset != s.base) {
			t.Fatalf("step %d (epoch %d seq %d): code %d base %d, want %d %d", i, s.epoch, s.seq, pr.ErrorCode, pr.BaseOffset, s.code, s.base)
		}
		if leo := tn.replica("idem", 0).Log().LogEndOffset(); leo != s.leoAfter {
			t.Fatalf("step %d: log end %d, want %d", i, leo, s.leoAfter)
		}
	}
}

// TestFetch: long polling returns when a record arrives, not at max wait;
// leader epochs are checked; out-of-range offsets are refused; min bytes
// unmet returns at max wait with nothing.
func TestFetch(t *testing.T) {
	tn := startNode(t, t.TempDir())
	ctx := testCtx(t)
	cl := newClient(t, tn)
	createTopic(ctx, t, cl, "f", 1)

	type result struct {
		p       kmsg.FetchResponseTopicPartition
		elapsed time.Duration
	}
	done := make(chan result, 1)
	go func() {
		p, d := fetchRaw(ctx, t, cl, "f", 0, 0, -1, 30_000, 1)
		done <- result{p, d}
	}()
	if pr := produceRaw(ctx, t, cl, "f", 0, 1, segment.BuildBatch(5, []byte("hello"))); pr.ErrorCode != 0 {
		t.Fatalf("produce: %+v", pr)
	}
	r := <-done
	if r.p.ErrorCode != 0 || r.p.HighWatermark != 1 || len(r.p.RecordBatches) == 0 || r.elapsed >= 30*time.Second {
		t.Fatalf("long poll: %+v after %v", r.p, r.elapsed)
	}

	p, d := fetchRaw(ctx, t, cl, "f", 0, 1, -1, 50, 1)
	if p.ErrorCode != 0 || len(p.RecordBatches) != 0 || d < 50*time.Millisecond {
		t.Fatalf("empty long poll: %+v after %v", p, d)
	}
	epoch := tn.replica("f", 0).Epoch()
	if p, _ := fetchRaw(ctx, t, cl, "f", 0, 0, epoch+1, 0, 0); p.ErrorCode != kerr.UnknownLeaderEpoch.Code {
		t.Fatalf("future epoch: %+v", p)
	}
	if p, _ := fetchRaw(ctx, t, cl, "f", 0, 0, epoch, 0, 0); p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
		t.Fatalf("current epoch: %+v", p)
	}
	if p, _ := fetchRaw(ctx, t, cl, "f", 0, 5, -1, 0, 0); p.ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Fatalf("past the end: %+v", p)
	}

	oe := kmsg.NewPtrOffsetForLeaderEpochRequest()
	ot := kmsg.NewOffsetForLeaderEpochRequestTopic()
	ot.Topic = "f"
	op := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	op.Partition, op.CurrentLeaderEpoch, op.LeaderEpoch = 0, -1, epoch
	ot.Partitions = append(ot.Partitions, op)
	oe.Topics = append(oe.Topics, ot)
	oresp, err := oe.RequestWith(ctx, cl.Broker(1))
	if err != nil {
		t.Fatal(err)
	}
	if got := oresp.Topics[0].Partitions[0]; got.ErrorCode != 0 || got.LeaderEpoch != epoch || got.EndOffset != 1 {
		t.Fatalf("offset for leader epoch: %+v", got)
	}
}
