package node

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkOffsetCommit: on 3 nodes, RF=3, the latency of one
// OffsetCommit (a standalone commit of one partition, acks=all to
// __consumer_offsets) at a time, beside its baseline in the same run: one
// acks=all ProduceSync of a small record to an RF=3 topic, the write an
// OffsetCommit is made of. Reports p50/p99 in µs.
func BenchmarkOffsetCommit(b *testing.B) {
	c := startReplCluster(b, 3, groupSettings...)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c.createTopic(ctx, "commits", 1, nil)
	report := func(b *testing.B, lat []time.Duration) {
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	}
	b.Run("produce-acks-all", func(b *testing.B) {
		cl := c.client(kgo.DefaultProduceTopic("commits"), kgo.RequiredAcks(kgo.AllISRAcks()))
		lat := make([]time.Duration, 0, b.N)
		for i := 0; b.Loop(); i++ {
			start := time.Now()
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "%d", i)}).FirstErr(); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
		}
		report(b, lat)
	})
	b.Run("offset-commit", func(b *testing.B) {
		cl := c.client(kgo.MaxVersions(offsetsByName())) // commits by topic name
		adm := kadm.NewClient(cl)
		// The first commit creates __consumer_offsets and finds the
		// coordinator; it is not measured.
		waitFor(ctx, b, "a first commit", func() bool {
			o := kadm.Offsets{}
			o.Add(kadm.Offset{Topic: "commits", Partition: 0, At: 0, LeaderEpoch: -1})
			r, err := adm.CommitOffsets(ctx, "bench", o)
			return err == nil && r.Error() == nil
		})
		lat := make([]time.Duration, 0, b.N)
		for i := 0; b.Loop(); i++ {
			req := kmsg.NewPtrOffsetCommitRequest()
			req.Group, req.Generation = "bench", -1
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic = "commits"
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Offset = int64(i)
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			start := time.Now()
			resp, err := req.RequestWith(ctx, cl)
			if err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
				b.Fatalf("commit: %v %+v", err, resp)
			}
			lat = append(lat, time.Since(start))
		}
		report(b, lat)
	})
}

// BenchmarkGroupConsume: issue 17's throughput bar, on 3 nodes, RF=3, a
// 6-partition topic of 100-byte records: in each of b.N rounds six
// direct-assignment consumers (one partition each) read it from the
// start, and a group of six kgo members (range balancer, 500 ms
// heartbeats, a new group each round) reads it, taking turns at going
// first so that a change in the machine's load falls on both alike.
// records/s is the steady rate: the last 90% of the records over the time
// from the tenth to the last (the first tenth includes what kgo prefetched
// while the first poll was answered); join-ms is the time from the
// clients' start to the first record (for the group:
// group.initial.rebalance.delay.ms of 1 s gathers the six into one
// generation, then the rebalance; BenchmarkGroupRebalance times a
// rebalance alone). x-direct is the group's steady rate over the direct
// one (the issue asks >= 0.9); x-direct-with-join the same over the whole
// read, joins included, which a read this short makes small. The topic
// holds 1,000,000 records, but 20,000 when b.N is 1 (make test's smoke
// run): use -benchtime 3x or more.
func BenchmarkGroupConsume(b *testing.B) {
	c := startReplCluster(b, 3, "group.initial.rebalance.delay.ms=1000", "offsets.topic.num.partitions=3")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	const parts = 6
	total := 1_000_000
	if b.N == 1 {
		total = 20_000
	}
	c.createTopic(ctx, "gc", parts, nil)
	prod := c.client(kgo.DefaultProduceTopic("gc"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.ProducerLinger(5*time.Millisecond))
	value := make([]byte, 100)
	for range total {
		prod.Produce(ctx, &kgo.Record{Value: value}, nil)
	}
	if err := prod.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	// run reads the topic once with the six clients made by clients and
	// returns how long until the last record, until the first, and from
	// the tenth to the last.
	run := func(clients func(i int) *kgo.Client) (all, join, steady time.Duration) {
		start := time.Now()
		done, stop := make(chan int, parts), make(chan struct{})
		defer close(stop)
		var cls []*kgo.Client
		for i := range parts {
			cl := clients(i)
			cls = append(cls, cl)
			go func() {
				for {
					fs := cl.PollFetches(ctx)
					if fs.IsClientClosed() || ctx.Err() != nil {
						return
					}
					select {
					case done <- fs.NumRecords():
					case <-stop:
						return
					}
				}
			}()
		}
		got := 0
		var first, tenth time.Time
		for got < total {
			var n int
			select {
			case n = <-done:
			case <-ctx.Done():
				b.Fatalf("read %d of %d records", got, total)
			}
			if n > 0 && first.IsZero() {
				first = time.Now()
			}
			got += n
			if got >= total/10 && tenth.IsZero() {
				tenth = time.Now()
			}
		}
		end := time.Now()
		for _, cl := range cls {
			cl.Close()
		}
		return end.Sub(start), first.Sub(start), end.Sub(tenth)
	}
	direct := func(i int) *kgo.Client {
		return c.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"gc": {int32(i): kgo.NewOffset().AtStart()}}))
	}
	var spent, joins, steady [2]time.Duration // [0] direct, [1] group
	b.ResetTimer()
	for round := range b.N {
		group := func(i int) *kgo.Client {
			return c.client(kgo.ConsumerGroup(fmt.Sprintf("bench-%d", round)), kgo.ConsumeTopics("gc"), kgo.Balancers(kgo.RangeBalancer()),
				kgo.HeartbeatInterval(500*time.Millisecond), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		}
		for k := range 2 {
			i := k ^ round&1
			all, join, st := run([2]func(int) *kgo.Client{direct, group}[i])
			spent[i], joins[i], steady[i] = spent[i]+all, joins[i]+join, steady[i]+st
		}
	}
	b.StopTimer()
	rate := func(i int) float64 { return float64(total-total/10) * float64(b.N) / steady[i].Seconds() }
	b.ReportMetric(rate(0), "direct-records/s")
	b.ReportMetric(rate(1), "group-records/s")
	b.ReportMetric(float64((joins[0] / time.Duration(b.N)).Milliseconds()), "direct-join-ms")
	b.ReportMetric(float64((joins[1] / time.Duration(b.N)).Milliseconds()), "group-join-ms")
	b.ReportMetric(rate(1)/rate(0), "x-direct")
	b.ReportMetric(spent[0].Seconds()/spent[1].Seconds(), "x-direct-with-join")
}
