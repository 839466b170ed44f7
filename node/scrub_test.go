package node

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-log/sluice/quorum"
	"github.com/sluice-log/sluice/segment"
)

// TestCorruptReplicaHeals: 3 nodes, RF=3, min.insync.replicas=2, small
// segments, a producer running throughout. A byte flipped in a sealed
// segment of a running follower is found by the background scrub; the
// follower truncates before it and fetches it again. A byte flipped in a
// sealed segment of the stopped preferred leader (restarted without the
// periodic scrub, made leader again) is found when a consumer's read
// crosses it: the read answers CORRUPT_MESSAGE (retriable, never the bad
// bytes), the leader hands leadership to another in-sync replica,
// truncates and refetches. Each time the damaged replica's log ends up
// byte for byte the leader's and back in the ISR; the consumer reads every
// record in order without an error, and every acknowledged record is
// there.
func TestCorruptReplicaHeals(t *testing.T) {
	c := startReplCluster(t, 3, "sluice.log.scrub.interval.ms=50", "sluice.log.scrub.max.bytes.per.second=0")
	ctx, cancel := context.WithTimeout(context.Background(), 240*time.Second)
	defer cancel()
	adm := kadm.NewClient(c.client())
	const topic = "scrub"
	cfgs := map[string]*string{"min.insync.replicas": kadm.StringPtr("2"), "segment.bytes": kadm.StringPtr("8192")}
	c.createTopic(ctx, topic, 1, cfgs)

	prod := c.client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchMaxBytes(2048))
	acks := newAckLog()
	var failed sync.Map
	var seq atomic.Int64
	produce := func(n int) {
		for range n {
			v := fmt.Appendf(nil, "v%06d-%0100d", seq.Add(1), 0)
			prod.Produce(ctx, &kgo.Record{Value: v}, func(r *kgo.Record, err error) {
				if err != nil {
					failed.Store(string(r.Value), err)
					return
				}
				acks.add(r)
			})
		}
	}
	produce(2000)
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// Load: a trickle of produce for the whole test.
	loadDone := make(chan struct{})
	var loadWG sync.WaitGroup
	loadWG.Add(1)
	go func() {
		defer loadWG.Done()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-loadDone:
				return
			case <-tick.C:
				produce(20)
			}
		}
	}()
	stopLoad := func() {
		close(loadDone)
		loadWG.Wait()
		if err := prod.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}

	// A running follower.
	leader := c.leaderOf(topic, 0)
	var follower *replNode
	for _, rn := range c.nodes {
		if rn != leader {
			follower = rn
			break
		}
	}
	found := follower.rm.CorruptBatchesFound()
	flipSealed(t, follower, topic)
	waitFor(ctx, t, "the follower's scrub to find the damage", func() bool { return follower.rm.CorruptBatchesFound() > found })
	if mf := gatherNode(t, follower.Node)["sluice_log_corrupt_batches_total"]; mf == nil || len(mf.Metric) != 1 || mf.Metric[0].GetCounter().GetValue() < 1 {
		t.Errorf("sluice_log_corrupt_batches_total after a bad batch: %v", mf)
	}
	c.waitHealed(ctx, topic, follower)

	// The stopped preferred leader, made leader again with the damage.
	var pref int32
	c.live().ctrl.View(func(im *quorum.Image) { pref = im.Topics[topic].Partitions[0].Replicas[0] })
	victim := c.nodes[pref-1]
	cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
	if err := victim.Close(cctx); err != nil {
		t.Fatal(err)
	}
	ccancel()
	victim.Node = nil
	flipSealed(t, victim, topic)
	victim.extra = append(slices.Clone(victim.extra), "sluice.log.scrub.interval.ms=0")
	c.restart(victim)
	c.waitImage(ctx, "the damaged replica back in the ISR", func(im *quorum.Image) bool {
		return slices.Contains(im.Topics[topic].Partitions[0].ISR, victim.id)
	})
	waitFor(ctx, t, "the damaged replica to lead", func() bool {
		if c.leaderOf(topic, 0) == victim {
			return true
		}
		_, _ = adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{topic: {0: {}}})
		return false
	})
	if victim.rm.CorruptBatchesFound() != 0 {
		t.Fatal("the damage was found before the read: the test does not test the read")
	}
	// A consumer from the start crosses the damage on the leader.
	consumeAll(ctx, t, c, topic, acks)
	waitFor(ctx, t, "the leader's read to report the damage", func() bool { return victim.rm.CorruptBatchesFound() > 0 })
	waitFor(ctx, t, "the damaged leader to hand over", func() bool { l := c.leaderOf(topic, 0); return l != nil && l != victim })
	c.waitHealed(ctx, topic, victim)

	stopLoad()
	failed.Range(func(k, v any) bool {
		t.Errorf("record %s failed: %v", k, v)
		return true
	})
	c.waitHealed(ctx, topic, nil)
	c.checkAllAcked(ctx, topic, 1, acks)
}

