package partition

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

func (r *Replica) becomeLeader(m BecomeLeader) error {
	if m.LeaderEpoch < r.leaderEpoch {
		return fmt.Errorf("%w: become leader at %d, replica at %d", ErrStaleEpoch, m.LeaderEpoch, r.leaderEpoch)
	}
	if r.role == Leader && m.LeaderEpoch == r.leaderEpoch {
		// Same leadership, new partition state from the controller.
		if m.PartitionEpoch <= r.partitionEpoch {
			return nil
		}
		r.partitionEpoch, r.isr, r.replicas = m.PartitionEpoch, slices.Clone(m.ISR), slices.Clone(m.Replicas)
		r.inflight, r.holdISR = nil, false
		r.syncFollowers()
		r.isrChanged()
		return nil
	}
	wasLeader := r.role == Leader
	r.role, r.leader, r.leaderEpoch, r.partitionEpoch = Leader, r.cfg.ID, m.LeaderEpoch, m.PartitionEpoch
	r.isr, r.replicas = slices.Clone(m.ISR), slices.Clone(m.Replicas)
	r.inflight, r.propose, r.holdISR, r.fenced, r.retryAt = nil, nil, false, false, 0
	r.trunc, r.fetchPending, r.fetchHeld = nil, false, false
	r.epochStart = r.leo
	r.followers = nil
	r.syncFollowers()
	if !wasLeader {
		r.waiting = nil
	}
	r.invHW = r.hw
	r.isrChanged()
	return nil
}

// syncFollowers makes the follower table match the assigned replicas. A new
// entry starts as Kafka resets followers on a leader change: nothing
// acknowledged, and a full lag period to fetch before it counts as lagging.
func (r *Replica) syncFollowers() {
	if r.followers == nil {
		r.followers = map[int32]*follower{}
	}
	for id := range r.followers {
		if !slices.Contains(r.replicas, id) {
			delete(r.followers, id)
		}
	}
	for _, id := range r.replicas {
		if id != r.cfg.ID && r.followers[id] == nil {
			r.followers[id] = &follower{acked: -1, brokerEpoch: AnyBrokerEpoch, caughtUp: r.now, lastFetchLEO: -1}
		}
	}
}

// isrChanged runs after the committed ISR changed: acks=all requests that
// can no longer be satisfied by min.insync.replicas fail now, and the HW is
// recomputed.
func (r *Replica) isrChanged() {
	if len(r.isr) < r.cfg.minISR() {
		kept := r.waiting[:0]
		for _, p := range r.waiting {
			if p.acks == AcksAll {
				r.complete(p.id, kerr.NotEnoughReplicasAfterAppend)
				continue
			}
			kept = append(kept, p)
		}
		r.waiting = kept
	}
	r.advanceHW()
}

func (r *Replica) localAppend(m LocalAppend) error {
	if r.role != Leader || r.fenced {
		if m.Acks != AcksNone {
			r.complete(m.ReqID, kerr.NotLeaderForPartition)
		}
		return nil
	}
	if m.LastOffset < r.leo {
		return fmt.Errorf("%w: append up to %d, log end %d", ErrOffsetRegress, m.LastOffset, r.leo)
	}
	r.leo = m.LastOffset + 1
	switch {
	case m.Acks == AcksNone:
	case m.Acks == AcksLeader && r.cfg.Durability == PageCache:
		r.complete(m.ReqID, nil)
	case m.Acks == AcksAll && len(r.isr) < r.cfg.minISR():
		// The node skipped CheckProduce; answer as Kafka does up front.
		r.complete(m.ReqID, kerr.NotEnoughReplicas)
	default:
		r.waiting = append(r.waiting, pending{id: m.ReqID, last: m.LastOffset, acks: m.Acks, deadline: m.Deadline})
	}
	r.advanceHW()
	return nil
}

// acked is the offset the leader itself counts with.
func (r *Replica) ownAcked() int64 {
	if r.cfg.Durability == Sync {
		return r.flushed
	}
	return r.leo
}

