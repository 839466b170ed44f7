package node

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkRebalanceAfterLeave is the time a 10-member group takes, after
// one member leaves (kgo's Close: LeaveGroup, or a KIP-848 heartbeat with
// epoch -1), until the coordinator sees it settled again with 9 members:
// Stable (classic: the new generation's assignment written; KIP-848:
// every member at the assignment epoch owning its target, all 20
// partitions owned). Both protocols run in the same benchmark on the same
// 3-node cluster, with the same 250 ms heartbeat interval: classic with
// kgo's default cooperative-sticky balancer, KIP-848 with the server's
// uniform assignor. ms/rebalance is the mean; one op is one leave (the
// group is refilled to 10, untimed, before each).
//
//	go test -run '^$' -bench RebalanceAfterLeave -benchtime 5x ./node/
func BenchmarkRebalanceAfterLeave(b *testing.B) {
	c := startReplCluster(b, 3, settings848...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	adm := kadm.NewClient(c.client())
	const parts, members = 20, 10
	for _, tc := range []struct {
		name string
		opts []kgo.Opt
	}{
		{"classic", []kgo.Opt{kgo.HeartbeatInterval(250 * time.Millisecond)}},
		{"consumer", []kgo.Opt{kgo.Balancers(kgo.StickyBalancer()), kgo.ServerSideBalancer()}},
	} {
		topic := "rebalance-" + tc.name
		c.createTopic(ctx, topic, parts, nil)
		b.Run(tc.name, func(b *testing.B) {
			groupID := fmt.Sprintf("rb-%s-%d", tc.name, time.Now().UnixNano())
			settled := func(n int) bool {
				if tc.name == "classic" {
					d, err := adm.DescribeGroups(ctx, groupID)
					g := d[groupID]
					return err == nil && g.Err == nil && g.State == "Stable" && len(g.Members) == n
				}
				d, err := adm.DescribeConsumerGroups(ctx, groupID)
				g := d[groupID]
				if err != nil || g.Err != nil || g.State != "Stable" || len(g.Members) != n {
					return false
				}
				owned := 0
				for _, m := range g.Members {
					owned += len(m.Assignment[topic])
				}
				return owned == parts
			}
			seen := newSeenSet()
			var group []*groupMember
			next := 0
			var total time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				for len(group) < members {
					group = append(group, startBenchMember(b, c, fmt.Sprintf("m%d", next), groupID, topic, seen, tc.opts...))
					next++
				}
				waitFor(ctx, b, "the group settled with 10 members", func() bool { return settled(members) })
				b.StartTimer()
				start := time.Now()
				group[0].cl.Close()
				<-group[0].done
				group = group[1:]
				// Polled every 2 ms: the wait is what is measured.
				tick := time.NewTicker(2 * time.Millisecond)
				for !settled(members - 1) {
					select {
					case <-tick.C:
					case <-ctx.Done():
						b.Fatal("the group did not settle after a leave")
					}
				}
				tick.Stop()
				total += time.Since(start)
			}
			b.StopTimer()
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/rebalance")
			for _, m := range group {
				m.cl.Close()
				<-m.done
			}
		})
	}
}

// startBenchMember is startMember for a benchmark: a member that polls
// and commits, logging nothing.
func startBenchMember(b *testing.B, c *replCluster, name, groupID, topic string, seen *seenSet, opts ...kgo.Opt) *groupMember {
	m := &groupMember{name: name, done: make(chan struct{})}
	m.cl = c.client(append([]kgo.Opt{kgo.ConsumerGroup(groupID), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.FetchMaxWait(200 * time.Millisecond), kgo.SessionTimeout(6 * time.Second),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond })}, opts...)...)
	go func() {
		defer close(m.done)
		for {
			fs := m.cl.PollFetches(context.Background())
			if fs.IsClientClosed() {
				return
			}
			fs.EachRecord(func(r *kgo.Record) { seen.add(name, r.Value) })
			_ = m.cl.CommitUncommittedOffsets(context.Background())
		}
	}()
	return m
}
