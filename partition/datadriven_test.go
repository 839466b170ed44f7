package partition

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-log/sluice/segment"
)

// *segment.Log is the Log the node hands the replica.
var _ Log = (*segment.Log)(nil)

// TestDataDriven runs the scripts in testdata/: a few replicas, each with an
// in-memory log of record epochs, wired by the harness the way the node will
// wire them (fetches delivered to the leader and answered back, proposals
// answered as the controller would). Regenerate with -rewrite.
func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		h := &harness{t: t, nodes: map[int32]*tnode{}}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			h.t, h.d = t, d
			h.out.Reset()
			h.run()
			return h.out.String()
		})
	})
}

// fakeLog is one replica's log: the leader epoch of every record, and the
// flushed prefix. EndOffsetForEpoch answers as segment's epoch cache does.
type fakeLog struct {
	epochs  []int32
	flushed int64
}

// LogEndOffset is the offset after the last record.
func (l *fakeLog) LogEndOffset() int64 { return int64(len(l.epochs)) }

func (l *fakeLog) LatestEpoch() int32 {
	if len(l.epochs) == 0 {
		return UndefinedEpoch
	}
	return l.epochs[len(l.epochs)-1]
}

func (l *fakeLog) entries() []segment.EpochEntry {
	var es []segment.EpochEntry
	for off, e := range l.epochs {
		if len(es) == 0 || es[len(es)-1].Epoch != e {
			es = append(es, segment.EpochEntry{Epoch: e, StartOffset: int64(off)})
		}
	}
	return es
}

func (l *fakeLog) EndOffsetForEpoch(req int32) (int32, int64) {
	es := l.entries()
	if req == UndefinedEpoch || len(es) == 0 {
		return UndefinedEpoch, UndefinedOffset
	}
	if last := es[len(es)-1]; req == last.Epoch {
		return req, l.LogEndOffset()
	}
	hi := sort.Search(len(es), func(i int) bool { return es[i].Epoch > req })
	switch hi {
	case len(es):
		return UndefinedEpoch, UndefinedOffset
	case 0:
		return req, es[0].StartOffset
	}
	return es[hi-1].Epoch, es[hi].StartOffset
}

func (l *fakeLog) String() string {
	var b strings.Builder
	for i, e := range l.entries() {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "e%d@%d", e.Epoch, e.StartOffset)
	}
	if b.Len() == 0 {
		b.WriteString("empty")
	}
	return b.String()
}

type tnode struct {
	id          int32
	cfg         Config
	r           *Replica
	log         *fakeLog
	brokerEpoch int64
	fetch       *FetchRequest
	answers     map[uint64]FetchAnswer
	proposal    *Proposal
}

type harness struct {
	t     *testing.T
	d     *datadriven.TestData
	out   strings.Builder
	nodes map[int32]*tnode
	reqID uint64
}

func (h *harness) printf(format string, args ...any) { fmt.Fprintf(&h.out, format+"\n", args...) }

func (h *harness) arg(key string) (string, bool) {
	for _, a := range h.d.CmdArgs {
		if a.Key == key {
			return strings.Join(a.Vals, ","), true
		}
	}
	return "", false
}

func (h *harness) int(key string, def int64) int64 {
	s, ok := h.arg(key)
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		h.t.Fatalf("%s: %s=%q: %v", h.d.Pos, key, s, err)
	}
	return n
}

func (h *harness) ids(key string) []int32 {
	s, _ := h.arg(key)
	var out []int32
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			n, err := strconv.Atoi(f)
			if err != nil {
				h.t.Fatalf("%s: bad id list %q", h.d.Pos, s)
			}
			out = append(out, int32(n))
		}
	}
	return out
}

func (h *harness) node(key string) *tnode {
	n := h.nodes[int32(h.int(key, -1))]
	if n == nil {
		h.t.Fatalf("%s: no replica %s", h.d.Pos, key)
	}
	return n
}

// parseLog reads "1:5,2:3": 5 records of epoch 1, then 3 of epoch 2.
func (h *harness) parseLog(s string) []int32 {
	var epochs []int32
	for _, f := range strings.Split(s, ",") {
		if f == "" {
			continue
		}
		e, n, ok := strings.Cut(f, ":")
		ei, err1 := strconv.Atoi(e)
		ni, err2 := strconv.Atoi(n)
		if !ok || err1 != nil || err2 != nil {
			h.t.Fatalf("%s: bad log %q", h.d.Pos, s)
		}
		for range ni {
			epochs = append(epochs, int32(ei))
		}
	}
	return epochs
}

