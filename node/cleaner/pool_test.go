package cleaner

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/segment"
)

// The pool is tested on real segment logs over an in-memory FS; what a
// Clean keeps is segment's to test, so these tests look at what the pool
// decides: which logs it cleans, when, and what it reports.

// keyedBatch encodes one uncompressed batch of records key=value (kmsg,
// not segment's codec), timestamped ts.
func keyedBatch(ts int64, kvs ...string) []byte {
	var recs []byte
	for i := 0; i+1 < len(kvs); i += 2 {
		r := kmsg.Record{OffsetDelta: int32(i / 2), Key: []byte(kvs[i]), Value: []byte(kvs[i+1])}
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		recs = r.AppendTo(recs)
	}
	n := int32(len(kvs) / 2)
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1, Magic: 2, LastOffsetDelta: n - 1, FirstTimestamp: ts, MaxTimestamp: ts,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: n, Records: recs,
	}
	b.Length = int32(len(b.AppendTo(nil)) - 12)
	enc := b.AppendTo(nil)
	b.CRC = int32(crc32.Checksum(enc[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b.AppendTo(nil)
}

type env struct {
	t   *testing.T
	fs  vfs.FS
	idx *segment.Index
}

func newEnv(t *testing.T, fs vfs.FS) *env {
	idx, err := segment.OpenIndex(fs, "/data/index", 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = idx.Close() })
	return &env{t: t, fs: fs, idx: idx}
}

// open opens log name with small segments (every few batches roll).
func (e *env) open(name string) *segment.Log {
	e.t.Helper()
	l, _, err := segment.Open(e.fs, "/data/"+name, name, e.idx, segment.Options{SegmentBytes: 1024, RetentionMs: -1, RetentionBytes: -1})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = l.Close() })
	return l
}

// overwrite appends rounds of one batch per key over nkeys keys: all but
// the last round are garbage to a compacting cleaner.
func overwrite(t *testing.T, l *segment.Log, nkeys, rounds int) {
	t.Helper()
	now := time.Now().UnixMilli()
	for r := range rounds {
		for k := range nkeys {
			if _, err := l.Append(keyedBatch(now, fmt.Sprintf("k%d", k), fmt.Sprintf("v%d-%032d", r, 0)), 0); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func compact(ratio float64) segment.CleanPolicy {
	return segment.CleanPolicy{Compact: true, MinCleanableDirtyRatio: ratio, DeleteRetention: time.Hour}
}

// waitFor polls cond every 5ms until it holds or a deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s", what)
		case <-tick.C:
		}
	}
}

// leo is a Target.UpTo that lets the whole log be cleaned.
func leo(l *segment.Log) func() int64 { return l.LogEndOffset }

// TestPoolCleansCompactedLogs: a registered log with a compact policy is
// cleaned (its dirty bytes go to zero, it shrinks), one with a delete
// policy is not, and Stats reports the cleans and the dirty ratios.
func TestPoolCleansCompactedLogs(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	a, b, d := e.open("a-0"), e.open("b-0"), e.open("d-0")
	for _, l := range []*segment.Log{a, b, d} {
		overwrite(t, l, 5, 20)
	}
	sizeA, sizeD := a.Size(), d.Size()
	p := New(Config{Threads: 2, DedupeBufferBytes: 4 << 20, Backoff: 50 * time.Millisecond})
	defer p.Close()
	for name, l := range map[string]*segment.Log{"a": a, "b": b, "d": d} {
		h := p.Register(Target{Topic: name, Log: l, UpTo: leo(l)})
		if name == "d" {
			h.SetPolicy(segment.CleanPolicy{Delete: true})
		} else {
			h.SetPolicy(compact(0.1))
		}
	}
	clean := func(l *segment.Log) bool {
		c := l.CleanCandidate(compact(0.1), l.LogEndOffset(), time.Now())
		return c.DirtyBytes == 0 && c.CleanBytes > 0
	}
	waitFor(t, "both compacted logs cleaned", func() bool { return clean(a) && clean(b) })
	if got := a.Size(); got >= sizeA/2 {
		t.Errorf("a is %d bytes after cleaning, was %d: expected most of 20 rounds of overwrites gone", got, sizeA)
	}
	if got := d.Size(); got != sizeD {
		t.Errorf("the delete-policy log changed size: %d -> %d", sizeD, got)
	}
	waitFor(t, "stats after the cleans", func() bool {
		s := p.Stats(nil)
		return s.Cleans >= 2 && len(s.Logs) == 2 && s.MaxDirtyRatio == 0
	})
	s := p.Stats(nil)
	if s.Failures != 0 || s.Uncleanable != 0 || s.RecopyRatio <= 0 || s.RecopyRatio >= 1 || s.MaxCleanTime <= 0 {
		t.Errorf("stats %+v: want no failures, a recopy ratio in (0, 1), a clean time", s)
	}
}

