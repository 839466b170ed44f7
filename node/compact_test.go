package node

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-log/sluice/quorum"
	"github.com/sluice-log/sluice/segment"
)

// table is what a compacted topic must read back as: each key's latest
// acknowledged value, nil for a tombstone.
type table map[string][]byte

// produceRounds writes rounds [from, to) of one record per key over nkeys
// keys with ProduceSync (each round after the last is acknowledged) and
// records each key's latest value in want; one record in seven is a
// tombstone.
func produceRounds(ctx context.Context, t *testing.T, prod *kgo.Client, want table, nkeys, from, to int) {
	t.Helper()
	for r := from; r < to; r++ {
		recs := make([]*kgo.Record, nkeys)
		for k := range nkeys {
			key := fmt.Sprintf("key%03d", k)
			var v []byte
			if (k+r)%7 != 0 {
				v = fmt.Appendf(nil, "%s@%04d", key, r)
			}
			recs[k] = &kgo.Record{Key: []byte(key), Value: v}
		}
		if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Errorf("round %d: %v", r, err)
			return
		}
		for _, rec := range recs {
			want[string(rec.Key)] = rec.Value
		}
	}
}

// readTable reads partition 0 of topic from the start to its high
// watermark with kgo clients from client and returns the last value of
// each key, the number of records read, and each record's key by offset.
func readTable(ctx context.Context, t *testing.T, client func(...kgo.Opt) *kgo.Client, topic string) (table, int, map[int64]string) {
	t.Helper()
	ends, err := kadm.NewClient(client()).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(topic, 0)
	if end.Err != nil {
		t.Fatal(end.Err)
	}
	cons := client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}), kgo.FetchMaxWait(200*time.Millisecond))
	got, keys, n, last := table{}, map[int64]string{}, 0, int64(-1)
	for last+1 < end.Offset {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading back: at offset %d of %d: %v", last, end.Offset, ctx.Err())
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset <= last {
				t.Fatalf("offset %d after %d", r.Offset, last)
			}
			last, n = r.Offset, n+1
			got[string(r.Key)] = r.Value
			keys[r.Offset] = string(r.Key)
		})
	}
	return got, n, keys
}

