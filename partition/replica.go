package partition

import (
	"fmt"
	"math"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// LogState is what the node knows of the local log when it creates the
// replica: log end, high watermark (checkpointed) and flushed offsets.
type LogState struct {
	LEO, HW, Flushed int64
}

// Replica is one partition replica's replication state machine. It is not
// safe for concurrent use: the node drives it from one goroutine (or under
// one lock) with Step, Tick, Ready and Advance.
type Replica struct {
	cfg Config
	log Log

	now            int64 // ticks
	role           Role
	leader         int32
	leaderEpoch    int32
	partitionEpoch int32
	replicas       []int32
	isr            []int32

	leo, hw, flushed int64
	brokers          map[int32]int64 // BrokerEpochs; nil until the first

	// leader
	epochStart int64 // log end when this epoch began
	followers  map[int32]*follower
	waiting    []pending
	inflight   *Proposal
	holdISR    bool  // a stale proposal was refused: wait for new metadata
	retryAt    int64 // no ISR proposal before this tick
	fenced     bool

	// follower
	fetchSeq     uint64 // last FetchRequest sent
	fetchPending bool   // fetchSeq awaits its response
	fetchHeld    bool   // fenced by the leader: wait for new metadata
	fetchAt      int64  // no fetch before this tick
	flushAsked   int64  // sync mode: the last Ready.Flush
	trunc        *Truncation
	damage       int64 // first offset of known damage in the own log, or -1 (corrupt.go)

	// outputs since the last Advance
	hwReported int64
	completed  []Completion
	answers    []FetchAnswer
	propose    *Proposal
	invHW      int64 // invariants: HW when the current leadership began
}

type follower struct {
	acked        int64 // fetch offset (page-cache) / fsynced offset (sync); -1: unknown
	brokerEpoch  int64
	caughtUp     int64 // tick it last was caught up with the leader's log end
	lastFetchLEO int64 // leader log end at its previous fetch
	lastFetchAt  int64
}

type pending struct {
	id       uint64
	last     int64
	acks     int16
	deadline int64
}

// New returns a follower replica without a leader; the node then steps the
// metadata's BecomeLeader or BecomeFollower.
func New(cfg Config, log Log, st LogState) (*Replica, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if st.LEO < 0 || st.HW < 0 || st.HW > st.LEO || st.Flushed < 0 || st.Flushed > st.LEO {
		return nil, fmt.Errorf("%w: log state %+v", ErrInvalidConfig, st)
	}
	return &Replica{
		cfg: cfg, log: log, role: Follower, leader: -1, leaderEpoch: -1, partitionEpoch: -1,
		leo: st.LEO, hw: st.HW, flushed: st.Flushed, hwReported: st.HW, damage: -1,
	}, nil
}

// Step applies one event. An error means the event was ignored (see the
// Err values); the replica stays consistent.
func (r *Replica) Step(m Msg) error {
	prevHW := r.hw
	var err error
	switch m := m.(type) {
	case BrokerEpochs:
		r.brokers = m.Epochs
	case BecomeLeader:
		err = r.becomeLeader(m)
	case BecomeFollower:
		err = r.becomeFollower(m)
	case LocalAppend:
		err = r.localAppend(m)
	case LocalFlush:
		r.localFlush(m)
	case FollowerFetch:
		r.followerFetch(m)
	case FetchResponse:
		err = r.fetchResponse(m)
	case AlterPartitionResult:
		err = r.alterPartitionResult(m)
	case LogCorrupt:
		r.logCorrupt(m)
	default:
		err = fmt.Errorf("%w: %T", ErrUnknownMsg, m)
	}
	r.check(prevHW)
	return err
}

// Tick advances the replica's clock by one tick: produce deadlines, the
// replica lag check, fetch retries. It is TickTo(Now()+1).
func (r *Replica) Tick() { r.TickTo(r.now + 1) }

// TickTo advances the replica's clock to tick now (nothing when now is
// not later) and does what fell due: produce requests past their deadline
// time out, an ISR member that has not caught up for longer than LagTicks
// is proposed for removal, a damaged leader resigns, a fetch held back
// by a backoff may go. A jump over ticks at which nothing was due
// (NextDue) ends as ticking one by one would: a driver need wake a
// replica only at its NextDue, and must bring its clock up to date
// (TickTo) before it steps an event, so that events are stamped with the
// time they happen.
func (r *Replica) TickTo(now int64) {
	if now <= r.now {
		return
	}
	prevHW := r.hw
	r.now = now
	if r.role == Leader {
		kept := r.waiting[:0]
		for _, p := range r.waiting {
			if p.deadline > 0 && p.deadline <= r.now {
				r.complete(p.id, kerr.RequestTimedOut)
				continue
			}
			kept = append(kept, p)
		}
		r.waiting = kept
		r.maybeShrinkISR()
		r.maybeResign()
	}
	r.check(prevHW)
}

// NextDue is the earliest tick after Now at which the clock alone may
// change the replica — a produce deadline, a follower's lag passing
// LagTicks, an ISR proposal's retry, a damaged leader's resignation, the
// end of a fetch backoff — or ok false when nothing is due until the next
// event. Until then TickTo changes nothing but the clock, so a driver
// need not wake the replica before it. It is never later than the first
// tick at which something happens (a test checks every script's ticks),
// but may be earlier: an early wake finds nothing to do. Each Step, Ready
// and Advance may change it.
func (r *Replica) NextDue() (tick int64, ok bool) {
	const never = math.MaxInt64
	due := int64(never)
	for _, p := range r.waiting {
		if p.deadline > 0 {
			due = min(due, p.deadline)
		}
	}
	if r.role == Leader && r.inflight == nil && !r.holdISR && !r.fenced {
		isr := int64(never)
		for _, id := range r.isr {
			if f := r.followers[id]; f != nil {
				isr = min(isr, f.caughtUp+r.cfg.LagTicks+1) // maybeShrinkISR
			}
		}
		if r.damage >= 0 && slices.ContainsFunc(r.isr, func(id int32) bool { return id != r.cfg.ID }) {
			isr = r.now + 1 // maybeResign
		}
		if isr != never {
			due = min(due, max(isr, r.retryAt))
		}
	}
	if r.role == Follower && r.fetchAt > r.now {
		due = min(due, r.fetchAt) // nextFetch
	}
	if due == never {
		return 0, false
	}
	return max(due, r.now+1), true
}

// CheckProduce says whether the node may append a produce request with acks
// now: nil, NOT_LEADER_OR_FOLLOWER, or NOT_ENOUGH_REPLICAS (acks=all while
// the ISR is below min.insync.replicas). On nil the node appends with
// LeaderEpoch() and steps LocalAppend without releasing the replica.
func (r *Replica) CheckProduce(acks int16) error {
	if r.role != Leader || r.fenced {
		return kerr.NotLeaderForPartition
	}
	if acks == AcksAll && len(r.isr) < r.cfg.minISR() {
		return kerr.NotEnoughReplicas
	}
	return nil
}

// CheckLeaderEpoch applies KIP-320 to the leader epoch a client sent with a
// Fetch, ListOffsets or OffsetForLeaderEpoch (-1: none): nil,
// FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH or NOT_LEADER_OR_FOLLOWER.
func (r *Replica) CheckLeaderEpoch(current int32) error {
	switch {
	case current >= 0 && current < r.leaderEpoch:
		return kerr.FencedLeaderEpoch
	case current > r.leaderEpoch:
		return kerr.UnknownLeaderEpoch
	case r.role != Leader || r.fenced:
		return kerr.NotLeaderForPartition
	}
	return nil
}

// CheckReadEpoch is CheckLeaderEpoch for a consumer's read, which a
// follower serves too (KIP-392: fetch from a follower, up to its high
// watermark): the epoch is checked the same way, and only a replica that
// is neither an unfenced leader nor a follower answers
// NOT_LEADER_OR_FOLLOWER.
func (r *Replica) CheckReadEpoch(current int32) error {
	switch {
	case current >= 0 && current < r.leaderEpoch:
		return kerr.FencedLeaderEpoch
	case current > r.leaderEpoch:
		return kerr.UnknownLeaderEpoch
	case r.role == Follower:
		return nil
	case r.role != Leader || r.fenced:
		return kerr.NotLeaderForPartition
	}
	return nil
}

// Fenced says whether this leader was told by the controller that a newer
// leader epoch exists: it acknowledges nothing until the metadata makes it
// leader again at a newer epoch or a follower.
func (r *Replica) Fenced() bool { return r.role == Leader && r.fenced }

// HW is the high watermark: consumers read only below it.
func (r *Replica) HW() int64 { return r.hw }

// Now is the replica's clock: the tick it was last brought to (Tick,
// TickTo).
func (r *Replica) Now() int64 { return r.now }

// LeaderEpoch is the replica's current leader epoch.
func (r *Replica) LeaderEpoch() int32 { return r.leaderEpoch }

// ExpectsFetch says whether the FetchRequest seq is the one the follower
// waits for: only then may the node append the response's records.
func (r *Replica) ExpectsFetch(seq uint64) bool {
	return r.role == Follower && r.fetchPending && seq == r.fetchSeq && r.trunc == nil
}

// Status returns a snapshot of the replica.
func (r *Replica) Status() Status {
	s := Status{
		Role: r.role, Leader: r.leader, LeaderEpoch: r.leaderEpoch, PartitionEpoch: r.partitionEpoch,
		ISR: slices.Clone(r.isr), LEO: r.leo, HW: r.hw, Flushed: r.flushed, Fenced: r.fenced,
	}
	if r.inflight != nil {
		s.PendingISR = r.inflight.ids()
	}
	for id, f := range r.followers {
		s.Followers = append(s.Followers, FollowerStatus{ID: id, Acked: f.acked, BehindTicks: r.now - f.caughtUp, BrokerEpoch: f.brokerEpoch})
	}
	slices.SortFunc(s.Followers, func(a, b FollowerStatus) int { return int(a.ID) - int(b.ID) })
	return s
}

// HasReady says whether Ready has something to do.
func (r *Replica) HasReady() bool {
	return r.hw != r.hwReported || r.trunc != nil || len(r.completed) > 0 ||
		len(r.answers) > 0 || r.propose != nil || r.nextFetch() != nil || r.flushWanted() > 0
}

// Ready returns what the node must do now. It does not change the replica:
// call Advance with it once done, before the next Step, Tick or Ready.
func (r *Replica) Ready() Ready {
	rd := Ready{
		HW: r.hw, HWChanged: r.hw != r.hwReported,
		FetchAnswers: r.answers, Completed: r.completed, AlterPartition: r.propose,
	}
	if r.trunc != nil {
		t := *r.trunc
		rd.Truncate = &t
	} else {
		rd.Fetch = r.nextFetch()
		rd.Flush = r.flushWanted()
	}
	return rd
}

// Advance tells the replica that the node did everything in rd.
func (r *Replica) Advance(rd Ready) {
	prevHW := r.hw
	r.hwReported = rd.HW
	// Drop only what rd carried, so that nothing is lost if the node broke
	// the contract and stepped between Ready and Advance.
	r.answers = r.answers[min(len(rd.FetchAnswers), len(r.answers)):]
	r.completed = r.completed[min(len(rd.Completed), len(r.completed)):]
	if len(r.answers) == 0 {
		// Reused: an idle follower's fetch, answered every poll, then
		// allocates no answer (node/replica's TestIdleFetchAllocatesNothing).
		r.answers = rd.FetchAnswers[:0]
	}
	if len(r.completed) == 0 {
		r.completed = nil
	}
	if r.propose == rd.AlterPartition {
		r.propose = nil
	}
	if t := rd.Truncate; t != nil && r.trunc != nil && *t == *r.trunc {
		if t.Fully {
			// Everything below the new start is gone from the log and
			// committed at the leader (retention only deletes below the HW).
			r.leo = r.log.LogEndOffset()
			r.hw, r.flushed, r.flushAsked = r.leo, r.leo, r.leo
		} else {
			r.leo = min(t.Offset, r.log.LogEndOffset())
		}
		r.hw = min(r.hw, r.leo)
		r.flushed = min(r.flushed, r.leo)
		r.flushAsked = min(r.flushAsked, r.leo)
		r.trunc = nil
		prevHW = r.hw
		if r.damage >= r.leo {
			r.damage = -1
		}
	}
	if rd.Flush > r.flushAsked {
		r.flushAsked = rd.Flush
	}
	if rd.Fetch != nil && r.role == Follower && rd.Fetch.Seq == r.fetchSeq+1 {
		r.fetchSeq = rd.Fetch.Seq
		r.fetchPending = true
	}
	r.check(prevHW)
}

// nextFetch is the FetchRequest a follower should send now, if any: one at
// a time, none while a truncation is pending or the leader fenced it, and in
// sync mode only once everything fetched is fsynced — so that the fetch
// offset the leader counts is the fsynced offset.
func (r *Replica) nextFetch() *FetchRequest {
	if r.role != Follower || r.leader < 0 || r.leader == r.cfg.ID || r.fetchPending || r.fetchHeld ||
		r.trunc != nil || r.now < r.fetchAt {
		return nil
	}
	if r.cfg.Durability == Sync && r.flushed < r.leo {
		return nil
	}
	return &FetchRequest{
		Seq: r.fetchSeq + 1, Leader: r.leader, FetchOffset: r.leo,
		CurrentLeaderEpoch: r.leaderEpoch, LastFetchedEpoch: r.log.LatestEpoch(),
	}
}

// flushWanted is the offset below which the node should fsync in sync mode
// (reported back with LocalFlush), or 0: everything appended and not yet
// asked for. The node may batch these (group commit).
func (r *Replica) flushWanted() int64 {
	if r.cfg.Durability != Sync || r.flushed >= r.leo || r.flushAsked >= r.leo {
		return 0
	}
	return r.leo
}

func (r *Replica) complete(id uint64, err error) {
	r.completed = append(r.completed, Completion{ReqID: id, Err: err})
}

func (r *Replica) localFlush(m LocalFlush) {
	if f := min(m.Flushed, r.leo); f > r.flushed {
		r.flushed = f
	}
	if r.role == Leader {
		r.advanceHW()
	}
}

// SetConfig changes the replica's configuration while it runs, as a topic
// config change (min.insync.replicas, sluice.durability,
// replica.lag.time.max.ms) does in Kafka: waiting acks=all requests that can
// no longer be satisfied fail, and the HW is recomputed (never backwards).
// The broker id cannot change.
func (r *Replica) SetConfig(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.ID != r.cfg.ID {
		return fmt.Errorf("%w: broker id %d, replica runs as %d", ErrInvalidConfig, cfg.ID, r.cfg.ID)
	}
	if cfg == r.cfg {
		return nil
	}
	prevHW := r.hw
	r.cfg = cfg
	if r.role == Leader {
		r.isrChanged()
	}
	r.check(prevHW)
	return nil
}