// countingLog counts what the pool asks of a real log.
type countingLog struct {
	*segment.Log
	candidates, cleans atomic.Int64
}

func (c *countingLog) CleanCandidate(p segment.CleanPolicy, upTo int64, now time.Time) segment.CleanCandidate {
	c.candidates.Add(1)
	return c.Log.CleanCandidate(p, upTo, now)
}

func (c *countingLog) Clean(ctx context.Context, o segment.CleanOptions) (segment.CleanStats, error) {
	c.cleans.Add(1)
	return c.Log.Clean(ctx, o)
}

// TestPoolQuietLogsCostNothing: a thousand compacted logs whose high
// watermark does not move are measured once, when registered, and never
// again however many rounds pass; a moved one is measured again.
func TestPoolQuietLogsCostNothing(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	l := e.open("q-0")
	overwrite(t, l, 3, 2)
	var rounds atomic.Int64
	p := New(Config{Threads: 1, DedupeBufferBytes: 1 << 20, Backoff: 10 * time.Millisecond,
		Now: func() time.Time { rounds.Add(1); return time.Now() }})
	defer p.Close()
	const n = 1000
	logs := make([]*countingLog, n)
	hs := make([]*Handle, n)
	for i := range logs {
		logs[i] = &countingLog{Log: l}
		// min.cleanable.dirty.ratio 1.01: measured, never cleanable.
		hs[i] = p.Register(Target{Topic: "q", Partition: int32(i), Log: logs[i], UpTo: l.LogEndOffset})
		hs[i].SetPolicy(compact(1.01))
	}
	total := func() (s int64) {
		for _, c := range logs {
			s += c.candidates.Load()
		}
		return s
	}
	waitFor(t, "every log measured", func() bool { return total() == n })
	for i := range 10 {
		hs[i].Moved() // a later Moved on the same logs is free
	}
	start := rounds.Load()
	waitFor(t, "rounds to pass", func() bool { return rounds.Load() > start+20 })
	if got := total(); got != n+10 {
		t.Errorf("%d measurements after rounds with 10 logs moved, want %d: quiet logs must not be measured", got, n+10)
	}
	for _, c := range logs {
		if c.cleans.Load() != 0 {
			t.Fatal("a log below min.cleanable.dirty.ratio was cleaned")
		}
	}
	if s := p.Stats(nil); len(s.Logs) != n || s.SinceLastRun > time.Minute {
		t.Errorf("stats: %d logs, since last run %v", len(s.Logs), s.SinceLastRun)
	}
}

