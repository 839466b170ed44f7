package partition

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

func (r *Replica) becomeFollower(m BecomeFollower) error {
	if m.LeaderEpoch < r.leaderEpoch {
		return fmt.Errorf("%w: become follower at %d, replica at %d", ErrStaleEpoch, m.LeaderEpoch, r.leaderEpoch)
	}
	if r.role == Follower && m.LeaderEpoch == r.leaderEpoch && m.Leader == r.leader {
		r.partitionEpoch = max(r.partitionEpoch, m.PartitionEpoch)
		return nil
	}
	for _, p := range r.waiting {
		r.complete(p.id, kerr.NotLeaderForPartition)
	}
	r.waiting, r.followers, r.inflight, r.propose = nil, nil, nil, nil
	r.role, r.leader, r.leaderEpoch, r.partitionEpoch = Follower, m.Leader, m.LeaderEpoch, m.PartitionEpoch
	r.isr, r.fenced, r.holdISR = nil, false, false
	// A new leader: whatever fetch was in flight answers an old question.
	r.fetchPending, r.fetchHeld, r.fetchAt = false, false, 0
	// A truncation decided against the old leader's log is void; the first
	// fetch to the new one decides again. (The node has not applied it:
	// nothing is stepped between Ready and Advance.)
	r.trunc = nil
	r.repair() // a resigned leader cuts its damage now
	return nil
}

func (r *Replica) fetchResponse(m FetchResponse) error {
	if r.role != Follower || !r.fetchPending || m.Seq != r.fetchSeq {
		return fmt.Errorf("%w: fetch %d (waiting for %d: %v)", ErrStaleResponse, m.Seq, r.fetchSeq, r.fetchPending)
	}
	r.fetchPending = false
	switch {
	case m.Err != nil:
		switch {
		case m.Err == kerr.FencedLeaderEpoch:
			// Our leader epoch is stale: only new metadata helps.
			r.fetchHeld = true
		case m.Err == kerr.OffsetOutOfRange && m.LogStartOffset > r.leo:
			// Retention removed what we need next: start over at the
			// leader's log start, which is at or below its HW.
			r.trunc = &Truncation{Offset: m.LogStartOffset, From: r.leo, Fully: true, BelowHW: -1}
		default:
			r.fetchAt = r.now + max(r.cfg.FetchBackoffTicks, 1)
		}
		return nil
	case m.Diverging != nil:
		r.diverged(*m.Diverging)
		return nil
	}
	if m.LEO < r.leo {
		return fmt.Errorf("%w: fetch response LEO %d below %d", ErrOffsetRegress, m.LEO, r.leo)
	}
	r.leo = m.LEO
	if hw := min(m.HW, r.leo); hw > r.hw {
		r.hw = hw
	}
	return nil
}

// diverged finds where this log leaves the leader's, from the leader's
// epoch cache answer d and this log's own cache, the way Kafka's fetcher
// does (KIP-279/320): never from the follower's HW.
func (r *Replica) diverged(d EpochEndOffset) {
	var off int64
	switch fe, fend := r.log.EndOffsetForEpoch(d.Epoch); {
	case d.EndOffset < 0:
		// The leader's log has no epochs at all. Kafka falls back to the
		// follower's HW here; we never do (KIP-101): the leader's empty log
		// is authoritative. Our leader never answers this way.
		off = 0
	case d.Epoch == UndefinedEpoch, fe == UndefinedEpoch:
		off = min(d.EndOffset, r.leo)
	case fe != d.Epoch:
		// We lack the leader's epoch: cut at the end of our own older
		// epoch; the next fetch compares again.
		off = min(fend, r.leo)
	default:
		off = min(d.EndOffset, fend, r.leo)
	}
	if off >= r.leo {
		return // nothing to cut; fetch again with the same position
	}
	t := &Truncation{Offset: off, From: r.leo, BelowHW: -1}
	if off < r.hw {
		t.BelowHW = r.hw
	}
	r.trunc = t
}
