package quorum

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Partition reassignment (KIP-455), as Kafka's ReplicationControlManager
// does it:
//
//   - AlterPartitionReassignments names, per partition, the target
//     replicas. Replicas becomes the target followed by the replicas
//     being removed (the original ones not in the target); the adding
//     replicas are the target's members that were not replicas. The
//     brokers hosting an adding replica start it (the node's reconciler
//     opens every partition it is a replica of) and catch up from the
//     leader like any follower; the leader adds them to the ISR.
//   - The reassignment completes in the PartitionChange that puts the
//     last adding replica in the ISR (usually the leader's AlterPartition):
//     the removing replicas leave the replicas and the ISR, and a removed
//     leader gives way to an ISR member of the target. A target that adds
//     nothing completes at once.
//   - A null target cancels: the replicas go back to the original set
//     (the adding ones leave replicas and ISR). A new target while a
//     reassignment runs replaces it, counted from the original set.
//
// Validation, as Kafka's validateManualPartitionAssignment for a
// reassignment: a non-empty target (its length may differ from the
// current replication factor: reassignment changes it), no broker twice,
// every broker registered and alive (unfenced, not shutting down, log
// directory online). Errors are per partition.

// CmdAlterReassignments names AlterPartitionReassignments on the wire.
const CmdAlterReassignments CommandType = "alter_partition_reassignments"

// ReassignmentSpec is one partition's target. Replicas nil cancels the
// reassignment in progress.
type ReassignmentSpec struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"`
}

// AlterPartitionReassignments starts, changes or cancels reassignments
// (Kafka's AlterPartitionReassignments). Reply: *ReassignmentsReply.
type AlterPartitionReassignments struct {
	Partitions []ReassignmentSpec `json:"partitions"`
	// KeepReplicationFactor refuses a target whose length differs from
	// the original replicas' (INVALID_REPLICATION_FACTOR; KIP-860's
	// allow_replication_factor_change false).
	KeepReplicationFactor bool `json:"keep_replication_factor,omitempty"`
}

// ReassignmentResult is the outcome for one partition; Code is a Kafka
// error code.
type ReassignmentResult struct {
	TopicPartition
	Code    int16  `json:"code"`
	Message string `json:"message,omitempty"`
}

// ReassignmentsReply is the reply of AlterPartitionReassignments.
type ReassignmentsReply struct {
	Partitions []ReassignmentResult `json:"partitions"`
}

func (*AlterPartitionReassignments) CommandType() CommandType { return CmdAlterReassignments }
func (*AlterPartitionReassignments) newReply() any            { return &ReassignmentsReply{} }

func (p *planner) alterReassignments(c *AlterPartitionReassignments) ([]Record, any, error) {
	var recs []Record
	reply := &ReassignmentsReply{}
	seen := map[TopicPartition]bool{}
	for _, s := range c.Partitions {
		tp := TopicPartition{Topic: s.Topic, Partition: s.Partition}
		res := ReassignmentResult{TopicPartition: tp}
		var rec *PartitionChangeRecord
		var err error
		if seen[tp] {
			err = kerrf(kerr.InvalidRequest, "%s/%d is named twice", s.Topic, s.Partition)
		} else {
			rec, err = p.reassign(s, c.KeepReplicationFactor)
		}
		seen[tp] = true
		if err != nil {
			res.Code, res.Message = ErrorCode(err), err.Error()
		} else if rec != nil {
			recs = append(recs, rec)
		}
		reply.Partitions = append(reply.Partitions, res)
	}
	return recs, reply, nil
}

