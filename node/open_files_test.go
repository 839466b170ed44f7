//go:build linux

package node

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestOpenFilesBudget is issue 21's descriptor guard: one node hosts
// 2,000 partitions under sluice.log.max.open.files=256. Every partition
// is produced to by franz-go and sarama (one record each per partition)
// and read back by franz-go and librdkafka (kcat), while a sampler counts the
// process's descriptors (/proc/self/fd): they stay within the node's
// count before the topic plus the budget and a margin for connections
// and Pebble, where a descriptor per replica would pass it by 1,700.
// The node's own count (kafka_log_logmanager_opensegmentfiles) stays
// within the budget, and files were closed and reopened to get there.
func TestOpenFilesBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 2,000 logs")
	}
	const partitions, budget, margin = 2000, 256, 64
	tn := startNode(t, fastDir(t), fmt.Sprintf("sluice.log.max.open.files=%d", budget))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl := newClient(t, tn, kgo.DefaultProduceTopic("many"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(time.Millisecond))
	base := countFDs(t)
	start := time.Now()
	createTopic(ctx, t, cl, "many", partitions)
	t.Logf("%d partitions created in %v", partitions, time.Since(start))

	var peak atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // samples while the clients work: a measurement, not a synchronisation
		defer wg.Done()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			if n := int64(countFDs(t)); n > peak.Load() {
				peak.Store(n)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()

	// franz-go: one record per partition, all in flight together.
	recs := make([]*kgo.Record, partitions)
	for p := range recs {
		recs[p] = &kgo.Record{Partition: int32(p), Value: []byte(fmt.Sprintf("kgo-%d", p))}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// sarama: one more per partition, in one SendMessages.
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_0_0_0
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	sp, err := sarama.NewSyncProducer([]string{tn.KafkaAddr()}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	msgs := make([]*sarama.ProducerMessage, partitions)
	for p := range msgs {
		msgs[p] = &sarama.ProducerMessage{Topic: "many", Partition: int32(p), Value: sarama.StringEncoder(fmt.Sprintf("sarama-%d", p))}
	}
	if err := sp.SendMessages(msgs); err != nil {
		t.Fatal(err)
	}
	_ = sp.Close()
	want := func(p int32, off int64) string {
		return [2]string{fmt.Sprintf("kgo-%d", p), fmt.Sprintf("sarama-%d", p)}[off]
	}

	// franz-go reads every partition from the start.
	offsets := map[string]map[int32]kgo.Offset{"many": {}}
	for p := range int32(partitions) {
		offsets["many"][p] = kgo.NewOffset().AtStart()
	}
	cons := newClient(t, tn, kgo.ConsumePartitions(offsets), kgo.FetchMaxPartitionBytes(1<<10))
	got := 0
	for got < 2*partitions {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("franz-go after %d records: %v", got, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if w := want(r.Partition, r.Offset); string(r.Value) != w {
				t.Fatalf("franz-go partition %d offset %d: %q, want %q", r.Partition, r.Offset, r.Value, w)
			}
			got++
		})
	}
	cons.Close()

	t.Logf("franz-go produced and read back %d records", got)

	// librdkafka (kcat) reads them too, every partition to its end.
	out := kcat(ctx, t, kcatPath(t), nil, "-C", "-b", tn.KafkaAddr(), "-t", "many", "-o", "beginning", "-e", "-q",
		"-f", "%p %o %s\n")
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2*partitions {
		t.Fatalf("kcat read %d records, want %d", len(lines), 2*partitions)
	}
	seen := map[string]bool{}
	for _, ln := range lines {
		var p int32
		var off int64
		var v string
		if _, err := fmt.Sscanf(ln, "%d %d %s", &p, &off, &v); err != nil || v != want(p, off) || seen[ln] {
			t.Fatalf("kcat read %q (%v), want each partition's own two values once", ln, err)
		}
		seen[ln] = true
	}

	if max := peak.Load(); max > int64(base+budget+margin) {
		t.Errorf("descriptors peaked at %d: %d before the topic + budget %d + margin %d", max, base, budget, margin)
	}
	st := (*metricsSource)(tn.Node).Broker().SegmentFiles
	if st.Max != budget || st.Open > budget || st.Evicted == 0 || st.Opened < partitions {
		t.Errorf("segment files: %+v; want at most %d open, files closed by the budget and reopened", st, budget)
	}
	t.Logf("descriptors: %d before the topic, peak %d; segment files %+v", base, peak.Load(), st)
}

// countFDs counts the process's open descriptors.
func countFDs(t testing.TB) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// fastDir is a data directory on tmpfs when the machine has one (fsyncs
// cost nothing there, and a test opening thousands of logs fsyncs for
// each), else the test's temporary directory.
func fastDir(t *testing.T) string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if dir, err := os.MkdirTemp("/dev/shm", "sluice-test-"); err == nil {
			t.Cleanup(func() { _ = os.RemoveAll(dir) })
			return dir
		}
	}
	return t.TempDir()
}
