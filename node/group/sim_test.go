package group

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRandom drives shards with random clients, clocks and write
// outcomes. It checks that nothing panics, that every response answers a
// request that was stepped and is answered once, at its version, that a
// tick before NextDue changes nothing, that the groups stay consistent,
// that in the end (every write done, the clock run out) every request was
// answered, and, in the runs where every write succeeds, that replaying
// what was written gives the offsets the shard has. (A failed write is
// undone in memory, but a write that timed out may still be in the log,
// and a failure followed by more writes to the same partition may leave
// memory and log apart until the next coordinator loads the log: Kafka's
// coordinator has the same limit.)
func TestRandom(t *testing.T) {
	runs := 150
	if testing.Short() {
		runs = 40
	}
	for seed := range runs {
		sim := newSim(t, uint64(seed))
		sim.run(400)
		if t.Failed() {
			t.Fatalf("seed %d failed", seed)
		}
	}
}

type simClient struct {
	name, group string
	instance    *string
	member      string
	gen         int32
	leader      bool
	peers       []string
	version     int16

	// KIP-848 clients (sim848_test.go).
	kip848 bool
	epoch  int32
	owned  tps
}

type sim struct {
	t       *testing.T
	rng     *rand.Rand
	s       *Shard
	cfg     Config
	now     time.Time
	id      uint64
	open    map[uint64]kmsg.Request
	pending []Append
	log     []logRec
	clients []*simClient
	groups  []string
	trace   []string
	fail    bool // some writes fail
}

func newSim(t *testing.T, seed uint64) *sim {
	rng := rand.New(rand.NewPCG(seed, 17))
	cfg := DefaultConfig()
	cfg.InitialRebalanceDelay = []time.Duration{0, 3 * time.Second}[rng.IntN(2)]
	cfg.MaxSize = []int{0, 3}[rng.IntN(2)]
	cfg.OffsetsRetention = time.Hour
	cfg.OffsetMetadataMaxBytes = 4
	x := &sim{t: t, rng: rng, cfg: cfg, now: t0, open: map[uint64]kmsg.Request{}, groups: []string{"g0", "g1", ""}, fail: seed%2 == 1}
	x.s = NewShard(0, cfg)
	for i := range 3 {
		if err := x.s.Replay(int64(i), offsetKey("g1", "t", int32(i)), offsetRecord("g1", "t", int32(i), offset{offset: 5}).Value); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		x.log = append(x.log, logRec{Record: offsetRecord("g1", "t", int32(i), offset{offset: 5}), pid: -1})
	}
	x.s.LoadDone(x.now)
	for i := range 6 {
		c := &simClient{name: fmt.Sprintf("c%d", i), group: x.groups[i%2], gen: -1, version: []int16{3, 5, 9}[rng.IntN(3)]}
		if i%3 == 0 {
			inst := fmt.Sprintf("i%d", i)
			c.instance = &inst
		}
		x.clients = append(x.clients, c)
	}
	x.add848Clients()
	return x
}

func (x *sim) pick(n int) int { return x.rng.IntN(n) }

func (x *sim) step(c *simClient, body kmsg.Request) {
	x.id++
	x.open[x.id] = body
	x.s.Step(x.now, Request{ID: x.id, ClientID: c.name, ClientHost: "h", Body: body})
	x.trace = append(x.trace, fmt.Sprintf("%s r%d %s %+v", x.now.Sub(t0), x.id, kmsg.NameForKey(body.Key()), body))
	x.drain()
}

func (x *sim) drain() {
	rd := x.s.Ready()
	for _, r := range rd.Responses {
		req, ok := x.open[r.ID]
		if !ok {
			x.t.Fatalf("response %d (%T) answers no open request", r.ID, r.Body)
		}
		delete(x.open, r.ID)
		if r.Body.Key() != req.Key() || r.Body.GetVersion() != req.GetVersion() {
			x.t.Fatalf("request %d: %T v%d answered by %T v%d", r.ID, req, req.GetVersion(), r.Body, r.Body.GetVersion())
		}
		x.learn(req, r.Body)
	}
	x.pending = append(x.pending, rd.Appends...)
	x.checkGroups()
}