// TestPoolUncleanable: a log whose Cleans fail (injected write errors) is
// retried once, then marked uncleanable and left alone; another log is
// still cleaned; OnError saw each failure.
func TestPoolUncleanable(t *testing.T) {
	fault := &errorfs.Toggle{Injector: errorfs.ErrInjected.If(errorfs.And(errorfs.PathMatch("/data/bad-0/*"), errorfs.Writes))}
	e := newEnv(t, errorfs.Wrap(vfs.NewMem(), fault))
	bad, good := e.open("bad-0"), e.open("good-0")
	overwrite(t, bad, 4, 10)
	overwrite(t, good, 4, 10)
	fault.On()
	var mu sync.Mutex
	var errs []error
	p := New(Config{Threads: 1, DedupeBufferBytes: 1 << 20, Backoff: 20 * time.Millisecond,
		OnError: func(topic string, _ int32, err error) {
			mu.Lock()
			defer mu.Unlock()
			if topic != "bad" {
				t.Errorf("error from %s: %v", topic, err)
			}
			errs = append(errs, err)
		}})
	defer p.Close()
	hb := p.Register(Target{Topic: "bad", Log: bad, UpTo: leo(bad)})
	hb.SetPolicy(compact(0.1))
	waitFor(t, "the failing log marked uncleanable", func() bool { return p.Stats(nil).Uncleanable == 1 })
	hg := p.Register(Target{Topic: "good", Log: good, UpTo: leo(good)})
	hg.SetPolicy(compact(0.1))
	waitFor(t, "the other log cleaned", func() bool { return p.Stats(nil).Cleans >= 1 })
	hb.Moved()
	s := p.Stats(nil)
	mu.Lock()
	defer mu.Unlock()
	if s.Failures != uncleanableAfter || len(errs) != uncleanableAfter {
		t.Errorf("%d failures, %d errors seen: want %d (no Clean after uncleanable)", s.Failures, len(errs), uncleanableAfter)
	}
	for _, err := range errs {
		if !strings.Contains(err.Error(), "injected error") {
			t.Errorf("error %v is not the injected one", err)
		}
	}
	var found bool
	for _, ls := range s.Logs {
		if ls.Topic == "bad" {
			found = ls.Uncleanable
		}
	}
	if !found {
		t.Errorf("stats logs %+v: bad not listed as uncleanable", s.Logs)
	}
}

// TestPoolRemoveStopsClean: Remove and Close cancel a Clean held up by the
// throttle and return; the log is left as it was.
func TestPoolRemoveStopsClean(t *testing.T) {
	for _, how := range []string{"remove", "close"} {
		t.Run(how, func(t *testing.T) {
			e := newEnv(t, vfs.NewMem())
			l := e.open("s-0")
			overwrite(t, l, 4, 20)
			size := l.Size()
			before := l.CleanCandidate(compact(0.1), l.LogEndOffset(), time.Now())
			// 100 bytes a second: a Clean of several KiB takes a minute.
			// (A short backoff: a thread that found nothing before the
			// log was registered waits backoff/10 before it looks again.)
			p := New(Config{Threads: 1, DedupeBufferBytes: 1 << 20, IOBytesPerSecond: 100, Backoff: 100 * time.Millisecond})
			h := p.Register(Target{Topic: "s", Log: l, UpTo: leo(l)})
			h.SetPolicy(compact(0.1))
			waitFor(t, "the Clean to start", func() bool {
				p.mu.Lock()
				defer p.mu.Unlock()
				return h.cleaning != nil
			})
			if how == "remove" {
				h.Remove()
				defer p.Close()
			} else {
				p.Close()
			}
			if got := l.Size(); got != size {
				t.Errorf("log size %d after a cancelled Clean, was %d", got, size)
			}
			if c := l.CleanCandidate(compact(0.1), l.LogEndOffset(), time.Now()); c != before {
				t.Errorf("candidate %+v after a cancelled Clean, was %+v", c, before)
			}
			if s := p.Stats(nil); s.Failures != 0 || s.Cleans != 0 {
				t.Errorf("stats %+v: a cancelled Clean is neither a clean nor a failure", s)
			}
		})
	}
}

// TestThrottleShared: two goroutines pushing bytes through one throttle
// together take at least as long as the rate allows for all of them.
func TestThrottleShared(t *testing.T) {
	th := throttle{rate: 200 << 10}   // 200 KiB/s
	const chunk, chunks = 8 << 10, 20 // 2 x 160 KiB: >= 1.56 s minus one chunk
	start := time.Now()
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for range chunks {
				if err := th.wait(context.Background(), chunk); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if min := time.Duration(float64(2*chunks*chunk-chunk) / th.rate * float64(time.Second)); time.Since(start) < min {
		t.Errorf("2 x %d bytes at %v B/s took %v, want >= %v", chunks*chunk, th.rate, time.Since(start), min)
	}
	unlimited := throttle{}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := unlimited.wait(ctx, 1<<30); !errors.Is(err, context.Canceled) {
		t.Errorf("unlimited throttle with a cancelled context: %v", err)
	}
}
