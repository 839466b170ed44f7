package partition

import (
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestRandomFailovers drives three replicas and a toy controller (clean
// elections from the ISR, AlterPartition checked by epochs) through random
// produces, fetches, ticks, flushes, crashes and restarts, and checks the
// product's promise after every step: a record acknowledged with acks=all is
// in every later leader's log, and no replica's committed prefix differs
// from the leader's. In sync mode a restart also loses the unflushed tail
// (power loss), and sometimes every replica loses power at once; in
// page-cache mode a restart is a process crash.
func TestRandomFailovers(t *testing.T) {
	seeds := 500
	if testing.Short() {
		seeds = 30
	}
	var truncations, elections, acked, powerLosses int
	for seed := range seeds {
		s := newSim(int64(seed))
		for i := 0; i < 600; i++ {
			s.step()
			if err := s.check(); err != nil {
				t.Fatalf("seed %d step %d (%s): %v\n%s", seed, i, s.last, err, s.dump())
			}
		}
		truncations, elections, acked = truncations+s.truncations, elections+s.elections, acked+len(s.acked)
		powerLosses += s.powerLosses
	}
	t.Logf("%d seeds: %d elections, %d truncations, %d power losses (sync mode), %d records acknowledged with acks=all",
		seeds, elections, truncations, powerLosses, acked)
	if truncations == 0 || elections <= seeds || acked == 0 || powerLosses == 0 {
		t.Errorf("the random walk no longer reaches failovers with divergence")
	}
}

type simNode struct {
	id      int32
	r       *Replica
	log     *fakeLog
	alive   bool
	bepoch  int64
	fetch   *FetchRequest
	prop    *Proposal
	answers map[uint64]FetchAnswer
}

type sim struct {
	rng    *rand.Rand
	cfg    Config
	nodes  []*simNode
	leader int32 // -1: none
	lepoch int32
	pepoch int32
	isr    []int32
	acked  map[int64]int32 // offset -> epoch of records acknowledged with acks=all
	req    uint64
	last   string
	// counters, to show the test reaches what it means to test
	truncations, elections, powerLosses int
}

func newSim(seed int64) *sim {
	rng := rand.New(rand.NewSource(seed))
	s := &sim{rng: rng, acked: map[int64]int32{}, isr: []int32{0, 1, 2}}
	s.cfg = Config{MinInsyncReplicas: 1 + rng.Intn(2), LagTicks: int64(2 + rng.Intn(3))}
	if rng.Intn(2) == 0 {
		s.cfg.Durability = Sync
	}
	for id := range int32(3) {
		cfg := s.cfg
		cfg.ID = id
		l := &fakeLog{}
		r, err := New(cfg, l, LogState{})
		if err != nil {
			panic(err)
		}
		s.nodes = append(s.nodes, &simNode{id: id, r: r, log: l, alive: true, bepoch: 1, answers: map[uint64]FetchAnswer{}})
	}
	s.elect()
	return s
}

func (s *sim) must(n *simNode, m Msg) {
	if err := n.r.Step(m); err != nil && !errors.Is(err, ErrStaleResponse) && !errors.Is(err, ErrStaleEpoch) {
		panic(fmt.Sprintf("n%d: %T: %v", n.id, m, err))
	}
	s.drain(n)
}

func (s *sim) drain(n *simNode) {
	for n.r.HasReady() {
		rd := n.r.Ready()
		if rd.Truncate != nil {
			if rd.Truncate.BelowHW >= 0 {
				// Elections here are clean: nothing committed may go.
				panic(fmt.Sprintf("n%d truncates below its HW: %+v", n.id, *rd.Truncate))
			}
			s.truncations++
			n.log.epochs = n.log.epochs[:rd.Truncate.Offset]
			n.log.flushed = min(n.log.flushed, rd.Truncate.Offset)
		}
		for _, a := range rd.FetchAnswers {
			n.answers[a.ReqID] = a
		}
		for _, c := range rd.Completed {
			if c.Err == nil && c.ReqID&1 == 1 { // odd ids are acks=all
				off, ep := int64(c.ReqID>>32), int32(c.ReqID>>1&0x7fffffff)
				s.acked[off] = ep
			}
		}
		if rd.AlterPartition != nil {
			n.prop = rd.AlterPartition
		}
		if rd.Fetch != nil {
			n.fetch = rd.Fetch
		}
		n.r.Advance(rd)
	}
}

// elect is the controller's clean election: the first live ISR member.
func (s *sim) elect() {
	var isr []int32
	for _, id := range s.isr {
		if s.nodes[id].alive {
			isr = append(isr, id)
		}
	}
	if len(isr) == 0 {
		s.leader = -1
		return
	}
	s.leader, s.isr = isr[0], isr
	s.elections++
	s.lepoch++
	s.pepoch++
	for _, n := range s.nodes {
		if !n.alive {
			continue
		}
		n.prop = nil
		if n.id == s.leader {
			s.must(n, BecomeLeader{LeaderEpoch: s.lepoch, PartitionEpoch: s.pepoch, ISR: slices.Clone(s.isr), Replicas: []int32{0, 1, 2}})
		} else {
			s.must(n, BecomeFollower{Leader: s.leader, LeaderEpoch: s.lepoch, PartitionEpoch: s.pepoch})
		}
	}
}

func (s *sim) step() {
	var live []*simNode
	for _, n := range s.nodes {
		if n.alive {
			live = append(live, n)
		}
	}
	switch k := s.rng.Intn(100); {
	case k < 25: // produce
		if s.leader < 0 {
			return
		}
		l := s.nodes[s.leader]
		acks := AcksLeader
		if s.rng.Intn(3) > 0 {
			acks = AcksAll
		}
		s.last = fmt.Sprintf("produce acks=%d at n%d", acks, l.id)
		if l.r.CheckProduce(acks) != nil {
			return
		}
		off := l.log.LogEndOffset()
		l.log.epochs = append(l.log.epochs, l.r.LeaderEpoch())
		id := uint64(off)<<32 | uint64(l.r.LeaderEpoch())<<1
		if acks == AcksAll {
			id |= 1
		}
		s.must(l, LocalAppend{ReqID: id, LastOffset: off, Acks: acks, Deadline: 1 << 40})
	case k < 65: // a fetch round trip
		n := live[s.rng.Intn(len(live))]
		if n.fetch == nil || !s.nodes[n.fetch.Leader].alive {
			return
		}
		s.last = fmt.Sprintf("n%d fetches from n%d at %d", n.id, n.fetch.Leader, n.fetch.FetchOffset)
		f, l := n.fetch, s.nodes[n.fetch.Leader]
		n.fetch = nil
		s.req++
		s.must(l, FollowerFetch{ReqID: s.req, Replica: n.id, BrokerEpoch: n.bepoch, FetchOffset: f.FetchOffset,
			LastFetchedEpoch: f.LastFetchedEpoch, CurrentLeaderEpoch: f.CurrentLeaderEpoch})
		a := l.answers[s.req]
		delete(l.answers, s.req)
		resp := FetchResponse{Seq: f.Seq, Err: a.Err, HW: a.HW, Diverging: a.Diverging}
		if a.Err == nil && a.Diverging == nil && n.r.ExpectsFetch(f.Seq) {
			if a.ReadFrom != n.log.LogEndOffset() {
				panic(fmt.Sprintf("n%d: leader reads from %d, log ends at %d", n.id, a.ReadFrom, n.log.LogEndOffset()))
			}
			n.log.epochs = append(n.log.epochs, l.log.epochs[a.ReadFrom:]...)
			resp.LEO = n.log.LogEndOffset()
		}
		s.must(n, resp)
	case k < 75: // flush
		n := live[s.rng.Intn(len(live))]
		s.last = fmt.Sprintf("n%d flushes", n.id)
		n.log.flushed = n.log.LogEndOffset()
		s.must(n, LocalFlush{Flushed: n.log.flushed})
	case k < 85:
		s.last = "tick"
		for _, n := range live {
			n.r.Tick()
			s.drain(n)
		}
	case k < 92: // the controller answers the leader's AlterPartition
		if s.leader < 0 || s.nodes[s.leader].prop == nil {
			return
		}
		l := s.nodes[s.leader]
		p := l.prop
		l.prop = nil
		s.last = fmt.Sprintf("controller answers %s", p)
		switch {
		case p.LeaderEpoch != s.lepoch:
			s.must(l, AlterPartitionResult{Err: kerr.FencedLeaderEpoch})
		case p.PartitionEpoch != s.pepoch:
			s.must(l, AlterPartitionResult{Err: kerr.InvalidUpdateVersion})
		default:
			for _, m := range p.NewISR {
				if !s.nodes[m.ID].alive || (m.BrokerEpoch >= 0 && m.BrokerEpoch != s.nodes[m.ID].bepoch) {
					s.must(l, AlterPartitionResult{Err: kerr.IneligibleReplica})
					return
				}
			}
			s.pepoch++
			s.isr = p.ids()
			s.must(l, AlterPartitionResult{LeaderEpoch: s.lepoch, PartitionEpoch: s.pepoch, ISR: slices.Clone(s.isr)})
		}
	case k < 93 && s.cfg.Durability == Sync:
		// A correlated power loss: every replica loses its unflushed tail
		// at once. Sync mode promises nothing acknowledged is lost.
		s.last = "power loss"
		for _, n := range s.nodes {
			s.restart(n, true)
		}
		s.powerLosses++
		s.leader = -1
		s.elect()
	case k < 96: // crash a replica; the controller fences it
		if len(live) < 2 {
			return
		}
		n := live[s.rng.Intn(len(live))]
		s.last = fmt.Sprintf("crash n%d", n.id)
		n.alive = false
		if n.id == s.leader || len(s.isr) > 1 && slices.Contains(s.isr, n.id) {
			if n.id != s.leader {
				// Fencing removes it from the ISR with a new partition
				// epoch; the leader keeps its epoch.
				s.isr = slices.DeleteFunc(slices.Clone(s.isr), func(id int32) bool { return id == n.id })
				s.pepoch++
				l := s.nodes[s.leader]
				l.prop = nil
				s.must(l, BecomeLeader{LeaderEpoch: s.lepoch, PartitionEpoch: s.pepoch, ISR: slices.Clone(s.isr), Replicas: []int32{0, 1, 2}})
				return
			}
			s.elect()
		}
	default: // restart a dead replica
		var dead []*simNode
		for _, n := range s.nodes {
			if !n.alive {
				dead = append(dead, n)
			}
		}
		if len(dead) == 0 {
			return
		}
		n := dead[s.rng.Intn(len(dead))]
		s.last = fmt.Sprintf("restart n%d", n.id)
		s.restart(n, s.cfg.Durability == Sync)
		if s.leader < 0 {
			if slices.Contains(s.isr, n.id) {
				s.elect() // the last ISR is back: a clean election
			} else {
				s.must(n, BecomeFollower{Leader: -1, LeaderEpoch: s.lepoch, PartitionEpoch: s.pepoch})
			}
			return
		}
		s.must(n, BecomeFollower{Leader: s.leader, LeaderEpoch: s.lepoch, PartitionEpoch: s.pepoch})
	}
}

// restart recreates n as after a crash, losing its unflushed tail if lose.
func (s *sim) restart(n *simNode, lose bool) {
	if lose {
		n.log.epochs = n.log.epochs[:n.log.flushed]
	}
	n.log.flushed = n.log.LogEndOffset()
	cfg := s.cfg
	cfg.ID = n.id
	r, err := New(cfg, n.log, LogState{LEO: n.log.LogEndOffset(), HW: min(n.r.HW(), n.log.LogEndOffset()), Flushed: n.log.flushed})
	if err != nil {
		panic(err)
	}
	n.r, n.alive, n.fetch, n.prop, n.answers = r, true, nil, nil, map[uint64]FetchAnswer{}
	n.bepoch++
}

func (s *sim) check() error {
	if s.leader < 0 {
		return nil
	}
	l := s.nodes[s.leader]
	for off, ep := range s.acked {
		if off >= l.log.LogEndOffset() || l.log.epochs[off] != ep {
			return fmt.Errorf("acknowledged record %d (epoch %d) is not in leader n%d's log", off, ep, l.id)
		}
	}
	for _, n := range s.nodes {
		hw := min(n.r.HW(), n.log.LogEndOffset(), l.log.LogEndOffset())
		if !slices.Equal(n.log.epochs[:hw], l.log.epochs[:hw]) {
			return fmt.Errorf("n%d's committed prefix (hw %d) differs from leader n%d's", n.id, hw, l.id)
		}
	}
	return nil
}

func (s *sim) dump() string {
	out := fmt.Sprintf("controller: leader=%d epoch=%d pepoch=%d isr=%v cfg=%+v\n", s.leader, s.lepoch, s.pepoch, s.isr, s.cfg)
	for _, n := range s.nodes {
		st := n.r.Status()
		out += fmt.Sprintf("n%d alive=%v %s epoch=%d leo=%d hw=%d flushed=%d isr=%v log: %s\n", n.id, n.alive, st.Role, st.LeaderEpoch, st.LEO, st.HW, st.Flushed, st.ISR, n.log)
	}
	return out
}
