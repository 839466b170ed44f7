package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/quorum"
)

// ListPartitionReassignments (key 46), version 0; served when the Broker
// implements Reassigner. DESCRIBE on the cluster, as Kafka.
//
// Behavior:
//   - The reassignments in progress, from this broker's metadata image:
//     every one when topics is null, else those of the named partitions
//     (a partition not being reassigned, or unknown, is left out, as
//     Kafka does). Each lists its full replica set (target then removing
//     replicas), the adding and the removing replicas.
func handleListPartitionReassignments(_ context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.ListPartitionReassignmentsRequest)
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	var parts []quorum.TopicPartition
	if req.Topics != nil {
		parts = []quorum.TopicPartition{}
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				parts = append(parts, quorum.TopicPartition{Topic: t.Topic, Partition: p})
			}
		}
	}
	byTopic := map[string]int{}
	for _, o := range s.broker.(Reassigner).ListReassignments(parts) {
		i, ok := byTopic[o.Topic]
		if !ok {
			rt := kmsg.NewListPartitionReassignmentsResponseTopic()
			rt.Topic = o.Topic
			resp.Topics = append(resp.Topics, rt)
			i = len(resp.Topics) - 1
			byTopic[o.Topic] = i
		}
		rp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
		rp.Partition = o.Partition
		rp.Replicas, rp.AddingReplicas, rp.RemovingReplicas = nonNil(o.Replicas), nonNil(o.Adding), nonNil(o.Removing)
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
	return resp, nil
}

// nonNil returns s, or an empty slice for nil (the arrays are not nullable).
func nonNil(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return s
}
