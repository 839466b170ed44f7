package node

import (
	"context"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-log/sluice/quorum"
)

// gatherNode reads a node's registry in process (the replicated test
// cluster has no HTTP listeners; the HTTP path is TestMetricsScrape's).
func gatherNode(t testing.TB, n *Node) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := n.metrics.m.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// waitMetrics gathers n's metrics until cond holds, for up to 30s.
func waitMetrics(t *testing.T, n *Node, what string, cond func(map[string]*dto.MetricFamily) bool) map[string]*dto.MetricFamily {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		mfs := gatherNode(t, n)
		if cond(mfs) {
			return mfs
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

// TestMetricsReplication: three real nodes replicating one partition.
// An acks=all produce spends remote time waiting for the followers; a
// follower killed drops out of the ISR, which the leader counts as an ISR
// shrink and shows as under-replicated; restarted, it catches up, the ISR
// expands and the partition is fully replicated again.
func TestMetricsReplication(t *testing.T) {
	c := startReplCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl := c.client(kgo.DefaultProduceTopic("rm"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 3, nil, "rm"); err != nil {
		t.Fatal(err)
	}
	c.waitImage(ctx, "a full ISR", func(im *quorum.Image) bool {
		tp := im.Topics["rm"]
		return tp != nil && tp.Partitions[0].Leader >= 0 && len(tp.Partitions[0].ISR) == 3
	})
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("replicated")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	leader := c.leaderOf("rm", 0)
	waitMetrics(t, leader.Node, "an acks=all produce with remote time", func(mfs map[string]*dto.MetricFamily) bool {
		return value(t, mfs, "kafka_network_requestmetrics_remotetimems_count", "request=Produce") > 0 &&
			value(t, mfs, "kafka_network_requestmetrics_remotetimems_sum", "request=Produce") > 0
	})
	// The followers' fetches are FetchFollower on the leader; no consumer
	// fetched from it, so FetchConsumer stays empty.
	fmfs := waitMetrics(t, leader.Node, "follower fetches", func(mfs map[string]*dto.MetricFamily) bool {
		return value(t, mfs, "kafka_network_requestmetrics_totaltimems_count", "request=FetchFollower") > 0
	})
	if v := value(t, fmfs, "kafka_network_requestmetrics_totaltimems_count", "request=FetchConsumer"); v != 0 {
		t.Errorf("leader: TotalTimeMs{request=FetchConsumer} count = %v with no consumer, want 0", v)
	}
	waitMetrics(t, leader.Node, "replication bytes out", func(mfs map[string]*dto.MetricFamily) bool {
		return value(t, mfs, "kafka_server_brokertopicmetrics_replicationbytesout_total", "topic=rm") > 0
	})

	var follower *replNode
	for _, rn := range c.nodes {
		if rn != leader {
			follower = rn
		}
	}
	c.kill(follower)
	mfs := waitMetrics(t, leader.Node, "an ISR shrink", func(mfs map[string]*dto.MetricFamily) bool {
		return value(t, mfs, "kafka_server_replicamanager_isrshrinks_total") >= 1 &&
			value(t, mfs, "kafka_server_replicamanager_underreplicatedpartitions") == 1
	})
	if v := value(t, mfs, "kafka_cluster_partition_underreplicated", "topic=rm", "partition=0"); v != 1 {
		t.Errorf("partition underreplicated = %v, want 1", v)
	}
	c.restart(follower)
	waitMetrics(t, leader.Node, "an ISR expansion", func(mfs map[string]*dto.MetricFamily) bool {
		return value(t, mfs, "kafka_server_replicamanager_isrexpands_total") >= 1 &&
			value(t, mfs, "kafka_server_replicamanager_underreplicatedpartitions") == 0
	})
	for _, rn := range c.nodes {
		if rn == leader {
			continue
		}
		mfs := gatherNode(t, rn.Node)
		if s := value(t, mfs, "kafka_server_replicamanager_isrshrinks_total"); s != 0 {
			t.Errorf("follower %d counted %v ISR shrinks: Kafka counts them on the leader", rn.id, s)
		}
		if v := value(t, mfs, "kafka_server_replicamanager_leadercount"); v != 0 {
			t.Errorf("follower %d leads %v partitions", rn.id, v)
		}
	}
}