func errName(err error) string {
	if err == nil {
		return "NONE"
	}
	if ke, ok := err.(*kerr.Error); ok {
		return ke.Message
	}
	return err.Error()
}

func (h *harness) run() {
	switch h.d.Cmd {
	case "replica":
		h.newReplica()
	case "leader":
		n := h.node("id")
		h.step(n, BecomeLeader{
			LeaderEpoch: int32(h.int("epoch", 0)), PartitionEpoch: int32(h.int("pepoch", 0)),
			ISR: h.ids("isr"), Replicas: h.ids("replicas"),
		})
	case "follower":
		n := h.node("id")
		h.step(n, BecomeFollower{
			Leader: int32(h.int("leader", -1)), LeaderEpoch: int32(h.int("epoch", 0)), PartitionEpoch: int32(h.int("pepoch", 0)),
		})
	case "produce":
		h.produce()
	case "fetch":
		n := h.node("id")
		for i := h.int("n", 1); i > 0; i-- {
			if n.fetch == nil {
				h.printf("n%d: no fetch to send", n.id)
				break
			}
			h.deliverFetch(n)
		}
	case "fetch-raw":
		n := h.node("id")
		h.reqID++
		h.step(n, FollowerFetch{
			ReqID: h.reqID, Replica: int32(h.int("from", -1)), BrokerEpoch: h.int("broker-epoch", 1),
			FetchOffset: h.int("offset", 0), LastFetchedEpoch: int32(h.int("last-epoch", -1)),
			CurrentLeaderEpoch: int32(h.int("leader-epoch", -1)),
		})
	case "tick":
		for i := h.int("n", 1); i > 0; i-- {
			for _, n := range h.sorted() {
				if id, ok := h.arg("id"); ok && id != strconv.Itoa(int(n.id)) {
					continue
				}
				h.tick(n, n.r.Now()+1)
			}
		}
	case "tick-to":
		// tick-to id=N now=T: N's clock jumps to tick T, as a driver that
		// wakes a replica only when something is due moves it.
		h.tick(h.node("id"), h.int("now", 0))
	case "due":
		for _, n := range h.sorted() {
			if id, ok := h.arg("id"); ok && id != strconv.Itoa(int(n.id)) {
				continue
			}
			if due, ok := n.r.NextDue(); ok {
				h.printf("n%d: now=%d next due at %d", n.id, n.r.Now(), due)
			} else {
				h.printf("n%d: now=%d nothing due", n.id, n.r.Now())
			}
		}
	case "brokers":
		// brokers id=1 epochs=(2:1,3:4): broker 2 at epoch 1, broker 3 at 4.
		n := h.node("id")
		s, _ := h.arg("epochs")
		m := map[int32]int64{}
		for _, kv := range strings.Split(s, ",") {
			if k, v, ok := strings.Cut(kv, ":"); ok {
				ki, _ := strconv.Atoi(k)
				vi, _ := strconv.ParseInt(v, 10, 64)
				m[int32(ki)] = vi
			}
		}
		h.step(n, BrokerEpochs{Epochs: m})
	case "alter":
		h.alter()
	case "flush":
		n := h.node("id")
		n.log.flushed = min(h.int("to", n.log.LogEndOffset()), n.log.LogEndOffset())
		h.step(n, LocalFlush{Flushed: n.log.flushed})
	case "restart":
		h.restart()
	case "corrupt":
		// corrupt id=N offset=O: the node found a bad batch at O in N's log.
		h.step(h.node("id"), LogCorrupt{Offset: h.int("offset", 0)})
	case "status":
		for _, n := range h.sorted() {
			if id, ok := h.arg("id"); ok && id != strconv.Itoa(int(n.id)) {
				continue
			}
			s := n.r.Status()
			h.printf("n%d: %s epoch=%d pepoch=%d leader=%d leo=%d hw=%d flushed=%d isr=%v pending=%v fenced=%v log: %s",
				n.id, s.Role, s.LeaderEpoch, s.PartitionEpoch, s.Leader, s.LEO, s.HW, s.Flushed, s.ISR, s.PendingISR, s.Fenced, n.log)
		}
	default:
		h.t.Fatalf("%s: unknown command %q", h.d.Pos, h.d.Cmd)
	}
}

