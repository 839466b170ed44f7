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
//   - Assignment, when set, replaces the replicas and the reassignment in
//     progress (adding and removing replicas); the ISR keeps only members
//     of the new replicas (a cancellation drops the adding ones).
//   - A reassignment completes, in the same record, as soon as every
//     adding replica is in the target ISR and some ISR member is not
//     removing: the removing replicas leave the replicas and the ISR,
//     and a leader among them gives way to the first ISR member of the
//     new replicas (Kafka's completeReassignmentIfNeeded).
//   - The leader is chosen in the order of the (new) replicas.
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
	// Assignment is the wanted replicas and reassignment; nil keeps the
	// current ones. Its slices are not kept.
	Assignment *Assignment
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
	reps, adding, removing := cur.Replicas, cur.AddingReplicas, cur.RemovingReplicas
	if a := c.Assignment; a != nil {
		reps, adding, removing = a.Replicas, a.Adding, a.Removing
		isr = slices.DeleteFunc(isr, func(r int32) bool { return !slices.Contains(reps, r) })
	}
	if len(adding)+len(removing) > 0 && !slices.ContainsFunc(adding, func(r int32) bool { return !slices.Contains(isr, r) }) {
		if rest := without(isr, removing); len(rest) > 0 {
			reps, isr, adding, removing = without(reps, removing), rest, nil, nil
		}
	}
	leader, unclean := c.electLeader(reps, isr, stale)
	rec := &PartitionChangeRecord{
		TopicID: c.TopicID, Partition: c.Partition, Leader: leader, ISR: isr,
		LeaderEpoch: cur.LeaderEpoch, PartitionEpoch: cur.PartitionEpoch + 1,
		StaleISR: stale && leader == NoLeader,
	}
	if unclean {
		rec.ISR = []int32{leader}
		rec.Unclean = &UncleanElection{LeaderEpoch: cur.LeaderEpoch + 1, Leader: leader, LostISR: isr}
	}
	if !slices.Equal(reps, cur.Replicas) || !slices.Equal(adding, cur.AddingReplicas) || !slices.Equal(removing, cur.RemovingReplicas) {
		rec.Assignment = &Assignment{Replicas: slices.Clone(reps), Adding: slices.Clone(adding), Removing: slices.Clone(removing)}
	}
	if leader != cur.Leader {
		rec.LeaderEpoch = cur.LeaderEpoch + 1
	} else if slices.Equal(rec.ISR, cur.ISR) && rec.StaleISR == cur.StaleISR && rec.Assignment == nil {
		return nil, false
	}
	return rec, true
}

func (c PartitionChange) electLeader(reps, isr []int32, stale bool) (leader int32, unclean bool) {
	ok := func(id int32) bool { return c.Acceptable != nil && c.Acceptable(id) }
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
