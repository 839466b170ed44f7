package quorum

import "slices"

// Eligible leader replicas (KIP-966).
//
// The high watermark does not advance while the ISR is smaller than
// min.insync.replicas (partition.HighWatermark), so a replica that leaves
// the ISR then still holds every committed record: it is an eligible
// leader replica (ELR), and when the ISR empties (its last member fenced)
// the controller elects the leader from the ELR instead of leaving the
// partition offline or electing uncleanly. A replica that restarts after
// an unclean shutdown (RegisterBroker's clean-shutdown detection by
// broker epoch) may have lost its unflushed tail and leaves the ELR for
// the last-known ELR, which only an unclean election uses, before any
// other replica. Once the ISR has min.insync.replicas members again both
// are cleared: the high watermark may move past what they hold.
//
// eligible.leader.replicas.version (Policy.EligibleLeaderReplicasVersion)
// turns it on. Kafka makes it a feature finalized by the quorum; here it
// is still a controller setting, to be set alike on every controller
// (feature records, features.go, came later: finalizing it there, with
// the setting as its bootstrap level, is the next step). At 0 the rules are the earlier ones: the ISR
// keeps its last member, marked stale after an unclean restart.

// ELRVersion is the highest eligible.leader.replicas.version this build
// supports.
const ELRVersion = 1

// eligible returns the ELR and last-known ELR after the ISR goes from
// curISR to isr, as Kafka's PartitionChangeBuilder: the candidates are
// the current ELR and the current ISR; the ELR is those out of the new
// ISR that did not restart uncleanly, the last-known ELR the rest, with
// the earlier last-known ones. Both are in replica order and only hold
// replicas of reps.
func (c PartitionChange) eligible(reps, curISR, isr, elr, lke []int32) ([]int32, []int32) {
	if len(isr) >= max(c.MinISR, 1) {
		return nil, nil
	}
	cand := union(elr, curISR)
	newELR := inOrder(reps, without(without(cand, isr), c.UncleanShutdown))
	newLKE := inOrder(reps, without(without(union(cand, lke), isr), newELR))
	return newELR, newLKE
}

// union returns a new slice of a followed by the members of b not in a.
func union(a, b []int32) []int32 {
	out := slices.Clone(a)
	for _, r := range b {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// inOrder returns the members of reps that are in set, in the order of
// reps; nil when there are none.
func inOrder(reps, set []int32) []int32 {
	var out []int32
	for _, r := range reps {
		if slices.Contains(set, r) {
			out = append(out, r)
		}
	}
	return out
}

// nilIfEmpty returns s, or nil when it is empty: records and images hold
// no empty ELR lists, so that every encoding replays to the same image.
func nilIfEmpty(s []int32) []int32 {
	if len(s) == 0 {
		return nil
	}
	return s
}
