package node

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/node/meta"
	"github.com/sluice-log/sluice/quorum"
)

// addBrokerOnly adds a process.roles=broker node to a running replCluster
// (node/broker_only_test.go's join, with the cluster's gossip) and waits
// until every node sees it alive.
func (c *replCluster) addBrokerOnly(ctx context.Context, id int32) *replNode {
	t := c.t
	t.Helper()
	m, err := meta.ReadMeta(c.nodes[0].dir)
	if err != nil {
		t.Fatal(err)
	}
	rn := &replNode{id: id, dir: t.TempDir(), ctrlAddr: freeAddr(t), gossip: freeAddr(t), extra: []string{"process.roles=broker"}}
	rn.fs, rn.full = vfs.NewCrashableMem(), new(atomic.Bool)
	if _, err := meta.Format(rn.dir, meta.Meta{ClusterID: m.ClusterID, NodeID: id, InitialControllers: m.InitialControllers}); err != nil {
		t.Fatal(err)
	}
	if err := c.open(rn); err != nil {
		t.Fatalf("broker-only node %d: %v", id, err)
	}
	c.nodes = append(c.nodes, rn)
	c.seeds = append(c.seeds, rn.gossip)
	c.waitImage(ctx, "the broker-only node alive", func(im *quorum.Image) bool { return im.Brokers[id].Alive() })
	return rn
}

// partitionState is topic/partition 0 in the image of a live node.
func (c *replCluster) partitionState(topic string) quorum.Partition {
	var p quorum.Partition
	c.live().ctrl.View(func(im *quorum.Image) {
		if t := im.Topics[topic]; t != nil {
			p = t.Partitions[0]
		}
	})
	return p
}

