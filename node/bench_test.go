package node

import (
	"context"
	"crypto/rand"
	"fmt"
	mrand "math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-log/sluice/segment"
)

var benchSizes = []int{100, 1024}

// BenchmarkProduce is the cost of the protocol layer: per record size,
// first the segment engine alone ("baseline": segmentAppend, no protocol,
// network or client), then one node, one partition (RF=1), a kgo producer
// with acks=1 and its default batching ("kafka": no linger; batches form
// while requests are in flight), in the same run. Values are random and
// compression is off: kgo compresses with snappy by default, which made
// zeroed values look like 2 GB/s. The kafka cells report records/s, MB/s
// of values, the p50/p99 time from Produce to its acknowledgement, and
// x-segment: their records/s over the baseline cell's just before (issue 4
// wants the protocol to cost well under half, i.e. x-segment above 0.5).
// Both write the same bytes to the same disk, so page-cache writeback by
// anything else on the machine moves either; make bench runs it three
// times and segment/benchtable.sh tables the best MB/s of each.
func BenchmarkProduce(b *testing.B) {
	tn := startNode(b, b.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for _, size := range benchSizes {
		var engine float64 // records/s of the baseline cell's last run
		b.Run(fmt.Sprintf("%dB/baseline", size), func(b *testing.B) { engine = segmentAppend(b, size) })
		topic := fmt.Sprintf("bench-%d", size)
		createTopic(ctx, b, newClient(b, tn), topic, 1)
		value := make([]byte, size)
		_, _ = rand.Read(value)
		b.Run(fmt.Sprintf("%dB/kafka", size), func(b *testing.B) {
			cl := newClient(b, tn, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
				kgo.ProducerBatchCompression(kgo.NoCompression()),
				kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			rate := produceAndReport(ctx, b, cl, value)
			if engine > 0 {
				b.ReportMetric(rate/engine, "x-segment")
			}
		})
	}
}

// BenchmarkProduceLatency: one record at a time (ProduceSync), acks=1:
// the round trip of one produce request with nothing queued behind it.
func BenchmarkProduceLatency(b *testing.B) {
	tn := startNode(b, b.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cl := newClient(b, tn, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
		kgo.DefaultProduceTopic("bench"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	createTopic(ctx, b, cl, "bench", 1)
	value := make([]byte, 100)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		t0 := time.Now()
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	elapsed := time.Since(start)
	b.StopTimer()
	reportLatency(b, lat, elapsed)
}

// reportLatency reports records/s (returned too) and the percentiles of lat.
func reportLatency(b *testing.B, lat []time.Duration, elapsed time.Duration) float64 {
	slices.Sort(lat)
	rate := float64(b.N) / elapsed.Seconds()
	b.ReportMetric(rate, "records/s")
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		b.ReportMetric(float64(lat[len(lat)*999/1000].Microseconds()), "p99.9-µs")
	}
	return rate
}

// BenchmarkSegmentAppend is the segment engine alone, as BenchmarkProduce
// measures it beside the protocol.
func BenchmarkSegmentAppend(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) { segmentAppend(b, size) })
	}
}

// segmentAppend is the baseline of BenchmarkProduce: the segment engine
// appending batches of 1000 records of size random bytes (about the size
// kgo's batches reach under load) to a log on disk, with no protocol,
// network or client. It reports and returns records/s.
func segmentAppend(b *testing.B, size int) float64 {
	const perBatch = 1000
	dir := b.TempDir()
	idx, err := segment.OpenIndex(vfs.Default, filepath.Join(dir, "index"), 8<<20)
	if err != nil {
		b.Fatal(err)
	}
	defer idx.Close()
	l, _, err := segment.Open(vfs.Default, filepath.Join(dir, "bench-0"), "bench-0", idx, segment.Options{RetentionBytes: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	vals := make([][]byte, perBatch)
	for i := range vals {
		vals[i] = make([]byte, size)
		_, _ = rand.Read(vals[i])
	}
	batch := segment.BuildBatch(1, vals...)
	buf := make([]byte, len(batch))
	b.SetBytes(int64(size))
	b.ResetTimer()
	start := time.Now()
	for n := 0; n < b.N; n += perBatch {
		copy(buf, batch)
		if _, err := l.Append(buf, 0); err != nil {
			b.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	b.StopTimer() // not the deferred Close (a checkpoint and fsync)
	rate := float64(b.N) / elapsed.Seconds()
	b.ReportMetric(rate, "records/s")
	return rate
}

// BenchmarkReplicatedProduce is the table the durability argument is about:
// three nodes on this machine (real disk, real TCP), RF=3,
// min.insync.replicas=2, kgo with its default batching, random values, no
// compression; per cell a topic with one partition:
//
//   - acks1: acks=1, page-cache durability (the baseline);
//   - all: acks=all, page-cache (replication is the durability);
//   - all-sync: acks=all, sluice.durability=sync (each replica counts only
//     what it fsynced; group commit);
//   - all-flush1: acks=all, flush.messages=1 (an fsync per batch appended,
//     Kafka's way to force fsync).
//
// Compare records/s across cells of the same run (`go test -run '^$'
// -bench ReplicatedProduce ./node/`); nothing prints their ratios for you:
// `make bench` runs BenchmarkProduce, not this one.
func BenchmarkReplicatedProduce(b *testing.B) {
	c := startReplClusterOn(b, 3, true)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	adm := kadm.NewClient(c.client())
	cells := []struct {
		name string
		acks kgo.Acks
		cfg  map[string]string
	}{
		{"acks1", kgo.LeaderAck(), nil},
		{"all", kgo.AllISRAcks(), nil},
		{"all-sync", kgo.AllISRAcks(), map[string]string{"sluice.durability": "sync"}},
		{"all-flush1", kgo.AllISRAcks(), map[string]string{"flush.messages": "1"}},
	}
	for _, size := range benchSizes {
		for _, cell := range cells {
			b.Run(fmt.Sprintf("%s/%dB", cell.name, size), func(b *testing.B) {
				topic := fmt.Sprintf("bench-%s-%d-%d", cell.name, size, b.N)
				cfg := map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}
				for k, v := range cell.cfg {
					cfg[k] = kadm.StringPtr(v)
				}
				if _, err := adm.CreateTopic(ctx, 1, 3, cfg, topic); err != nil {
					b.Fatal(err)
				}
				opts := []kgo.Opt{kgo.RequiredAcks(cell.acks), kgo.ProducerBatchCompression(kgo.NoCompression()),
					kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner())}
				if cell.acks != kgo.AllISRAcks() {
					// kgo's idempotent producer needs acks=all; without it
					// kgo keeps one request in flight unless told otherwise,
					// and the cells would not compare.
					opts = append(opts, kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(5))
				}
				cl := c.client(opts...)
				// Wait for the partition to take writes (leader elected,
				// metadata everywhere).
				if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("warm")}).FirstErr(); err != nil {
					b.Fatal(err)
				}
				value := make([]byte, size)
				_, _ = rand.Read(value)
				produceAndReport(ctx, b, cl, value)
				cl.Close()
			})
		}
	}
}

// produceAndReport produces b.N records of value as fast as cl takes them,
// reports records/s and the produce-to-acknowledgement percentiles, and
// returns records/s.
func produceAndReport(ctx context.Context, b *testing.B, cl *kgo.Client, value []byte) float64 {
	acks := newAckTimes(b.N)
	b.SetBytes(int64(len(value)))
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		cl.Produce(ctx, &kgo.Record{Value: value}, acks.promise())
	}
	lat, elapsed := acks.wait(ctx, b, cl, start)
	return reportLatency(b, lat, elapsed)
}

