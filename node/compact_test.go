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
// watermark with kgo and returns the last value of each key, the number
// of records read, and each record's key by offset.
func (c *replCluster) readTable(ctx context.Context, topic string) (table, int, map[int64]string) {
	c.t.Helper()
	ends, err := kadm.NewClient(c.client()).ListEndOffsets(ctx, topic)
	if err != nil {
		c.t.Fatal(err)
	}
	end, _ := ends.Lookup(topic, 0)
	if end.Err != nil {
		c.t.Fatal(end.Err)
	}
	cons := c.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}), kgo.FetchMaxWait(200*time.Millisecond))
	got, keys, n, last := table{}, map[int64]string{}, 0, int64(-1)
	for last+1 < end.Offset {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			c.t.Fatalf("reading back: at offset %d of %d: %v", last, end.Offset, ctx.Err())
		}
		fs.EachError(func(_ string, _ int32, err error) { c.t.Logf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset <= last {
				c.t.Fatalf("offset %d after %d", r.Offset, last)
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
// takes a while). The leader is killed while it cleans; produces go on
// through the failover and it is restarted. Then every node has cleaned
// its replica, and kgo and kcat (librdkafka) read from the beginning each
// key's latest acknowledged value (tombstones, within
// delete.retention.ms, as null values), with no key twice below the
// leader's cleaner checkpoint and far fewer records than were written.
func TestCompactionRealClients(t *testing.T) {
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
	c.kill(victim)
	t.Logf("killed node %d, the leader, while it cleaned", victim.id)
	produceRounds(ctx, t, prod, want, nkeys, 1000, 1040)
	c.restart(victim)
	c.waitImage(ctx, "the restarted broker back in the ISR", func(im *quorum.Image) bool {
		return len(im.Topics[topic].Partitions[0].ISR) == 3
	})
	if t.Failed() {
		t.FailNow()
	}

	// Every replica cleans (the restarted one after catching up): its
	// cleaner checkpoint passes most of what was written.
	for _, rn := range c.nodes {
		waitFor(ctx, t, fmt.Sprintf("node %d's replica cleaned", rn.id), func() bool {
			r := rn.replica(topic, 0)
			if r == nil {
				return false
			}
			cand := r.log.CleanCandidate(segment.CleanPolicy{Compact: true}, r.highWatermark(), time.Now())
			return cand.FirstDirty > int64(nkeys*60) && rn.cleaner.Stats(nil).Cleans > 0
		})
	}
	leader := c.leaderOf(topic, 0)
	lr := leader.replica(topic, 0)
	checkpoint := lr.log.CleanCandidate(segment.CleanPolicy{Compact: true}, lr.highWatermark(), time.Now()).FirstDirty

	got, n, keys := c.readTable(ctx, topic)
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