// learn updates the client that sent req from its answer.
func (x *sim) learn(req kmsg.Request, resp kmsg.Response) {
	var c *simClient
	switch rq := req.(type) {
	case *kmsg.JoinGroupRequest:
		c = x.clientOf(rq.Group, rq.InstanceID, rq.MemberID)
		r := resp.(*kmsg.JoinGroupResponse)
		if c == nil {
			return
		}
		switch r.ErrorCode {
		case 0:
			c.member, c.gen, c.leader = r.MemberID, r.Generation, r.LeaderID == r.MemberID
			c.peers = c.peers[:0]
			for _, m := range r.Members {
				c.peers = append(c.peers, m.MemberID)
			}
		case codeMemberIDRequired:
			c.member = r.MemberID
		case codeUnknownMember, codeFenced:
			c.member, c.gen = "", -1
		}
	case *kmsg.ConsumerGroupHeartbeatRequest:
		x.learn848(rq, resp.(*kmsg.ConsumerGroupHeartbeatResponse))
	case *kmsg.HeartbeatRequest:
		if code := resp.(*kmsg.HeartbeatResponse).ErrorCode; code == codeUnknownMember || code == codeFenced {
			if c = x.clientOf(rq.Group, rq.InstanceID, rq.MemberID); c != nil {
				c.member, c.gen = "", -1
			}
		}
	}
}

func (x *sim) clientOf(group string, instance *string, member string) *simClient {
	for _, c := range x.clients {
		if c.group == group && (c.member == member || (instance != nil && c.instance != nil && *c.instance == *instance)) {
			return c
		}
	}
	return nil
}

// checkGroups checks the shard's invariants (whatever the build tag).
func (x *sim) checkGroups() {
	if err := x.s.checkInvariants(); err != nil {
		x.t.Fatalf("invariant: %v", err)
	}
}

func (x *sim) tick(d time.Duration) {
	to := x.now.Add(d)
	if due := x.s.NextDue(); due.IsZero() || due.After(to) {
		before := persistedState(x.s) + fmt.Sprint(x.s.Stats())
		x.now = to
		x.s.TickTo(to)
		rd := x.s.Ready()
		if len(rd.Appends)+len(rd.Responses) > 0 || persistedState(x.s)+fmt.Sprint(x.s.Stats()) != before {
			x.t.Fatalf("a tick before NextDue changed the shard")
		}
		return
	}
	x.now = to
	x.s.TickTo(to)
	x.drain()
}

// appended completes the oldest write, failing some.
func (x *sim) appended(fail bool) {
	if len(x.pending) == 0 {
		return
	}
	a := x.pending[0]
	x.pending = x.pending[1:]
	var err error
	if fail {
		err = []error{kerr.NotLeaderForPartition, kerr.RequestTimedOut, errors.New("io")}[x.pick(3)]
	} else {
		x.log = logAppend(x.log, a)
	}
	x.s.Appended(x.now, a.ID, err)
	x.trace = append(x.trace, fmt.Sprintf("%s appended %d %v", x.now.Sub(t0), a.ID, err))
	for _, r := range a.Records {
		x.trace = append(x.trace, "  "+fmtRecord(r))
	}
	x.drain()
}