// tick brings n's clock to tick to and does what Ready then says. Every
// tick of every script also checks NextDue: a tick before it must change
// nothing but the clock.
func (h *harness) tick(n *tnode, to int64) {
	due, ok := n.r.NextDue()
	quiet := !ok || due > to
	before := quietState(n.r)
	n.r.TickTo(to)
	if after := quietState(n.r); quiet && after != before {
		h.t.Fatalf("%s: n%d: the tick to %d changed the replica, but NextDue said %d (ok %v):\nbefore %s\nafter  %s",
			h.d.Pos, n.id, to, due, ok, before, after)
	}
	h.drain(n)
}

// quietState is what a tick with nothing due must leave alone: the
// status but for how long followers have been behind, and whether Ready
// has work.
func quietState(r *Replica) string {
	s := r.Status()
	for i := range s.Followers {
		s.Followers[i].BehindTicks = 0
	}
	return fmt.Sprintf("%+v ready=%v", s, r.HasReady())
}

func (h *harness) sorted() []*tnode {
	var ns []*tnode
	for _, n := range h.nodes {
		ns = append(ns, n)
	}
	slices.SortFunc(ns, func(a, b *tnode) int { return int(a.id - b.id) })
	return ns
}

func (h *harness) newReplica() {
	id := int32(h.int("id", -1))
	cfg := Config{ID: id, MinInsyncReplicas: int(h.int("min-isr", 1)), LagTicks: h.int("lag", 5)}
	if s, ok := h.arg("durability"); ok {
		d, err := ParseDurability(s)
		if err != nil {
			h.t.Fatal(err)
		}
		cfg.Durability = d
	}
	s, _ := h.arg("log")
	l := &fakeLog{epochs: h.parseLog(s)}
	l.flushed = h.int("flushed", l.LogEndOffset())
	r, err := New(cfg, l, LogState{LEO: l.LogEndOffset(), HW: h.int("hw", 0), Flushed: l.flushed})
	if err != nil {
		h.printf("error: %v", err)
		return
	}
	h.nodes[id] = &tnode{id: id, cfg: cfg, r: r, log: l, brokerEpoch: h.int("broker-epoch", 1), answers: map[uint64]FetchAnswer{}}
	h.printf("n%d: leo=%d log: %s", id, l.LogEndOffset(), l)
}

// restart recreates a replica as after a crash: the unflushed tail is lost
// with lose-unflushed, the broker epoch grows, and it is a follower again.
func (h *harness) restart() {
	n := h.node("id")
	if _, ok := h.arg("lose-unflushed"); ok {
		n.log.epochs = n.log.epochs[:n.log.flushed]
	}
	n.log.flushed = n.log.LogEndOffset()
	st := n.r.Status()
	r, err := New(n.cfg, n.log, LogState{LEO: n.log.LogEndOffset(), HW: min(st.HW, n.log.LogEndOffset()), Flushed: n.log.flushed})
	if err != nil {
		h.t.Fatal(err)
	}
	n.r, n.fetch, n.proposal, n.answers = r, nil, nil, map[uint64]FetchAnswer{}
	n.brokerEpoch++
	h.printf("n%d: restarted with broker epoch %d, leo=%d log: %s", n.id, n.brokerEpoch, n.log.LogEndOffset(), n.log)
}

func (h *harness) produce() {
	n := h.node("id")
	acks := AcksAll
	if s, ok := h.arg("acks"); ok && s != "all" {
		a, _ := strconv.Atoi(s)
		acks = int16(a)
	}
	h.reqID++
	if err := n.r.CheckProduce(acks); err != nil {
		h.printf("n%d: produce req=%d refused: %s", n.id, h.reqID, errName(err))
		return
	}
	count := h.int("n", 1)
	first := n.log.LogEndOffset()
	for range count {
		n.log.epochs = append(n.log.epochs, n.r.LeaderEpoch())
	}
	h.printf("n%d: produce req=%d appended %d..%d", n.id, h.reqID, first, n.log.LogEndOffset()-1)
	h.step(n, LocalAppend{ReqID: h.reqID, LastOffset: n.log.LogEndOffset() - 1, Acks: acks, Deadline: h.int("deadline", 1000)})
}

func (h *harness) alter() {
	n := h.node("id")
	p := n.proposal
	if p == nil {
		h.printf("n%d: no proposal in flight", n.id)
		return
	}
	n.proposal = nil
	res := AlterPartitionResult{Proposal: p, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch + 1, ISR: p.ids()}
	if !slices.Contains(res.ISR, n.id) {
		res.LeaderEpoch++ // the leader resigned: the controller elected another
	}
	if s, ok := h.arg("err"); ok {
		res = AlterPartitionResult{Proposal: p, Err: kerr.TypedErrorForCode(h.code(s))}
	}
	h.step(n, res)
}