// diffTables reports how got differs from want.
func diffTables(t *testing.T, who string, got, want table) {
	t.Helper()
	for k, v := range want {
		g, ok := got[k]
		if !ok || !bytes.Equal(g, v) || (g == nil) != (v == nil) {
			t.Errorf("%s: key %s reads %q (present %v), latest acknowledged is %q", who, k, g, ok, v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: key %s was never written", who, k)
		}
	}
}

// TestCompactionRealClients (issue 16): kgo's idempotent acks=all
// producer overwrites and deletes keys of a compacted RF=3 topic on three
// in-process nodes whose cleaners run (small segments, a low
// min.cleanable.dirty.ratio, short backoff, throttled so that a Clean
// takes a while). The leader is killed while it cleans (SIGKILL: its
// writes survive; or a power cut: only what it fsynced does); produces go
// on through the failover and it is restarted. Then every node has cleaned
// its replica, and kgo and kcat (librdkafka) read from the beginning each
// key's latest acknowledged value (tombstones, within
// delete.retention.ms, as null values), with no key twice below the
// leader's cleaner checkpoint and far fewer records than were written.
func TestCompactionRealClients(t *testing.T) {
	for _, mode := range []struct {
		name string
		kept int // percent of the victim's unsynced writes that survive
	}{{"kill", 100}, {"power-cut", 0}} {
		t.Run(mode.name, func(t *testing.T) { compactionRealClients(t, mode.kept) })
	}
}

func compactionRealClients(t *testing.T, kept int) {
	c := startReplCluster(t, 3, "log.cleaner.backoff.ms=50", "log.cleaner.io.max.bytes.per.second=200000")
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	const topic, nkeys = "table", 40
	c.createTopic(ctx, topic, 1, map[string]*string{
		"cleanup.policy": kadm.StringPtr("compact"), "segment.bytes": kadm.StringPtr("4096"),
		"min.cleanable.dirty.ratio": kadm.StringPtr("0.01"), "min.insync.replicas": kadm.StringPtr("2"),
	})
	prod := c.client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	want := table{}
	produceRounds(ctx, t, prod, want, nkeys, 0, 40)

	victim := c.leaderOf(topic, 0)
	cleaning := func(rn *replNode) bool { return rn.cleaner.Stats(nil).Cleaning > 0 }
	// Produce until the leader is cleaning, then kill it there.
	for r := 40; !cleaning(victim); r++ {
		if r > 400 {
			t.Fatal("the leader's cleaner never started a Clean")
		}
		produceRounds(ctx, t, prod, want, nkeys, r, r+1)
		if t.Failed() {
			t.FailNow()
		}
	}
	c.crash(victim, kept)
	t.Logf("stopped node %d, the leader, while it cleaned (%d%% of its unsynced writes kept)", victim.id, kept)
	produceRounds(ctx, t, prod, want, nkeys, 1000, 1040)
	c.restart(victim)
	c.waitImage(ctx, "the restarted broker back in the ISR", func(im *quorum.Image) bool {
		return len(im.Topics[topic].Partitions[0].ISR) == 3
	})
	if t.Failed() {
		t.FailNow()
	}

	// Every replica ends compacted: nothing cleanable is left and its log
	// is a fraction of what was written. The nodes that stayed up cleaned
	// their own logs; the restarted one cleans what it kept, or (after a
	// power cut took its log) copies the leader's compacted log, holes
	// and all.
	pol := segment.CleanPolicy{Compact: true, MinCleanableDirtyRatio: 0.01}
	for _, rn := range c.nodes {
		waitFor(ctx, t, fmt.Sprintf("node %d's replica compacted", rn.id), func() bool {
			r := rn.replica(topic, 0)
			if r == nil || r.HighWatermark() < int64(nkeys*80) {
				return false
			}
			cand := r.Log().CleanCandidate(pol, r.HighWatermark(), time.Now())
			return !cand.Cleanable(pol) && r.Log().Size() <= 3*4096 && (rn == victim || rn.cleaner.Stats(nil).Cleans > 0)
		})
	}
	leader := c.leaderOf(topic, 0)
	lr := leader.replica(topic, 0)
	checkpoint := lr.Log().CleanCandidate(segment.CleanPolicy{Compact: true}, lr.HighWatermark(), time.Now()).FirstDirty

	got, n, keys := readTable(ctx, t, c.client, topic)
	diffTables(t, "kgo", got, want)
	written := nkeys * (40 + 40) // at least: the rounds before and after the kill
	if n > written/2 {
		t.Errorf("read %d records of more than %d written: compaction kept too much", n, written)
	}
	seen := map[string]int64{}
	for off, k := range keys {
		if off >= checkpoint {
			continue
		}
		if o, dup := seen[k]; dup {
			t.Errorf("key %s at offsets %d and %d, both below the cleaner checkpoint %d", k, o, off, checkpoint)
		}
		seen[k] = off
	}
	t.Logf("read %d records (%d keys) of at least %d written; leader's cleaner checkpoint %d", n, len(got), written, checkpoint)

	// librdkafka reads the same table (-Z: a null value prints as NULL).
	out := kcat(ctx, t, kcatPath(t), nil, "-C", "-b", leader.KafkaAddr(), "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q", "-Z", "-f", "%k=%s\n")
	kc := table{}
	for _, line := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("kcat line %q", line)
		}
		kc[k] = []byte(v)
		if v == "NULL" {
			kc[k] = nil
		}
	}
	diffTables(t, "kcat", kc, want)
}