func (x *sim) run(steps int) {
	for range steps {
		c := x.clients[x.pick(len(x.clients))]
		if c.kip848 && x.pick(100) < 70 {
			x.step848(c)
			continue
		}
		switch n := x.pick(100); {
		case n < 20:
			x.join(c)
		case n < 32:
			x.sync(c)
		case n < 44:
			x.heartbeat(c)
		case n < 48:
			x.leave(c)
		case n < 58:
			x.commit(c)
		case n < 62:
			x.txn(c)
		case n < 66:
			x.misc(c)
		case n < 82:
			x.tick(time.Duration(x.pick(8000)) * time.Millisecond)
		case n < 84:
			x.tick(time.Duration(x.pick(40)) * time.Minute)
		default:
			x.appended(x.fail && x.pick(10) == 0)
		}
	}
	for len(x.pending) > 0 {
		x.appended(false)
	}
	x.checkReplay()
	// Run the clock out: every waiting request must get its answer.
	for i := 0; i < 10000; i++ {
		for len(x.pending) > 0 {
			x.appended(false)
		}
		due := x.s.NextDue()
		if due.IsZero() {
			break
		}
		x.now = due
		x.s.TickTo(due)
		x.drain()
	}
	if len(x.open) > 0 {
		for id, r := range x.open {
			x.t.Errorf("request %d (%T) never answered", id, r)
		}
	}
	x.checkReplay()
}

func (x *sim) checkReplay() {
	if x.fail {
		return
	}
	r := NewShard(0, x.cfg)
	if err := replayLog(r, x.log); err != nil {
		x.t.Fatalf("replay: %v", err)
	}
	live, replayed := x.s.Stats().Offsets, r.Stats().Offsets
	if !reflect.DeepEqual(live, replayed) {
		x.t.Errorf("replayed offsets differ:\nlive     %v\nreplayed %v", live, replayed)
	}
	if a, b := pendingState(x.s), pendingState(r); a != b {
		x.t.Errorf("replayed pending transactional offsets differ:\nlive:\n%s\nreplayed:\n%s", a, b)
	}
	if a, b := consumerState(x.s), consumerState(r); a != b {
		x.t.Errorf("replayed consumer groups differ:\nlive:\n%s\nreplayed:\n%s", a, b)
	}
}

func (x *sim) protocols() []kmsg.JoinGroupRequestProtocol {
	var out []kmsg.JoinGroupRequestProtocol
	for _, name := range [][]string{{"range"}, {"range", "rr"}, {"rr", "range"}, {"rr"}}[x.pick(4)] {
		p := kmsg.NewJoinGroupRequestProtocol()
		m := kmsg.NewConsumerMemberMetadata()
		m.Topics = []string{"t", "u"}[:1+x.pick(2)]
		p.Name, p.Metadata = name, m.AppendTo(nil)
		out = append(out, p)
	}
	return out
}

func (x *sim) join(c *simClient) {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = c.version
	req.Group, req.MemberID = c.group, c.member
	if req.Version >= 5 {
		req.InstanceID = c.instance
	}
	if x.pick(10) == 0 {
		req.MemberID = ""
	}
	req.SessionTimeoutMillis = int32(6000 + x.pick(5000))
	req.RebalanceTimeoutMillis = int32(3000 + x.pick(15000))
	req.ProtocolType = "consumer"
	req.Protocols = x.protocols()
	x.step(c, req)
}

func (x *sim) sync(c *simClient) {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version = 5
	req.Group, req.MemberID, req.Generation = c.group, c.member, c.gen
	if c.version >= 5 {
		req.InstanceID = c.instance
	}
	if c.leader {
		for i, p := range append(c.peers, "stranger") {
			a := kmsg.NewSyncGroupRequestGroupAssignment()
			a.MemberID, a.MemberAssignment = p, []byte{byte(i)}
			req.GroupAssignment = append(req.GroupAssignment, a)
		}
	}
	x.step(c, req)
}

func (x *sim) heartbeat(c *simClient) {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.MemberID, req.Generation = c.group, c.member, c.gen
	if c.version >= 5 {
		req.InstanceID = c.instance
	}
	x.step(c, req)
}

func (x *sim) leave(c *simClient) {
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group = c.group
	if x.pick(2) == 0 {
		req.Version, req.MemberID = 1, c.member
	} else {
		req.Version = 5
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = c.member
		if c.version >= 5 {
			m.InstanceID = c.instance
		}
		req.Members = append(req.Members, m)
	}
	x.step(c, req)
}

