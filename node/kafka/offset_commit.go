package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetCommit (key 8), versions 2-10 (Kafka 4 dropped 0-1, KIP-896; v10,
// Kafka 4.2's, names topics by ID and is served when the Broker also
// implements TopicNames and TopicIDs); served when the Broker implements
// Groups.
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
//   - v10: a topic ID that names no topic answers UNKNOWN_TOPIC_ID; the
//     shard is asked by name.
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
	names := make([]string, len(req.Topics))
	unknownID := make([]bool, len(req.Topics)) // v10: an ID that names no topic
	for i, t := range req.Topics {
		names[i] = t.Topic
		if req.Version >= 10 {
			var ok bool
			names[i], ok = s.broker.(TopicNames).TopicName(t.TopicID)
			unknownID[i] = !ok
		}
	}
	sub := *req
	sub.Topics = nil
	for i, t := range req.Topics {
		st := t
		st.Topic = names[i]
		st.Partitions = nil
		for _, p := range t.Partitions {
			switch {
			case unknownID[i]:
				// answered below
			case req.Group == "":
				codes[tp{st.Topic, p.Partition}] = kerr.InvalidGroupID.Code
			case !readable(st.Topic):
				codes[tp{st.Topic, p.Partition}] = kerr.TopicAuthorizationFailed.Code
			case !g.PartitionExists(st.Topic, p.Partition):
				codes[tp{st.Topic, p.Partition}] = kerr.UnknownTopicOrPartition.Code
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
	for i, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = names[i], t.TopicID // each encoded where its version has it
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			code, ok := codes[tp{names[i], p.Partition}]
			switch {
			case unknownID[i]:
				code = kerr.UnknownTopicID.Code
			case !ok:
				code = kerr.UnknownServerError.Code // the shard left it out
			}
			rp.ErrorCode = code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
