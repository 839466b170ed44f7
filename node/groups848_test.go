package node

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// settings848 let KIP-848 groups rebalance quickly in tests: short
// sessions and heartbeat intervals allowed and used.
var settings848 = append(append([]string{}, groupSettings...),
	"group.consumer.min.session.timeout.ms=1000", "group.consumer.session.timeout.ms=6000",
	"group.consumer.min.heartbeat.interval.ms=100", "group.consumer.heartbeat.interval.ms=250")

// waitConsumerGroup waits until the KIP-848 group is Stable with members
// members that together own every partition of topic, as kadm's
// DescribeConsumerGroups (ConsumerGroupDescribe) shows it.
func waitConsumerGroup(ctx context.Context, t *testing.T, adm *kadm.Client, groupID, topic string, members, parts int) kadm.DescribedConsumerGroup {
	t.Helper()
	var last kadm.DescribedConsumerGroup
	waitFor(ctx, t, fmt.Sprintf("consumer group %s stable with %d members owning %d partitions", groupID, members, parts), func() bool {
		d, err := adm.DescribeConsumerGroups(ctx, groupID)
		if err != nil {
			return false
		}
		last = d[groupID]
		owned := map[int32]int{}
		for _, m := range last.Members {
			for p := range m.Assignment[topic] {
				owned[p]++
			}
		}
		for _, n := range owned {
			if n > 1 {
				t.Fatalf("a partition owned by %d members: %+v", n, last.Members)
			}
		}
		return last.Err == nil && last.State == "Stable" && len(last.Members) == members && len(owned) == parts
	})
	return last
}