// ackTimes collects each produced record's time from Produce to its
// acknowledgement, and the first error.
type ackTimes struct {
	mu       sync.Mutex
	lat      []time.Duration
	firstErr error
}

func newAckTimes(n int) *ackTimes { return &ackTimes{lat: make([]time.Duration, 0, n)} }

// promise is the Produce callback of a record sent now.
func (a *ackTimes) promise() func(*kgo.Record, error) {
	sent := time.Now()
	return func(_ *kgo.Record, err error) {
		d := time.Since(sent)
		a.mu.Lock()
		a.lat = append(a.lat, d)
		if err != nil && a.firstErr == nil {
			a.firstErr = err
		}
		a.mu.Unlock()
	}
}

// wait flushes cl, stops b's timer and returns the latencies and the time
// since start; an error of any record fails b.
func (a *ackTimes) wait(ctx context.Context, b *testing.B, cl *kgo.Client, start time.Time) ([]time.Duration, time.Duration) {
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.firstErr != nil {
		b.Fatal(a.firstErr)
	}
	return a.lat, elapsed
}

// BenchmarkProduceValidation is the cost of the leader's record validation
// (segment/validate.go) as a producer sees it, per codec: kgo produces
// 1 KiB records of text (compressible about as much as real payloads),
// acks=1, to one partition of a node that validates and of a node that
// does not (Options.skipRecordCheck), in alternating rounds of
// validationRound records (and alternating which goes first) so that a
// change in the machine's load falls on both alike. b.N records go to each; it reports both rates and
// x-baseline, validated records/s over unvalidated. Issue 14's target is
// x-baseline ≥ 0.8.
func BenchmarkProduceValidation(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	nodes := [2]*testNode{ // [0] does not validate, [1] does
		startNodeWith(b, b.TempDir(), Options{skipRecordCheck: true}),
		startNodeWith(b, b.TempDir(), Options{}),
	}
	for _, tn := range nodes {
		createTopic(ctx, b, newClient(b, tn), "validation", 1)
	}
	values := textValues(64, 1024)
	for _, c := range []struct {
		name  string
		codec kgo.CompressionCodec
	}{{"none", kgo.NoCompression()}, {"gzip", kgo.GzipCompression()}, {"snappy", kgo.SnappyCompression()},
		{"lz4", kgo.Lz4Compression()}, {"zstd", kgo.ZstdCompression()}} {
		b.Run("codec="+c.name, func(b *testing.B) {
			var cls [2]*kgo.Client
			for i, tn := range nodes {
				cls[i] = newClient(b, tn, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
					kgo.MaxProduceRequestsInflightPerBroker(5), kgo.ProducerBatchCompression(c.codec),
					kgo.DefaultProduceTopic("validation"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			}
			var spent [2]time.Duration
			b.SetBytes(int64(2 * len(values[0])))
			b.ResetTimer()
			for round, done := 0, 0; done < b.N; round, done = round+1, done+validationRound {
				n := min(validationRound, b.N-done)
				for k := range cls {
					i := k ^ round&1 // who goes first alternates too
					spent[i] += produceN(ctx, b, cls[i], values, n)
				}
			}
			b.StopTimer()
			base, validated := float64(b.N)/spent[0].Seconds(), float64(b.N)/spent[1].Seconds()
			b.ReportMetric(base, "baseline-records/s")
			b.ReportMetric(validated, "validated-records/s")
			b.ReportMetric(validated/base, "x-baseline")
		})
	}
}

// validationRound is how many records BenchmarkProduceValidation sends to
// one node before it turns to the other.
const validationRound = 20_000

// produceN produces n records, the values in turn, as fast as cl takes
// them, and returns how long they took to be acknowledged.
func produceN(ctx context.Context, b *testing.B, cl *kgo.Client, values [][]byte, n int) time.Duration {
	var mu sync.Mutex
	var firstErr error
	start := time.Now()
	for i := range n {
		cl.Produce(ctx, &kgo.Record{Value: values[i%len(values)]}, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	d := time.Since(start)
	if firstErr != nil {
		b.Fatal(firstErr)
	}
	return d
}

// textValues are k values of n bytes each: JSON-like text with words and
// numbers drawn from a seeded generator, which gzip compresses about 3:1
// in a batch, as it does real event payloads (identical or periodic
// values would compress 50:1 and flatter every codec).
func textValues(k, n int) [][]byte {
	words := []string{"order", "paid", "eu-west", "user", "cart", "shipped", "refund", "sku", "status", "amount",
		"currency", "EUR", "created", "session", "device", "android", "country", "DE", "FR", "price"}
	rng := mrand.New(mrand.NewPCG(1, 2))
	out := make([][]byte, k)
	for i := range out {
		var v []byte
		for len(v) < n {
			v = append(v, '"')
			v = append(v, words[rng.IntN(len(words))]...)
			v = append(v, `":`...)
			v = strconv.AppendInt(v, rng.Int64N(1_000_000), 10)
			v = append(v, ',')
		}
		out[i] = v[:n]
	}
	return out
}

// BenchmarkCompactedProduce (issue 16): the produce-to-acknowledgement
// p99 of a compacted topic (1000 keys overwritten in turn, 100-byte
// values, paced at compactedRate records/s, acks=all idempotent, 256 KiB segments, min.cleanable.dirty.ratio 0.5: a Clean at
// about every segment roll) on a node whose cleaner is off, then on one
// whose cleaner runs (backoff 10ms), in the same run. The "on" cell
// reports cleans (how many ran during it) and x-off-p99, its p99 over
// the "off" cell's (issue 16 wants at most 1.2), and x-off-p99-all, the
// same over the latencies of all rounds so far; three rounds of the two,
// interleaved. Run with a fixed count,
// e.g. -benchtime=100000x (5 s a cell), so both cells write the same.
func BenchmarkCompactedProduce(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	const compactedRate = 20000
	var offP99 time.Duration
	all := map[string][]time.Duration{}
	// Off and on alternate, so that load from elsewhere on the machine
	// falls on both alike; each on cell compares with the off just before.
	cells := []struct{ name, cleaner string }{{"off", "false"}, {"on", "true"}}
	for i := range 3 * len(cells) {
		cell := cells[i%len(cells)]
		b.Run(fmt.Sprintf("round%d/cleaner-%s", i/len(cells)+1, cell.name), func(b *testing.B) {
			tn := startNode(b, b.TempDir(), "log.cleaner.enable="+cell.cleaner, "log.cleaner.backoff.ms=10")
			topic := "compacted"
			cfg := map[string]*string{"cleanup.policy": kadm.StringPtr("compact"), "segment.bytes": kadm.StringPtr("262144")}
			if _, err := kadm.NewClient(newClient(b, tn)).CreateTopic(ctx, 1, 1, cfg, topic); err != nil {
				b.Fatal(err)
			}
			cl := newClient(b, tn, kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(64<<10),
				kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte("warm"), Value: []byte("warm")}).FirstErr(); err != nil {
				b.Fatal(err)
			}
			value := make([]byte, 100)
			_, _ = rand.Read(value)
			keys := make([][]byte, 1000)
			for i := range keys {
				keys[i] = fmt.Appendf(nil, "key-%04d", i)
			}
			acks := newAckTimes(b.N)
			b.ResetTimer()
			start := time.Now()
			tick := time.NewTicker(time.Millisecond)
			defer tick.Stop()
			for i := 0; i < b.N; {
				<-tick.C
				// Paced at compactedRate: the latency is the service time,
				// not the time in the client's buffer.
				due := min(int(time.Since(start).Seconds()*compactedRate)+1, b.N)
				for ; i < due; i++ {
					cl.Produce(ctx, &kgo.Record{Key: keys[i%len(keys)], Value: value}, acks.promise())
				}
			}
			lat, elapsed := acks.wait(ctx, b, cl, start)
			reportLatency(b, lat, elapsed) // sorts lat
			p99 := lat[len(lat)*99/100]
			all[cell.name] = append(all[cell.name], lat...)
			if cell.name == "off" {
				offP99 = p99
				return
			}
			b.ReportMetric(float64(tn.cleaner.Stats(nil).Cleans), "cleans")
			if offP99 > 0 {
				b.ReportMetric(float64(p99)/float64(offP99), "x-off-p99")
			}
			// Over every round so far: one noisy second on the machine
			// moves a single round's p99, less so all of them.
			off, on := all["off"], all["on"]
			slices.Sort(off)
			slices.Sort(on)
			if len(off) > 0 {
				b.ReportMetric(float64(on[len(on)*99/100])/float64(off[len(off)*99/100]), "x-off-p99-all")
			}
		})
	}
}
