package quorum

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// waitFor polls cond until it holds or the deadline passes (no sleeps: a
// ticker paces the polling).
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		<-tick.C
	}
}

type testNode struct {
	id       int32
	dir      string
	addr     string
	c        *Controller
	restored atomic.Int32
	applied  atomic.Int64
	stream   streamView
}

// streamView is what a node keeps from the change stream alone: the leader
// and leader epoch of every partition.
type streamView struct {
	mu      sync.Mutex
	topics  map[UUID]string
	leaders map[string]string // "topic/partition" -> "leader@epoch"
}

func (v *streamView) apply(ch Change) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if ch.Restored || v.leaders == nil {
		v.topics, v.leaders = map[UUID]string{}, map[string]string{}
	}
	if ch.Restored {
		for name, t := range ch.Image.Topics {
			v.topics[t.ID] = name
			for i, p := range t.Partitions {
				v.leaders[fmt.Sprintf("%s/%d", name, i)] = fmt.Sprintf("%d@%d", p.Leader, p.LeaderEpoch)
			}
		}
		return
	}
	for _, r := range ch.Records {
		switch r := r.(type) {
		case *CreateTopicRecord:
			v.topics[r.ID] = r.Name
			for i, p := range r.Partitions {
				v.leaders[fmt.Sprintf("%s/%d", r.Name, i)] = fmt.Sprintf("%d@%d", p.Leader, p.LeaderEpoch)
			}
		case *PartitionChangeRecord:
			v.leaders[fmt.Sprintf("%s/%d", v.topics[r.TopicID], r.Partition)] = fmt.Sprintf("%d@%d", r.Leader, r.LeaderEpoch)
		case *RemoveTopicRecord:
			for k := range v.leaders {
				if strings.HasPrefix(k, r.Name+"/") {
					delete(v.leaders, k)
				}
			}
			delete(v.topics, r.ID)
		}
	}
}

// matches reports whether the stream view agrees with the image.
func (v *streamView) matches(im *Image) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.leaders) != im.PartitionCount() {
		return false
	}
	for name, t := range im.Topics {
		for i, p := range t.Partitions {
			if v.leaders[fmt.Sprintf("%s/%d", name, i)] != fmt.Sprintf("%d@%d", p.Leader, p.LeaderEpoch) {
				return false
			}
		}
	}
	return true
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func (n *testNode) start(t *testing.T, ln net.Listener, voters []Voter, tweak func(*Config)) {
	t.Helper()
	if ln == nil {
		var err error
		// Restart on the same address the peers know.
		deadline := time.Now().Add(5 * time.Second)
		for ln, err = net.Listen("tcp", n.addr); err != nil; ln, err = net.Listen("tcp", n.addr) {
			if time.Now().After(deadline) {
				t.Fatalf("relisten %s: %v", n.addr, err)
			}
		}
	}
	cfg := Config{
		NodeID: n.id, Dir: n.dir, Listener: ln, InitialVoters: voters, ClusterID: "test-cluster",
		// Raft timeouts well above a loaded 2-core machine's scheduling
		// stalls (other suites run alongside): a 150 ms lease made leaders
		// step down mid-commit under load, failing tests with "leadership
		// lost while committing log".
		HeartbeatTimeout: time.Second, ElectionTimeout: time.Second,
		LeaderLeaseTimeout: 500 * time.Millisecond, CommitTimeout: 5 * time.Millisecond,
		ApplyTimeout: 5 * time.Second,
		OnApply: func(ch Change) {
			if ch.Restored {
				n.restored.Add(1)
			}
			n.applied.Add(int64(len(ch.Records)))
			n.stream.apply(ch)
		},
	}
	if tweak != nil {
		tweak(&cfg)
	}
	c, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	n.c = c
	n.addr = c.Addr()
}

func (n *testNode) stop(t *testing.T) {
	t.Helper()
	if n.c != nil {
		if err := n.c.Close(); err != nil {
			t.Errorf("close node %d: %v", n.id, err)
		}
		n.c = nil
	}
}

