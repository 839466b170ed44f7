package partition

import (
	"fmt"
	"slices"
)

// check panics if the replica broke an invariant; it runs only with the
// invariants build tag. prevHW is the HW before the event.
func (r *Replica) check(prevHW int64) {
	if !invariantsOn {
		return
	}
	if err := r.checkInvariants(prevHW); err != nil {
		panic(fmt.Sprintf("partition: invariant: replica %d (%s, epoch %d, leo %d, hw %d, isr %v): %v",
			r.cfg.ID, r.role, r.leaderEpoch, r.leo, r.hw, r.isr, err))
	}
}

func (r *Replica) checkInvariants(prevHW int64) error {
	if r.hw < 0 || r.hw > r.leo || r.flushed < 0 || r.flushed > r.leo {
		return fmt.Errorf("offsets out of order: hw %d flushed %d", r.hw, r.flushed)
	}
	if r.role != Leader {
		if len(r.waiting) != 0 || r.inflight != nil {
			return fmt.Errorf("a follower with %d waiting produces / a proposal", len(r.waiting))
		}
		return nil
	}
	if r.hw < prevHW || r.hw < r.invHW {
		return fmt.Errorf("HW moved backwards from %d (leadership began at %d)", prevHW, r.invHW)
	}
	if !slices.Contains(r.isr, r.cfg.ID) {
		return fmt.Errorf("the leader is not in its ISR")
	}
	if r.inflight != nil && !slices.Contains(r.inflight.ids(), r.cfg.ID) && r.damage < 0 {
		// Only a leader with a damaged log resigns (corrupt.go).
		return fmt.Errorf("proposal %v drops the leader", r.inflight)
	}
	if r.hw > prevHW {
		if len(r.isr) < r.cfg.minISR() {
			return fmt.Errorf("HW advanced to %d with ISR below min.insync %d", r.hw, r.cfg.minISR())
		}
		members := slices.Clone(r.isr)
		if r.inflight != nil {
			members = append(members, r.inflight.ids()...)
		}
		for _, id := range members {
			acked := r.ownAcked()
			if f := r.followers[id]; f != nil {
				acked = f.acked
			} else if id != r.cfg.ID {
				return fmt.Errorf("ISR member %d is not a replica", id)
			}
			if acked < r.hw {
				return fmt.Errorf("HW advanced to %d past ISR member %d at %d", r.hw, id, acked)
			}
		}
	}
	for i, p := range r.waiting {
		if p.last >= r.leo || (i > 0 && p.last < r.waiting[i-1].last) {
			return fmt.Errorf("waiting produce %d up to %d out of order (leo %d)", p.id, p.last, r.leo)
		}
	}
	return nil
}
