package soak

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-log/sluice/tools/cluster"
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
	// minControlKeys is the least key space of the compaction control.
	minControlKeys = 20000
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

// cleanCounter sums the nodes' sluice_log_cleaner_cleans_total and
// _failures_total over the run: a restarted node's counters start again
// from 0, so it adds what each grew between samples (a node killed loses
// what it counted since the last sample: the totals are lower bounds).
//
// The nodes are read again at every sample (layout): a host lost in a
// docker run is replaced by a node at another address, which the sums
// must follow.
type cleanCounter struct {
	layout func() cluster.Layout
	last   map[string][2]int64 // by HTTP address
	total  [2]int64            // cleans, failures
}

func newCleanCounter(layout func() cluster.Layout) *cleanCounter {
	return &cleanCounter{layout: layout, last: map[string][2]int64{}}
}

// run samples every period until ctx ends, then once more.
func (c *cleanCounter) run(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		c.sample(context.WithoutCancel(ctx))
		select {
		case <-ctx.Done():
			c.sample(context.WithoutCancel(ctx))
			return
		case <-t.C:
		}
	}
}

func (c *cleanCounter) sample(ctx context.Context) {
	for _, n := range c.layout().Nodes {
		addr := n.HTTP
		v, ok := scrapeCleans(ctx, addr)
		if !ok {
			continue // down: its next sample starts from its new counters
		}
		last := c.last[addr]
		for i := range v {
			if v[i] >= last[i] {
				c.total[i] += v[i] - last[i]
			} else {
				c.total[i] += v[i]
			}
		}
		c.last[addr] = v
	}
}

// scrapeCleans reads a node's clean counters from its /metrics.
func scrapeCleans(ctx context.Context, addr string) ([2]int64, bool) {
	var v [2]int64
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return v, false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return v, false
	}
	defer resp.Body.Close()
	found := 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		for i, name := range []string{"sluice_log_cleaner_cleans_total ", "sluice_log_cleaner_failures_total "} {
			if rest, ok := strings.CutPrefix(sc.Text(), name); ok {
				f, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
				if err == nil {
					v[i] = int64(f)
					found++
				}
			}
		}
	}
	return v, found == 2 && resp.StatusCode == http.StatusOK
}
