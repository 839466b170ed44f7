package node

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/quorum"
)

// TestELRElectsTheSafestReplica: KIP-966 on real nodes. Three voters and
// two broker-only nodes (so the quorum lives through three replicas
// down); partition 0 on [4 5 3], min.insync.replicas 2, acks=all records
// acknowledged before each step. Broker 3 is killed (it misses what
// follows), broker 5 stops cleanly (the ISR drops to [4], below
// min.insync.replicas: 5 is eligible), the leader 4 is killed (the ISR
// empties; 4 joins the ELR). Broker 3 restarts uncleanly and is alive,
// but the partition stays leaderless: 3 is not eligible and electing it
// would lose acknowledged records. Broker 5 restarts after its clean
// shutdown (its marker names its epoch), is elected from the ELR, takes
// 3 back into the ISR, and every acknowledged record reads back.
func TestELRElectsTheSafestReplica(t *testing.T) {
	c := startReplCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	n4 := c.addBrokerOnly(ctx, 4)
	n5 := c.addBrokerOnly(ctx, 5)
	n3 := c.nodes[2]
	const topic = "elr"
	ct := kmsg.NewPtrCreateTopicsRequest()
	tr := kmsg.NewCreateTopicsRequestTopic()
	tr.Topic, tr.NumPartitions, tr.ReplicationFactor = topic, -1, -1
	tr.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{4, 5, 3}}}
	tr.Configs = []kmsg.CreateTopicsRequestTopicConfig{{Name: "min.insync.replicas", Value: kmsg.StringPtr("2")}}
	ct.Topics = append(ct.Topics, tr)
	if resp, err := ct.RequestWith(ctx, c.client()); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create: %v %+v", err, resp)
	}
	part := func(im *quorum.Image) quorum.Partition {
		if tp := im.Topics[topic]; tp != nil {
			return tp.Partitions[0]
		}
		return quorum.Partition{Leader: quorum.NoLeader}
	}
	c.waitImage(ctx, "the topic led by 4 with a full ISR", func(im *quorum.Image) bool {
		p := part(im)
		return p.Leader == 4 && len(p.ISR) == 3
	})
	acks := newAckLog()
	produce := func(from, n int) {
		t.Helper()
		cl := c.client(kgo.DefaultProduceTopic(topic))
		for i := from; i < from+n; i++ {
			r, err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "elr-%05d", i)}).First()
			if err != nil {
				t.Fatalf("produce %d: %v", i, err)
			}
			acks.add(r)
		}
		cl.Close()
	}
	produce(0, 200)

	c.kill(n3)
	c.waitImage(ctx, "3 out of the ISR", func(im *quorum.Image) bool { return !slices.Contains(part(im).ISR, 3) })
	produce(200, 200) // 3 misses these

	if err := n5.Close(ctx); err != nil {
		t.Fatalf("clean stop of 5: %v", err)
	}
	n5.Node = nil
	c.waitImage(ctx, "ISR [4], ELR [5]", func(im *quorum.Image) bool {
		p := part(im)
		return slices.Equal(p.ISR, []int32{4}) && slices.Equal(p.ELR, []int32{5})
	})

	c.kill(n4)
	c.waitImage(ctx, "the ISR empty, ELR [4 5], no leader", func(im *quorum.Image) bool {
		p := part(im)
		return p.Leader == quorum.NoLeader && len(p.ISR) == 0 && slices.Equal(p.ELR, []int32{4, 5})
	})

	// Clients see the eligible replicas (DescribeTopicPartitions, KIP-966),
	// once the broker they ask has the change.
	dcl := c.client()
	for {
		dreq := kmsg.NewPtrDescribeTopicPartitionsRequest()
		dreq.Topics = []kmsg.DescribeTopicPartitionsRequestTopic{{Topic: topic}}
		dresp, err := dreq.RequestWith(ctx, dcl)
		if err != nil {
			t.Fatalf("DescribeTopicPartitions: %v", err)
		}
		if len(dresp.Topics) == 1 && len(dresp.Topics[0].Partitions) == 1 {
			dp := dresp.Topics[0].Partitions[0]
			if dp.LeaderID == -1 && len(dp.ISR) == 0 && slices.Equal(dp.EligibleLeaderReplicas, []int32{4, 5}) {
				break
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("DescribeTopicPartitions never answered leader -1, ISR [], ELR [4 5]: %+v", dresp.Topics)
		case <-time.After(50 * time.Millisecond):
		}
	}

	// Open returns once 3 is unfenced: an election it could win would
	// have been in the same metadata entry as its unfence.
	c.restart(n3)
	c.live().ctrl.View(func(im *quorum.Image) {
		if !im.Brokers[3].Alive() {
			t.Fatalf("broker 3 not alive after its restart: %+v", im.Brokers[3])
		}
		if p := part(im); p.Leader != quorum.NoLeader {
			t.Fatalf("the stale replica 3 was elected: %s", p)
		}
	})

	c.restart(n5)
	c.waitImage(ctx, "5 elected from the ELR", func(im *quorum.Image) bool { return part(im).Leader == 5 })
	c.waitImage(ctx, "3 back in the ISR with 5", func(im *quorum.Image) bool {
		p := part(im)
		return len(p.ISR) == 2 && len(p.ELR) == 0
	})
	var unclean int
	c.live().ctrl.View(func(im *quorum.Image) { unclean = len(part(im).UncleanElections) })
	if unclean != 0 {
		t.Errorf("%d unclean elections recorded, want none", unclean)
	}
	c.checkAllAcked(ctx, topic, 1, acks)
	if n := acks.count(); n != 400 {
		t.Fatalf("%d records acknowledged, want 400", n)
	}
}
