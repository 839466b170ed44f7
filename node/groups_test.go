package node

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/node/group"
)

// TestGroupsOneNode: on one node with Kafka's default 50 offsets
// partitions (replication factor clamped to the one live broker), a
// kgo group consumer reads every record, commits, and kadm reads the
// commits back; a second consumer of the group starts from them. The
// internal topic is marked internal and protected; bad input gets Kafka's
// codes: an empty group id, an unknown topic in OffsetCommit (the other
// partitions still commit), metadata over offset.metadata.max.bytes.
func TestGroupsOneNode(t *testing.T) {
	tn := startNode(t, t.TempDir(), "group.initial.rebalance.delay.ms=0", "offset.metadata.max.bytes=64")
	ctx := testCtx(t)
	adm := kadm.NewClient(newClient(t, tn))
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "events"); err != nil {
		t.Fatal(err)
	}
	prod := newClient(t, tn, kgo.DefaultProduceTopic("events"))
	const total = 300
	for i := range total {
		prod.Produce(ctx, &kgo.Record{Value: fmt.Appendf(nil, "%d", i)}, nil)
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	consume := func(want int) map[string]bool {
		t.Helper()
		cl := newClient(t, tn, kgo.ConsumerGroup("g1"), kgo.ConsumeTopics("events"), kgo.DisableAutoCommit(),
			kgo.FetchMaxWait(200*time.Millisecond))
		defer cl.Close()
		seen := map[string]bool{}
		for len(seen) < want {
			fs := cl.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				t.Fatalf("poll: %v", err)
			}
			fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
		}
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatalf("commit: %v", err)
		}
		return seen
	}
	if got := consume(total); len(got) != total {
		t.Fatalf("consumed %d of %d", len(got), total)
	}
	offs, err := adm.FetchOffsets(ctx, "g1")
	if err != nil {
		t.Fatal(err)
	}
	var committed int64
	offs.Each(func(o kadm.OffsetResponse) { committed += o.At })
	if committed != total {
		t.Fatalf("committed offsets sum to %d, want %d: %+v", committed, total, offs)
	}
	// More records; a new member of the group reads only those.
	for i := total; i < total+30; i++ {
		prod.Produce(ctx, &kgo.Record{Value: fmt.Appendf(nil, "%d", i)}, nil)
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for v := range consume(30) {
		var i int
		fmt.Sscan(v, &i)
		if i < total {
			t.Errorf("record %d delivered again after its commit", i)
		}
	}

	t.Run("metrics", func(t *testing.T) {
		// g1 is Empty (its members left), its offsets at the ends of the
		// partitions it consumed (kgo's sticky partitioner may have put
		// every record in one): lag 0.
		offs, err := adm.FetchOffsets(ctx, "g1")
		if err != nil {
			t.Fatal(err)
		}
		mfs := scrape(t, tn)
		if v := value(t, mfs, "kafka_coordinator_group_groupmetadatamanager_numgroups"); v != 1 {
			t.Errorf("numgroups %v, want 1", v)
		}
		if v := value(t, mfs, "kafka_coordinator_group_groupmetadatamanager_numgroupsempty"); v != 1 {
			t.Errorf("numgroupsempty %v, want 1", v)
		}
		if v, want := value(t, mfs, "kafka_coordinator_group_groupmetadatamanager_numoffsets"), len(offs.Sorted()); v != float64(want) || want == 0 {
			t.Errorf("numoffsets %v, want %d", v, want)
		}
		if v := value(t, mfs, "kafka_coordinator_group_group_coordinator_metrics_offset_commit_total"); v < float64(len(offs.Sorted())) {
			t.Errorf("offset commits %v, want at least %d", v, len(offs.Sorted()))
		}
		if lag := sumSeries(mfs, "sluice_group_lag_records"); lag != 0 {
			t.Errorf("lag %v after everything was committed", lag)
		}
		// Ten more records in a committed partition: the lag says so.
		p := offs.Sorted()[0].Partition
		manual := newClient(t, tn, kgo.DefaultProduceTopic("events"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		for i := range 10 {
			manual.Produce(ctx, &kgo.Record{Partition: p, Value: fmt.Appendf(nil, "late %d", i)}, nil)
		}
		if err := manual.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if lag := sumSeries(scrape(t, tn), "sluice_group_lag_records"); lag != 10 {
			t.Errorf("lag %v, want 10", lag)
		}
	})

	t.Run("internal topic", func(t *testing.T) {
		md, err := adm.Metadata(ctx, group.OffsetsTopic)
		if err != nil {
			t.Fatal(err)
		}
		td := md.Topics[group.OffsetsTopic]
		if !td.IsInternal || len(td.Partitions) != 50 || td.Partitions[0].Replicas[0] != 1 || len(td.Partitions[0].Replicas) != 1 {
			t.Errorf("metadata: internal %v, %d partitions, replicas %v", td.IsInternal, len(td.Partitions), td.Partitions[0].Replicas)
		}
		cfgs, err := adm.DescribeTopicConfigs(ctx, group.OffsetsTopic)
		if err != nil {
			t.Fatal(err)
		}
		if c, err := cfgs.On(group.OffsetsTopic, nil); err != nil || !hasConfig(c, "cleanup.policy", "compact") {
			t.Errorf("configs: %+v %v, want cleanup.policy=compact", c, err)
		}
		r := newClient(t, tn, kgo.DefaultProduceTopic(group.OffsetsTopic), kgo.RecordRetries(0), kgo.DisableIdempotentWrite())
		err = r.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr()
		if !errors.Is(err, kerr.InvalidTopicException) {
			t.Errorf("produce to %s: %v, want INVALID_TOPIC_EXCEPTION", group.OffsetsTopic, err)
		}
		dr, err := adm.DeleteTopics(ctx, group.OffsetsTopic)
		if err != nil {
			t.Fatal(err)
		}
		if d := dr[group.OffsetsTopic]; !errors.Is(d.Err, kerr.InvalidRequest) {
			t.Errorf("delete %s: %v, want INVALID_REQUEST", group.OffsetsTopic, d.Err)
		}
		cr, err := adm.CreatePartitions(ctx, 60, group.OffsetsTopic)
		if err != nil {
			t.Fatal(err)
		}
		if c := cr[group.OffsetsTopic]; !errors.Is(c.Err, kerr.InvalidRequest) {
			t.Errorf("create partitions of %s: %v, want INVALID_REQUEST", group.OffsetsTopic, c.Err)
		}
	})

	t.Run("idle", func(t *testing.T) {
		// g1 and simple (bad input, below, runs after) hold offsets.
		idleShards(ctx, t, tn, 50, 2)
	})

	t.Run("bad input", func(t *testing.T) {
		cl := newClient(t, tn, kgo.MaxVersions(offsetsByName())) // topics by name (v10's by ID: TestOffsetsV10)
		commit := func(group, meta string) *kmsg.OffsetCommitResponse {
			req := kmsg.NewPtrOffsetCommitRequest()
			req.Group, req.Generation = group, -1
			for _, topic := range []string{"events", "nope"} {
				rt := kmsg.NewOffsetCommitRequestTopic()
				rt.Topic = topic
				rp := kmsg.NewOffsetCommitRequestTopicPartition()
				rp.Partition, rp.Offset, rp.Metadata = 0, 7, kmsg.StringPtr(meta)
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
			}
			// Sharded: kgo sends it to the group's coordinator.
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				t.Fatal(err)
			}
			return resp
		}
		codes := func(r *kmsg.OffsetCommitResponse) string {
			var s []string
			for _, t := range r.Topics {
				for _, p := range t.Partitions {
					s = append(s, fmt.Sprintf("%s:%d", t.Topic, p.ErrorCode))
				}
			}
			return strings.Join(s, " ")
		}
		if got, want := codes(commit("simple", "m")), fmt.Sprintf("events:0 nope:%d", kerr.UnknownTopicOrPartition.Code); got != want {
			t.Errorf("commit with an unknown topic: %s, want %s", got, want)
		}
		if got, want := codes(commit("simple", strings.Repeat("m", 65))), fmt.Sprintf("events:%d nope:%d", kerr.OffsetMetadataTooLarge.Code, kerr.UnknownTopicOrPartition.Code); got != want {
			t.Errorf("commit with oversized metadata: %s, want %s", got, want)
		}
		offs, err := adm.FetchOffsets(ctx, "simple")
		if err != nil {
			t.Fatal(err)
		}
		if o, ok := offs.Lookup("events", 0); !ok || o.At != 7 {
			t.Errorf("the simple consumer's commit: %+v, want offset 7", o)
		}
		jg := kmsg.NewPtrJoinGroupRequest()
		jg.ProtocolType, jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis = "consumer", 10000, 10000
		jg.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
		resp, err := jg.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ErrorCode != kerr.InvalidGroupID.Code {
			t.Errorf("JoinGroup with an empty group id: code %d, want INVALID_GROUP_ID", resp.ErrorCode)
		}
	})

	t.Run("admin", func(t *testing.T) {
		listed, err := adm.ListGroups(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if g, ok := listed["g1"]; !ok || g.State != "Empty" || g.ProtocolType != "consumer" {
			t.Errorf("ListGroups: %+v, want g1 Empty, consumer", listed)
		}
		d, err := adm.DescribeGroups(ctx, "g1", "unknown-group")
		if err != nil {
			t.Fatal(err)
		}
		if g := d["g1"]; g.Err != nil || g.State != "Empty" || g.Coordinator.NodeID != 1 {
			t.Errorf("DescribeGroups g1: %+v", g)
		}
		if g := d["unknown-group"]; g.State != "Dead" && !errors.Is(g.Err, kerr.GroupIDNotFound) {
			t.Errorf("DescribeGroups of an unknown group: %+v, want Dead or GROUP_ID_NOT_FOUND", g)
		}
		// OffsetDelete of a standalone group's commit, then DeleteGroups
		// of g1: gone.
		toCommit := kadm.Offsets{}
		toCommit.Add(kadm.Offset{Topic: "events", Partition: 1, At: 3, LeaderEpoch: -1})
		if cr, err := adm.CommitOffsets(ctx, "standalone", toCommit); err != nil || cr.Error() != nil {
			t.Fatalf("CommitOffsets: %v %v", err, cr.Error())
		}
		del := kadm.TopicsSet{}
		del.Add("events", 1)
		dr, err := adm.DeleteOffsets(ctx, "standalone", del)
		if err != nil || dr.Error() != nil {
			t.Fatalf("DeleteOffsets: %v %v", err, dr.Error())
		}
		after, err := adm.FetchOffsets(ctx, "standalone")
		if err != nil {
			t.Fatal(err)
		}
		if o, ok := after.Lookup("events", 1); ok && o.At >= 0 {
			t.Errorf("offset events/1 still committed after OffsetDelete: %d", o.At)
		}
		gr, err := adm.DeleteGroups(ctx, "g1")
		if err != nil || gr.Error() != nil {
			t.Fatalf("DeleteGroups: %v %v", err, gr.Error())
		}
		listed, err = adm.ListGroups(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := listed["g1"]; ok {
			t.Errorf("g1 listed after DeleteGroups: %v", listed.Groups())
		}
	})

	t.Run("restart", func(t *testing.T) {
		// The simple consumer's commit is read back from the log by the
		// restarted node.
		tn.close(t)
		tn2 := startNode(t, tn.dir, "group.initial.rebalance.delay.ms=0", "offset.metadata.max.bytes=64")
		adm2 := kadm.NewClient(newClient(t, tn2))
		offs, err := adm2.FetchOffsets(ctx, "simple")
		if err != nil {
			t.Fatal(err)
		}
		if o, ok := offs.Lookup("events", 0); !ok || o.At != 7 {
			t.Errorf("after a restart, the simple consumer's commit: %+v, want offset 7", o)
		}
		// Deleting the topic drops its committed offsets.
		if _, err := adm2.DeleteTopics(ctx, "events"); err != nil {
			t.Fatal(err)
		}
		waitFor(ctx, t, "the deleted topic's offsets dropped", func() bool {
			offs, err := adm2.FetchOffsets(ctx, "simple")
			if err != nil {
				return false
			}
			o, ok := offs.Lookup("events", 0)
			return !ok || o.At < 0
		})
	})
}

// sumSeries adds the values of every series of the gauge family name.
func sumSeries(mfs map[string]*dto.MetricFamily, name string) float64 {
	var sum float64
	if mf := mfs[name]; mf != nil {
		for _, m := range mf.Metric {
			sum += m.GetGauge().GetValue()
		}
	}
	return sum
}

// idleShards checks that tn's loaded offsets shards cost no wake-ups over
// a window of seconds when nothing happens: one timer per shard, set only
// for what is due (here at most the retention checks of the shards that
// hold offsets, minutes away).
func idleShards(ctx context.Context, t *testing.T, tn *testNode, shards, withOffsets int) {
	t.Helper()
	waitFor(ctx, t, "every offsets partition loaded", func() bool {
		led := tn.coord.Led()
		for _, ok := range led {
			if !ok {
				return false
			}
		}
		return len(led) == shards
	})
	goroutines := runtime.NumGoroutine()
	w0 := tn.coord.Wakeups()
	wait(ctx, 2*time.Second)
	if w := tn.coord.Wakeups() - w0; w != 0 {
		t.Errorf("%d idle offsets shards: %d timer wake-ups in 2 s, want none", shards, w)
	}
	if n := tn.coord.Scheduled(); n > withOffsets {
		t.Errorf("%d shards have a timer set, want at most the %d holding offsets", n, withOffsets)
	}
	if d := runtime.NumGoroutine() - goroutines; d > 5 {
		t.Errorf("%d goroutines appeared in an idle window", d)
	}
}

func hasConfig(c kadm.ResourceConfig, key, value string) bool {
	for _, e := range c.Configs {
		if e.Key == key && e.MaybeValue() == value {
			return true
		}
	}
	return false
}