func (x *sim) commit(c *simClient) {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = []int16{2, 7, 9}[x.pick(3)]
	req.Group, req.MemberID, req.Generation = c.group, c.member, c.gen
	if x.pick(3) == 0 {
		req.MemberID, req.Generation = "", -1
	}
	if req.Version >= 7 && c.version >= 5 {
		req.InstanceID = c.instance
	}
	for _, topic := range []string{"t", "u"}[:1+x.pick(2)] {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		for p := range int32(1 + x.pick(3)) {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = p, int64(x.pick(1000))
			meta := []string{"", "ok", "too long"}[x.pick(3)]
			rp.Metadata = &meta
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	x.step(c, req)
}

func (x *sim) misc(c *simClient) {
	g := x.groups[x.pick(len(x.groups))]
	switch x.pick(6) {
	case 0:
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = 8
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = g
		req.Groups = append(req.Groups, rg)
		x.step(c, req)
	case 1:
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Version = 5
		req.Groups = []string{g, "nope"}
		x.step(c, req)
	case 2:
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.Version = 2
		req.Groups = []string{g}
		x.step(c, req)
	case 3:
		req := kmsg.NewPtrOffsetDeleteRequest()
		req.Group = g
		rt := kmsg.NewOffsetDeleteRequestTopic()
		rt.Topic = []string{"t", "u"}[x.pick(2)]
		rp := kmsg.NewOffsetDeleteRequestTopicPartition()
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		x.step(c, req)
	case 4:
		_ = x.s.ListGroups([]string{"stable"}, nil)
		_ = maps.Clone(x.s.Stats().Groups)
	case 5:
		x.s.TopicsDeleted(x.now, []string{"u"})
		x.trace = append(x.trace, fmt.Sprintf("%s topics deleted", x.now.Sub(t0)))
		x.drain()
	}
}

// simProducers are the producer ids of the sim's transactions.
var simProducers = []int64{100, 101}

// txn is a TxnOffsetCommit of one of simProducers (its membership as the
// client's, or none), or the marker ending one's transaction: only when
// none of its TxnOffsetCommits is in flight, as a transaction coordinator
// writes markers only after the client's EndTxn, which comes after its
// TxnOffsetCommit was answered.
func (x *sim) txn(c *simClient) {
	pid := simProducers[x.pick(len(simProducers))]
	if x.pick(10) < 3 {
		for _, a := range x.pending {
			if a.Transactional && a.ProducerID == pid {
				return
			}
		}
		commit := x.pick(2) == 0
		x.log = append(x.log, logRec{pid: pid, marker: true, commit: commit})
		x.s.CompleteTxn(x.now, pid, commit)
		x.trace = append(x.trace, fmt.Sprintf("%s complete %d commit=%v", x.now.Sub(t0), pid, commit))
		x.drain()
		return
	}
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version = []int16{2, 3, 5}[x.pick(3)]
	req.Group, req.ProducerID, req.TransactionalID = c.group, pid, "tx"
	req.MemberID, req.Generation = c.member, c.gen
	if x.pick(3) == 0 || req.Version < 3 {
		req.MemberID, req.Generation = "", -1
	}
	if req.Version >= 3 && c.version >= 5 {
		req.InstanceID = c.instance
	}
	for _, topic := range []string{"t", "u"}[:1+x.pick(2)] {
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = topic
		for p := range int32(1 + x.pick(3)) {
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = p, int64(x.pick(1000))
			meta := []string{"", "ok", "too long"}[x.pick(3)]
			rp.Metadata = &meta
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	x.step(c, req)
}

// pendingState prints every group's pending transactional offsets.
func pendingState(s *Shard) string {
	var b strings.Builder
	for _, id := range sortedKeys(s.groups) {
		g := s.groups[id]
		for _, pid := range sortedKeys(g.txns) {
			for _, t := range []string{"t", "u"} {
				for p := range int32(3) {
					if o, ok := g.txns[pid][tp{t, p}]; ok {
						fmt.Fprintf(&b, "%s %d %s/%d=%d\n", id, pid, t, p, o.offset)
					}
				}
			}
		}
	}
	return b.String()
}
