package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/quorum"
)

// OffsetForLeaderEpoch (key 23), versions 0-4; served when the Broker
// implements Logs.
//
// For each partition: the largest leader epoch at or below the one asked
// for and the offset where it ends (the log end offset for the latest
// epoch), from the partition's leader-epoch cache (KIP-101, KIP-279). The
// current leader epoch (v2+) is checked by the Broker. Unknown epochs
// answer epoch -1 and end offset -1.
func handleOffsetForLeaderEpoch(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	logs := s.broker.(Logs)
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			rp.Partition = p.Partition
			res := logs.EndOffsetForEpoch(ctx, EpochPartition{Topic: t.Topic, Partition: p.Partition,
				CurrentLeaderEpoch: p.CurrentLeaderEpoch, LeaderEpoch: p.LeaderEpoch})
			rp.ErrorCode = quorum.ErrorCode(res.Err)
			rp.LeaderEpoch, rp.EndOffset = res.LeaderEpoch, res.EndOffset
			if res.Err != nil {
				rp.LeaderEpoch, rp.EndOffset = -1, -1
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