// reassign plans one partition's reassignment or cancellation: the
// change record, or nil when nothing changes.
func (p *planner) reassign(s ReassignmentSpec, keepRF bool) (*PartitionChangeRecord, error) {
	t := p.im.Topics[s.Topic]
	if t == nil || s.Partition < 0 || int(s.Partition) >= len(t.Partitions) {
		return nil, kerrf(kerr.UnknownTopicOrPartition, "%s/%d", s.Topic, s.Partition)
	}
	part := t.Partitions[s.Partition]
	where := fmt.Sprintf("%s/%d", s.Topic, s.Partition)
	orig := part.OriginalReplicas()
	var a *Assignment
	if s.Replicas == nil {
		if !part.Reassigning() {
			return nil, kerrf(kerr.NoReassignmentInProgress, "%s: no reassignment in progress", where)
		}
		a = &Assignment{Replicas: orig}
	} else {
		if err := p.validateTarget(where, s.Replicas); err != nil {
			return nil, err
		}
		if keepRF && len(s.Replicas) != len(orig) {
			return nil, kerrf(kerr.InvalidReplicationFactor, "%s: the target has %d replicas, the partition %d, and changing the replication factor is not allowed", where, len(s.Replicas), len(orig))
		}
		a = reassignment(orig, s.Replicas)
	}
	// The ISR keeps only members of the new replicas: some must stay (a
	// cancellation, or a new target dropping the adding replicas that
	// alone are in sync, would leave none).
	if !slices.ContainsFunc(part.ISR, func(r int32) bool { return slices.Contains(a.Replicas, r) }) {
		return nil, kerrf(kerr.InvalidReplicaAssignment, "%s: no replica of %v is in the ISR %v: the partition would be left without one", where, a.Replicas, part.ISR)
	}
	pc := p.change(t, s.Partition, part, p.acceptable(-1, -1))
	pc.Assignment = a
	rec, changed := pc.Build()
	if !changed {
		return nil, nil
	}
	return rec, nil
}

// reassignment is Kafka's PartitionReassignmentReplicas: the target
// followed by the original replicas it drops.
func reassignment(orig, target []int32) *Assignment {
	a := &Assignment{Replicas: slices.Clone(target)}
	for _, r := range target {
		if !slices.Contains(orig, r) {
			a.Adding = append(a.Adding, r)
		}
	}
	for _, r := range orig {
		if !slices.Contains(target, r) {
			a.Removing = append(a.Removing, r)
			a.Replicas = append(a.Replicas, r)
		}
	}
	return a
}

func (p *planner) validateTarget(where string, reps []int32) error {
	if len(reps) == 0 {
		return kerrf(kerr.InvalidReplicaAssignment, "%s: the target replica list is empty", where)
	}
	for i, r := range reps {
		if slices.Contains(reps[:i], r) {
			return kerrf(kerr.InvalidReplicaAssignment, "%s: the target names broker %d twice", where, r)
		}
		b := p.im.Brokers[r]
		if b == nil {
			return kerrf(kerr.InvalidReplicaAssignment, "%s: the target names broker %d, but no such broker is registered", where, r)
		}
		if !b.Alive() {
			return kerrf(kerr.InvalidReplicaAssignment, "%s: the target names broker %d, which is fenced, shutting down or without its log directory", where, r)
		}
	}
	return nil
}

// OngoingReassignment is one partition's reassignment in progress, for
// ListPartitionReassignments.
type OngoingReassignment struct {
	TopicPartition
	Replicas, Adding, Removing []int32
}

// Reassignments lists the reassignments in progress, in topic and
// partition order; with filter, only those of the named partitions.
func (im *Image) Reassignments(filter []TopicPartition) []OngoingReassignment {
	var out []OngoingReassignment
	add := func(name string, i int32, p *Partition) {
		if p.Reassigning() {
			out = append(out, OngoingReassignment{
				TopicPartition: TopicPartition{Topic: name, Partition: i},
				Replicas:       slices.Clone(p.Replicas), Adding: slices.Clone(p.AddingReplicas), Removing: slices.Clone(p.RemovingReplicas),
			})
		}
	}
	if filter != nil {
		for _, tp := range filter {
			if t := im.Topics[tp.Topic]; t != nil && tp.Partition >= 0 && int(tp.Partition) < len(t.Partitions) {
				add(tp.Topic, tp.Partition, &t.Partitions[tp.Partition])
			}
		}
		return out
	}
	for _, name := range im.SortedTopics() {
		t := im.Topics[name]
		for i := range t.Partitions {
			add(name, int32(i), &t.Partitions[i])
		}
	}
	return out
}
