package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// metadataTopic is the metadata log's name in DescribeQuorum (KRaft's).
const metadataTopic = "__cluster_metadata"

// QuorumStatus is `sluice quorum describe --status`, with the fields of
// kafka-metadata-quorum.sh describe --status.
type QuorumStatus struct {
	ClusterID            string  `json:"cluster_id"`
	LeaderID             int32   `json:"leader_id"`
	LeaderEpoch          int32   `json:"leader_epoch"`
	HighWatermark        int64   `json:"high_watermark"`
	MaxFollowerLag       int64   `json:"max_follower_lag"`
	MaxFollowerLagTimeMs int64   `json:"max_follower_lag_time_ms"`
	CurrentVoters        []int32 `json:"current_voters"`
	CurrentObservers     []int32 `json:"current_observers"`
}

// QuorumReplica is one row of `sluice quorum describe --replication`, with
// the columns of kafka-metadata-quorum.sh describe --replication.
// Timestamps are Unix milliseconds, -1 when unknown.
type QuorumReplica struct {
	NodeID                int32  `json:"node_id"`
	LogEndOffset          int64  `json:"log_end_offset"`
	Lag                   int64  `json:"lag"`
	LastFetchTimestamp    int64  `json:"last_fetch_timestamp"`
	LastCaughtUpTimestamp int64  `json:"last_caught_up_timestamp"`
	Status                string `json:"status"`
}

// quorumCmd is `sluice quorum describe`, after kafka-metadata-quorum.sh.
type quorumCmd struct {
	common
	status, replication, human bool
}

