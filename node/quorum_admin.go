package node

import (
	"context"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-log/sluice/node/kafka"
	"github.com/sluice-log/sluice/quorum"
)

// describeQuorumTimeout bounds DescribeQuorum's wait for a leader (the
// request has no timeout of its own).
const describeQuorumTimeout = 10 * time.Second

var _ kafka.QuorumDescriber = (*broker)(nil)

// DescribeQuorum implements kafka.QuorumDescriber through the quorum's
// leader (quorum.Controller.DescribeQuorum, which says which values are
// exact): offsets are Raft log indexes, the leader epoch is the Raft term.
func (b *broker) DescribeQuorum(ctx context.Context) (kafka.QuorumInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, describeQuorumTimeout)
	defer cancel()
	st, err := b.ctrl.DescribeQuorum(ctx)
	if err != nil {
		return kafka.QuorumInfo{Err: kerr.NotLeaderForPartition, ErrMessage: "no active controller answered: " + err.Error()}, nil
	}
	info := kafka.QuorumInfo{LeaderID: st.LeaderID, LeaderEpoch: int32(st.Term), HighWatermark: int64(st.CommitIndex)}
	info.Voters = quorumReplicas(st.Voters)
	info.Observers = quorumReplicas(st.Observers)
	return info, nil
}

func quorumReplicas(ms []quorum.MemberStatus) []kafka.QuorumReplica {
	out := make([]kafka.QuorumReplica, 0, len(ms))
	for _, m := range ms {
		r := kafka.QuorumReplica{ID: m.ID, LogEndOffset: m.LastIndex, LastFetchMillis: unixMillis(m.LastContact), LastCaughtUpMillis: unixMillis(m.LastCaughtUp)}
		if host, port, err := net.SplitHostPort(m.Addr); err == nil {
			if p, err := strconv.ParseUint(port, 10, 16); err == nil {
				r.Host, r.Port = host, uint16(p)
			}
		}
		out = append(out, r)
	}
	return out
}

// unixMillis is t in Unix milliseconds, -1 for the zero time (unknown).
func unixMillis(t time.Time) int64 {
	if t.IsZero() {
		return -1
	}
	return t.UnixMilli()
}

var _ kafka.VoterAdmin = (*broker)(nil)

// AddRaftVoter implements kafka.VoterAdmin (quorum.Controller.AddVoter).
func (b *broker) AddRaftVoter(ctx context.Context, id int32, dirID quorum.UUID, addr string) error {
	return b.ctrl.AddVoter(ctx, id, addr, dirID)
}

// RemoveRaftVoter implements kafka.VoterAdmin (quorum.Controller.RemoveVoter).
func (b *broker) RemoveRaftVoter(ctx context.Context, id int32) error {
	return b.ctrl.RemoveVoter(ctx, id)
}
