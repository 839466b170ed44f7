package admin

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestQuorumDescribe: `sluice quorum describe` against a real 3-node
// cluster, as text and JSON, and its refusals.
func TestQuorumDescribe(t *testing.T) {
	_, bootstrap := startCluster(t, 3)
	info := decode[struct {
		ClusterID  string `json:"cluster_id"`
		Controller int32  `json:"controller_id"`
	}](t, mustRun(t, bootstrap, "cluster", "info", "--format", "json"))

	st := decode[QuorumStatus](t, mustRun(t, bootstrap, "quorum", "describe", "--status", "--format", "json"))
	if st.ClusterID != info.ClusterID || st.LeaderID != info.Controller || st.LeaderEpoch < 1 || st.HighWatermark < 1 {
		t.Fatalf("status %+v, cluster info %+v", st, info)
	}
	if !slices.Equal(st.CurrentVoters, []int32{1, 2, 3}) || len(st.CurrentObservers) != 0 {
		t.Fatalf("voters %v observers %v", st.CurrentVoters, st.CurrentObservers)
	}
	if st.MaxFollowerLag < 0 {
		t.Fatalf("max follower lag %d", st.MaxFollowerLag)
	}
	text := mustRun(t, bootstrap, "quorum", "describe", "--status")
	for _, want := range []string{"ClusterId:              " + st.ClusterID, fmt.Sprintf("LeaderId:               %d", st.LeaderID), "CurrentVoters:          [1,2,3]", "CurrentObservers:       []", "MaxFollowerLagTimeMs:"} {
		if !strings.Contains(text, want) {
			t.Errorf("status text lacks %q:\n%s", want, text)
		}
	}

	rows := decode[[]QuorumReplica](t, mustRun(t, bootstrap, "quorum", "describe", "--replication", "--format", "json"))
	if len(rows) != 3 || rows[0].Status != "Leader" || rows[0].NodeID != st.LeaderID || rows[0].Lag != 0 {
		t.Fatalf("replication %+v", rows)
	}
	now := time.Now().UnixMilli()
	for _, r := range rows[1:] {
		if r.Status != "Follower" || r.LogEndOffset < 1 || r.Lag != rows[0].LogEndOffset-r.LogEndOffset {
			t.Fatalf("follower %+v (leader %+v)", r, rows[0])
		}
		if r.LastFetchTimestamp <= 0 || r.LastFetchTimestamp > now+1000 {
			t.Fatalf("follower %d last fetch %d, now %d", r.NodeID, r.LastFetchTimestamp, now)
		}
	}
	text = mustRun(t, bootstrap, "quorum", "describe", "--replication", "--human-readable")
	if lines := strings.Split(strings.TrimSpace(text), "\n"); len(lines) != 4 ||
		!strings.HasPrefix(lines[0], "NodeId  LogEndOffset  Lag  LastFetchTimestamp  LastCaughtUpTimestamp  Status") ||
		!strings.Contains(text, "ms ago") || !strings.HasSuffix(lines[1], "Leader") {
		t.Fatalf("replication text:\n%s", text)
	}

	if _, err := run(t, bootstrap, "quorum", "describe"); err == nil || !strings.Contains(err.Error(), "--status or --replication") {
		t.Fatalf("no mode: %v", err)
	}
	if _, err := run(t, "127.0.0.1:1", "quorum", "describe", "--status", "--timeout", "1s"); err == nil || !strings.Contains(err.Error(), "is the cluster running") {
		t.Fatalf("cluster down: %v", err)
	}
}

// TestQuorumStatusArithmetic: kafka-metadata-quorum.sh's lag rules, on
// answers a live cluster rarely gives (a lagging and an unreachable voter).
func TestQuorumStatusArithmetic(t *testing.T) {
	rs := func(id int32, leo, caught int64) kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
		r := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
		r.ReplicaID, r.LogEndOffset, r.LastCaughtUpTimestamp = id, leo, caught
		return r
	}
	p := kmsg.NewDescribeQuorumResponseTopicPartition()
	p.LeaderID = 2
	p.CurrentVoters = append(p.CurrentVoters, rs(1, 90, 1000), rs(2, 100, 5000), rs(3, 100, 5000))
	p.Observers = append(p.Observers, rs(4, -1, -1))
	st := quorumStatus("c", p)
	if st.MaxFollowerLag != 10 || st.MaxFollowerLagTimeMs != 4000 || !slices.Equal(st.CurrentObservers, []int32{4}) {
		t.Fatalf("status %+v", st)
	}
	p.CurrentVoters[0] = rs(1, -1, -1) // unreachable: lag unknown in time
	if st := quorumStatus("c", p); st.MaxFollowerLag != 101 || st.MaxFollowerLagTimeMs != -1 {
		t.Fatalf("with an unreachable voter: %+v", st)
	}
	rows := quorumReplication(p)
	if got := []string{rows[0].Status, rows[1].Status, rows[2].Status, rows[3].Status}; !slices.Equal(got, []string{"Leader", "Follower", "Follower", "Observer"}) || rows[0].NodeID != 2 {
		t.Fatalf("rows %+v", rows)
	}
	resp := kmsg.NewPtrDescribeQuorumResponse()
	tp := kmsg.NewDescribeQuorumResponseTopic()
	bad := kmsg.NewDescribeQuorumResponseTopicPartition()
	bad.ErrorCode = 6
	tp.Partitions = append(tp.Partitions, bad)
	resp.Topics = append(resp.Topics, tp)
	if _, err := quorumPartition(resp); err == nil || !strings.Contains(err.Error(), "NOT_LEADER") {
		t.Fatalf("leaderless quorum: %v", err)
	}
}