// TestCleanerMetricsAndPolicySwitch: on one node, a topic created with
// cleanup.policy=delete is not cleaned however dirty; `configs alter` to
// compact makes the cleaner clean it at once (no restart), and /metrics
// shows Kafka's LogCleaner gauges and the log's dirty ratio going down.
// With log.cleaner.enable=false nothing of the cleaner is exported.
func TestCleanerMetricsAndPolicySwitch(t *testing.T) {
	tn := startNode(t, t.TempDir(), "log.cleaner.backoff.ms=20")
	ctx := testCtx(t)
	cl := newClient(t, tn, kgo.DefaultProduceTopic("kv"))
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"segment.bytes": kadm.StringPtr("2048"), "min.cleanable.dirty.ratio": kadm.StringPtr("0.1")}, "kv"); err != nil {
		t.Fatal(err)
	}
	want := table{}
	produceRounds(ctx, t, cl, want, 10, 0, 30)
	r := tn.replica("kv", 0)
	size := r.Log().Size()
	// The pool measured the log (registered, HW moved) and left it: it
	// is not compacted. Its metrics list no dirty ratio for it.
	mfs := scrape(t, tn)
	if value(t, mfs, "kafka_log_logcleaner_max_dirty_percent") != 0 {
		t.Error("max dirty percent above 0 with no compacted topic")
	}
	if _, ok := mfs["sluice_log_cleaner_dirty_ratio"]; ok {
		t.Error("dirty ratio exported for a delete-policy topic")
	}
	if got := tn.cleaner.Stats(nil).Cleans; got != 0 || r.Log().Size() != size {
		t.Fatalf("a delete-policy log was cleaned (%d cleans, %d -> %d bytes)", got, size, r.Log().Size())
	}

	policy := "compact"
	if alt, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "cleanup.policy", Value: &policy}}, "kv"); err != nil || alt[0].Err != nil {
		t.Fatalf("alter: %v %+v", err, alt)
	}
	waitFor(ctx, t, "the switched topic cleaned", func() bool { return tn.cleaner.Stats(nil).Cleans > 0 })
	if r.Log().Size() >= size/2 {
		t.Errorf("log %d bytes after cleaning 30 rounds of 10 keys, was %d", r.Log().Size(), size)
	}
	waitFor(ctx, t, "the metrics after the clean", func() bool {
		mfs = scrape(t, tn)
		return mfs["sluice_log_cleaner_dirty_ratio"] != nil && value(t, mfs, "kafka_log_logcleaner_cleaner_recopy_percent") > 0
	})
	if d := value(t, mfs, "sluice_log_cleaner_dirty_ratio", "topic=kv", "partition=0"); d >= 0.1 {
		t.Errorf("dirty ratio %v after the clean, want below min.cleanable.dirty.ratio 0.1", d)
	}
	if rc := value(t, mfs, "kafka_log_logcleaner_cleaner_recopy_percent"); rc >= 100 {
		t.Errorf("recopy percent %v: a clean of overwrites writes less than it reads", rc)
	}
	if v := value(t, mfs, "kafka_log_logcleaner_max_clean_time_secs"); v <= 0 {
		t.Errorf("max clean time %v s after a clean", v)
	}
	if v := value(t, mfs, "kafka_log_logcleanermanager_uncleanable_partitions_count"); v != 0 {
		t.Errorf("uncleanable partitions %v", v)
	}
	if v, want := value(t, mfs, "sluice_log_cleaner_cleans_total"), float64(tn.cleaner.Stats(nil).Cleans); v < 1 || v > want {
		t.Errorf("cleans total %v after a clean, want between 1 and the pool's count now (%v)", v, want)
	}
	if v := value(t, mfs, "sluice_log_cleaner_failures_total"); v != 0 {
		t.Errorf("failed cleans %v", v)
	}
	if v := value(t, mfs, "kafka_log_logcleanermanager_time_since_last_run_ms"); v < 0 || v > 60000 {
		t.Errorf("time since last run %v ms", v)
	}
	got, _, _ := readTable(ctx, t, func(o ...kgo.Opt) *kgo.Client { return newClient(t, tn, o...) }, "kv")
	diffTables(t, "kgo", got, want)

	off := startNode(t, t.TempDir(), "log.cleaner.enable=false")
	if _, ok := scrape(t, off)["kafka_log_logcleaner_max_dirty_percent"]; ok {
		t.Error("cleaner metrics exported with log.cleaner.enable=false")
	}
}
