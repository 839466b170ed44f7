package node

import (
	"context"
	"fmt"

	"github.com/sluice-log/sluice/node/kafka"
	"github.com/sluice-log/sluice/quorum"
)

// Partition reassignment (KIP-455) as the broker serves it: the quorum
// plans and completes it (quorum/reassign.go); the reconciler opens a
// replica on every broker the partition's replicas name, adding ones
// included, which then fetches from the leader and joins the ISR like
// any follower, and deletes the log (files and index entries) of a
// replica a completed reassignment removed (reconcile: dropReplica).

var _ kafka.Reassigner = (*broker)(nil)

// AlterReassignments implements kafka.Reassigner: the command is
// published, so the adding brokers have their replicas open when
// answered.
func (b *broker) AlterReassignments(ctx context.Context, cmd *quorum.AlterPartitionReassignments) ([]quorum.ReassignmentResult, error) {
	reply, err := b.node().publish(ctx, cmd)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", controllerError(err), err)
	}
	return reply.(*quorum.ReassignmentsReply).Partitions, nil
}

// ListReassignments implements kafka.Reassigner from the local image.
func (b *broker) ListReassignments(parts []quorum.TopicPartition) []quorum.OngoingReassignment {
	var out []quorum.OngoingReassignment
	b.ctrl.View(func(im *quorum.Image) { out = im.Reassignments(parts) })
	return out
}
