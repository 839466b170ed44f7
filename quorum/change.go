package quorum

import "slices"

// Election says how PartitionChange.Build may choose a leader.
type Election int

const (
	// ElectClean keeps an acceptable current leader, else takes the first
	// acceptable replica, in replica order, that is in the ISR.
	ElectClean Election = iota
	// ElectPreferred is ElectClean but moves leadership to the preferred
	// replica (the first in replica order) when it is acceptable and in the ISR.
	ElectPreferred
	// ElectUnclean is ElectClean, falling back to the first acceptable replica
	// outside the ISR when no ISR member is acceptable. Such an election may
	// lose committed data; the record says so.
	ElectUnclean
)

// PartitionChange computes the next state of one partition, like Kafka's
// PartitionChangeBuilder. It is a pure function of its fields: no image, no
// clock, no I/O.
//
// Rules:
//   - The leader comes from the target ISR (see Election); when none is
//     acceptable and the election is not unclean, the leader is NoLeader.
//   - An unclean election makes the ISR just the new leader and records the
//     lost ISR in the record's Unclean field.
//   - The ISR is never empty: a target ISR that is empty keeps the current
//     ISR (Kafka keeps the last member of an offline partition, KIP-841).
//   - A stale ISR (Partition.StaleISR) elects no leader cleanly: only an
//     unclean election may choose its member (or anyone else). StaleIfKept
//     marks the ISR stale when the rule above keeps it.
//   - Every leader change (including to NoLeader) bumps the leader epoch;
//     every change bumps the partition epoch; no change gives no record.
type PartitionChange struct {
	TopicID   UUID
	Partition int32
	Current   Partition
	// Acceptable reports whether a broker may lead: registered, unfenced and
	// not shutting down.
	Acceptable func(id int32) bool
	// TargetISR is the wanted ISR; nil keeps the current one.
	TargetISR []int32
	Election  Election
	// StaleIfKept: the replica leaving the ISR restarted after an unclean
	// shutdown; if it has to stay as the last member, its ISR is stale.
	StaleIfKept bool
}

// Build returns the change record, or false when nothing would change.
func (c PartitionChange) Build() (*PartitionChangeRecord, bool) {
	cur := c.Current
	isr := cur.ISR
	if c.TargetISR != nil {
		isr = c.TargetISR
	}
	stale := cur.StaleISR
	if len(isr) == 0 {
		isr = cur.ISR
		stale = stale || c.StaleIfKept
	}
	isr = slices.Clone(isr)
	leader, unclean := c.electLeader(isr, stale)
	rec := &PartitionChangeRecord{
		TopicID: c.TopicID, Partition: c.Partition, Leader: leader, ISR: isr,
		LeaderEpoch: cur.LeaderEpoch, PartitionEpoch: cur.PartitionEpoch + 1,
		StaleISR: stale && leader == NoLeader,
	}
	if unclean {
		rec.ISR = []int32{leader}
		rec.Unclean = &UncleanElection{LeaderEpoch: cur.LeaderEpoch + 1, Leader: leader, LostISR: isr}
	}
	if leader != cur.Leader {
		rec.LeaderEpoch = cur.LeaderEpoch + 1
	} else if slices.Equal(rec.ISR, cur.ISR) && rec.StaleISR == cur.StaleISR {
		return nil, false
	}
	return rec, true
}

func (c PartitionChange) electLeader(isr []int32, stale bool) (leader int32, unclean bool) {
	ok := func(id int32) bool { return c.Acceptable != nil && c.Acceptable(id) }
	reps := c.Current.Replicas
	if stale {
		isr = nil // no clean choice
	}
	if c.Election == ElectPreferred && len(reps) > 0 && slices.Contains(isr, reps[0]) && ok(reps[0]) {
		return reps[0], false
	}
	if l := c.Current.Leader; l != NoLeader && slices.Contains(isr, l) && ok(l) {
		return l, false
	}
	for _, r := range reps {
		if slices.Contains(isr, r) && ok(r) {
			return r, false
		}
	}
	if c.Election == ElectUnclean {
		for _, r := range reps {
			if ok(r) {
				return r, true
			}
		}
	}
	return NoLeader, false
}