// TestConsumerGroups848ThreeNodes: franz-go's KIP-848 consumer
// (kgo.ServerSideBalancer with the sticky balancer, i.e. the server's
// "uniform" assignor, and with range) on 3 real nodes, RF=3: three
// members join and each gets records, one leaves, every record is
// consumed, the commits read back with kadm equal the end offsets,
// kadm's DescribeConsumerGroups shows the members and their assignments,
// ListGroups gives the group's type, and a restarted consumer resumes
// from the commits.
func TestConsumerGroups848ThreeNodes(t *testing.T) {
	c := startReplCluster(t, 3, settings848...)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	const parts, round = 6, 120
	adm := kadm.NewClient(c.client())
	for _, tc := range []struct {
		name, assignor string
		balancer       kgo.GroupBalancer
	}{
		{"uniform", "uniform", kgo.StickyBalancer()},
		{"range", "range", kgo.RangeBalancer()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic, groupID := "work848-"+tc.name, "g848-"+tc.name
			c.createTopic(ctx, topic, parts, nil)
			seen := newSeenSet()
			opts := []kgo.Opt{kgo.Balancers(tc.balancer), kgo.ServerSideBalancer()}
			produceRound(ctx, t, c, topic, parts, 0, round)
			a := startMember(t, c, "a", groupID, topic, seen, opts...)
			waitFor(ctx, t, "the first round consumed", func() bool { return seen.count() >= round })

			b := startMember(t, c, "b", groupID, topic, seen, opts...)
			m3 := startMember(t, c, "c", groupID, topic, seen, opts...)
			d := waitConsumerGroup(ctx, t, adm, groupID, topic, 3, parts)
			if d.AssignorName != tc.assignor {
				t.Errorf("assignor %q, want %q", d.AssignorName, tc.assignor)
			}
			for _, m := range d.Members {
				if n := len(m.Assignment[topic]); n != parts/3 {
					t.Errorf("member %s owns %d partitions, want %d: %v", m.MemberID, n, parts/3, m.Assignment)
				}
				if m.MemberEpoch != d.AssignmentEpoch || m.MemberType != 1 {
					t.Errorf("member %s at epoch %d (type %d), group assignment epoch %d", m.MemberID, m.MemberEpoch, m.MemberType, d.AssignmentEpoch)
				}
			}
			// DescribeGroups answers in the classic shape, with the
			// members' assignments in the consumer protocol's encoding.
			classic, err := adm.DescribeGroups(ctx, groupID)
			if err != nil {
				t.Fatal(err)
			}
			if g := classic[groupID]; g.ProtocolType != "consumer" || g.State != "Stable" || len(g.Members) != 3 {
				t.Errorf("DescribeGroups: %+v", g)
			} else {
				for _, m := range g.Members {
					a, _ := m.Assigned.AsConsumer()
					if n := 0; a != nil {
						for _, at := range a.Topics {
							n += len(at.Partitions)
						}
						if n != parts/3 {
							t.Errorf("DescribeGroups: member %s assigned %d partitions, want %d", m.MemberID, n, parts/3)
						}
					}
				}
			}
			listed, err := adm.ListGroupsByType(ctx, []string{"consumer"})
			if err != nil {
				t.Fatal(err)
			}
			if g, ok := listed[groupID]; !ok || g.ProtocolType != "consumer" {
				t.Errorf("ListGroups(consumer): %+v", listed)
			}
			produceRound(ctx, t, c, topic, parts, round, round)
			waitFor(ctx, t, "the second round consumed", func() bool { return seen.count() >= 2*round })
			for _, m := range []*groupMember{a, b, m3} {
				if seen.member(m.name) == 0 {
					t.Errorf("member %s got no record with three members in the group", m.name)
				}
			}

			b.stop(ctx, t)
			waitConsumerGroup(ctx, t, adm, groupID, topic, 2, parts)
			produceRound(ctx, t, c, topic, parts, 2*round, round)
			waitFor(ctx, t, "the third round consumed", func() bool { return seen.count() >= 3*round })
			a.stop(ctx, t)
			m3.stop(ctx, t)
			if sum, by := committedSum(ctx, t, adm, groupID, topic); sum != 3*round {
				t.Fatalf("committed offsets sum to %d, want %d: %v", sum, 3*round, by)
			}

			fresh := newSeenSet()
			e := startMember(t, c, "e", groupID, topic, fresh, opts...)
			produceRound(ctx, t, c, topic, parts, 3*round, round)
			waitFor(ctx, t, "the fourth round consumed", func() bool { return fresh.count() >= round })
			e.stop(ctx, t)
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
}

// TestConsumerGroups848CoordinatorFailover: the node coordinating a
// KIP-848 group is killed while two members consume and commit; the new
// coordinator loads the group from __consumer_offsets (members, epochs,
// assignments), the members heartbeat on at their epochs, no committed
// offset goes back, and every record is consumed.
func TestConsumerGroups848CoordinatorFailover(t *testing.T) {
	c := startReplCluster(t, 3, settings848...)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	const parts, round, groupID, topic = 4, 150, "gf848", "fail848"
	c.createTopic(ctx, topic, parts, nil)
	adm := kadm.NewClient(c.client(kgo.MetadataMinAge(500*time.Millisecond), kgo.MetadataMaxAge(2*time.Second)))
	seen := newSeenSet()
	opts := []kgo.Opt{kgo.Balancers(kgo.StickyBalancer()), kgo.ServerSideBalancer()}
	produceRound(ctx, t, c, topic, parts, 0, round)
	a := startMember(t, c, "a", groupID, topic, seen, opts...)
	b := startMember(t, c, "b", groupID, topic, seen, opts...)
	d := waitConsumerGroup(ctx, t, adm, groupID, topic, 2, parts)
	waitFor(ctx, t, "the first round consumed and committed", func() bool {
		sum, _ := committedSum(ctx, t, adm, groupID, topic)
		return seen.count() >= round && sum == round
	})
	_, before := committedSum(ctx, t, adm, groupID, topic)

	victim := killCoordinator(ctx, t, c, groupID, topic, parts, round, func() (int32, error) {
		dd, err := adm.DescribeConsumerGroups(ctx, groupID)
		if err == nil {
			err = dd[groupID].Err
		}
		return dd[groupID].Coordinator.NodeID, err
	})
	after := waitConsumerGroup(ctx, t, adm, groupID, topic, 2, parts)
	if after.Epoch < d.Epoch {
		t.Errorf("group epoch went back from %d to %d", d.Epoch, after.Epoch)
	}
	_, offs := committedSum(ctx, t, adm, groupID, topic)
	for p, off := range before {
		if offs[p] < off {
			t.Errorf("partition %d: committed offset went back from %d to %d", p, off, offs[p])
		}
	}
	a.stop(ctx, t)
	b.stop(ctx, t)
	if n := seen.count(); n != 2*round {
		t.Errorf("consumed %d distinct records, want %d", n, 2*round)
	}
	c.restart(victim)
}