func startQuorum(t *testing.T, size int, tweak func(*Config)) []*testNode {
	t.Helper()
	var nodes []*testNode
	var voters []Voter
	var lns []net.Listener
	for i := 0; i < size; i++ {
		ln := listen(t)
		n := &testNode{id: int32(i + 1), dir: t.TempDir(), addr: ln.Addr().String()}
		nodes = append(nodes, n)
		lns = append(lns, ln)
		voters = append(voters, Voter{ID: n.id, Addr: n.addr})
	}
	for i, n := range nodes {
		n.start(t, lns[i], voters, tweak)
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			n.stop(t)
		}
	})
	return nodes
}

func leaderOf(t *testing.T, nodes []*testNode) *testNode {
	t.Helper()
	var leader *testNode
	waitFor(t, 10*time.Second, "a leader", func() bool {
		for _, n := range nodes {
			if n.c != nil && n.c.IsLeader() {
				leader = n
				return true
			}
		}
		return false
	})
	return leader
}

func followerOf(nodes []*testNode, leader *testNode) *testNode {
	for _, n := range nodes {
		if n != leader && n.c != nil {
			return n
		}
	}
	return nil
}

func imageJSON(t *testing.T, im *Image) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteSnapshot(&b, im, 0); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// waitSameImage waits until every running node holds the same image as ref.
func waitSameImage(t *testing.T, nodes []*testNode, ref *testNode) string {
	t.Helper()
	var want string
	waitFor(t, 10*time.Second, "identical images, and change streams that agree with them", func() bool {
		want = imageJSON(t, ref.c.Image())
		for _, n := range nodes {
			if n.c == nil {
				continue
			}
			im := n.c.Image()
			if imageJSON(t, im) != want || !n.stream.matches(im) {
				return false
			}
		}
		return true
	})
	return want
}

func propose(t *testing.T, n *testNode, cmd Command) any {
	t.Helper()
	reply, _ := proposeRetry(t, n, cmd)
	return reply
}

// proposeRetry retries a command whose outcome is unknown (leadership lost
// mid-commit on a loaded machine) and says whether it did.
func proposeRetry(t *testing.T, n *testNode, cmd Command) (reply any, retried bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		reply, err := n.c.Propose(ctx, cmd)
		if err == nil {
			return reply, retried
		}
		if !errors.Is(err, ErrOutcomeUnknown) || ctx.Err() != nil {
			t.Fatalf("node %d: %T: %v", n.id, cmd, err)
		}
		t.Logf("node %d: %T: %v; retrying", n.id, cmd, err)
		retried = true
	}
}

func registerBrokers(t *testing.T, via *testNode, ids ...int32) {
	t.Helper()
	for _, id := range ids {
		r := propose(t, via, &RegisterBroker{ID: id, Rack: fmt.Sprintf("r%d", id%2)}).(*RegisterBrokerReply)
		propose(t, via, &UnfenceBroker{ID: id, Epoch: r.Epoch})
	}
}

func createTopics(t *testing.T, via *testNode, prefix string, n int) {
	t.Helper()
	cmd := &CreateTopics{}
	for i := 0; i < n; i++ {
		cmd.Topics = append(cmd.Topics, TopicSpec{Name: fmt.Sprintf("%s%d", prefix, i), Partitions: 3, ReplicationFactor: 3})
	}
	reply, retried := proposeRetry(t, via, cmd)
	for _, r := range reply.(*TopicsReply).Topics {
		if r.Code != 0 && !(retried && r.Code == kerr.TopicAlreadyExists.Code) {
			t.Fatalf("create %s: %s", r.Name, r.Message)
		}
	}
}

