package node

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// commitRate is BenchmarkOffsetCommitRate's pace: operations per second,
// and commitGroups the groups the commits are spread over.
const (
	commitRate   = 1000
	commitGroups = 100
)

// BenchmarkOffsetCommitRate: issue 17's OffsetCommit latency at 1,000
// commits/s spread over 100 groups (standalone committers: generation -1,
// one partition each, as kadm and `--reset-offsets` commit), on 3 nodes
// with __consumer_offsets RF=3 (10 partitions, so the groups land on
// every node's shards). Its baseline, in the same run at the same pace:
// acks=all produces of one small record each to one RF=3 partition (what
// a commit is made of). b.N operations go to each side, in alternating
// rounds of one second (and alternating which goes first) so that a
// change in the machine's load falls on both alike. Latency counts from
// each operation's scheduled time, not its send, so that a stall is not
// hidden by the pacer waiting for it (coordinated omission). Reports
// p50/p99 of each in µs and x-produce-p99, commit p99 over produce p99.
// Use -benchtime 10000x (ten rounds) or more.
func BenchmarkOffsetCommitRate(b *testing.B) {
	c := startReplCluster(b, 3, "group.initial.rebalance.delay.ms=0", "offsets.topic.num.partitions=10")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c.createTopic(ctx, "rate", 1, nil)
	// No linger (kgo waits 10 ms by default): a commit does not wait either.
	prod := c.client(kgo.DefaultProduceTopic("rate"), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	committer := c.client(kgo.MaxVersions(offsetsByName())) // commits by topic name
	adm := kadm.NewClient(committer)
	// The first commit of each group creates __consumer_offsets, finds the
	// coordinator and waits for its shard to load; none is measured.
	for g := range commitGroups {
		waitFor(ctx, b, "a first commit", func() bool {
			o := kadm.Offsets{}
			o.Add(kadm.Offset{Topic: "rate", Partition: 0, At: 0, LeaderEpoch: -1})
			r, err := adm.CommitOffsets(ctx, fmt.Sprintf("rate-%d", g), o)
			return err == nil && r.Error() == nil
		})
	}
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("warm")}).FirstErr(); err != nil {
		b.Fatal(err)
	}
	commit := func(i int) error {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.Generation = fmt.Sprintf("rate-%d", i%commitGroups), -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "rate"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Offset = int64(i)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, committer)
		if err != nil {
			return err
		}
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
			return fmt.Errorf("commit %d: error code %d", i, code)
		}
		return nil
	}
	produce := func(i int, done func(error)) {
		prod.Produce(ctx, &kgo.Record{Value: fmt.Appendf(nil, "%d", i)}, func(_ *kgo.Record, err error) { done(err) })
	}
	// paced runs n operations at commitRate from first on, each started by
	// start(i, done) and finished by its done, and appends their latencies.
	paced := func(n, first int, lat *[]time.Duration, start func(i int, done func(error))) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		var firstErr error
		t0 := time.Now()
		for k := range n {
			due := t0.Add(time.Duration(k) * time.Second / commitRate)
			if d := time.Until(due); d > 0 {
				tm := time.NewTimer(d) // the pace, not synchronisation
				<-tm.C
			}
			wg.Add(1)
			start(first+k, func(err error) {
				d := time.Since(due)
				mu.Lock()
				*lat = append(*lat, d)
				if err != nil && firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
				wg.Done()
			})
		}
		wg.Wait()
		if firstErr != nil {
			b.Fatal(firstErr)
		}
	}
	lats := [2][]time.Duration{make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)} // [0] produce, [1] commit
	b.ResetTimer()
	for round, done := 0, 0; done < b.N; round, done = round+1, done+commitRate {
		n := min(commitRate, b.N-done)
		for k := range 2 {
			switch k ^ round&1 {
			case 0:
				paced(n, done, &lats[0], produce)
			case 1:
				paced(n, done, &lats[1], func(i int, fin func(error)) { go func() { fin(commit(i)) }() })
			}
		}
	}
	b.StopTimer()
	q := func(l []time.Duration, p int) float64 {
		slices.Sort(l)
		return float64(l[min(len(l)*p/100, len(l)-1)].Microseconds())
	}
	b.ReportMetric(q(lats[0], 50), "produce-p50-µs")
	b.ReportMetric(q(lats[0], 99), "produce-p99-µs")
	b.ReportMetric(q(lats[1], 50), "commit-p50-µs")
	b.ReportMetric(q(lats[1], 99), "commit-p99-µs")
	b.ReportMetric(q(lats[1], 99)/max(q(lats[0], 99), 1), "x-produce-p99")
}

