package node

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/node/kafka"
	"github.com/sluice-log/sluice/quorum"
)

// TestDescribeQuorumCluster: a real client's DescribeQuorum on a 3-node
// cluster names the active controller as leader, with the Raft term and
// commit index, and three voters that report their logs.
func TestDescribeQuorumCluster(t *testing.T) {
	nodes := startCluster(t, 3)
	ctx := testCtx(t)
	cl := newClient(t, nodes[1])
	md, err := kadm.NewClient(cl).BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = kafka.MetadataTopic
	rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}
	req.Topics = []kmsg.DescribeQuorumRequestTopic{rt}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("response %+v", resp)
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		t.Fatal(err)
	}
	if p.LeaderID != md.Controller || p.LeaderEpoch < 1 || p.HighWatermark < 1 {
		t.Fatalf("leader %d (controller %d) epoch %d hw %d", p.LeaderID, md.Controller, p.LeaderEpoch, p.HighWatermark)
	}
	var leader *testNode
	for _, tn := range nodes {
		if tn.ctrl.IsLeader() {
			leader = tn
		}
	}
	if leader == nil || p.LeaderID != leader.cfg.NodeID {
		t.Fatalf("leader %d is not the node that leads", p.LeaderID)
	}
	if len(p.CurrentVoters) != 3 || len(p.Observers) != 0 {
		t.Fatalf("voters %+v observers %+v", p.CurrentVoters, p.Observers)
	}
	for i, v := range p.CurrentVoters {
		if v.ReplicaID != int32(i+1) || v.LogEndOffset < 1 || v.LastFetchTimestamp <= 0 {
			t.Fatalf("voter %+v", v)
		}
	}
	if len(resp.Nodes) != 3 {
		t.Fatalf("nodes %+v", resp.Nodes)
	}
}

// TestCreatePartitions: kadm grows a topic on a real node; the new
// partitions take records; shrinking, unknown topics and validate-only
// requests change nothing.
func TestCreatePartitions(t *testing.T) {
	tn := startNode(t, t.TempDir())
	ctx := testCtx(t)
	cl := newClient(t, tn)
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "grow"); err != nil {
		t.Fatal(err)
	}
	if r, err := adm.ValidateCreatePartitions(ctx, 5, "grow"); err != nil || r["grow"].Err != nil {
		t.Fatalf("validate: %v %+v", err, r)
	}
	r, err := adm.CreatePartitions(ctx, 2, "grow")
	if err != nil || r["grow"].Err != nil {
		t.Fatalf("create partitions: %v %+v", err, r)
	}
	var n int
	tn.ctrl.View(func(im *quorum.Image) { n = len(im.Topics["grow"].Partitions) })
	if n != 4 {
		t.Fatalf("%d partitions after adding 2 to 2 (validate-only must add none)", n)
	}
	for _, c := range []struct {
		set  int
		want error
	}{{3, kerr.InvalidPartitions}, {4, kerr.InvalidPartitions}} {
		r, err := adm.UpdatePartitions(ctx, c.set, "grow")
		if err != nil || r["grow"].Err != c.want {
			t.Fatalf("set %d: %v %+v, want %v", c.set, err, r["grow"], c.want)
		}
	}
	if r, err := adm.UpdatePartitions(ctx, 3, "nope"); err != nil || r["nope"].Err != kerr.UnknownTopicOrPartition {
		t.Fatalf("unknown topic: %v %+v", err, r)
	}
	prod := newClient(t, tn, kgo.DefaultProduceTopic("grow"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	res := prod.ProduceSync(ctx, &kgo.Record{Partition: 3, Value: []byte("new")})
	if rec, err := res.First(); err != nil || rec.Offset != 0 || rec.Partition != 3 {
		t.Fatalf("produce to the new partition: %v %+v", err, rec)
	}
}
