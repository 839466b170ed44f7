package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/quorum"
)

// AlterPartitionReassignments (key 45), versions 0-1; served when the
// Broker implements Reassigner. ALTER on the cluster, as Kafka.
//
// Behavior:
//   - Each partition names its target replicas, or null to cancel the
//     reassignment in progress (quorum/reassign.go: validation, the
//     adding and removing replicas, completion once the adding replicas
//     are in the ISR). Each partition succeeds or fails on its own
//     (INVALID_REPLICA_ASSIGNMENT, UNKNOWN_TOPIC_OR_PARTITION,
//     NO_REASSIGNMENT_IN_PROGRESS, ...); the answer comes once the
//     change is in effect on the live brokers, within timeout_ms.
//
// Version notes:
//   - v1 (KIP-860): allow_replication_factor_change false refuses a
//     target of another length with INVALID_REPLICATION_FACTOR, and the
//     response echoes the flag.
func handleAlterPartitionReassignments(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.AlterPartitionAssignmentsRequest)
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	resp.AllowReplicationFactorChange = req.AllowReplicationFactorChange
	ctx, cancel := requestDeadline(ctx, req.TimeoutMillis)
	defer cancel()
	cmd := &quorum.AlterPartitionReassignments{KeepReplicationFactor: req.Version >= 1 && !req.AllowReplicationFactorChange}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			cmd.Partitions = append(cmd.Partitions, quorum.ReassignmentSpec{Topic: t.Topic, Partition: p.Partition, Replicas: p.Replicas})
		}
	}
	results, err := s.broker.(Reassigner).AlterReassignments(ctx, cmd)
	if err != nil {
		resp.ErrorCode = quorum.ErrorCode(err)
		if resp.ErrorCode == kerr.UnknownServerError.Code {
			return nil, fmt.Errorf("broker alter reassignments: %w", err)
		}
		resp.ErrorMessage = kmsg.StringPtr(err.Error())
		return resp, nil
	}
	byTopic := map[string]int{}
	for _, res := range results {
		i, ok := byTopic[res.Topic]
		if !ok {
			rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
			rt.Topic = res.Topic
			resp.Topics = append(resp.Topics, rt)
			i = len(resp.Topics) - 1
			byTopic[res.Topic] = i
		}
		rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
		rp.Partition, rp.ErrorCode = res.Partition, res.Code
		if res.Message != "" {
			rp.ErrorMessage = kmsg.StringPtr(res.Message)
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
	return resp, nil
}

// Reassigner is the optional Broker capability to move replicas between
// brokers (AlterPartitionReassignments, ListPartitionReassignments): the
// controller's job.
type Reassigner interface {
	// AlterReassignments proposes cmd and returns one result per
	// partition, in request order; an error fails the whole request.
	AlterReassignments(ctx context.Context, cmd *quorum.AlterPartitionReassignments) ([]quorum.ReassignmentResult, error)
	// ListReassignments returns the reassignments in progress, of the
	// named partitions only when parts is not nil.
	ListReassignments(parts []quorum.TopicPartition) []quorum.OngoingReassignment
}