// rebalanceMembers and rebalancePartitions shape BenchmarkGroupRebalance's
// group: ten members over twenty partitions.
const (
	rebalanceMembers    = 10
	rebalancePartitions = 20
	rebalanceHeartbeat  = 500 * time.Millisecond
)

// BenchmarkGroupRebalance: issue 17's rebalance time, classic protocol, on
// 3 nodes (RF=3): a group of ten kgo members (heartbeats every 500 ms)
// over a 20-partition topic is Stable with every partition assigned; one
// member leaves (Close: LeaveGroup); the time is from the Close until
// DescribeGroups answers Stable, nine members, every partition assigned
// (polled every 5 ms). Per balancer: range (eager: every member revokes
// and rejoins) and cooperative-sticky (only the orphaned partitions
// move). A member learns of a rebalance at its next heartbeat, so the
// heartbeat interval is the floor: x-heartbeat is the mean rebalance time
// over it. There is no direct-assignment baseline for this (a consumer
// that assigns itself partitions never rebalances). Each of b.N
// iterations forms a new group.
func BenchmarkGroupRebalance(b *testing.B) {
	c := startReplCluster(b, 3, groupSettings...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c.createTopic(ctx, "rb", rebalancePartitions, nil)
	adm := kadm.NewClient(c.client())
	// settled reports whether g is Stable with n members that hold every
	// partition of the topic between them.
	settled := func(g string, n int) bool {
		ds, err := adm.DescribeGroups(ctx, g)
		if err != nil {
			return false
		}
		d, ok := ds[g]
		if !ok || d.Err != nil || d.State != "Stable" || len(d.Members) != n {
			return false
		}
		return len(d.AssignedPartitions()["rb"]) == rebalancePartitions
	}
	for _, bal := range []struct {
		name string
		b    kgo.GroupBalancer
	}{{"range", kgo.RangeBalancer()}, {"cooperative-sticky", kgo.CooperativeStickyBalancer()}} {
		b.Run(bal.name, func(b *testing.B) {
			var total time.Duration
			var all []time.Duration
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				g := fmt.Sprintf("rb-%s-%d", bal.name, i)
				var cls []*kgo.Client
				for range rebalanceMembers {
					cl := c.client(kgo.ConsumerGroup(g), kgo.ConsumeTopics("rb"), kgo.Balancers(bal.b),
						kgo.HeartbeatInterval(rebalanceHeartbeat), kgo.SessionTimeout(6*time.Second))
					cls = append(cls, cl)
					go func() {
						for {
							if fs := cl.PollFetches(ctx); fs.IsClientClosed() || ctx.Err() != nil {
								return
							}
						}
					}()
				}
				waitFor(ctx, b, "the group to settle", func() bool { return settled(g, rebalanceMembers) })
				b.StartTimer()
				start := time.Now()
				cls[0].Close()
				for !settled(g, rebalanceMembers-1) {
					if ctx.Err() != nil {
						b.Fatal("the group did not settle after a leave")
					}
					tm := time.NewTimer(5 * time.Millisecond)
					<-tm.C
				}
				d := time.Since(start)
				b.StopTimer()
				total += d
				all = append(all, d)
				for _, cl := range cls[1:] {
					cl.Close()
				}
				b.StartTimer()
			}
			slices.Sort(all)
			mean := total / time.Duration(len(all))
			b.ReportMetric(float64(mean.Milliseconds()), "rebalance-ms")
			b.ReportMetric(float64(all[len(all)-1].Milliseconds()), "max-ms")
			b.ReportMetric(float64(mean)/float64(rebalanceHeartbeat), "x-heartbeat")
		})
	}
}