func TestQuorumFailoverAndRestart(t *testing.T) {
	nodes := startQuorum(t, 3, nil)
	leader := leaderOf(t, nodes)
	follower := followerOf(nodes, leader)

	// Commands sent to a follower travel to the leader over TCP.
	registerBrokers(t, follower, 1, 2, 3, 4)
	createTopics(t, follower, "a", 5)
	reply := propose(t, follower, &CreateTopics{Topics: []TopicSpec{{Name: "a0", Partitions: 1, ReplicationFactor: 1}}}).(*TopicsReply)
	if reply.Topics[0].Code != 36 { // TOPIC_ALREADY_EXISTS
		t.Fatalf("duplicate create: %+v", reply.Topics[0])
	}
	// A rejected command comes back over the wire as its kerr error.
	_, err := follower.c.Propose(context.Background(), &FenceBroker{ID: 1, Epoch: 999})
	if ErrorCode(err) != 77 { // STALE_BROKER_EPOCH
		t.Fatalf("stale fence via follower: %v", err)
	}
	want := waitSameImage(t, nodes, leader)
	if im := leader.c.Image(); im.ClusterID != "test-cluster" || len(im.Topics) != 5 || len(im.Brokers) != 4 {
		t.Fatalf("image:\n%s", im.Describe(""))
	}

	// Kill the active controller: another one takes over with the same image.
	old := leader
	old.stop(t)
	leader = leaderOf(t, nodes)
	if leader == old {
		t.Fatal("old leader still leads")
	}
	if got := imageJSON(t, leader.c.Image()); got != want {
		t.Fatalf("new leader's image differs:\n%s\nwant\n%s", got, want)
	}
	createTopics(t, followerOf(nodes, leader), "b", 3)
	propose(t, leader, &FenceBroker{ID: 2, Epoch: AnyEpoch})
	waitSameImage(t, nodes, leader)

	// The old leader restarts from its directory and catches up.
	old.start(t, nil, nil, nil)
	waitSameImage(t, nodes, leader)
	if im := old.c.Image(); len(im.Topics) != 8 || !im.Brokers[2].Fenced {
		t.Fatalf("restarted node's image:\n%s", im.Describe(""))
	}
}

