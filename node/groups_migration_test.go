package node

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-log/sluice/quorum"
)

// ownership follows which member owns each partition, from the clients'
// own callbacks (kgo's OnPartitionsAssigned/Revoked/Lost, sarama's
// session claims): a member gives a partition up (its callback returns)
// before the coordinator lets another take it, so a partition assigned
// while another member still holds it was owned by two members at once.
type ownership struct {
	mu         sync.Mutex
	owner      map[int32]string
	assigns    int // partitions assigned, over all callbacks
	violations []string
}

func newOwnership() *ownership { return &ownership{owner: map[int32]string{}} }

func (o *ownership) assigned(member string, ps []int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range ps {
		if cur, ok := o.owner[p]; ok && cur != member {
			o.violations = append(o.violations, fmt.Sprintf("partition %d assigned to %s while %s owns it", p, member, cur))
		}
		o.owner[p] = member
		o.assigns++
	}
}

func (o *ownership) released(member string, ps []int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range ps {
		if o.owner[p] == member {
			delete(o.owner, p)
		}
	}
}

func (o *ownership) check(t *testing.T) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, v := range o.violations {
		t.Error(v)
	}
	if o.assigns == 0 {
		t.Error("no partition assignment was reported by the clients' callbacks")
	}
}

// revokeWork is how long a member's application takes to give
// partitions up (committing, flushing): a coordinator that hands a
// partition to another member before its owner released it would be
// caught inside this window.
const revokeWork = 300 * time.Millisecond

// tracked are kgo options that report member's partitions to o.
func (o *ownership) tracked(member, topic string) []kgo.Opt {
	return []kgo.Opt{
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { o.assigned(member, m[topic]) }),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, m map[string][]int32) {
			if len(m[topic]) == 0 {
				return
			}
			// Commit what was polled before giving the partitions up.
			if err := cl.CommitUncommittedOffsets(ctx); err != nil {
				fmt.Printf("%s: commit on revoke: %v\n", member, err)
			}
			select {
			case <-time.After(revokeWork):
			case <-ctx.Done():
			}
			o.released(member, m[topic])
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { o.released(member, m[topic]) }),
	}
}

// memberTypes counts a consumer group's members by protocol
// (ConsumerGroupDescribe's member type: 0 classic, 1 consumer) and checks
// that they own partitions of topic at most once each.
func memberTypes(ctx context.Context, t *testing.T, adm *kadm.Client, groupID, topic string) (classic, consumer, owned int, err error) {
	d, err := adm.DescribeConsumerGroups(ctx, groupID)
	if err != nil {
		return 0, 0, 0, err
	}
	g := d[groupID]
	if g.Err != nil {
		return 0, 0, 0, g.Err
	}
	seen := map[int32]bool{}
	for _, m := range g.Members {
		switch m.MemberType {
		case 0:
			classic++
		case 1:
			consumer++
		}
		for p := range m.Assignment[topic] {
			if seen[p] {
				t.Fatalf("partition %d owned twice: %+v", p, g.Members)
			}
			seen[p] = true
		}
	}
	return classic, consumer, len(seen), nil
}

