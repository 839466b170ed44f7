package node

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The consumer group matrix: every client library that users run with
// group.id, against 3 real nodes, in one scenario (groupScenario). Each
// library is a groupClient: how to start a member of a group and stop it
// gracefully (committing what it consumed, then leaving the group). The
// Go libraries run in the test process (groups_clients_go_test.go),
// librdkafka through kcat -G and the Python libraries as processes
// (groups_clients_proc_test.go).

// consumed is one record a member handed to its application.
type consumed struct {
	member    string
	partition int32
	offset    int64
	value     string
}

// exitedEarly is the offset of a consumed that reports a member's
// process exiting before it was stopped (value: why).
const exitedEarly = -1

// clientMember is a running member; stop leaves the group after
// committing what it consumed, and fails the test if it cannot.
type clientMember interface {
	stop(t *testing.T)
}

// groupClient starts members of one library: member id joins group as a
// consumer of topic from the earliest offset when the group has none
// committed, and sends what it consumes to out.
type groupClient struct {
	name  string
	start func(t *testing.T, bootstrap []string, group, topic, id string, out chan<- consumed) clientMember
}

// groupPartitions is the partition count of each scenario's topic.
const groupPartitions = 4

// groupClusterSettings make groups quick on a loaded machine: no initial
// rebalance delay, a small __consumer_offsets (RF 3).
var groupClusterSettings = []string{"group.initial.rebalance.delay.ms=0", "offsets.topic.num.partitions=5"}

// startGroupCluster starts 3 nodes with groupClusterSettings, or skips
// the test when the nodes do not serve the group APIs (JoinGroup not
// advertised: built without the group coordinator).
func startGroupCluster(t *testing.T) ([]*testNode, []string) {
	t.Helper()
	nodes := startClusterWith(t, 3, "PLAINTEXT", groupClusterSettings...)
	var addrs []string
	for _, tn := range nodes {
		addrs = append(addrs, tn.KafkaAddr())
	}
	cl := newClient(t, nodes[0])
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(resp.ApiKeys, func(k kmsg.ApiVersionsResponseApiKey) bool { return k.ApiKey == int16(kmsg.JoinGroup) }) {
		t.Skip("the nodes do not serve the group APIs (JoinGroup not advertised)")
	}
	return nodes, addrs
}

// collector gathers what every member consumed.
type collector struct {
	mu   sync.Mutex
	got  []consumed
	cond chan struct{} // closed and replaced on every record
}

func newCollector(in <-chan consumed) *collector {
	c := &collector{cond: make(chan struct{})}
	go func() {
		for r := range in {
			c.mu.Lock()
			c.got = append(c.got, r)
			close(c.cond)
			c.cond = make(chan struct{})
			c.mu.Unlock()
		}
	}()
	return c
}

// since returns the records consumed after the first n.
func (c *collector) since(n int) []consumed {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.got[n:])
}

func (c *collector) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.got)
}

// waitAll waits until every value of want was consumed after mark, and
// returns what was consumed after mark.
func (c *collector) waitAll(ctx context.Context, t *testing.T, what string, mark int, want []string) []consumed {
	t.Helper()
	for {
		c.mu.Lock()
		seen := map[string]bool{}
		for _, r := range c.got[mark:] {
			seen[r.value] = true
		}
		for _, r := range c.got {
			if r.offset == exitedEarly {
				c.mu.Unlock()
				t.Fatalf("%s: member %s exited: %s", what, r.member, r.value)
			}
		}
		wake := c.cond
		c.mu.Unlock()
		missing := 0
		for _, v := range want {
			if !seen[v] {
				missing++
			}
		}
		if missing == 0 {
			return c.since(mark)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %d of %d records never consumed", what, missing, len(want))
		case <-wake:
		}
	}
}

// waitTopicEverywhere waits until every node's Metadata has a leader for
// every partition of topic: a client that asks a node the topic has not
// reached yet may wait out its metadata refresh interval (kafka-python's
// is five minutes).
func waitTopicEverywhere(ctx context.Context, t *testing.T, nodes []*testNode, topic string) {
	t.Helper()
	for _, tn := range nodes {
		cl := newClient(t, tn)
		waitUntil(ctx, t, tn, func() bool {
			req := kmsg.NewPtrMetadataRequest()
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(topic)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl.SeedBrokers()[0])
			if err != nil || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) != groupPartitions {
				return false
			}
			for _, p := range resp.Topics[0].Partitions {
				if p.ErrorCode != 0 || p.Leader < 0 {
					return false
				}
			}
			return true
		})
	}
}

// produceValues writes n records "<phase>-<i>" round robin over the
// topic's partitions and returns the values.
func produceValues(ctx context.Context, t *testing.T, cl *kgo.Client, topic, phase string, n int) []string {
	t.Helper()
	var vals []string
	var recs []*kgo.Record
	for i := range n {
		v := fmt.Sprintf("%s-%04d", phase, i)
		vals = append(vals, v)
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % groupPartitions), Value: []byte(v)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce %s: %v", phase, err)
	}
	return vals
}

