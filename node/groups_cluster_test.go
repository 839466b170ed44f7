package node

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-log/sluice/node/group"
	"github.com/sluice-log/sluice/quorum"
)

// groupSettings keep group tests fast: no initial rebalance delay, short
// session timeouts allowed, three offsets partitions.
var groupSettings = []string{"group.initial.rebalance.delay.ms=0", "group.min.session.timeout.ms=1000", "offsets.topic.num.partitions=3"}

// seenSet is what a group's members consumed, by value, and by whom.
type seenSet struct {
	mu     sync.Mutex
	values map[string]int
	by     map[string]int // member name -> records
}

func newSeenSet() *seenSet { return &seenSet{values: map[string]int{}, by: map[string]int{}} }

func (s *seenSet) add(member string, v []byte) {
	s.mu.Lock()
	s.values[string(v)]++
	s.by[member]++
	s.mu.Unlock()
}

func (s *seenSet) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.values)
}

func (s *seenSet) member(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.by[name]
}

// groupMember is one kgo group consumer polling on its own goroutine and
// committing what it polled after each poll (at least once).
type groupMember struct {
	name string
	cl   *kgo.Client
	done chan struct{}
	err  error
}

func startMember(t *testing.T, c *replCluster, name, groupID, topic string, seen *seenSet, opts ...kgo.Opt) *groupMember {
	t.Helper()
	m := &groupMember{name: name, done: make(chan struct{})}
	m.cl = c.client(append([]kgo.Opt{kgo.ConsumerGroup(groupID), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.FetchMaxWait(200 * time.Millisecond), kgo.SessionTimeout(6 * time.Second), kgo.HeartbeatInterval(500 * time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }),
		// kgo keeps a coordinator it cannot dial until a metadata refresh
		// no longer lists that broker (only coordinator error codes make
		// it ask FindCoordinator again): a member without partitions
		// fetches nothing that would refresh it sooner than this.
		kgo.MetadataMinAge(500 * time.Millisecond), kgo.MetadataMaxAge(2 * time.Second)}, opts...)...)
	go func() {
		defer close(m.done)
		for {
			// Polls end every second without records too, so that a
			// commit that failed (its coordinator just died) is retried
			// even when nothing more arrives, as kgo's autocommit would.
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			fs := m.cl.PollFetches(ctx)
			cancel()
			if fs.IsClientClosed() {
				return
			}
			fs.EachError(func(topic string, p int32, err error) {
				if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
					t.Logf("%s: fetch %s/%d: %v", name, topic, p, err)
				}
			})
			fs.EachRecord(func(r *kgo.Record) { seen.add(name, r.Value) })
			if err := m.cl.CommitUncommittedOffsets(context.Background()); err != nil && !errors.Is(err, kgo.ErrClientClosed) {
				t.Logf("%s: commit: %v", name, err)
			}
		}
	}()
	return m
}

// stop commits what the member polled, leaves the group and waits for its
// goroutine.
func (m *groupMember) stop(ctx context.Context, t *testing.T) {
	t.Helper()
	if err := m.cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Logf("%s: final commit: %v", m.name, err)
	}
	m.cl.Close()
	<-m.done
}