// TestConsumerGroupRollingUpgrade848: three franz-go members of a classic
// group (cooperative-sticky) are restarted one by one as KIP-848 members
// (kgo.ServerSideBalancer). The first restart upgrades the group online
// into a mixed consumer group (ConsumerGroupDescribe shows classic and
// consumer members), the classic members go on being served through
// JoinGroup/SyncGroup/Heartbeat from the consumer group's state, and after
// the last restart every member uses the consumer protocol. Records are
// produced between the restarts: every one is consumed, no partition is
// owned by two members at once (the clients' own callbacks), and the
// commits read back with kadm equal the end offsets.
func TestConsumerGroupRollingUpgrade848(t *testing.T) {
	c := startReplCluster(t, 3, settings848...)
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	const parts, round, topic, groupID = 6, 60, "upgrade848", "g-upgrade"
	adm := kadm.NewClient(c.client())
	c.createTopic(ctx, topic, parts, nil)
	seen, own := newSeenSet(), newOwnership()
	classicOpts := func(name string) []kgo.Opt {
		return append(own.tracked(name, topic), kgo.Balancers(kgo.CooperativeStickyBalancer()))
	}
	newOpts := func(name string) []kgo.Opt {
		return append(classicOpts(name), kgo.ServerSideBalancer())
	}
	produced := 0
	produce := func() {
		produceRound(ctx, t, c, topic, parts, produced, round)
		produced += round
		waitFor(ctx, t, fmt.Sprintf("%d records consumed", produced), func() bool { return seen.count() >= produced })
	}
	members := map[string]*groupMember{}
	for _, name := range []string{"a", "b", "c"} {
		members[name] = startMember(t, c, name, groupID, topic, seen, classicOpts(name)...)
	}
	waitGroup(ctx, t, adm, groupID, 3)
	produce()

	for i, name := range []string{"a", "b", "c"} {
		members[name].stop(ctx, t)
		next := name + "848"
		members[next] = startMember(t, c, next, groupID, topic, seen, newOpts(next)...)
		waitFor(ctx, t, fmt.Sprintf("%d classic and %d consumer members own every partition", 2-i, i+1), func() bool {
			cl, co, owned, err := memberTypes(ctx, t, adm, groupID, topic)
			return err == nil && cl == 2-i && co == i+1 && owned == parts
		})
		produce()
	}
	waitConsumerGroup(ctx, t, adm, groupID, topic, 3, parts)
	if listed, err := adm.ListGroupsByType(ctx, []string{"consumer"}); err != nil || listed[groupID].Group == "" {
		t.Errorf("ListGroups(consumer) after the upgrade: %v %+v", err, listed)
	}
	produce()
	for _, name := range []string{"a848", "b848", "c848"} {
		members[name].stop(ctx, t)
	}
	own.check(t)
	if sum, by := committedSum(ctx, t, adm, groupID, topic); sum != int64(produced) {
		t.Fatalf("committed offsets sum to %d, want %d: %v", sum, produced, by)
	}
	seen.mu.Lock()
	defer seen.mu.Unlock()
	if len(seen.values) != produced {
		t.Fatalf("%d distinct records consumed, want %d", len(seen.values), produced)
	}
}

// saramaTracked is a sarama ConsumerGroupHandler that reports its
// session's claims to an ownership and what it consumed to a seenSet,
// marking each message (committed every 200 ms and at the session's end).
type saramaTracked struct {
	name  string
	topic string
	seen  *seenSet
	own   *ownership
}

func (h saramaTracked) Setup(s sarama.ConsumerGroupSession) error {
	h.own.assigned(h.name, s.Claims()[h.topic])
	return nil
}

func (h saramaTracked) Cleanup(s sarama.ConsumerGroupSession) error {
	s.Commit()
	time.Sleep(revokeWork) // lint:allow-sleep: simulated application work before the release, not synchronisation (see revokeWork)
	h.own.released(h.name, s.Claims()[h.topic])
	return nil
}

func (h saramaTracked) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for {
		select {
		case m, ok := <-c.Messages():
			if !ok {
				return nil
			}
			h.seen.add(h.name, m.Value)
			s.MarkMessage(m, "")
		case <-s.Context().Done():
			return nil
		}
	}
}

