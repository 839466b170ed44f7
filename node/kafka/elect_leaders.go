package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/quorum"
)

// ElectLeaders (key 43), versions 0-2; served when the Broker implements
// Elector.
//
// Preferred (election_type 0, and every v0 request) or unclean (1)
// elections of the partitions named, or of every partition when topics is
// null, through Elector.ElectLeaders, which answers each partition
// (ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE,
// ELIGIBLE_LEADERS_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION, ...).
// timeout_ms bounds the wait for the controller. Any other election type
// answers INVALID_REQUEST at the top level (v1+).
func handleElectLeaders(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.ElectLeadersRequest)
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	if req.ElectionType != 0 && req.ElectionType != 1 {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	ctx, cancel := requestDeadline(ctx, req.TimeoutMillis)
	defer cancel()
	var parts []PartitionRef
	if req.Topics != nil {
		parts = []PartitionRef{}
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				parts = append(parts, PartitionRef{Topic: t.Topic, Partition: p})
			}
		}
	}
	results, err := s.broker.(Elector).ElectLeaders(ctx, req.ElectionType == 1, parts)
	if err != nil {
		return nil, fmt.Errorf("broker elect leaders: %w", err)
	}
	byTopic := map[string]int{}
	for _, res := range results {
		i, ok := byTopic[res.Topic]
		if !ok {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = res.Topic
			resp.Topics = append(resp.Topics, rt)
			i = len(resp.Topics) - 1
			byTopic[res.Topic] = i
		}
		rp := kmsg.NewElectLeadersResponseTopicPartition()
		rp.Partition, rp.ErrorCode = res.Partition, quorum.ErrorCode(res.Err)
		if res.ErrMessage != "" {
			rp.ErrorMessage = kmsg.StringPtr(res.ErrMessage)
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
	return resp, nil
}

// Elector is the optional Broker capability to run leader elections
// (ElectLeaders): the controller's job.
type Elector interface {
	// ElectLeaders runs preferred (unclean false) or unclean elections of
	// parts, or of every partition when parts is nil, and returns one
	// result per partition.
	ElectLeaders(ctx context.Context, unclean bool, parts []PartitionRef) ([]ElectionResult, error)
}

// PartitionRef names one partition.
type PartitionRef struct {
	Topic     string
	Partition int32
}

// ElectionResult is the outcome for one partition of ElectLeaders.
type ElectionResult struct {
	PartitionRef
	Err        error
	ErrMessage string
}
