package node

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkTxnProduce: on 3 nodes, RF=3, acks=all, 1 KiB records,
// transactions of 100 records (begin, produce, flush, commit) against
// the same 100 records per flush from an idempotent producer in the same
// run (issue 18's target: ≥ 70%). Each op is one batch of 100; reports
// records/s and, for transactions, the p50/p99 of EndTransaction (which
// returns once PrepareCommit is written) and the markers' mean time from
// queueing to answer.
func BenchmarkTxnProduce(b *testing.B) {
	c := startReplCluster(b, 3, txnSettings...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	const topic, perTxn = "txn-bench", 100
	c.createTopic(ctx, topic, 3, nil)
	value := make([]byte, 1024)
	produce := func(b *testing.B, cl *kgo.Client) {
		for range perTxn {
			cl.Produce(ctx, &kgo.Record{Topic: topic, Value: value}, func(_ *kgo.Record, err error) {
				if err != nil {
					b.Error(err)
				}
			})
		}
		if err := cl.Flush(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("idempotent", func(b *testing.B) {
		cl := c.client(kgo.ProducerLinger(0))
		produce(b, cl) // metadata, producer id
		start := time.Now()
		for b.Loop() {
			produce(b, cl)
		}
		b.ReportMetric(float64(b.N*perTxn)/time.Since(start).Seconds(), "records/s")
	})
	b.Run("transactional", func(b *testing.B) {
		// kgo backs off 20 ms when a transaction begins before the last
		// one's markers completed (CONCURRENT_TRANSACTIONS, as with
		// Kafka's transaction.version 1); 2 ms keeps that wait near the
		// markers' own time.
		cl := c.client(kgo.ProducerLinger(0), kgo.TransactionalID("bench"), kgo.TransactionTimeout(time.Minute), kgo.ConcurrentTransactionsBackoff(2*time.Millisecond))
		one := func() time.Duration {
			if err := cl.BeginTransaction(); err != nil {
				b.Fatal(err)
			}
			produce(b, cl)
			t0 := time.Now()
			if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
				b.Fatal(err)
			}
			return time.Since(t0)
		}
		one() // the coordinator, producer id, state topic
		var commits []time.Duration
		start := time.Now()
		for b.Loop() {
			commits = append(commits, one())
		}
		b.ReportMetric(float64(b.N*perTxn)/time.Since(start).Seconds(), "records/s")
		slices.Sort(commits)
		b.ReportMetric(float64(commits[len(commits)/2].Microseconds()), "commit-p50-µs")
		b.ReportMetric(float64(commits[len(commits)*99/100].Microseconds()), "commit-p99-µs")
		var secs, markers float64
		for _, rn := range c.nodes {
			mfs := gatherNode(b, rn.Node)
			secs += seriesValue(mfs, "sluice_txn_marker_seconds_total", "")
			markers += seriesValue(mfs, "sluice_txn_markers_total", "")
		}
		if markers > 0 {
			b.ReportMetric(secs/markers*1e6, "marker-mean-µs")
		}
	})
}