// TestConsumerGroupMixedSarama: a classic client that knows nothing of
// KIP-848 (sarama's ConsumerGroup, eager range) joins a consumer group of
// a franz-go KIP-848 member: the group serves it as a classic member
// (JoinGroup/SyncGroup/Heartbeat from the consumer group's state), both
// consume; a second KIP-848 member makes sarama give partitions up; no
// partition is owned by two members at once. When the KIP-848 members
// leave, the group is downgraded to a classic group and sarama goes on
// alone; every record is consumed.
func TestConsumerGroupMixedSarama(t *testing.T) {
	c := startReplCluster(t, 3, settings848...)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	const parts, round, topic, groupID = 4, 40, "mixed848", "g-mixed"
	adm := kadm.NewClient(c.client())
	c.createTopic(ctx, topic, parts, nil)
	seen, own := newSeenSet(), newOwnership()
	produced := 0
	produce := func() {
		produceRound(ctx, t, c, topic, parts, produced, round)
		produced += round
		waitFor(ctx, t, fmt.Sprintf("%d records consumed", produced), func() bool { return seen.count() >= produced })
	}
	k := startMember(t, c, "kgo848", groupID, topic, seen,
		append(own.tracked("kgo848", topic), kgo.Balancers(kgo.RangeBalancer()), kgo.ServerSideBalancer())...)
	waitConsumerGroup(ctx, t, adm, groupID, topic, 1, parts)

	cfg := sarama.NewConfig()
	cfg.ClientID = "sarama-mixed"
	cfg.Version = sarama.V3_0_0_0
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Interval = 200 * time.Millisecond
	cfg.Consumer.Group.Session.Timeout = 6 * time.Second
	cfg.Consumer.Group.Heartbeat.Interval = 250 * time.Millisecond
	cfg.Consumer.Group.Rebalance.Timeout = 10 * time.Second
	cfg.Consumer.Group.Rebalance.Retry.Backoff = 100 * time.Millisecond
	cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyRange()}
	var seeds []string
	for _, rn := range c.nodes {
		seeds = append(seeds, rn.KafkaAddr())
	}
	cg, err := sarama.NewConsumerGroup(seeds, groupID, cfg)
	if err != nil {
		t.Fatal(err)
	}
	sctx, scancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		h := saramaTracked{name: "sarama", topic: topic, seen: seen, own: own}
		for sctx.Err() == nil {
			if err := cg.Consume(sctx, []string{topic}, h); err != nil && !errors.Is(err, sarama.ErrClosedConsumerGroup) {
				done <- err
				return
			}
		}
		done <- nil
	}()
	defer func() {
		scancel()
		if err := <-done; err != nil {
			t.Errorf("sarama: %v", err)
		}
		cg.Close()
	}()

	waitFor(ctx, t, "a mixed group: one classic and one consumer member own every partition", func() bool {
		cl, co, owned, err := memberTypes(ctx, t, adm, groupID, topic)
		return err == nil && cl == 1 && co == 1 && owned == parts
	})
	produce()
	if seen.member("sarama") == 0 || seen.member("kgo848") == 0 {
		t.Errorf("records by member: sarama %d, kgo848 %d; want both", seen.member("sarama"), seen.member("kgo848"))
	}
	// A second KIP-848 member: sarama must give partitions up (it is
	// told to rejoin, and revokes everything first, being eager).
	k2 := startMember(t, c, "kgo848b", groupID, topic, seen,
		append(own.tracked("kgo848b", topic), kgo.Balancers(kgo.RangeBalancer()), kgo.ServerSideBalancer())...)
	waitFor(ctx, t, "one classic and two consumer members own every partition", func() bool {
		cl, co, owned, err := memberTypes(ctx, t, adm, groupID, topic)
		return err == nil && cl == 1 && co == 2 && owned == parts
	})
	produce()

	k.stop(ctx, t)
	k2.stop(ctx, t)
	waitFor(ctx, t, "the group downgraded to a classic group with sarama alone", func() bool {
		listed, err := adm.ListGroupsByType(ctx, []string{"classic"})
		if err != nil || listed[groupID].Group == "" {
			return false
		}
		d, err := adm.DescribeGroups(ctx, groupID)
		return err == nil && d[groupID].State == "Stable" && len(d[groupID].Members) == 1
	})
	produce()
	own.check(t)
}

// TestPartitionRacks: the racks handed to the rack-aware assignors are
// each partition's replicas' broker racks, sorted and without repeats;
// none when no broker of the topic has one.
func TestPartitionRacks(t *testing.T) {
	im := &quorum.Image{Brokers: map[int32]*quorum.Broker{1: {ID: 1, Rack: "b"}, 2: {ID: 2, Rack: "a"}, 3: {ID: 3, Rack: "b"}, 4: {ID: 4}}}
	top := &quorum.Topic{Partitions: []quorum.Partition{{Replicas: []int32{1, 2, 3}}, {Replicas: []int32{3, 4}}, {Replicas: []int32{4}}}}
	got := partitionRacks(im, top)
	if want := [][]string{{"a", "b"}, {"b"}, nil}; !reflect.DeepEqual(got, want) {
		t.Errorf("racks %q, want %q", got, want)
	}
	if got := partitionRacks(im, &quorum.Topic{Partitions: []quorum.Partition{{Replicas: []int32{4}}}}); got != nil {
		t.Errorf("racks of a topic on rackless brokers %q, want none", got)
	}
}