// NewQuorumCommand returns `sluice quorum`.
func NewQuorumCommand() *cobra.Command {
	var c quorumCmd
	root := &cobra.Command{Use: "quorum", Short: "Describe the metadata quorum (Kafka's DescribeQuorum)"}
	c.register(root)
	describe := &cobra.Command{
		Use:   "describe --status|--replication",
		Short: "The quorum's leader, epoch and high watermark (--status), or each voter's and observer's log (--replication)",
		Long: `Describe the metadata quorum, like kafka-metadata-quorum.sh describe.

Offsets are Raft log indexes of the metadata log and the leader epoch is the
Raft term. LogEndOffset is each member's own report, exact when asked; the
timestamps are approximate (see the quorum package doc, "DescribeQuorum").`,
		Example: `  sluice quorum describe --status
  sluice quorum describe --replication --format json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.run(cmd.Context(), cmd.OutOrStdout())
		},
	}
	describe.Flags().BoolVar(&c.status, "status", false, "the quorum's leader, epoch, high watermark and lag")
	describe.Flags().BoolVar(&c.replication, "replication", false, "each voter's and observer's log end offset, lag and timestamps")
	describe.Flags().BoolVar(&c.human, "human-readable", false, "with --replication: timestamps as \"N ms ago\"")
	root.AddCommand(describe)
	return root
}

func (c *quorumCmd) run(ctx context.Context, w io.Writer) error {
	if c.status == c.replication {
		return errors.New("give exactly one of --status or --replication")
	}
	return c.with(ctx, func(s session) error {
		md, err := s.adm.BrokerMetadata(s.ctx)
		if err != nil {
			return c.unreachable(err)
		}
		req := kmsg.NewPtrDescribeQuorumRequest()
		rt := kmsg.NewDescribeQuorumRequestTopic()
		rt.Topic = metadataTopic
		rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}
		req.Topics = []kmsg.DescribeQuorumRequestTopic{rt}
		resp, err := req.RequestWith(s.ctx, s.cl)
		if err != nil {
			return c.unreachable(err)
		}
		p, err := quorumPartition(resp)
		if err != nil {
			return err
		}
		if c.status {
			st := quorumStatus(md.Cluster, p)
			return c.emit(w, st, func() { printQuorumStatus(w, st) })
		}
		rows := quorumReplication(p)
		return c.emit(w, rows, func() { printQuorumReplication(w, rows, c.human, time.Now()) })
	})
}

// quorumPartition returns the metadata partition of a response, or the
// error it carries, phrased for an operator.
func quorumPartition(resp *kmsg.DescribeQuorumResponse) (kmsg.DescribeQuorumResponseTopicPartition, error) {
	var none kmsg.DescribeQuorumResponseTopicPartition
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return none, fmt.Errorf("describe quorum: %w%s", err, detail(deref(resp.ErrorMessage)))
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return none, fmt.Errorf("describe quorum: the answer has no %s partition", metadataTopic)
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return none, fmt.Errorf("describe quorum: %w%s (is a majority of the controllers up? try `sluice cluster health`)", err, detail(deref(p.ErrorMessage)))
	}
	return p, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// quorumStatus computes --status as kafka-metadata-quorum.sh does: the
// max follower lag is the leader's log end minus the smallest voter's,
// and its time the difference of their last caught-up timestamps (-1 when
// either is unknown).
func quorumStatus(clusterID string, p kmsg.DescribeQuorumResponseTopicPartition) QuorumStatus {
	st := QuorumStatus{ClusterID: clusterID, LeaderID: p.LeaderID, LeaderEpoch: p.LeaderEpoch, HighWatermark: p.HighWatermark,
		CurrentVoters: []int32{}, CurrentObservers: []int32{}, MaxFollowerLagTimeMs: -1}
	var leader, maxLag *kmsg.DescribeQuorumResponseTopicPartitionReplicaState
	for i := range p.CurrentVoters {
		v := &p.CurrentVoters[i]
		st.CurrentVoters = append(st.CurrentVoters, v.ReplicaID)
		if v.ReplicaID == p.LeaderID {
			leader = v
		}
		if maxLag == nil || v.LogEndOffset < maxLag.LogEndOffset {
			maxLag = v
		}
	}
	for _, o := range p.Observers {
		st.CurrentObservers = append(st.CurrentObservers, o.ReplicaID)
	}
	switch {
	case leader == nil:
	case leader.ReplicaID == maxLag.ReplicaID || leader.LogEndOffset == maxLag.LogEndOffset:
		st.MaxFollowerLagTimeMs = 0
	case leader.LastCaughtUpTimestamp >= 0 && maxLag.LastCaughtUpTimestamp >= 0:
		st.MaxFollowerLagTimeMs = leader.LastCaughtUpTimestamp - maxLag.LastCaughtUpTimestamp
	}
	if leader != nil {
		st.MaxFollowerLag = leader.LogEndOffset - maxLag.LogEndOffset
	}
	return st
}

// quorumReplication lists the leader, the other voters, then the
// observers, each with its lag behind the leader's log end.
func quorumReplication(p kmsg.DescribeQuorumResponseTopicPartition) []QuorumReplica {
	leaderLEO := int64(-1)
	for _, v := range p.CurrentVoters {
		if v.ReplicaID == p.LeaderID {
			leaderLEO = v.LogEndOffset
		}
	}
	row := func(r kmsg.DescribeQuorumResponseTopicPartitionReplicaState, status string) QuorumReplica {
		return QuorumReplica{NodeID: r.ReplicaID, LogEndOffset: r.LogEndOffset, Lag: leaderLEO - r.LogEndOffset,
			LastFetchTimestamp: r.LastFetchTimestamp, LastCaughtUpTimestamp: r.LastCaughtUpTimestamp, Status: status}
	}
	rows := []QuorumReplica{}
	for _, v := range p.CurrentVoters {
		if v.ReplicaID == p.LeaderID {
			rows = append(rows, row(v, "Leader"))
		}
	}
	for _, v := range p.CurrentVoters {
		if v.ReplicaID != p.LeaderID {
			rows = append(rows, row(v, "Follower"))
		}
	}
	for _, o := range p.Observers {
		rows = append(rows, row(o, "Observer"))
	}
	return rows
}

func printQuorumStatus(w io.Writer, st QuorumStatus) {
	fmt.Fprintf(w, "ClusterId:              %s\n", st.ClusterID)
	fmt.Fprintf(w, "LeaderId:               %d\n", st.LeaderID)
	fmt.Fprintf(w, "LeaderEpoch:            %d\n", st.LeaderEpoch)
	fmt.Fprintf(w, "HighWatermark:          %d\n", st.HighWatermark)
	fmt.Fprintf(w, "MaxFollowerLag:         %d\n", st.MaxFollowerLag)
	fmt.Fprintf(w, "MaxFollowerLagTimeMs:   %d\n", st.MaxFollowerLagTimeMs)
	fmt.Fprintf(w, "CurrentVoters:          [%s]\n", joinIDs(st.CurrentVoters))
	fmt.Fprintf(w, "CurrentObservers:       [%s]\n", joinIDs(st.CurrentObservers))
}

func printQuorumReplication(w io.Writer, rows []QuorumReplica, human bool, now time.Time) {
	ts := func(ms int64) string {
		switch {
		case ms < 0:
			return "-1"
		case human:
			return fmt.Sprintf("%d ms ago", max(0, now.UnixMilli()-ms))
		}
		return fmt.Sprint(ms)
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join([]string{"NodeId", "LogEndOffset", "Lag", "LastFetchTimestamp", "LastCaughtUpTimestamp", "Status"}, "\t"))
	for _, r := range rows {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t%s\t%s\n", r.NodeID, r.LogEndOffset, r.Lag, ts(r.LastFetchTimestamp), ts(r.LastCaughtUpTimestamp), r.Status)
	}
	tw.Flush()
}
