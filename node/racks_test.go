package node

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/node/config"
	"github.com/sluice-log/sluice/quorum"
)

// topicBytesOut is tn's record bytes sent to consumers of topic
// (kafka_server_brokertopicmetrics_bytesout_total{topic}).
func topicBytesOut(t *testing.T, tn *testNode, topic string) float64 {
	t.Helper()
	mf := scrape(t, tn)["kafka_server_brokertopicmetrics_bytesout_total"]
	if mf == nil {
		return 0
	}
	for _, m := range mf.Metric {
		for _, lp := range m.Label {
			if lp.GetName() == "topic" && lp.GetValue() == topic {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// TestFetchFromFollower (KIP-392): three nodes on racks rack-1..3 with
// the rack-aware replica selector. Metadata and DescribeCluster carry the
// racks; a consumer whose client.rack is a follower's rack reads every
// record, in order, from that follower (which sends the topic's bytes to
// consumers: the leader redirected it) — with franz-go (kgo.Rack) and
// librdkafka (kcat -X client.rack); a consumer Fetch below v11 to a follower gets
// NOT_LEADER_OR_FOLLOWER, v11+ is served up to the follower's high
// watermark.
func TestFetchFromFollower(t *testing.T) {
	nodes := startClusterWith(t, 3, config.ListenerKafka, "broker.rack=rack-{id}",
		"replica.selector.class="+config.RackAwareReplicaSelector)
	ctx := testCtx(t)
	const n = 300
	cl := newClient(t, nodes[0], kgo.RequiredAcks(kgo.AllISRAcks()))
	adm := kadm.NewClient(cl)
	var md kadm.Metadata
	var err error
	waitFor(ctx, t, "Metadata lists three brokers", func() bool {
		md, err = adm.Metadata(ctx)
		return err == nil && len(md.Brokers) == 3
	})
	for _, b := range md.Brokers {
		if b.Rack == nil || *b.Rack != fmt.Sprintf("rack-%d", b.NodeID) {
			t.Errorf("Metadata: broker %d has rack %v", b.NodeID, b.Rack)
		}
	}
	var dc *kmsg.DescribeClusterResponse
	waitFor(ctx, t, "DescribeCluster lists three brokers", func() bool {
		dc, err = kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, cl)
		return err == nil && len(dc.Brokers) == 3
	})
	for _, b := range dc.Brokers {
		if b.Rack == nil || *b.Rack != fmt.Sprintf("rack-%d", b.NodeID) {
			t.Errorf("DescribeCluster: broker %d has rack %v", b.NodeID, b.Rack)
		}
	}
	// setup creates topic (one partition, RF 3), writes n records and
	// returns its leader and a follower whose high watermark is at the end.
	setup := func(topic string) (leader, follower *testNode) {
		t.Helper()
		if _, err := adm.CreateTopic(ctx, 1, 3, nil, topic); err != nil {
			t.Fatal(err)
		}
		var part quorum.Partition
		waitFor(ctx, t, "the partition's three replicas in sync", func() bool {
			var ok bool
			nodes[0].ctrl.View(func(im *quorum.Image) {
				if tp := im.Topics[topic]; tp != nil {
					part, ok = tp.Partitions[0], len(tp.Partitions[0].ISR) == 3
				}
			})
			return ok
		})
		for i := range n {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "v%04d", i)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		leader = nodes[part.Leader-1]
		follower = nodes[part.Replicas[1]-1]
		if follower == leader {
			follower = nodes[part.Replicas[2]-1]
		}
		waitFor(ctx, t, "the follower's high watermark at the end", func() bool {
			r := follower.replica(topic, 0)
			return r != nil && r.HighWatermark() == n
		})
		return leader, follower
	}
	check := func(who string, values []string) {
		t.Helper()
		if len(values) != n {
			t.Fatalf("%s read %d records, want %d", who, len(values), n)
		}
		for i, v := range values {
			if want := fmt.Sprintf("v%04d", i); v != want {
				t.Fatalf("%s: record %d is %q, want %q", who, i, v, want)
			}
		}
	}
	// servedByFollower waits until follower sent consumers of topic as
	// many record bytes as the leader holds: it did serve the read.
	servedByFollower := func(who string, leader, follower *testNode, topic string) {
		t.Helper()
		size := leader.replica(topic, 0).Log().Size()
		waitFor(ctx, t, who+": the follower in the client's rack served the records", func() bool {
			return topicBytesOut(t, follower, topic) >= float64(size)
		})
	}

	// franz-go with kgo.Rack, seeded with the leader only.
	leader, follower := setup("ff-kgo")
	cons := newClient(t, leader, kgo.Rack(fmt.Sprintf("rack-%d", follower.cfg.NodeID)),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"ff-kgo": {0: kgo.NewOffset().AtStart()}}))
	var got []string
	for len(got) < n {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	cons.Close()
	check("kgo", got)
	servedByFollower("kgo", leader, follower, "ff-kgo")

	// librdkafka (kcat) with client.rack, bootstrapped at the leader.
	path := kcatPath(t)
	leader, follower = setup("ff-kcat")
	out := kcat(ctx, t, path, nil, "-C", "-b", leader.KafkaAddr(), "-t", "ff-kcat", "-p", "0",
		"-o", "beginning", "-e", "-q", "-X", fmt.Sprintf("client.rack=rack-%d", follower.cfg.NodeID), "-f", "%s\n")
	check("kcat", strings.Split(strings.TrimSuffix(string(out), "\n"), "\n"))
	servedByFollower("kcat", leader, follower, "ff-kcat")

	// v11+ from a follower is served (up to its HW); v10 is not.
	var id [16]byte
	nodes[0].ctrl.View(func(im *quorum.Image) { id = im.Topics["ff-kcat"].ID })
	if p := forgeFetch(t, follower.KafkaAddr(), 10, -1, -1, "ff-kcat", id, 0, 0, -1); p.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Errorf("consumer Fetch v10 from a follower: error %d, want NOT_LEADER_OR_FOLLOWER", p.ErrorCode)
	}
	if p := forgeFetch(t, follower.KafkaAddr(), 11, -1, -1, "ff-kcat", id, 0, 0, -1); p.ErrorCode != 0 || p.HighWatermark != n || len(p.RecordBatches) == 0 {
		t.Errorf("consumer Fetch v11 from a follower: error %d, hw %d, %d bytes", p.ErrorCode, p.HighWatermark, len(p.RecordBatches))
	}
}
