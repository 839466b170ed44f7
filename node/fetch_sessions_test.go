package node

import (
	"fmt"
	"strings"
	"testing"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestFetchSessionClients: consumers of three client libraries against
// one node, on a 3-partition topic written in three rounds. franz-go
// opens a fetch session (KIP-227) and reads each round through
// incremental fetches, whose answers carry the partitions with records
// (the node counts them); sarama and librdkafka (kcat) fetch without a
// session (epoch -1) and read the same records. Every client gets every
// value once, in offset order per partition.
func TestFetchSessionClients(t *testing.T) {
	tn := startNode(t, t.TempDir())
	ctx := testCtx(t)
	const topic, rounds, perRound = "sessions", 3, 90
	createTopic(ctx, t, newClient(t, tn), topic, 3)
	prod := newClient(t, tn, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	cons := newClient(t, tn, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	before := tn.srv.FetchSessionStats()
	got := map[string]bool{}
	for r := range rounds {
		for i := range perRound {
			if err := prod.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("r%d-%03d", r, i))).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		for len(got) < (r+1)*perRound {
			fs := cons.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				t.Fatal(err)
			}
			fs.EachRecord(func(rec *kgo.Record) {
				if got[string(rec.Value)] {
					t.Fatalf("franz-go read %q twice", rec.Value)
				}
				got[string(rec.Value)] = true
			})
		}
	}
	after := tn.srv.FetchSessionStats()
	if after.Sessions < 1 || after.IncrementalFetches == before.IncrementalFetches {
		t.Fatalf("franz-go consumed without an incremental fetch session: %+v", after)
	}
	if after.IncrementalPartitions == before.IncrementalPartitions {
		t.Fatalf("no incremental answer carried a partition, though rounds 2 and 3 came after the session opened: %+v", after)
	}
	const total = rounds * perRound

	// sarama: one partition consumer per partition, from the start.
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_0_0_0
	sc, err := sarama.NewConsumer([]string{tn.KafkaAddr()}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	seen := map[string]bool{}
	for p := range int32(3) {
		pc, err := sc.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			t.Fatal(err)
		}
		next := int64(0)
		for next < pc.HighWaterMarkOffset() || next == 0 {
			select {
			case m := <-pc.Messages():
				if m.Offset != next {
					t.Fatalf("sarama partition %d: offset %d, want %d", p, m.Offset, next)
				}
				next++
				seen[string(m.Value)] = true
			case err := <-pc.Errors():
				t.Fatal(err)
			case <-ctx.Done():
				t.Fatalf("sarama partition %d: at %d of %d: %v", p, next, pc.HighWaterMarkOffset(), ctx.Err())
			}
		}
		pc.Close()
	}
	if len(seen) != total {
		t.Fatalf("sarama read %d distinct values, want %d", len(seen), total)
	}

	// librdkafka (kcat): every partition to its end.
	out := kcat(ctx, t, kcatPath(t), nil, "-C", "-b", tn.KafkaAddr(), "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%p %o %s\n")
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	vals := map[string]bool{}
	last := map[string]int{}
	for _, l := range lines {
		var p, off int
		var v string
		if _, err := fmt.Sscanf(l, "%d %d %s", &p, &off, &v); err != nil {
			t.Fatalf("kcat line %q: %v", l, err)
		}
		k := fmt.Sprint(p)
		if prev, ok := last[k]; ok && off != prev+1 || !ok && off != 0 {
			t.Fatalf("kcat partition %d: offset %d after %v", p, off, prev)
		}
		last[k] = off
		vals[v] = true
	}
	if len(lines) != total || len(vals) != total {
		t.Fatalf("kcat read %d records, %d distinct, want %d", len(lines), len(vals), total)
	}
}
