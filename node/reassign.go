package node

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

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

var _ kafka.Unregisterer = (*broker)(nil)

// UnregisterBroker implements kafka.Unregisterer: the quorum refuses a
// broker that still hosts a replica (quorum/unregister.go).
func (b *broker) UnregisterBroker(ctx context.Context, id int32) error {
	_, err := b.node().publish(ctx, &quorum.UnregisterBroker{ID: id})
	if err == nil || errors.As(err, new(*kerr.Error)) {
		return err
	}
	return fmt.Errorf("%w: %v", controllerError(err), err)
}