// advanceHW recomputes the HW over the maximal ISR and completes the
// produce requests it (or the leader's fsync) satisfies.
func (r *Replica) advanceHW() {
	if r.role != Leader || r.fenced {
		return
	}
	in := HWInput{Current: r.hw, Acked: map[int32]int64{r.cfg.ID: r.ownAcked()}, ISR: r.isr, MinISR: r.cfg.minISR()}
	for id, f := range r.followers {
		if f.acked >= 0 {
			in.Acked[id] = f.acked
		}
	}
	if r.inflight != nil {
		in.Pending = r.inflight.ids()
	}
	r.hw = HighWatermark(in)
	kept := r.waiting[:0]
	for _, p := range r.waiting {
		switch {
		case p.acks == AcksAll && r.hw > p.last:
			r.complete(p.id, nil)
		case p.acks == AcksLeader && r.flushed > p.last:
			r.complete(p.id, nil)
		default:
			kept = append(kept, p)
		}
	}
	r.waiting = kept
}

// fence stops a leader that learned a newer leader epoch exists: it
// acknowledges nothing more until the metadata catches up.
func (r *Replica) fence() {
	if r.role != Leader || r.fenced {
		return
	}
	r.fenced = true
	for _, p := range r.waiting {
		r.complete(p.id, kerr.NotLeaderForPartition)
	}
	r.waiting = nil
}

func (r *Replica) followerFetch(m FollowerFetch) {
	a := r.answerFetch(m)
	a.ReqID = m.ReqID
	r.answers = append(r.answers, a)
}

func (r *Replica) answerFetch(m FollowerFetch) FetchAnswer {
	if m.CurrentLeaderEpoch >= 0 {
		switch {
		case m.CurrentLeaderEpoch < r.leaderEpoch:
			return FetchAnswer{Err: kerr.FencedLeaderEpoch}
		case m.CurrentLeaderEpoch > r.leaderEpoch:
			// The fetcher knows metadata this replica has not applied
			// yet, or claims to: either way only the metadata changes
			// leadership (Kafka answers the same and does nothing else).
			// Fencing here let any one packet take the partition
			// offline until a restart.
			return FetchAnswer{Err: kerr.UnknownLeaderEpoch}
		}
	}
	if r.role != Leader || r.fenced {
		return FetchAnswer{Err: kerr.NotLeaderForPartition}
	}
	f := r.followers[m.Replica]
	if f == nil || !r.brokerEpochValid(m.Replica, m.BrokerEpoch, f) {
		// Not an assigned replica (or ourselves), or not the current
		// incarnation of an eligible broker: refused as Kafka refuses a
		// stale broker epoch, and nothing is acknowledged.
		return FetchAnswer{Err: kerr.NotLeaderForPartition}
	}
	if m.LastFetchedEpoch != UndefinedEpoch {
		e, end := r.EndOffsetForEpoch(m.LastFetchedEpoch)
		if e < m.LastFetchedEpoch || end < m.FetchOffset {
			return FetchAnswer{HW: r.hw, Diverging: &EpochEndOffset{Epoch: e, EndOffset: end}}
		}
	}
	if m.FetchOffset < 0 || m.FetchOffset > r.leo {
		return FetchAnswer{Err: kerr.OffsetOutOfRange, HW: r.hw}
	}
	// The fetch offset is what the follower acknowledges: in sync mode it
	// sends a fetch only once everything below it is fsynced.
	f.acked = m.FetchOffset
	if m.BrokerEpoch >= 0 {
		f.brokerEpoch = m.BrokerEpoch
	}
	switch {
	case m.FetchOffset >= r.leo:
		f.caughtUp = r.now
	case f.lastFetchLEO >= 0 && m.FetchOffset >= f.lastFetchLEO:
		f.caughtUp = max(f.caughtUp, f.lastFetchAt)
	}
	f.lastFetchLEO, f.lastFetchAt = r.leo, r.now
	r.maybeExpandISR(m.Replica, f)
	r.advanceHW()
	return FetchAnswer{HW: r.hw, ReadFrom: m.FetchOffset}
}

