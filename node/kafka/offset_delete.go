package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetDelete (key 47), version 0; served when the Broker implements
// Groups.
//
// Behavior:
//   - An empty group id answers INVALID_GROUP_ID (top level).
//   - A partition that does not exist answers UNKNOWN_TOPIC_OR_PARTITION;
//     the others go to the group's shard (GROUP_SUBSCRIBED_TO_TOPIC for a
//     topic the group consumes, GROUP_ID_NOT_FOUND, ...). The answer keeps
//     the request's order.
//   - A shard that cannot answer gives its error at the top level.
func handleOffsetDelete(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.OffsetDeleteRequest)
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	if req.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp, nil
	}
	g := s.broker.(Groups)
	type tp struct {
		topic     string
		partition int32
	}
	codes := map[tp]int16{}
	readable := topicCheck(s, r, kmsg.ACLOperationRead)
	sub := *req
	sub.Topics = nil
	for _, t := range req.Topics {
		st := t
		st.Partitions = nil
		for _, p := range t.Partitions {
			if !readable(t.Topic) {
				codes[tp{t.Topic, p.Partition}] = kerr.TopicAuthorizationFailed.Code
				continue
			}
			if !g.PartitionExists(t.Topic, p.Partition) {
				codes[tp{t.Topic, p.Partition}] = kerr.UnknownTopicOrPartition.Code
				continue
			}
			st.Partitions = append(st.Partitions, p)
		}
		if len(st.Partitions) > 0 {
			sub.Topics = append(sub.Topics, st)
		}
	}
	if len(sub.Topics) > 0 {
		r2 := *r
		r2.body = &sub
		answer, err := coordinateOne(ctx, s, &r2, req.Group)
		if err != nil {
			resp.ErrorCode = groupCode(err)
			return resp, nil
		}
		a := answer.(*kmsg.OffsetDeleteResponse)
		if a.ErrorCode != 0 {
			resp.ErrorCode = a.ErrorCode
			return resp, nil
		}
		for _, t := range a.Topics {
			for _, p := range t.Partitions {
				codes[tp{t.Topic, p.Partition}] = p.ErrorCode
			}
		}
	}
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode = codes[tp{t.Topic, p.Partition}]
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
