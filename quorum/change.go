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
//   - Without ELR the ISR is never empty: a target ISR that is empty keeps
//     the current ISR (Kafka keeps the last member of an offline
//     partition, KIP-841). A stale ISR (Partition.StaleISR) elects no
//     leader cleanly: only an unclean election may choose its member (or
//     anyone else). StaleIfKept marks the ISR stale when this rule keeps it.
//   - With ELR (KIP-966, elr.go) the ISR may become empty. While the
//     target ISR is smaller than MinISR, the replicas leaving the ISR join
//     the eligible leader replicas, and those of UncleanShutdown leave
//     them for the last-known ones; both are cleared once the ISR has
//     MinISR members. With an empty ISR the leader is elected from the
//     ELR, in replica order, and the ISR becomes just that leader.
//   - An unclean election takes the safest acceptable replica: a member
//     of a stale ISR or of the last-known ELR (they held every committed
//     record before an unclean restart), then any other; it clears the
//     ELR and last-known ELR.
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
	// ELR turns on eligible leader replicas (eligible.leader.replicas.version
	// 1); without it the ELR and last-known ELR are cleared.
	ELR bool
	// MinISR is the topic's min.insync.replicas (0 counts as 1); used
	// only with ELR.
	MinISR int
	// UncleanShutdown are brokers that registered after an unclean
	// shutdown: they may have lost records, so they leave the ELR.
	UncleanShutdown []int32
}

// Build returns the change record, or false when nothing would change.
func (c PartitionChange) Build() (*PartitionChangeRecord, bool) {
	cur := c.Current
	isr := cur.ISR
	if c.TargetISR != nil {
		isr = c.TargetISR
	}
	stale := cur.StaleISR
	elr, lke := cur.ELR, cur.LastKnownELR
	curISR := cur.ISR
	if c.ELR && stale {
		// A stale ISR from before eligible leader replicas: its member
		// restarted uncleanly, which makes it a last-known one.
		lke = union(lke, cur.ISR)
		isr = without(isr, cur.ISR)
		curISR, stale = nil, false
	}
	if len(isr) == 0 && !c.ELR {
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
	if c.ELR {
		elr, lke = c.eligible(reps, curISR, isr, elr, lke)
	} else {
		elr, lke = nil, nil
	}
	leader, unclean := c.electLeader(reps, isr, elr, lke, stale)
	rec := &PartitionChangeRecord{
		TopicID: c.TopicID, Partition: c.Partition, Leader: leader, ISR: isr,
		LeaderEpoch: cur.LeaderEpoch, PartitionEpoch: cur.PartitionEpoch + 1,
		StaleISR: stale && leader == NoLeader,
	}
	switch {
	case unclean:
		rec.ISR = []int32{leader}
		rec.Unclean = &UncleanElection{LeaderEpoch: cur.LeaderEpoch + 1, Leader: leader, LostISR: inOrder(reps, union(isr, union(elr, lke)))}
		elr, lke = nil, nil
	case leader != NoLeader && !slices.Contains(isr, leader):
		// Elected from the ELR: the ISR was empty.
		rec.ISR = []int32{leader}
		elr = without(elr, rec.ISR)
	}
	rec.ELR, rec.LastKnownELR = nilIfEmpty(elr), nilIfEmpty(lke)
	if !slices.Equal(reps, cur.Replicas) || !slices.Equal(adding, cur.AddingReplicas) || !slices.Equal(removing, cur.RemovingReplicas) {
		rec.Assignment = &Assignment{Replicas: slices.Clone(reps), Adding: slices.Clone(adding), Removing: slices.Clone(removing)}
	}
	if leader != cur.Leader {
		rec.LeaderEpoch = cur.LeaderEpoch + 1
	} else if slices.Equal(rec.ISR, cur.ISR) && rec.StaleISR == cur.StaleISR && rec.Assignment == nil &&
		slices.Equal(rec.ELR, cur.ELR) && slices.Equal(rec.LastKnownELR, cur.LastKnownELR) {
		return nil, false
	}
	return rec, true
}

// electLeader picks the leader: the current one or the first acceptable
// replica in the ISR (or, with an empty ISR, in the ELR); failing that, an
// unclean election takes the safest acceptable replica: a member of a
// stale ISR or the last-known ELR before any other.
func (c PartitionChange) electLeader(reps, isr, elr, lke []int32, stale bool) (leader int32, unclean bool) {
	ok := func(id int32) bool { return c.Acceptable != nil && c.Acceptable(id) }
	var safest []int32
	if stale {
		safest, isr = isr, nil // no clean choice
	}
	valid := func(id int32) bool {
		return ok(id) && (slices.Contains(isr, id) || len(isr) == 0 && slices.Contains(elr, id))
	}
	if c.Election == ElectPreferred && len(reps) > 0 && valid(reps[0]) {
		return reps[0], false
	}
	if l := c.Current.Leader; l != NoLeader && valid(l) {
		return l, false
	}
	for _, r := range reps {
		if valid(r) {
			return r, false
		}
	}
	if c.Election == ElectUnclean {
		for _, set := range [][]int32{safest, lke, reps} {
			for _, r := range reps {
				if slices.Contains(set, r) && ok(r) {
					return r, true
				}
			}
		}
	}
	return NoLeader, false
}