// waitClientGroup waits until the group is Stable with exactly the members
// given (by count) and every partition of topic assigned once.
func waitClientGroup(ctx context.Context, t *testing.T, adm *kadm.Client, group, topic string, members int) {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last string
	for {
		ds, err := adm.DescribeGroups(ctx, group)
		if d, ok := ds[group]; err == nil && ok && d.Err == nil {
			assigned := 0
			for _, m := range d.Members {
				if a, ok := m.Assigned.AsConsumer(); ok {
					for _, at := range a.Topics {
						if at.Topic == topic {
							assigned += len(at.Partitions)
						}
					}
				}
			}
			last = fmt.Sprintf("state %s, %d members, %d partitions assigned", d.State, len(d.Members), assigned)
			if d.State == "Stable" && len(d.Members) == members && assigned == groupPartitions {
				return
			}
		} else {
			last = fmt.Sprint(err, d.Err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("group %s never Stable with %d members owning %d partitions: last %s", group, members, groupPartitions, last)
		case <-tick.C:
		}
	}
}

// waitCommitted waits until the group's commits, read back with kadm,
// reach each partition's end offset, and returns them.
func waitCommitted(ctx context.Context, t *testing.T, adm *kadm.Client, group, topic string) map[int32]int64 {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var got, want map[int32]int64
	for {
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err == nil {
			want = map[int32]int64{}
			ends.Each(func(o kadm.ListedOffset) { want[o.Partition] = o.Offset })
		}
		offs, err := adm.FetchOffsets(ctx, group)
		if err == nil {
			got = map[int32]int64{}
			offs.Each(func(o kadm.OffsetResponse) {
				if o.Topic == topic && o.Err == nil {
					got[o.Partition] = o.At
				}
			})
			if len(want) == groupPartitions && maps.Equal(got, want) {
				return got
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("group %s: committed %v, never reached the end offsets %v", group, got, want)
		case <-tick.C:
		}
	}
}

// groupScenario runs one library through the scenario on the cluster:
//  1. members a and b join; once the group is Stable with both owning
//     every partition, 200 records are each consumed exactly once (one
//     group epoch), by both members; the commits, read back with kadm,
//     reach the end offsets;
//  2. b leaves: the group rebalances to a alone, which consumes 200 more
//     (at least once: a rebalance may repeat uncommitted records);
//  3. a stops; 100 more are produced; c joins and consumes exactly
//     those, from the committed offsets on (no earlier record again).
func groupScenario(t *testing.T, nodes []*testNode, bootstrap []string, gc groupClient) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	topic, group := "grp-"+gc.name, "g-"+gc.name
	// Uncompressed: kafka-python decodes snappy (kgo's default) only with
	// python3-snappy, which Debian's python3-kafka does not pull in.
	cl := newClient(t, nodes[0], kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	adm := kadm.NewClient(cl)
	if resp, err := adm.CreateTopic(ctx, groupPartitions, 3, nil, topic); err != nil || resp.Err != nil {
		t.Fatalf("create %s: %v %v", topic, err, resp.Err)
	}
	waitTopicEverywhere(ctx, t, nodes, topic)
	out := make(chan consumed, 1024)
	col := newCollector(out)

	began := time.Now()
	a := gc.start(t, bootstrap, group, topic, "a", out)
	b := gc.start(t, bootstrap, group, topic, "b", out)
	waitClientGroup(ctx, t, adm, group, topic, 2)
	t.Logf("two members Stable after %v", time.Since(began).Round(time.Millisecond))
	mark := col.len()
	p1 := produceValues(ctx, t, cl, topic, "p1", 200)
	got := col.waitAll(ctx, t, "two members", mark, p1)
	byMember := map[string]int{}
	counts := map[string]int{}
	for _, r := range got {
		counts[r.value]++
		byMember[r.member]++
	}
	for v, n := range counts {
		if n != 1 {
			t.Fatalf("%s consumed %d times by a stable group (want once)", v, n)
		}
	}
	if byMember["a"] == 0 || byMember["b"] == 0 {
		t.Fatalf("consumed by member: %v, want both to have partitions", byMember)
	}
	if c := waitCommitted(ctx, t, adm, group, topic); c[0] != 50 {
		t.Fatalf("committed %v after phase 1", c)
	}

	began = time.Now()
	b.stop(t)
	stopped := time.Now()
	waitClientGroup(ctx, t, adm, group, topic, 1)
	t.Logf("b stopped in %v; a alone Stable %v later", stopped.Sub(began).Round(time.Millisecond), time.Since(stopped).Round(time.Millisecond))
	mark = col.len()
	p2 := produceValues(ctx, t, cl, topic, "p2", 200)
	for _, r := range col.waitAll(ctx, t, "after b left", mark, p2) {
		if r.member != "a" {
			t.Fatalf("member %s consumed %s after it left", r.member, r.value)
		}
	}
	waitCommitted(ctx, t, adm, group, topic)

	began = time.Now()
	a.stop(t)
	t.Logf("a stopped in %v", time.Since(began).Round(time.Millisecond))
	p3 := produceValues(ctx, t, cl, topic, "p3", 100)
	mark = col.len()
	began = time.Now()
	c := gc.start(t, bootstrap, group, topic, "c", out)
	got = col.waitAll(ctx, t, "restarted member", mark, p3)
	t.Logf("c consumed the 100 new records %v after it started", time.Since(began).Round(time.Millisecond))
	first := map[int32]int64{}
	for _, r := range got {
		if r.member != "c" {
			t.Fatalf("member %s consumed %s after it stopped", r.member, r.value)
		}
		if !strings.HasPrefix(r.value, "p3-") {
			t.Fatalf("restarted member consumed %s again (at %d/%d): it did not resume from the commit", r.value, r.partition, r.offset)
		}
		if f, ok := first[r.partition]; !ok || r.offset < f {
			first[r.partition] = r.offset
		}
	}
	for p, f := range first {
		if f != 100 {
			t.Fatalf("restarted member began partition %d at %d, want the committed 100", p, f)
		}
	}
	began = time.Now()
	if committed := waitCommitted(ctx, t, adm, group, topic); committed[3] != 125 {
		t.Fatalf("committed %v at the end", committed)
	}
	t.Logf("c's commits reached the end %v later", time.Since(began).Round(time.Millisecond))
	began = time.Now()
	c.stop(t)
	t.Logf("c stopped in %v", time.Since(began).Round(time.Millisecond))
}
