package quorum

import (
	"fmt"
	"slices"
)

// CheckInvariants verifies the structural invariants of an image: ISRs are
// subsets of the replicas, empty only without a leader (ELR), ELR and
// last-known ELR disjoint from them, a leader is in its ISR, ids and indexes
// agree. Replay keeps them; the FSM checks them after every entry when built
// with -tags invariants and panics, with context, on a violation.
func (im *Image) CheckInvariants() error {
	if err := im.checkImage(); err != nil {
		return err
	}
	return im.checkIndex()
}

// checkImage is CheckInvariants without the comparison of the partition
// indexes with a scan: for an image whose indexes were just built by one
// (a snapshot read).
func (im *Image) checkImage() error {
	if len(im.topicsByID) != len(im.Topics) {
		return fmt.Errorf("quorum invariant: %d topic ids for %d topics", len(im.topicsByID), len(im.Topics))
	}
	for id, b := range im.Brokers {
		if b.ID != id || b.Epoch > im.LastBrokerEpoch || b.Epoch <= 0 {
			return fmt.Errorf("quorum invariant: broker %d: %+v (last epoch %d)", id, *b, im.LastBrokerEpoch)
		}
	}
	for name, t := range im.Topics {
		if t.Name != name || t.ID == (UUID{}) || im.topicsByID[t.ID] != name {
			return fmt.Errorf("quorum invariant: topic %q has name %q id %s", name, t.Name, t.ID)
		}
		for i, p := range t.Partitions {
			if err := p.check(); err != nil {
				return fmt.Errorf("quorum invariant: %s/%d: %v: %s", name, i, err, p)
			}
		}
	}
	return nil
}

func (p Partition) check() error {
	if len(p.Replicas) == 0 {
		return fmt.Errorf("empty replicas")
	}
	if len(p.ISR) == 0 && p.Leader != NoLeader {
		return fmt.Errorf("empty ISR with leader %d", p.Leader)
	}
	for i, r := range p.ELR {
		if !slices.Contains(p.Replicas, r) || slices.Contains(p.ELR[:i], r) || slices.Contains(p.ISR, r) {
			return fmt.Errorf("ELR member %d not a replica, repeated or in the ISR", r)
		}
	}
	for i, r := range p.LastKnownELR {
		if !slices.Contains(p.Replicas, r) || slices.Contains(p.LastKnownELR[:i], r) || slices.Contains(p.ISR, r) || slices.Contains(p.ELR, r) {
			return fmt.Errorf("last-known ELR member %d not a replica, repeated, or in the ISR or ELR", r)
		}
	}
	for i, r := range p.Replicas {
		if slices.Contains(p.Replicas[:i], r) {
			return fmt.Errorf("replica %d repeated", r)
		}
	}
	for i, r := range p.ISR {
		if !slices.Contains(p.Replicas, r) || slices.Contains(p.ISR[:i], r) {
			return fmt.Errorf("ISR member %d not a replica or repeated", r)
		}
	}
	if p.Leader != NoLeader && !slices.Contains(p.ISR, p.Leader) {
		return fmt.Errorf("leader %d not in ISR", p.Leader)
	}
	if p.StaleISR && (p.Leader != NoLeader || len(p.ISR) != 1) {
		return fmt.Errorf("stale ISR with leader %d, ISR %v", p.Leader, p.ISR)
	}
	for _, r := range p.AddingReplicas {
		if !slices.Contains(p.Replicas, r) || slices.Contains(p.RemovingReplicas, r) {
			return fmt.Errorf("adding replica %d not a replica or also removing", r)
		}
	}
	for _, r := range p.RemovingReplicas {
		if !slices.Contains(p.Replicas, r) {
			return fmt.Errorf("removing replica %d not a replica", r)
		}
	}
	if p.Reassigning() && len(p.TargetReplicas()) == 0 {
		return fmt.Errorf("a reassignment to no replicas")
	}
	if p.LeaderEpoch < 0 || p.PartitionEpoch < p.LeaderEpoch {
		return fmt.Errorf("epochs leader=%d partition=%d", p.LeaderEpoch, p.PartitionEpoch)
	}
	return nil
}
