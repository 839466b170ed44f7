package soak

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The compacted-topic workload (--compacted-partitions, on by default):
// beside the soak topic, a topic with cleanup.policy=compact, small
// segments and a low min.cleanable.dirty.ratio, so that the nodes'
// cleaners (log.cleaner.backoff.ms lowered) rewrite its logs during the
// run, under the same faults. Its producers write keyed records over a
// bounded key space (overwrites) and some tombstones; the compaction
// invariants (compactcheck.go) check the final read of it.

// Defaults of the compacted topic: segments of 16 KiB roll every few
// hundred records, a log is cleaned once 1% of it is dirty, a tombstone
// survives 10 s after its segment was cleaned (so both a kept and a
// removed tombstone happen in a run), and a cleaner looks for work every
// 500 ms.
const (
	compactSegmentBytes   = 16 << 10
	compactDirtyRatio     = "0.01"
	compactDeleteRetain   = 10 * time.Second
	compactCleanerBackoff = "500"
)

// compactTopicConfigs are the configs the compacted topic is created
// with: the soak topic's durability, min.insync.replicas and
// max.message.bytes, and compaction.
func (o *Options) compactTopicConfigs() map[string]*string {
	c := o.topicConfigs()
	delete(c, "unclean.leader.election.enable")
	s := func(v string) *string { return &v }
	c["cleanup.policy"] = s("compact")
	c["segment.bytes"] = s(strconv.Itoa(compactSegmentBytes))
	c["min.cleanable.dirty.ratio"] = s(compactDirtyRatio)
	c["delete.retention.ms"] = s(strconv.FormatInt(compactDeleteRetain.Milliseconds(), 10))
	return c
}

// compactTPs are the compacted topic's partitions (none when off).
func (o *Options) compactTPs() []TP {
	var tps []TP
	for p := range o.CompactPartitions {
		tps = append(tps, TP{o.CompactTopic, p})
	}
	return tps
}

// createCompactTopic creates the compacted topic and waits for its
// leaders (createTopic on a copy of o that names it).
func createCompactTopic(ctx context.Context, w io.Writer, adm *kadm.Client, o *Options) ([]TP, error) {
	co := *o
	co.Topic, co.Partitions = o.CompactTopic, o.CompactPartitions
	co.TopicConfigs = nil
	cfgs := o.compactTopicConfigs()
	return createTopicWith(ctx, w, adm, &co, cfgs)
}

// compactKeys is the key space of one compacted-topic producer: its own
// keys "k<producer>-<n>", n < keys; key n goes to partition n mod the
// partitions, so that one producer's writes of one key are in send order.
type compactKeys struct {
	rng  *rand.Rand
	keys int
	// tombEvery: about one send in tombEvery is a tombstone.
	tombEvery int
}

// produceKeyed sends up to n keyed records (each a tombstone with
// probability 1/tombEvery) of random keys of p's key space.
func (p *producer) produceKeyed(ctx context.Context, n int) {
	for range n {
		if ctx.Err() != nil {
			return
		}
		p.mu.Lock()
		kn := p.ck.rng.IntN(p.ck.keys)
		tp := p.tps[kn%len(p.tps)]
		if p.open[tp] >= p.capTP {
			p.mu.Unlock()
			continue
		}
		p.open[tp]++
		i := len(p.sends)
		k := Key{Producer: p.id, Seq: int64(i)}
		rk := fmt.Sprintf("k%d-%d", p.id, kn)
		tomb := p.ck.rng.IntN(p.ck.tombEvery) == 0
		p.sends = append(p.sends, Send{Key: k, TP: tp, Outcome: Unknown, Offset: -1, Sent: time.Now(), RecordKey: rk, Tombstone: tomb})
		p.mu.Unlock()
		rec := &kgo.Record{Topic: tp.Topic, Partition: tp.Partition, Key: []byte(rk)}
		if !tomb {
			rec.Value = EncodeValue(k, p.size)
		}
		p.cl.Produce(context.Background(), rec, func(r *kgo.Record, err error) { p.done(i, r, err) })
	}
}

// newCompactProducers makes the compacted topic's producers (acks=all,
// idempotent; acks=1 in the compaction control), numbered from 0: their
// keys and sequence numbers are their own, apart from the soak topic's.
func newCompactProducers(seeds []string, tps []TP, o *Options, seed uint64, acked, failed, unk *atomic.Int64) ([]*producer, error) {
	var ps []*producer
	n := max(o.Producers/2, 1)
	for i := range n {
		p, err := newProducer(i, seeds, tps, o, acked, failed, unk, compactProducer)
		if err != nil {
			for _, q := range ps {
				q.cl.Close()
			}
			return nil, err
		}
		p.ck = &compactKeys{rng: rand.New(rand.NewPCG(seed, uint64(i))), keys: max(o.CompactKeys/n, 1), tombEvery: 10}
		ps = append(ps, p)
	}
	return ps, nil
}

// compactFinalRead reads the compacted topic from its start up to hw.
// Compaction leaves holes, also at the end of a log (a tombstone past
// delete.retention.ms), so a partition may never return hw-1: the read
// also ends once no record arrived for idle.
func compactFinalRead(ctx context.Context, seeds []string, hw map[TP]int64, idle time.Duration) ([]Read, error) {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-rctx.Done():
				return
			case <-t.C:
				if time.Since(time.Unix(0, last.Load())) > idle {
					cancel()
					return
				}
			}
		}
	}()
	reads, _, err := finalReadWith(rctx, seeds, hw, func() { last.Store(time.Now().UnixNano()) })
	if ctx.Err() != nil {
		return reads, fmt.Errorf("compacted topic: final read: %w", ctx.Err())
	}
	_ = err // an incomplete read is expected: holes at the end
	return reads, nil
}
