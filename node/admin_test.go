package node

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/segment"
)

// TestAdmin: kadm creates, describes, configures and deletes topics and
// lists offsets against a real node.
func TestAdmin(t *testing.T) {
	tn := startNode(t, t.TempDir())
	ctx := testCtx(t)
	cl := newClient(t, tn)
	adm := kadm.NewClient(cl)

	retention := "3600000"
	created, err := adm.CreateTopics(ctx, 3, 1, map[string]*string{"retention.ms": &retention}, "orders", "payments")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range created.Sorted() {
		if c.Err != nil || c.ID == [16]byte{} {
			t.Fatalf("create %s: %v (id %v)", c.Topic, c.Err, c.ID)
		}
	}
	again, _ := adm.CreateTopics(ctx, 1, 1, nil, "orders")
	if err := again["orders"].Err; err != kerr.TopicAlreadyExists {
		t.Fatalf("second create: %v, want TOPIC_ALREADY_EXISTS", err)
	}
	bad := "nope"
	badCfg, _ := adm.CreateTopics(ctx, 1, 1, map[string]*string{"cleanup.policy": &bad}, "compacted")
	if err := badCfg["compacted"].Err; err != kerr.InvalidConfig {
		t.Fatalf("bad config: %v, want INVALID_CONFIG", err)
	}
	tooMany, _ := adm.CreateTopics(ctx, 1, 3, nil, "replicated")
	if err := tooMany["replicated"].Err; err != kerr.InvalidReplicationFactor {
		t.Fatalf("rf 3 on one broker: %v, want INVALID_REPLICATION_FACTOR", err)
	}

	topics, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(topics) != 2 || len(topics["orders"].Partitions) != 3 {
		t.Fatalf("topics: %+v", topics)
	}
	for _, p := range topics["orders"].Partitions {
		if p.Leader != 1 || p.Err != nil {
			t.Fatalf("orders partition %d: leader %d err %v", p.Partition, p.Leader, p.Err)
		}
	}

	// Configs: the override, a default, then an incremental alter.
	rcs, err := adm.DescribeTopicConfigs(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	vals := map[string]kadm.Config{}
	for _, c := range rcs[0].Configs {
		vals[c.Key] = c
	}
	if c := vals["retention.ms"]; c.MaybeValue() != "3600000" || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("retention.ms = %+v", c)
	}
	if c := vals["segment.bytes"]; c.MaybeValue() != "1073741824" || c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("segment.bytes = %+v", c)
	}
	two := "2"
	alt, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "min.insync.replicas", Value: &two}}, "orders")
	if err != nil || alt[0].Err != nil {
		t.Fatalf("alter: %v %v", err, alt)
	}
	rcs, _ = adm.DescribeTopicConfigs(ctx, "orders")
	for _, c := range rcs[0].Configs {
		if c.Key == "min.insync.replicas" && c.MaybeValue() != "2" {
			t.Fatalf("after alter: %+v", c)
		}
	}
	// min.insync.replicas=2 with one replica: acks=all is refused up front.
	pr := produceRaw(ctx, t, cl, "orders", 0, -1, segment.BuildBatch(1, []byte("x")))
	if pr.ErrorCode != kerr.NotEnoughReplicas.Code {
		t.Fatalf("acks=all under min.insync.replicas: %+v, want NOT_ENOUGH_REPLICAS", pr)
	}
	bcs, err := adm.DescribeBrokerConfigs(ctx, 1)
	if err != nil || len(bcs) != 1 || len(bcs[0].Configs) == 0 {
		t.Fatalf("broker configs: %v %+v", err, bcs)
	}

	// Offsets: produce 10 records at increasing timestamps to payments/0.
	p1 := newClient(t, tn, kgo.DefaultProduceTopic("payments"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	base := int64(1_700_000_000_000)
	for i := range 10 {
		r := &kgo.Record{Value: []byte{byte(i)}, Timestamp: time.UnixMilli(base + int64(i)*1000)}
		if err := p1.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	starts, err := adm.ListStartOffsets(ctx, "payments")
	if err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(ctx, "payments")
	if err != nil {
		t.Fatal(err)
	}
	byTs, err := adm.ListOffsetsAfterMilli(ctx, base+4500, "payments")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := starts.Lookup("payments", 0)
	e, _ := ends.Lookup("payments", 0)
	ts, _ := byTs.Lookup("payments", 0)
	if s.Offset != 0 || e.Offset != 10 || ts.Offset != 5 || ts.Timestamp != base+5000 {
		t.Fatalf("offsets: start %+v end %+v after %d: %+v", s, e, base+4500, ts)
	}
	// KIP-734: the record with the largest timestamp (ListOffsets -3).
	maxTs, err := adm.ListMaxTimestampOffsets(ctx, "payments")
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := maxTs.Lookup("payments", 0); m.Err != nil || m.Offset != 9 || m.Timestamp != base+9000 {
		t.Fatalf("max timestamp offset: %+v, want offset 9 at %d", m, base+9000)
	}
	if e1, _ := ends.Lookup("payments", 1); e1.Offset != 0 {
		t.Fatalf("empty partition end offset %+v", e1)
	}

	// A preferred election where the preferred replica leads already.
	el, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"orders": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if r := el["orders"][0]; r.Err != kerr.ElectionNotNeeded {
		t.Fatalf("elect leaders: %+v", r)
	}

	// DescribeCluster, raw.
	dc := kmsg.NewPtrDescribeClusterRequest()
	dresp, err := dc.RequestWith(ctx, cl)
	if err != nil || dresp.ErrorCode != 0 || len(dresp.Brokers) != 1 || dresp.ControllerID != 1 || dresp.ClusterID == "" {
		t.Fatalf("describe cluster: %v %+v", err, dresp)
	}

	// Delete: the topic and its logs go away. The producer goes first: its
	// metadata refreshes would auto-create the topic again.
	p1.Close()
	dir := filepath.Join(tn.dir, "payments-0")
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("log directory: %v", err)
	}
	del, err := adm.DeleteTopics(ctx, "payments")
	if err != nil || del["payments"].Err != nil {
		t.Fatalf("delete: %v %+v", err, del)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("log directory after delete: %v", err)
	}
	// A new client: kgo answers Metadata from a cache for a few seconds.
	topics, _ = kadm.NewClient(newClient(t, tn)).ListTopics(ctx)
	if topics.Has("payments") || !topics.Has("orders") {
		t.Fatalf("topics after delete: %v", topics.Names())
	}
}