func (h *harness) code(name string) int16 {
	for c := int16(-1); c < 200; c++ {
		if e := kerr.ErrorForCode(c); e != nil {
			if ke, ok := e.(*kerr.Error); ok && ke.Message == name {
				return c
			}
		}
	}
	h.t.Fatalf("%s: unknown error %q", h.d.Pos, name)
	return 0
}

func (h *harness) step(n *tnode, m Msg) {
	if err := n.r.Step(m); err != nil {
		h.printf("n%d: step error: %v", n.id, err)
	}
	h.drain(n)
}

// deliverFetch sends n's fetch to its leader and the answer back, copying
// the records as segment.Log.AppendReplicated would.
func (h *harness) deliverFetch(n *tnode) {
	f := n.fetch
	n.fetch = nil
	l := h.nodes[f.Leader]
	if l == nil {
		h.t.Fatalf("%s: n%d fetches from unknown n%d", h.d.Pos, n.id, f.Leader)
	}
	h.reqID++
	id := h.reqID
	h.printf("n%d -> n%d: fetch offset=%d leader-epoch=%d last-epoch=%d", n.id, l.id, f.FetchOffset, f.CurrentLeaderEpoch, f.LastFetchedEpoch)
	h.step(l, FollowerFetch{
		ReqID: id, Replica: n.id, BrokerEpoch: n.brokerEpoch, FetchOffset: f.FetchOffset,
		LastFetchedEpoch: f.LastFetchedEpoch, CurrentLeaderEpoch: f.CurrentLeaderEpoch,
	})
	a, ok := l.answers[id]
	if !ok {
		h.t.Fatalf("%s: n%d did not answer the fetch", h.d.Pos, l.id)
	}
	delete(l.answers, id)
	resp := FetchResponse{Seq: f.Seq, Err: a.Err, HW: a.HW, Diverging: a.Diverging}
	if a.Err == nil && a.Diverging == nil {
		if !n.r.ExpectsFetch(f.Seq) {
			h.t.Fatalf("%s: n%d does not expect fetch %d", h.d.Pos, n.id, f.Seq)
		}
		if a.ReadFrom != n.log.LogEndOffset() {
			h.t.Fatalf("%s: leader reads from %d, n%d log ends at %d", h.d.Pos, a.ReadFrom, n.id, n.log.LogEndOffset())
		}
		n.log.epochs = append(n.log.epochs, l.log.epochs[a.ReadFrom:]...)
		resp.LEO = n.log.LogEndOffset()
	}
	h.step(n, resp)
}

func (h *harness) drain(n *tnode) {
	for i := 0; n.r.HasReady(); i++ {
		if i > 100 {
			h.t.Fatalf("%s: n%d: Ready does not settle", h.d.Pos, n.id)
		}
		rd := n.r.Ready()
		if rd.Truncate != nil {
			t := rd.Truncate
			lost := ""
			if t.BelowHW >= 0 {
				lost = fmt.Sprintf(" (below hw %d: committed records lost)", t.BelowHW)
			}
			h.printf("n%d: truncate to %d from %d%s", n.id, t.Offset, t.From, lost)
			n.log.epochs = n.log.epochs[:t.Offset]
			n.log.flushed = min(n.log.flushed, t.Offset)
		}
		for _, a := range rd.FetchAnswers {
			switch {
			case a.Err != nil:
				h.printf("n%d: answer fetch req=%d: %s", n.id, a.ReqID, errName(a.Err))
			case a.Diverging != nil:
				h.printf("n%d: answer fetch req=%d: diverging epoch=%d end=%d hw=%d", n.id, a.ReqID, a.Diverging.Epoch, a.Diverging.EndOffset, a.HW)
			default:
				h.printf("n%d: answer fetch req=%d: records from %d to %d hw=%d", n.id, a.ReqID, a.ReadFrom, n.log.LogEndOffset(), a.HW)
			}
			n.answers[a.ReqID] = a
		}
		for _, c := range rd.Completed {
			h.printf("n%d: produce req=%d done: %s", n.id, c.ReqID, errName(c.Err))
		}
		if rd.AlterPartition != nil {
			h.printf("n%d: %s", n.id, rd.AlterPartition)
			n.proposal = rd.AlterPartition
		}
		if rd.HWChanged {
			h.printf("n%d: hw=%d", n.id, rd.HW)
		}
		if rd.Flush > 0 {
			h.printf("n%d: flush below %d", n.id, rd.Flush)
		}
		if rd.Fetch != nil {
			n.fetch = rd.Fetch
		}
		n.r.Advance(rd)
	}
}