// waitFor polls cond until it holds or ctx ends.
func waitFor(ctx context.Context, t testing.TB, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		tm := time.NewTimer(20 * time.Millisecond)
		select {
		case <-ctx.Done():
			tm.Stop()
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-tm.C:
		}
	}
}

// flipSealed inverts one byte in the records of the first batch of rn's
// second segment of topic-0 (sealed: the test keeps at least three),
// through rn's filesystem, as bit rot would: the log is not told.
func flipSealed(t *testing.T, rn *replNode, topic string) {
	t.Helper()
	dir := rn.fs.PathJoin(rn.dir, topic+"-0")
	names, err := rn.fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var segs []string
	for _, n := range names {
		if len(n) == 24 && n[20:] == ".log" {
			segs = append(segs, n)
		}
	}
	sort.Strings(segs)
	if len(segs) < 3 {
		t.Fatalf("node %d: %d segments, want 3 or more", rn.id, len(segs))
	}
	f, err := rn.fs.OpenReadWrite(rn.fs.PathJoin(dir, segs[1]), vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var hdr [12]byte
	if _, err := f.ReadAt(hdr[:], 0); err != nil {
		t.Fatal(err)
	}
	size := int64(binary.BigEndian.Uint32(hdr[8:])) + 12
	pos := segment.BatchHeaderSize + (size-segment.BatchHeaderSize)/2
	var b [1]byte
	if _, err := f.ReadAt(b[:], pos); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x5a
	if _, err := f.WriteAt(b[:], pos); err != nil {
		t.Fatal(err)
	}
	t.Logf("node %d: flipped the byte at %s position %d", rn.id, segs[1], pos)
}

// waitHealed waits until rn (every replica when nil) holds no known damage,
// is in the ISR, and its log is byte for byte the leader's up to the
// leader's high watermark at the time.
func (c *replCluster) waitHealed(ctx context.Context, topic string, rn *replNode) {
	c.t.Helper()
	c.waitImage(ctx, "all replicas in the ISR", func(im *quorum.Image) bool { return len(im.Topics[topic].Partitions[0].ISR) == 3 })
	waitFor(ctx, c.t, "the replicas' logs equal the leader's", func() bool {
		lead := c.leaderOf(topic, 0)
		if lead == nil || lead.Node == nil {
			return false
		}
		lr := lead.replica(topic, 0)
		if lr == nil {
			return false
		}
		hw := lr.HighWatermark()
		want := logBytes(lr.Log(), hw)
		for _, o := range c.nodes {
			if o == lead || (rn != nil && o != rn) || o.Node == nil {
				continue
			}
			r := o.replica(topic, 0)
			if r == nil || r.Log().Corruption() != nil || r.Log().LogEndOffset() < hw || !bytes.Equal(logBytes(r.Log(), hw), want) {
				return false
			}
		}
		return want != nil
	})
}

// logBytes is the batches of l below upTo, or nil when a read fails.
func logBytes(l *segment.Log, upTo int64) []byte {
	var out []byte
	for off := l.LogStartOffset(); off < upTo; {
		ch, err := l.Read(off, 1<<20, upTo, nil)
		if err != nil || ch.Size == 0 {
			return nil
		}
		out = append(out, ch.Data...)
		off = ch.Next
	}
	return out
}

// consumeAll reads the partition from the start to the high watermark it
// had when it started, failing on any error a fetch surfaces and on any
// record out of order or different from what was acknowledged.
func consumeAll(ctx context.Context, t *testing.T, c *replCluster, topic string, acks *ackLog) {
	t.Helper()
	ends, err := kadm.NewClient(c.client()).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(topic, 0)
	cons := c.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}), kgo.FetchMaxWait(200*time.Millisecond))
	next := int64(0)
	for next < end.Offset {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consuming: at offset %d of %d: %v", next, end.Offset, ctx.Err())
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("consumer saw an error at offset %d: %v", next, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != next {
				t.Fatalf("consumer: offset %d after %d", r.Offset, next-1)
			}
			acks.mu.Lock()
			off, ok := acks.acked[string(r.Value)]
			acks.mu.Unlock()
			if ok && off != r.Offset {
				t.Fatalf("consumer: %q at offset %d, acknowledged at %d", r.Value[:7], r.Offset, off)
			}
			next++
		})
	}
}
