package node

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func newClient(t testing.TB, tn *testNode, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(tn.KafkaAddr())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestProduceConsume: an idempotent acks=all kgo producer writes a few
// thousand records to two partitions; a consumer by direct assignment reads
// them back with their exact offsets and values.
func TestProduceConsume(t *testing.T) {
	tn := startNode(t, t.TempDir())
	ctx := testCtx(t)
	adm := kadm.NewClient(newClient(t, tn))
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "events"); err != nil {
		t.Fatal(err)
	}

	const n = 3000
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Partition: int32(i % 2), Value: fmt.Appendf(nil, "value-%05d", i)})
	}
	// Manual partitioning keeps the expected offsets exact.
	prod := newClient(t, tn, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("events"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		if want := int64(i / 2); r.Offset != want {
			t.Fatalf("record %d: offset %d, want %d", i, r.Offset, want)
		}
		if r.ProducerID < 0 {
			t.Fatalf("record %d produced without a producer id: idempotence is off", i)
		}
	}

	cons := newClient(t, tn, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		"events": {0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart()},
	}))
	got := map[int32][]*kgo.Record{}
	for total := 0; total < n; {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			got[r.Partition] = append(got[r.Partition], r)
			total++
		})
	}
	for p := int32(0); p < 2; p++ {
		if len(got[p]) != n/2 {
			t.Fatalf("partition %d: %d records, want %d", p, len(got[p]), n/2)
		}
		for i, r := range got[p] {
			want := fmt.Sprintf("value-%05d", 2*i+int(p))
			if r.Offset != int64(i) || string(r.Value) != want {
				t.Fatalf("partition %d record %d: offset %d value %q, want %d %q", p, i, r.Offset, r.Value, i, want)
			}
			if r.ProducerID < 0 || r.ProducerEpoch != 0 {
				t.Fatalf("partition %d record %d: producer id %d epoch %d: idempotence is off", p, i, r.ProducerID, r.ProducerEpoch)
			}
		}
	}
}
