package kafka

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/quorum"
)

// CreatePartitions (key 37), versions 0-3; served when the Broker
// implements PartitionAdmin.
//
// Grows topics to count partitions in all. The server refuses per topic,
// without asking the Broker, what the request alone shows to be wrong: a
// topic named twice (INVALID_REQUEST, one result for the name), count
// below 1 (INVALID_PARTITIONS), an assignment with an empty replica list
// or a broker twice in one list (INVALID_REPLICA_ASSIGNMENT). The rest go
// to PartitionAdmin.CreatePartitions in one call, with validate_only and a
// context that ends at timeout_ms when it is positive; it answers what
// needs the metadata (unknown topic, a count that does not grow the topic,
// an assignment of the wrong length or replication factor, unknown
// brokers). Results keep request order (first appearance).
// Authorization: ALTER on each topic (TOPIC_AUTHORIZATION_FAILED).
func handleCreatePartitions(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.CreatePartitionsRequest)
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	var valid []NewPartitions
	var validAt []int
	for i, n := range firstOfEach(req.Topics, func(t kmsg.CreatePartitionsRequestTopic) string { return t.Topic }) {
		t := req.Topics[i]
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic = t.Topic
		np, msg, bad := newPartitions(t, n)
		if bad == nil && !s.allowed(r, kmsg.ACLOperationAlter, kmsg.ACLResourceTypeTopic, t.Topic) {
			bad, msg = kerr.TopicAuthorizationFailed, kerr.TopicAuthorizationFailed.Message
		}
		if bad != nil {
			rt.ErrorCode, rt.ErrorMessage = bad.Code, kmsg.StringPtr(msg)
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		valid = append(valid, np)
		validAt = append(validAt, len(resp.Topics))
		resp.Topics = append(resp.Topics, rt)
	}
	results, err := askBroker(ctx, req.TimeoutMillis, "create partitions", valid,
		func(ctx context.Context, valid []NewPartitions) ([]PartitionsResult, error) {
			return s.broker.(PartitionAdmin).CreatePartitions(ctx, valid, req.ValidateOnly)
		})
	if err != nil {
		return nil, err
	}
	for i, res := range results {
		rt := &resp.Topics[validAt[i]]
		rt.ErrorCode = quorum.ErrorCode(res.Err)
		if res.Err != nil && res.ErrMessage != "" {
			rt.ErrorMessage = kmsg.StringPtr(res.ErrMessage)
		}
	}
	return resp, nil
}

// newPartitions validates one topic of the request, named n times.
func newPartitions(t kmsg.CreatePartitionsRequestTopic, n int) (NewPartitions, string, *kerr.Error) {
	np := NewPartitions{Topic: t.Topic, Count: t.Count}
	switch {
	case n > 1:
		return np, "Duplicate topic in request.", kerr.InvalidRequest
	case t.Count < 1:
		return np, fmt.Sprintf("The partition count must be at least 1, not %d.", t.Count), kerr.InvalidPartitions
	}
	if t.Assignment == nil {
		return np, "", nil
	}
	np.Assignment = [][]int32{}
	for i, a := range t.Assignment {
		if len(a.Replicas) == 0 {
			return np, fmt.Sprintf("The manual partition assignment includes an empty replica list for new partition %d.", i), kerr.InvalidReplicaAssignment
		}
		for j, b := range a.Replicas {
			if slices.Contains(a.Replicas[:j], b) {
				return np, fmt.Sprintf("The manual partition assignment of new partition %d includes broker %d more than once.", i, b), kerr.InvalidReplicaAssignment
			}
		}
		np.Assignment = append(np.Assignment, a.Replicas)
	}
	return np, "", nil
}

// PartitionAdmin is the optional Broker capability to add partitions to
// topics (CreatePartitions): the controller's job.
type PartitionAdmin interface {
	// CreatePartitions grows each topic to its Count, or with
	// validateOnly only checks that it could. It returns one result per
	// topic given, in the same order; Err is a kerr error
	// (UNKNOWN_TOPIC_OR_PARTITION, INVALID_PARTITIONS,
	// INVALID_REPLICA_ASSIGNMENT, NOT_CONTROLLER, REQUEST_TIMED_OUT, ...).
	CreatePartitions(ctx context.Context, topics []NewPartitions, validateOnly bool) ([]PartitionsResult, error)
}

// NewPartitions is one topic of a CreatePartitions request.
type NewPartitions struct {
	Topic string
	// Count is the partition count wanted in all (≥ 1).
	Count int32
	// Assignment, when not nil, lists the replicas of each new partition
	// (each list non-empty and without duplicates).
	Assignment [][]int32
}

// PartitionsResult is the outcome for one NewPartitions.
type PartitionsResult struct {
	Err        error
	ErrMessage string
}
