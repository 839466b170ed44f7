package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
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
// Authorization: a replica (v3+ replica id >= 0) needs CLUSTER_ACTION on
// the cluster, a consumer DESCRIBE on each topic; refused partitions
// answer TOPIC_AUTHORIZATION_FAILED.
func handleOffsetForLeaderEpoch(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	logs := s.broker.(Logs)
	replica := req.Version >= 3 && req.ReplicaID >= 0
	clusterOK := replica && s.clusterAllowed(r, kmsg.ACLOperationClusterAction)
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
		rt.Topic = t.Topic
		denied := !clusterOK && (replica || !s.allowed(r, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, t.Topic))
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			rp.Partition = p.Partition
			if denied {
				rp.ErrorCode, rp.LeaderEpoch, rp.EndOffset = kerr.TopicAuthorizationFailed.Code, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
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
