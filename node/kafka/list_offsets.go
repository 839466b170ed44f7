package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/quorum"
)

// ListOffsets (key 2), versions 0-8; served when the Broker implements Logs.
//
// Timestamp -2 answers the log start offset, -1 the high watermark (the
// latest committed offset) or, with isolation_level 1 (read_committed,
// v2+), the last stable offset, -3 (v7+) the offset of the record with
// the largest timestamp below the high watermark (KIP-734), anything else
// the first record whose timestamp is at or after it (offset -1 when
// none; below the last stable offset for read_committed). v0 answers old_style_offsets with the one
// offset found (max_num_offsets is not honoured beyond one). The current
// leader epoch (v4+) is checked by the Broker.
// Authorization: DESCRIBE on each topic (TOPIC_AUTHORIZATION_FAILED).
func handleListOffsets(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	logs := s.broker.(Logs)
	for _, t := range req.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		denied := !s.allowed(r, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			if denied {
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				rp.Offset, rp.Timestamp, rp.LeaderEpoch = -1, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			res := logs.ListOffset(ctx, ListOffsetPartition{Topic: t.Topic, Partition: p.Partition,
				CurrentLeaderEpoch: p.CurrentLeaderEpoch, Timestamp: p.Timestamp, ReadCommitted: req.IsolationLevel == 1})
			rp.ErrorCode = quorum.ErrorCode(res.Err)
			if res.Err == nil {
				rp.Offset, rp.Timestamp, rp.LeaderEpoch = res.Offset, res.Timestamp, res.LeaderEpoch
				if req.Version == 0 && res.Offset >= 0 && p.MaxNumOffsets > 0 {
					rp.OldStyleOffsets = []int64{res.Offset}
				}
			} else {
				rp.Offset, rp.Timestamp, rp.LeaderEpoch = -1, -1, -1
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