func TestSnapshotInstallToNonvoter(t *testing.T) {
	nodes := startQuorum(t, 3, func(c *Config) { c.TrailingLogs = 2; c.SnapshotThreshold = 1 << 20 })
	leader := leaderOf(t, nodes)
	registerBrokers(t, leader, 1, 2, 3)
	for i := 0; i < 6; i++ {
		createTopics(t, leader, fmt.Sprintf("s%d-", i), 4)
	}
	waitSameImage(t, nodes, leader)
	for _, n := range nodes {
		if err := n.c.Snapshot(); err != nil {
			t.Fatalf("snapshot on %d: %v", n.id, err)
		}
	}
	createTopics(t, leader, "after", 2)

	// A broker joins as a non-voter through a follower; the log it needs was
	// compacted, so it must install the snapshot, then replay the tail.
	b := &testNode{id: 10, dir: t.TempDir()}
	b.start(t, listen(t), nil, nil)
	t.Cleanup(func() { b.stop(t) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := followerOf(nodes, leader).c.AddNonvoter(ctx, b.id, b.addr); err != nil {
		t.Fatal(err)
	}
	// A broker joining by itself, knowing only the controller addresses
	// (a follower first: it follows the NOT_CONTROLLER leader hint).
	b2 := &testNode{id: 11, dir: t.TempDir()}
	b2.start(t, listen(t), nil, nil)
	t.Cleanup(func() { b2.stop(t) })
	seeds := []string{followerOf(nodes, leader).addr, leader.addr}
	if err := b2.c.Join(ctx, seeds); err != nil {
		t.Fatal(err)
	}
	all := append(nodes, b, b2)
	waitSameImage(t, all, leader)
	if b.restored.Load() == 0 {
		t.Fatal("the non-voter did not install a snapshot")
	}
	if b.c.IsLeader() {
		t.Fatal("a non-voter leads")
	}
	// A non-voter can propose too (forwarded to the leader).
	createTopics(t, b, "from-broker", 1)
	waitSameImage(t, all, leader)
}

func TestRestartFromDisk(t *testing.T) {
	nodes := startQuorum(t, 1, nil)
	n := nodes[0]
	leaderOf(t, nodes)
	registerBrokers(t, n, 1, 2, 3)
	createTopics(t, n, "x", 10)
	if err := n.c.Snapshot(); err != nil {
		t.Fatal(err)
	}
	createTopics(t, n, "y", 10) // after the snapshot: replayed from the log
	propose(t, n, &AllocateProducerIDs{BrokerID: 1, BrokerEpoch: AnyEpoch})
	want := imageJSON(t, n.c.Image())
	n.stop(t)
	n.start(t, nil, []Voter{{ID: 1, Addr: n.addr}}, nil)
	waitFor(t, 10*time.Second, "the restarted image", func() bool {
		im := n.c.Image()
		return imageJSON(t, im) == want && n.stream.matches(im)
	})
	if n.restored.Load() == 0 {
		t.Fatal("the restart did not start from the snapshot")
	}
}

func TestFSMSnapshotRestore(t *testing.T) {
	h := newHarness()
	for id := int32(1); id <= 4; id++ {
		for _, cmd := range []Command{&RegisterBroker{ID: id, Rack: fmt.Sprint(id % 2)}, &UnfenceBroker{ID: id, Epoch: AnyEpoch}} {
			recs, _, err := Plan(h.im, h.pol, cmd)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				if err := h.im.Replay(r); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	recs, _, _ := Plan(h.im, h.pol, &CreateTopics{Topics: []TopicSpec{{Name: "t", Partitions: 8, ReplicationFactor: 3, Configs: map[string]string{"retention.ms": "1"}}}})
	for _, r := range recs {
		if err := h.im.Replay(r); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if err := WriteSnapshot(&buf, h.im, 42); err != nil {
		t.Fatal(err)
	}
	f := NewFSM(nil)
	if err := f.Restore(nopCloser{&buf}); err != nil {
		t.Fatal(err)
	}
	if imageJSON(t, f.Image()) != imageJSON(t, h.im) || f.AppliedIndex() != 42 {
		t.Fatalf("restored image differs")
	}
	// The restored image keeps working: its topic-id index was rebuilt.
	if f.Image().TopicByID(h.im.Topics["t"].ID) == nil {
		t.Fatal("topic id index lost")
	}
	js, _ := json.Marshal(h.im)
	if _, _, err := ReadSnapshot(bytes.NewReader(js)); err == nil {
		t.Fatal("a snapshot without version decoded")
	}
}

type nopCloser struct{ *bytes.Buffer }

func (nopCloser) Close() error { return nil }

// TestFullQuorumRestart stops every voter and starts them again from their
// directories: the quorum elects a leader and every image is the one before.
func TestFullQuorumRestart(t *testing.T) {
	nodes := startQuorum(t, 3, nil)
	leader := leaderOf(t, nodes)
	registerBrokers(t, leader, 1, 2, 3)
	createTopics(t, leader, "r", 4)
	if err := nodes[0].c.Snapshot(); err != nil { // one node restarts from a snapshot
		t.Fatal(err)
	}
	propose(t, leader, &FenceBroker{ID: 3, Epoch: AnyEpoch})
	want := waitSameImage(t, nodes, leader)
	for _, n := range nodes {
		n.stop(t)
	}
	for _, n := range nodes {
		n.start(t, nil, nil, nil)
	}
	leader = leaderOf(t, nodes)
	if got := waitSameImage(t, nodes, leader); got != want {
		t.Fatalf("image after a full restart:\n%s\nwant\n%s", got, want)
	}
	reply, retried := proposeRetry(t, followerOf(nodes, leader), &CreateTopics{Topics: []TopicSpec{{Name: "after", Partitions: 1, ReplicationFactor: 2}}})
	if r := reply.(*TopicsReply).Topics[0]; r.Code != 0 && !(retried && r.Code == kerr.TopicAlreadyExists.Code) {
		t.Fatal(r.Message)
	}
}