// produceRound writes n records "from..from+n" spread evenly over parts
// partitions of topic.
func produceRound(ctx context.Context, t *testing.T, c *replCluster, topic string, parts, from, n int) {
	t.Helper()
	cl := c.client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordRetries(100),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
	defer cl.Close()
	var recs []*kgo.Record
	for i := from; i < from+n; i++ {
		recs = append(recs, &kgo.Record{Partition: int32(i % parts), Value: fmt.Appendf(nil, "%d", i)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// waitGroup waits until the group is Stable with members members.
func waitGroup(ctx context.Context, t *testing.T, adm *kadm.Client, groupID string, members int) {
	t.Helper()
	waitFor(ctx, t, fmt.Sprintf("group %s stable with %d members", groupID, members), func() bool {
		d, err := adm.DescribeGroups(ctx, groupID)
		if err != nil {
			return false
		}
		g := d[groupID]
		return g.Err == nil && g.State == "Stable" && len(g.Members) == members
	})
}

// committedSum is the sum of the group's committed offsets of topic.
func committedSum(ctx context.Context, t *testing.T, adm *kadm.Client, groupID, topic string) (int64, map[int32]int64) {
	t.Helper()
	offs, err := adm.FetchOffsets(ctx, groupID)
	if err != nil {
		t.Fatal(err)
	}
	if err := offs.Error(); err != nil {
		t.Fatal(err)
	}
	var sum int64
	by := map[int32]int64{}
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic {
			sum += o.At
			by[o.Partition] = o.At
		}
	})
	return sum, by
}

// TestGroupsThreeNodes: franz-go group consumers with the range, sticky
// and cooperative-sticky balancers on 3 real nodes, RF=3: three members
// join (each then gets records), one leaves, every record is consumed,
// the commits read back with kadm equal the end offsets, and after every
// consumer restarted the group resumes from its commits (nothing old is
// delivered again).
func TestGroupsThreeNodes(t *testing.T) {
	c := startReplCluster(t, 3, groupSettings...)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	const parts, round = 6, 120
	adm := kadm.NewClient(c.client())
	for _, tc := range []struct {
		name     string
		balancer kgo.GroupBalancer
	}{
		{"range", kgo.RangeBalancer()},
		{"sticky", kgo.StickyBalancer()},
		{"cooperative-sticky", kgo.CooperativeStickyBalancer()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic, groupID := "work-"+tc.name, "g-"+tc.name
			c.createTopic(ctx, topic, parts, nil)
			seen := newSeenSet()
			bal := kgo.Balancers(tc.balancer)
			produceRound(ctx, t, c, topic, parts, 0, round)
			a := startMember(t, c, "a", groupID, topic, seen, bal)
			waitFor(ctx, t, "the first round consumed", func() bool { return seen.count() >= round })

			b := startMember(t, c, "b", groupID, topic, seen, bal)
			m3 := startMember(t, c, "c", groupID, topic, seen, bal)
			waitGroup(ctx, t, adm, groupID, 3)
			produceRound(ctx, t, c, topic, parts, round, round)
			waitFor(ctx, t, "the second round consumed", func() bool { return seen.count() >= 2*round })
			for _, m := range []*groupMember{a, b, m3} {
				if seen.member(m.name) == 0 {
					t.Errorf("member %s got no record with three members in the group", m.name)
				}
			}

			b.stop(ctx, t)
			waitGroup(ctx, t, adm, groupID, 2)
			produceRound(ctx, t, c, topic, parts, 2*round, round)
			waitFor(ctx, t, "the third round consumed", func() bool { return seen.count() >= 3*round })
			a.stop(ctx, t)
			m3.stop(ctx, t)
			if sum, by := committedSum(ctx, t, adm, groupID, topic); sum != 3*round {
				t.Fatalf("committed offsets sum to %d, want %d: %v", sum, 3*round, by)
			}

			// Every consumer restarted: the group resumes from its commits.
			fresh := newSeenSet()
			d := startMember(t, c, "d", groupID, topic, fresh, bal)
			produceRound(ctx, t, c, topic, parts, 3*round, round)
			waitFor(ctx, t, "the fourth round consumed", func() bool { return fresh.count() >= round })
			d.stop(ctx, t)
			fresh.mu.Lock()
			for v := range fresh.values {
				var i int
				fmt.Sscan(v, &i)
				if i < 3*round {
					t.Errorf("record %d delivered again after it was committed", i)
				}
			}
			fresh.mu.Unlock()
		})
	}
	// The offsets topic: compacted, and two copies before a commit is
	// acknowledged.
	rcs, err := adm.DescribeTopicConfigs(ctx, "__consumer_offsets")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On("__consumer_offsets", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"cleanup.policy": "compact", "min.insync.replicas": "2"}
	for _, cfg := range rc.Configs {
		if w, ok := want[cfg.Key]; ok {
			if cfg.Value == nil || *cfg.Value != w {
				t.Errorf("__consumer_offsets %s = %v, want %s", cfg.Key, cfg.Value, w)
			}
			delete(want, cfg.Key)
		}
	}
	if len(want) > 0 {
		t.Errorf("__consumer_offsets configs missing: %v", want)
	}
}

// TestGroupsCoordinatorFailover: the node coordinating a group is killed
// (no clean shutdown) while two members consume and commit; the group
// reaches the new coordinator within the session timeout plus a few
// seconds, no committed offset is lost or goes backwards, and consumption
// resumes from the last commit (every record consumed, the final commits
// at the end offsets).
func TestGroupsCoordinatorFailover(t *testing.T) {
	c := startReplCluster(t, 3, groupSettings...)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	const parts, round, groupID, topic = 3, 150, "gf", "fail"
	c.createTopic(ctx, topic, parts, nil)
	// kgo keeps a coordinator it cannot dial until its metadata no longer
	// lists that broker: refresh often (see startMember).
	adm := kadm.NewClient(c.client(kgo.MetadataMinAge(500*time.Millisecond), kgo.MetadataMaxAge(2*time.Second)))
	seen := newSeenSet()
	produceRound(ctx, t, c, topic, parts, 0, round)
	a := startMember(t, c, "a", groupID, topic, seen)
	b := startMember(t, c, "b", groupID, topic, seen)
	waitGroup(ctx, t, adm, groupID, 2)
	waitFor(ctx, t, "the first round consumed and committed", func() bool {
		sum, _ := committedSum(ctx, t, adm, groupID, topic)
		return seen.count() >= round && sum == round
	})
	_, before := committedSum(ctx, t, adm, groupID, topic)

	victim := killCoordinator(ctx, t, c, groupID, topic, parts, round, func() (int32, error) {
		d, err := adm.DescribeGroups(ctx, groupID)
		if err == nil {
			err = d[groupID].Err
		}
		return d[groupID].Coordinator.NodeID, err
	})
	_, after := committedSum(ctx, t, adm, groupID, topic)
	for p, off := range before {
		if after[p] < off {
			t.Errorf("partition %d: committed offset went back from %d to %d", p, off, after[p])
		}
	}
	a.stop(ctx, t)
	b.stop(ctx, t)
	if n := seen.count(); n != 2*round {
		t.Errorf("consumed %d distinct records, want %d", n, 2*round)
	}
	c.restart(victim)
}

// killCoordinator kills the node coordinating groupID (no clean
// shutdown), produces the second round of records, and waits until
// describe names another coordinator and the group committed both rounds;
// the move may take the session timeout (6 s) plus 10 s at most. It
// returns the killed node.
func killCoordinator(ctx context.Context, t *testing.T, c *replCluster, groupID, topic string, parts, round int, describe func() (int32, error)) *replNode {
	t.Helper()
	var coordID int32 = -1
	c.live().ctrl.View(func(im *quorum.Image) {
		t := im.Topics[group.OffsetsTopic]
		coordID = t.Partitions[group.Partition(groupID, int32(len(t.Partitions)))].Leader
	})
	victim := c.nodes[coordID-1]
	t.Logf("killing node %d, coordinator of %s (active controller: %v)", coordID, groupID, victim.ctrl.IsLeader())
	start := time.Now()
	c.kill(victim)
	produceRound(ctx, t, c, topic, parts, round, round)
	adm := kadm.NewClient(c.client())
	waitFor(ctx, t, "the group at a new coordinator, the second round committed", func() bool {
		if id, err := describe(); err != nil || id == coordID {
			return false
		}
		sum, _ := committedSum(ctx, t, adm, groupID, topic)
		return sum == int64(2*round)
	})
	took := time.Since(start)
	t.Logf("coordinator node %d killed: %s committed everything at its new coordinator after %v", coordID, groupID, took)
	if limit := 6*time.Second + 10*time.Second; took > limit {
		t.Errorf("the group took %v to move, more than the session timeout plus 10 s (%v)", took, limit)
	}
	return victim
}