// brokerEpochValid says whether a replica fetch from id with broker epoch
// e may count. Once BrokerEpochs came, e must be the registered epoch of an
// eligible broker (registered, unfenced, not shutting down; KIP-903), so a
// fenced broker, an older incarnation and a fetch without an epoch
// (AnyBrokerEpoch) acknowledge nothing. Kafka lets fenced brokers fetch
// and refuses only older epochs; a refused follower here fetches again
// once the metadata lists it. Before BrokerEpochs (tests), only an epoch
// older than the one the follower last fetched with is refused.
func (r *Replica) brokerEpochValid(id int32, e int64, f *follower) bool {
	if r.brokers != nil {
		want, ok := r.brokers[id]
		return ok && e == want
	}
	return e < 0 || e >= f.brokerEpoch
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch (KIP-101/279) for this
// replica; the node serves the OffsetForLeaderEpoch API with it. A leader
// answers from its epoch cache as if the current epoch were in it from the
// log end at which it became leader: Kafka assigns the epoch then,
// segment.Log only on the first append, and without this a follower whose
// last epoch falls between the two would get no answer.
func (r *Replica) EndOffsetForEpoch(epoch int32) (int32, int64) {
	if r.role != Leader {
		return r.log.EndOffsetForEpoch(epoch)
	}
	if epoch >= r.leaderEpoch {
		return r.leaderEpoch, r.leo
	}
	latest := r.log.LatestEpoch()
	if latest < r.leaderEpoch && epoch > latest {
		if latest == UndefinedEpoch {
			return epoch, r.epochStart
		}
		return latest, r.epochStart
	}
	return r.log.EndOffsetForEpoch(epoch)
}

// canPropose: one AlterPartition in flight at most, none while fenced or
// waiting for metadata after a stale one.
func (r *Replica) canPropose() bool {
	return r.role == Leader && r.inflight == nil && !r.holdISR && !r.fenced && r.now >= r.retryAt
}

// maybeExpandISR proposes adding a follower that reached the HW and the
// start of this leader epoch (so it holds everything committed, even if it
// restarted with a lost tail; DESIGN.md, KIP-966) and, once BrokerEpochs
// came, is eligible with the broker epoch it fetches with (KIP-841/903).
func (r *Replica) maybeExpandISR(id int32, f *follower) {
	if slices.Contains(r.isr, id) || !r.canPropose() || f.acked < r.hw || f.acked < r.epochStart {
		return
	}
	if r.brokers != nil {
		if e, ok := r.brokers[id]; !ok || (f.brokerEpoch >= 0 && f.brokerEpoch != e) {
			return // fenced, shutting down, or fetching as an older incarnation
		}
	}
	r.proposeISR(append(slices.Clone(r.isr), id))
}

// maybeShrinkISR proposes removing the followers that have not caught up
// with the leader's log end for longer than LagTicks.
func (r *Replica) maybeShrinkISR() {
	if !r.canPropose() {
		return
	}
	lagging := func(id int32) bool {
		f := r.followers[id]
		return f != nil && r.now-f.caughtUp > r.cfg.LagTicks
	}
	if !slices.ContainsFunc(r.isr, lagging) {
		return // the common case, on every event: allocate nothing
	}
	var keep []int32
	for _, id := range r.isr {
		if !lagging(id) {
			keep = append(keep, id)
		}
	}
	r.proposeISR(keep)
}

func (r *Replica) proposeISR(isr []int32) {
	p := &Proposal{LeaderEpoch: r.leaderEpoch, PartitionEpoch: r.partitionEpoch}
	for _, id := range isr {
		be := AnyBrokerEpoch
		if f := r.followers[id]; f != nil {
			be = f.brokerEpoch
		}
		p.NewISR = append(p.NewISR, ISRMember{ID: id, BrokerEpoch: be})
	}
	r.inflight, r.propose = p, p
}

func (r *Replica) alterPartitionResult(m AlterPartitionResult) error {
	if r.role != Leader || r.inflight == nil || (m.Proposal != nil && m.Proposal != r.inflight) {
		return fmt.Errorf("%w: AlterPartition result", ErrStaleResponse)
	}
	r.inflight = nil
	if m.Err != nil {
		switch m.Err {
		case kerr.FencedLeaderEpoch, kerr.NotLeaderForPartition:
			r.fence()
		case kerr.InvalidUpdateVersion:
			r.holdISR = true // our partition epoch is stale: wait for metadata
		default:
			r.retryAt = r.now + 1 // e.g. INELIGIBLE_REPLICA: re-decide later
		}
		r.advanceHW()
		return nil
	}
	if m.LeaderEpoch > r.leaderEpoch {
		r.fence()
		return nil
	}
	if m.LeaderEpoch == r.leaderEpoch && m.PartitionEpoch > r.partitionEpoch {
		r.partitionEpoch, r.isr = m.PartitionEpoch, slices.Clone(m.ISR)
	}
	r.isrChanged()
	return nil
}
