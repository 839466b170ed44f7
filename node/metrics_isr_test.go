package node

import (
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/sluice-log/sluice/quorum"
)

// TestMetricsISRShrinkExpand: two real nodes, a partition with replicas on
// both; its leader shrinks the ISR to itself through the quorum, then
// expands it back. The leader's /metrics count one shrink and one
// expansion, and show the partition under-replicated in between; the
// follower counts none (Kafka counts ISR changes on the leader).
func TestMetricsISRShrinkExpand(t *testing.T) {
	nodes := startCluster(t, 2)
	ctx := testCtx(t)
	if _, err := kadm.NewClient(newClient(t, nodes[0])).CreateTopic(ctx, 1, 2, nil, "isr"); err != nil {
		t.Fatal(err)
	}
	var p quorum.Partition
	var id quorum.UUID
	for _, tn := range nodes {
		waitUntil(ctx, t, tn, func() bool {
			var ok bool
			tn.ctrl.View(func(im *quorum.Image) {
				if tp := im.Topics["isr"]; tp != nil {
					ok, p, id = true, tp.Partitions[0], tp.ID
				}
			})
			return ok && tn.replica("isr", 0) != nil
		})
	}
	leader, follower := nodes[p.Leader-1], nodes[2-p.Leader]
	alter := func(isr ...*testNode) {
		t.Helper()
		var members []quorum.ISRMember
		for _, tn := range isr {
			members = append(members, quorum.ISRMember{ID: tn.cfg.NodeID, Epoch: tn.epoch})
		}
		reply, err := leader.ctrl.Propose(ctx, &quorum.AlterPartitions{BrokerID: leader.cfg.NodeID, BrokerEpoch: leader.epoch,
			Partitions: []quorum.AlterPartitionItem{{TopicID: id, Partition: 0, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, NewISR: members}}})
		if err != nil {
			t.Fatal(err)
		}
		res := reply.(*quorum.AlterPartitionsReply).Partitions[0]
		if res.Code != 0 {
			t.Fatalf("AlterPartition: code %d %s", res.Code, res.Message)
		}
		p = *res.State
	}

	alter(leader)
	mfs := scrapeUntil(t, leader, func(mfs map[string]*dto.MetricFamily) bool {
		return value(t, mfs, "kafka_server_replicamanager_isrshrinks_total") >= 1
	})
	if v := value(t, mfs, "kafka_server_replicamanager_isrshrinks_total"); v != 1 {
		t.Errorf("IsrShrinks = %v, want 1", v)
	}
	if v := value(t, mfs, "kafka_server_replicamanager_underreplicatedpartitions"); v != 1 {
		t.Errorf("UnderReplicatedPartitions = %v, want 1", v)
	}

	alter(leader, follower)
	mfs = scrapeUntil(t, leader, func(mfs map[string]*dto.MetricFamily) bool {
		return value(t, mfs, "kafka_server_replicamanager_isrexpands_total") >= 1
	})
	if v := value(t, mfs, "kafka_server_replicamanager_underreplicatedpartitions"); v != 0 {
		t.Errorf("UnderReplicatedPartitions after expansion = %v, want 0", v)
	}
	fm := scrape(t, follower)
	if s, e := value(t, fm, "kafka_server_replicamanager_isrshrinks_total"), value(t, fm, "kafka_server_replicamanager_isrexpands_total"); s != 0 || e != 0 {
		t.Errorf("the follower counted %v shrinks and %v expansions, want none", s, e)
	}
}
