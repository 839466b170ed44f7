package node

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"hash/crc32"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The batches of this test are encoded with franz-go's kmsg, not with
// segment's codec, so that the validator is checked against a second
// implementation of the format.

// kRecords encodes values as records with offset deltas 0..n-1.
func kRecords(values ...string) []byte {
	var out []byte
	for i, v := range values {
		r := kmsg.Record{OffsetDelta: int32(i), Value: []byte(v), Headers: []kmsg.Header{{Key: "h", Value: []byte{byte(i)}}}}
		r.Length = int32(len(r.AppendTo(nil)) - 1) // the length varint of 0 is one byte
		out = r.AppendTo(out)
	}
	return out
}

// kCompress compresses a records section with Kafka codec codec.
func kCompress(t testing.TB, codec int16, recs []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	switch codec {
	case 0:
		return recs
	case 1:
		w := gzip.NewWriter(&buf)
		_, _ = w.Write(recs)
		_ = w.Close()
	case 2:
		return s2.EncodeSnappy(nil, recs)
	case 3:
		w := lz4.NewWriter(&buf)
		_, _ = w.Write(recs)
		_ = w.Close()
	case 4:
		w, err := zstd.NewWriter(nil)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		return w.EncodeAll(recs, nil)
	}
	return buf.Bytes()
}

// kBatch frames a records section (already compressed if attrs say so)
// claiming count records, with a correct length and CRC-32C.
func kBatch(attrs int16, count int32, ts int64, body []byte) []byte {
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1, Magic: 2, Attributes: attrs, LastOffsetDelta: count - 1,
		FirstTimestamp: ts, MaxTimestamp: ts, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		NumRecords: count, Records: body,
	}
	b.Length = int32(len(b.AppendTo(nil)) - 12) // bytes after baseOffset and length
	enc := b.AppendTo(nil)
	// The CRC-32C covers everything from the attributes (byte 21) on.
	b.CRC = int32(crc32.Checksum(enc[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b.AppendTo(nil)
}

// TestProducePoisonBatches (issue 14 part 3): each batch a client could
// once write and no consumer could read past (or see) is refused through
// the Kafka protocol with Kafka's error code, on its partition only (a
// transactional batch without a transactional id: the whole request, as
// Kafka), and writes nothing; good batches of every codec, sent between them and in
// the same requests, are appended; then a kgo consumer reads every good
// record, in order, with no error.
func TestProducePoisonBatches(t *testing.T) {
	tn := startNode(t, t.TempDir())
	ctx := testCtx(t)
	cl := newClient(t, tn)
	createTopic(ctx, t, cl, "poison", 2)

	now := time.Now().UnixMilli()
	one := kRecords("x")
	garbage := []byte("this is not a compressed payload, not even close")
	poisons := []struct {
		name  string
		batch []byte
		want  *kerr.Error
	}{
		{"garbage-gzip", kBatch(1, 1, now, garbage), kerr.CorruptMessage},
		{"garbage-snappy", kBatch(2, 1, now, garbage), kerr.CorruptMessage},
		{"garbage-lz4", kBatch(3, 1, now, garbage), kerr.CorruptMessage},
		{"garbage-zstd", kBatch(4, 1, now, garbage), kerr.CorruptMessage},
		{"codec-5", kBatch(5, 1, now, one), kerr.UnsupportedCompressionType},
		{"bad-varints", kBatch(0, 1, now, bytes.Repeat([]byte{0xff}, 12)), kerr.InvalidRecord},
		{"count-million-one-record", kBatch(0, 1_000_000, now, one), kerr.InvalidRecord},
		{"count-two-one-record-lz4", kBatch(3, 2, now, kCompress(t, 3, one)), kerr.InvalidRecord},
		{"trailing-bytes", kBatch(0, 1, now, append(kRecords("x"), 0, 0)), kerr.InvalidRecord},
		{"control", kBatch(0x20, 1, now, one), kerr.InvalidRecord},
		{"transactional", kBatch(0x10, 1, now, one), kerr.TransactionalIDAuthorizationFailed},
		{"year-9999", kBatch(0, 1, 253402300799000, one), kerr.InvalidTimestamp},
		{"two-hours-ahead", kBatch(0, 1, now+2*3600*1000, one), kerr.InvalidTimestamp},
	}

	var want []string // good values, in offset order, of partition 0
	next := int64(0)
	good := func(codec int16, tag string) []byte {
		vals := []string{tag + "-a", tag + "-b", tag + "-c"}
		want = append(want, vals...)
		return kBatch(codec, 3, now, kCompress(t, codec, kRecords(vals...)))
	}
	for i, p := range poisons {
		// The poison batch alone: refused, nothing written.
		if pr := produceRaw(ctx, t, cl, "poison", 0, 1, p.batch); pr.ErrorCode != p.want.Code {
			t.Errorf("%s: error %s, want %s (%v)", p.name, kerr.ErrorForCode(pr.ErrorCode), p.want, pr.ErrorMessage)
		}
		if leo := tn.replica("poison", 0).Log().LogEndOffset(); leo != next {
			t.Fatalf("%s: log end %d, want %d", p.name, leo, next)
		}
		// A good batch (codec by turn) to partition 0 and the poison to
		// partition 1 in one request: only partition 1 fails.
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "poison"
		for part, b := range [][]byte{good(int16(i%5), fmt.Sprint(p.name)), p.batch} {
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition, rp.Records = int32(part), b
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl.Broker(1))
		if err != nil {
			t.Fatal(err)
		}
		ps := resp.Topics[0].Partitions
		// Transactional records without a transactional id refuse the
		// whole request, as Kafka does.
		if p.name == "transactional" {
			if ps[0].ErrorCode != p.want.Code || ps[1].ErrorCode != p.want.Code {
				t.Fatalf("%s: the request beside it was not refused whole: %+v", p.name, ps)
			}
			want = want[:len(want)-3]
			continue
		}
		if ps[0].ErrorCode != 0 || ps[0].BaseOffset != next {
			t.Fatalf("%s: the good batch beside it: %+v", p.name, ps[0])
		}
		next += 3
		if ps[1].ErrorCode != p.want.Code {
			t.Errorf("%s beside a good batch: error %s, want %s", p.name, kerr.ErrorForCode(ps[1].ErrorCode), p.want)
		}
	}
	if leo := tn.replica("poison", 1).Log().LogEndOffset(); leo != 0 {
		t.Fatalf("partition 1 took %d offsets of poison", leo)
	}

	cons := newClient(t, tn, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"poison": {0: kgo.NewOffset().AtStart()}}))
	var got []string
	for len(got) < len(want) {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of %d records: %v", len(got), len(want), err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("consume %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != int64(len(got)) {
				t.Fatalf("record at offset %d, want %d", r.Offset, len(got))
			}
			got = append(got, string(r.Value))
		})
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("consumed %v, want %v", got, want)
	}
}

