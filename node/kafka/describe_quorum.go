package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/quorum"
)

// MetadataTopic is the name under which Kafka (KRaft) exposes the metadata
// log; DescribeQuorum asks for its partition 0.
const MetadataTopic = "__cluster_metadata"

// DescribeQuorum (key 55), versions 0-2; served when the Broker implements
// QuorumDescriber.
//
// The request must name exactly __cluster_metadata partition 0, else the
// answer is INVALID_REQUEST at the top level, as in Kafka's KafkaRaftClient.
// The partition carries the leader, leader epoch (the Raft term), high
// watermark (the commit index) and, per voter and observer (Raft
// non-voter), the log end offset (last log index) and, v1+, the last fetch
// and last caught-up timestamps (-1 when unknown); QuorumDescriber says
// which are exact. v2 adds the voters' controller listeners (Nodes) and
// error messages; directory ids are zero (Sluice has none). When the
// quorum has no reachable leader the partition answers
// NOT_LEADER_OR_FOLLOWER.
func handleDescribeQuorum(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DescribeQuorumRequest)
	resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
	if len(req.Topics) != 1 || req.Topics[0].Topic != MetadataTopic ||
		len(req.Topics[0].Partitions) != 1 || req.Topics[0].Partitions[0].Partition != 0 {
		resp.ErrorCode = kerr.InvalidRequest.Code
		if req.Version >= 2 {
			resp.ErrorMessage = kmsg.StringPtr("DescribeQuorum describes " + MetadataTopic + " partition 0 only")
		}
		return resp, nil
	}
	info, err := s.broker.(QuorumDescriber).DescribeQuorum(ctx)
	if err != nil {
		return nil, fmt.Errorf("broker describe quorum: %w", err)
	}
	rt := kmsg.NewDescribeQuorumResponseTopic()
	rt.Topic = MetadataTopic
	rp := kmsg.NewDescribeQuorumResponseTopicPartition()
	rp.ErrorCode = quorum.ErrorCode(info.Err)
	if info.Err != nil {
		rp.LeaderID, rp.LeaderEpoch, rp.HighWatermark = -1, -1, -1
		if req.Version >= 2 && info.ErrMessage != "" {
			rp.ErrorMessage = kmsg.StringPtr(info.ErrMessage)
		}
	} else {
		rp.LeaderID, rp.LeaderEpoch, rp.HighWatermark = info.LeaderID, info.LeaderEpoch, info.HighWatermark
		rp.CurrentVoters = replicaStates(info.Voters)
		rp.Observers = replicaStates(info.Observers)
		for _, v := range info.Voters {
			if v.Host == "" {
				continue
			}
			n := kmsg.NewDescribeQuorumResponseNode()
			n.NodeID = v.ID
			l := kmsg.NewDescribeQuorumResponseNodeListener()
			l.Name, l.Host, l.Port = "CONTROLLER", v.Host, v.Port
			n.Listeners = append(n.Listeners, l)
			resp.Nodes = append(resp.Nodes, n)
		}
	}
	rt.Partitions = append(rt.Partitions, rp)
	resp.Topics = append(resp.Topics, rt)
	return resp, nil
}

func replicaStates(rs []QuorumReplica) []kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
	out := make([]kmsg.DescribeQuorumResponseTopicPartitionReplicaState, 0, len(rs))
	for _, r := range rs {
		st := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
		st.ReplicaID, st.LogEndOffset = r.ID, r.LogEndOffset
		st.LastFetchTimestamp, st.LastCaughtUpTimestamp = r.LastFetchMillis, r.LastCaughtUpMillis
		out = append(out, st)
	}
	return out
}

// QuorumDescriber is the optional Broker capability to describe the
// metadata quorum (DescribeQuorum).
type QuorumDescriber interface {
	// DescribeQuorum describes the quorum as its leader sees it. A quorum
	// without a reachable leader is a result with Err set
	// (NOT_LEADER_OR_FOLLOWER), not an error.
	DescribeQuorum(ctx context.Context) (QuorumInfo, error)
}

// QuorumInfo is the answer to DescribeQuorum.
type QuorumInfo struct {
	// Err is a kerr error for the metadata partition; ErrMessage details it.
	Err        error
	ErrMessage string
	LeaderID   int32
	// LeaderEpoch is the leader's term.
	LeaderEpoch int32
	// HighWatermark is the leader's commit index.
	HighWatermark int64
	// Voters and Observers in id order.
	Voters, Observers []QuorumReplica
}

// QuorumReplica is one voter or observer.
type QuorumReplica struct {
	ID int32
	// LogEndOffset is -1 when unknown.
	LogEndOffset int64
	// LastFetchMillis and LastCaughtUpMillis are Unix milliseconds, -1
	// when unknown.
	LastFetchMillis, LastCaughtUpMillis int64
	// Host and Port are the controller listener ("" when unknown).
	Host string
	Port uint16
}
