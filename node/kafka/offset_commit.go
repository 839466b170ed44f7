package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetCommit (key 8), versions 2-9 (Kafka 4 dropped 0-1, KIP-896; v10's
// topic ids came with Kafka 4.2); served when the Broker implements Groups.
//
// Behavior:
//   - An empty group id answers INVALID_GROUP_ID for every partition, as
//     Kafka 4's GroupCoordinatorService does.
//   - A partition that does not exist (Groups.PartitionExists) answers
//     UNKNOWN_TOPIC_OR_PARTITION; the others of the request go to the
//     group's shard and are committed (or refused) there. The answer keeps
//     the request's order.
//   - A shard that cannot answer gives its error to every partition it was
//     asked about.
func handleOffsetCommit(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.OffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
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
			switch {
			case req.Group == "":
				codes[tp{t.Topic, p.Partition}] = kerr.InvalidGroupID.Code
			case !readable(t.Topic):
				codes[tp{t.Topic, p.Partition}] = kerr.TopicAuthorizationFailed.Code
			case !g.PartitionExists(t.Topic, p.Partition):
				codes[tp{t.Topic, p.Partition}] = kerr.UnknownTopicOrPartition.Code
			default:
				st.Partitions = append(st.Partitions, p)
			}
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
			for _, t := range sub.Topics {
				for _, p := range t.Partitions {
					codes[tp{t.Topic, p.Partition}] = groupCode(err)
				}
			}
		} else {
			for _, t := range answer.(*kmsg.OffsetCommitResponse).Topics {
				for _, p := range t.Partitions {
					codes[tp{t.Topic, p.Partition}] = p.ErrorCode
				}
			}
		}
	}
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			code, ok := codes[tp{t.Topic, p.Partition}]
			if !ok {
				code = kerr.UnknownServerError.Code // the shard left it out
			}
			rp.ErrorCode = code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