// TestReassignmentUnderLoad: three combined nodes and a broker-only
// fourth; partition 0 of an RF=3 topic on {1,2,3} (min.insync.replicas
// 2, 16 MiB already in it) under a steady idempotent acks=all produce
// load. A move to {2,3,4} cancelled at once restores {1,2,3} and deletes
// broker 4's new replica; then the move to {2,3,4} runs to completion:
// Metadata and ListPartitionReassignments show the full replica set while
// it runs, the leader leaves broker 1, broker 1's log files are deleted,
// and every acknowledged record reads back once, in order.
func TestReassignmentUnderLoad(t *testing.T) {
	c := startReplCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	n4 := c.addBrokerOnly(ctx, 4)
	const topic = "mv"
	ct := kmsg.NewPtrCreateTopicsRequest()
	tr := kmsg.NewCreateTopicsRequestTopic()
	tr.Topic, tr.NumPartitions, tr.ReplicationFactor = topic, -1, -1
	tr.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{1, 2, 3}}}
	tr.Configs = []kmsg.CreateTopicsRequestTopicConfig{{Name: "min.insync.replicas", Value: kmsg.StringPtr("2")}}
	ct.Topics = append(ct.Topics, tr)
	if resp, err := ct.RequestWith(ctx, c.client()); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create: %v %+v", err, resp)
	}
	c.waitImage(ctx, "the topic", func(im *quorum.Image) bool { return im.Topics[topic] != nil })
	prod := c.client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchMaxBytes(2<<20))
	acks := newAckLog()
	// A backlog the adding replica needs many fetches for (1 MiB each):
	// the cancellation below comes long before it could catch up.
	big := make([]byte, 16<<10)
	var pre sync.WaitGroup
	for i := range 1024 {
		pre.Add(1)
		prod.Produce(ctx, &kgo.Record{Value: append([]byte("pre-"+strconv.Itoa(i)+"-"), big...)}, func(r *kgo.Record, err error) {
			defer pre.Done()
			if err != nil {
				t.Errorf("preload: %v", err)
				return
			}
			acks.add(r)
		})
	}
	pre.Wait()
	if t.Failed() {
		t.FailNow()
	}

	// The steady load: one record a millisecond, every one must be acked.
	var failed atomic.Int64
	stop := make(chan struct{})
	var stream sync.WaitGroup
	stream.Go(func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			stream.Add(1)
			prod.Produce(ctx, &kgo.Record{Value: []byte("r-" + strconv.Itoa(i))}, func(r *kgo.Record, err error) {
				defer stream.Done()
				if err != nil {
					failed.Add(1)
					t.Logf("produce: %v", err)
					return
				}
				acks.add(r)
			})
		}
	})
	adm := kadm.NewClient(c.client())
	alter := func(target []int32) {
		t.Helper()
		var req kadm.AlterPartitionAssignmentsReq
		if target == nil {
			req.CancelAssign(topic, 0)
		} else {
			req.Assign(topic, 0, target)
		}
		resp, err := adm.AlterPartitionAssignments(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if r := resp[topic][0]; r.Err != nil {
			t.Fatalf("alter %v: %v: %s", target, r.Err, r.ErrMessage)
		}
	}
	full := func() {
		t.Helper()
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		if reps := md.Topics[topic].Partitions[0].Replicas; !slices.Equal(reps, []int32{2, 3, 4, 1}) {
			t.Errorf("Metadata during the move: replicas %v, want [2 3 4 1]", reps)
		}
		ls, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{topic: {0: {}}})
		if err != nil {
			t.Fatal(err)
		}
		if r := ls[topic][0]; !slices.Equal(r.AddingReplicas, []int32{4}) || !slices.Equal(r.RemovingReplicas, []int32{1}) {
			t.Errorf("ListPartitionReassignments during the move: %+v", r)
		}
		// The leader counts it in ReassigningPartitions.
		if l := c.leaderOf(topic, 0); l != nil {
			var moving bool
			for _, ps := range (*metricsSource)(l.Node).Partitions(nil) {
				moving = moving || (ps.Topic == topic && ps.Leader && ps.Reassigning && ps.Replicas == 3)
			}
			if !moving {
				t.Error("the leader's metrics do not show the reassignment")
			}
		}
	}
	gone := func(rn *replNode) bool {
		_, err := rn.fs.Stat(filepath.Join(rn.dir, topic+"-0"))
		return rn.replica(topic, 0) == nil && err != nil
	}

	// Cancelled at once: the original set comes back, 4's copy goes.
	alter([]int32{2, 3, 4})
	if n4.replica(topic, 0) == nil {
		t.Error("broker 4 has no replica when the reassignment is answered")
	}
	full()
	alter(nil)
	c.waitImage(ctx, "the cancelled move", func(im *quorum.Image) bool {
		p := im.Topics[topic].Partitions[0]
		// The original set, in Kafka's order: the replicas without the
		// adding ones ([2 3 4 1] less 4).
		return !p.Reassigning() && slices.Equal(p.Replicas, []int32{2, 3, 1})
	})
	c.waitImage(ctx, "broker 4's replica deleted", func(*quorum.Image) bool { return gone(n4) })
	if p := c.partitionState(topic); slices.Contains(p.ISR, 4) {
		t.Fatalf("after the cancellation: %s", p)
	}

	// Move for real, with broker 1 leading if it can be arranged
	// (a leader on a removed replica must hand over).
	if p := c.partitionState(topic); p.Leader != 1 {
		t.Logf("before the move broker %d leads, not 1: %s", p.Leader, p)
	}
	before := acks.count()
	began := time.Now()
	alter([]int32{2, 3, 4})
	c.waitImage(ctx, "the move done", func(im *quorum.Image) bool {
		p := im.Topics[topic].Partitions[0]
		return !p.Reassigning() && slices.Equal(p.Replicas, []int32{2, 3, 4})
	})
	t.Logf("reassignment of %d MiB + load completed in %v", 16, time.Since(began))
	n1 := c.nodes[0]
	c.waitImage(ctx, "broker 1's replica deleted", func(*quorum.Image) bool { return gone(n1) })
	if p := c.partitionState(topic); p.Leader == 1 || p.Leader == quorum.NoLeader || !slices.Equal(p.ISR, []int32{2, 3, 4}) {
		t.Fatalf("after the move: %s", p)
	}
	// The load goes on through the new leader for a while.
	c.waitImage(ctx, "more acks", func(*quorum.Image) bool { return acks.count() >= before+500 })
	close(stop)
	stream.Wait()
	if n := failed.Load(); n > 0 {
		t.Errorf("%d acks=all produces failed during the moves", n)
	}
	t.Logf("%d records acknowledged, %d during the moves", acks.count(), acks.count()-1024)
	c.checkAllAcked(ctx, topic, 1, acks)
}