// TestProduceTimestampBoundsPerTopic: the topic overrides of KIP-937's
// bounds (message.timestamp.before.max.ms / after.max.ms) replace the
// broker's.
func TestProduceTimestampBoundsPerTopic(t *testing.T) {
	tn := startNode(t, t.TempDir(), "log.message.timestamp.after.max.ms=1000")
	ctx := testCtx(t)
	cl := newClient(t, tn)
	before, after := "60000", "600000"
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, map[string]*string{
		"message.timestamp.before.max.ms": &before, "message.timestamp.after.max.ms": &after,
	}, "ts"); err != nil {
		t.Fatal(err)
	}
	createTopic(ctx, t, cl, "dflt", 1)
	now := time.Now().UnixMilli()
	for _, c := range []struct {
		topic string
		ts    int64
		want  int16
	}{
		{"ts", now - 120_000, kerr.InvalidTimestamp.Code}, // 2 min old, 1 min allowed
		{"ts", now - 10_000, 0},
		{"ts", now + 120_000, 0},                            // 2 min ahead, 10 min allowed
		{"dflt", now + 120_000, kerr.InvalidTimestamp.Code}, // the broker's 1 s
		{"dflt", now - 86_400_000, 0},                       // unbounded before
	} {
		if pr := produceRaw(ctx, t, cl, c.topic, 0, 1, kBatch(0, 1, c.ts, kRecords("v"))); pr.ErrorCode != c.want {
			t.Errorf("%s at now%+d ms: error %s, want %s", c.topic, c.ts-now, kerr.ErrorForCode(pr.ErrorCode), kerr.ErrorForCode(c.want))
		}
	}
}
