package cleaner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-log/sluice/segment"
)

// Log is what the pool needs of a log; *segment.Log implements it. Both
// methods are called from the pool's threads, concurrently with anything
// else the log does.
type Log interface {
	CleanCandidate(p segment.CleanPolicy, upTo int64, now time.Time) segment.CleanCandidate
	Clean(ctx context.Context, o segment.CleanOptions) (segment.CleanStats, error)
}

// Config are the pool's settings, from the broker's log.cleaner.* keys.
type Config struct {
	// Threads (log.cleaner.threads): cleaner goroutines, at least 1.
	Threads int
	// DedupeBufferBytes (log.cleaner.dedupe.buffer.size): offset map
	// memory shared by the threads.
	DedupeBufferBytes int64
	// IOBytesPerSecond (log.cleaner.io.max.bytes.per.second): read plus
	// written over all threads; <= 0 or +Inf (or Kafka's default,
	// Double.MAX_VALUE): unlimited.
	IOBytesPerSecond float64
	// Backoff (log.cleaner.backoff.ms): the wait when no log is dirty
	// enough.
	Backoff time.Duration
	// Logger; nil discards.
	Logger *slog.Logger
	// OnError, when set, sees every Clean error with the log it came from
	// (the node checks for disk errors). It must not block.
	OnError func(topic string, partition int32, err error)
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Target is one log registered with the pool.
type Target struct {
	Topic     string
	Partition int32
	Log       Log
	// UpTo is the offset below which the log may be cleaned: the
	// replica's high watermark. Called from the threads.
	UpTo func() int64
}

// Pool runs the cleaner threads; see the package doc. Its methods are safe
// for concurrent use; a nil *Pool (cleaner disabled) registers nothing.
type Pool struct {
	cfg      Config
	log      *slog.Logger
	throttle throttle
	mapBytes int
	scratch  []segment.CleanScratch // per thread: its map and buffers, reused Clean to Clean
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	wake     chan struct{} // a high watermark moved: one buffered token

	mu struct {
		sync.Mutex
		logs map[*Handle]struct{}
		// check are the handles to measure at the next round; timed
		// those to measure again at their recheck time; ready those
		// whose latest measurement is Cleanable.
		check []*Handle
		timed map[*Handle]struct{}
		ready map[*Handle]struct{}
		// lastRun is when a thread last looked for a log to clean.
		lastRun time.Time
		// last is each thread's latest Clean (recopy, clean time).
		last []segment.CleanStats
		// cleans, failures: totals since start.
		cleans, failures int64
		closed           bool
	}
}

// Handle is a registered log. Its methods are safe for concurrent use and
// do nothing on a nil *Handle.
type Handle struct {
	p *Pool
	t Target
	// moved is set by Moved until the next measurement.
	moved atomic.Bool

	// Under p.mu:
	policy      segment.CleanPolicy
	cand        segment.CleanCandidate // the latest measurement
	measured    bool                   // cand is current (in ready/timed as it says)
	seen        bool                   // cand was ever measured under this policy (Stats)
	recheck     time.Time              // when time alone may change the candidate; zero: never
	queued      bool                   // in p.mu.check
	ctx         context.Context
	cleaning    context.CancelFunc // set while a thread cleans the log
	done        chan struct{}      // closed when that Clean ends
	failures    int                // consecutive failed Cleans
	uncleanable bool
	removed     bool
}

// maxOffsetMap bounds one thread's offset map, as Kafka caps it at
// Integer.MAX_VALUE bytes.
const maxOffsetMap = math.MaxInt32

// New starts the pool's threads.
func New(cfg Config) *Pool {
	if cfg.Threads < 1 {
		cfg.Threads = 1
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = 15 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	p := &Pool{cfg: cfg, log: cfg.Logger, wake: make(chan struct{}, 1)}
	p.throttle.rate = cfg.IOBytesPerSecond
	p.mapBytes = int(min(cfg.DedupeBufferBytes/int64(cfg.Threads), maxOffsetMap))
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.mu.logs, p.mu.timed, p.mu.ready = map[*Handle]struct{}{}, map[*Handle]struct{}{}, map[*Handle]struct{}{}
	p.mu.last = make([]segment.CleanStats, cfg.Threads)
	p.scratch = make([]segment.CleanScratch, cfg.Threads)
	p.mu.lastRun = cfg.Now()
	p.wg.Add(cfg.Threads)
	for i := range cfg.Threads {
		go p.run(i)
	}
	return p
}

// Close cancels running Cleans and waits for the threads to end.
func (p *Pool) Close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.mu.closed = true
	p.mu.Unlock()
	p.cancel()
	p.wg.Wait()
}

// Register adds a log; it is cleaned once SetPolicy gives it a policy with
// Compact. It returns nil on a nil or closed pool.
func (p *Pool) Register(t Target) *Handle {
	if p == nil {
		return nil
	}
	h := &Handle{p: p, t: t}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.closed {
		return nil
	}
	p.mu.logs[h] = struct{}{}
	return h
}

// SetPolicy sets the log's compaction settings (its topic's configs); the
// log is measured at the next round when they changed.
func (h *Handle) SetPolicy(pol segment.CleanPolicy) {
	if h == nil {
		return
	}
	p := h.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if h.removed || h.policy == pol {
		return
	}
	h.policy, h.seen = pol, false
	p.forgetLocked(h)
	if pol.Compact {
		p.queueLocked(h)
		p.poke()
	}
}

// Moved says the log's high watermark moved: more of it may be cleanable.
// Cheap after the first call since the log was last measured (an atomic
// load), so the replica calls it on every move.
func (h *Handle) Moved() {
	if h == nil || h.moved.Load() || !h.moved.CompareAndSwap(false, true) {
		return
	}
	p := h.p
	p.mu.Lock()
	if !h.removed && h.policy.Compact {
		p.queueLocked(h)
	}
	p.mu.Unlock()
	p.poke()
}

// Remove unregisters the log, cancels a Clean of it and waits for that
// Clean to end, so that the caller may close or delete the log.
func (h *Handle) Remove() {
	if h == nil {
		return
	}
	p := h.p
	p.mu.Lock()
	h.removed = true
	p.forgetLocked(h)
	delete(p.mu.logs, h)
	cancel, done := h.cleaning, h.done
	p.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// queueLocked adds h to the handles measured at the next round. p.mu must
// be held.
func (p *Pool) queueLocked(h *Handle) {
	if !h.queued {
		h.queued = true
		p.mu.check = append(p.mu.check, h)
	}
}

func (p *Pool) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// run is one cleaner thread.
func (p *Pool) run(thread int) {
	defer p.wg.Done()
	for p.ctx.Err() == nil {
		h := p.pick()
		if h == nil {
			p.idle()
			continue
		}
		p.clean(thread, h)
	}
}

// idle waits for the backoff, or for a moved high watermark once a tenth
// of it has passed, or for Close.
func (p *Pool) idle() {
	backoff := time.NewTimer(p.cfg.Backoff)
	defer backoff.Stop()
	gap := time.NewTimer(p.cfg.Backoff / 10)
	defer gap.Stop()
	select {
	case <-p.ctx.Done():
		return
	case <-backoff.C:
		return
	case <-gap.C:
	}
	select {
	case <-p.ctx.Done():
	case <-backoff.C:
	case <-p.wake:
	}
}

// forgetLocked drops h's measurement. p.mu must be held.
func (p *Pool) forgetLocked(h *Handle) {
	h.measured, h.recheck = false, time.Time{}
	delete(p.mu.timed, h)
	delete(p.mu.ready, h)
}

// pick measures the logs that may have changed and returns the dirtiest
// cleanable one, marked as being cleaned; nil if none. Its cost is in the
// logs it measures and the cleanable ones, never in the quiet ones.
func (p *Pool) pick() *Handle {
	now := p.cfg.Now()
	p.mu.Lock()
	p.mu.lastRun = now
	todo := p.mu.check
	p.mu.check = nil
	for h := range p.mu.timed {
		if !h.queued && !now.Before(h.recheck) {
			todo = append(todo, h)
		}
	}
	type job struct {
		h    *Handle
		pol  segment.CleanPolicy
		cand segment.CleanCandidate
		upTo int64
	}
	jobs := make([]job, 0, len(todo))
	for _, h := range todo {
		h.queued = false
		if !h.removed && !h.uncleanable && h.cleaning == nil && h.policy.Compact {
			jobs = append(jobs, job{h: h, pol: h.policy})
		}
	}
	p.mu.Unlock()

	// Measure without the pool's lock: CleanCandidate takes the log's.
	for i := range jobs {
		j := &jobs[i]
		j.h.moved.Store(false)
		j.upTo = j.h.t.UpTo()
		j.cand = j.h.t.Log.CleanCandidate(j.pol, j.upTo, now)
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	for _, j := range jobs {
		h := j.h
		if h.removed || h.policy != j.pol || h.cleaning != nil {
			continue // changed meanwhile (SetPolicy queued it again)
		}
		p.forgetLocked(h)
		h.cand, h.measured, h.seen = j.cand, true, true
		if j.cand.Cleanable(j.pol) {
			p.mu.ready[h] = struct{}{}
		}
		if waitsForLag(j.pol, j.cand, j.upTo) {
			h.recheck = now.Add(p.cfg.Backoff)
			p.mu.timed[h] = struct{}{}
		}
	}
	var best *Handle
	for h := range p.mu.ready {
		if h.cleaning != nil {
			continue
		}
		if best == nil || h.cand.MustClean && !best.cand.MustClean ||
			h.cand.MustClean == best.cand.MustClean && h.cand.DirtyRatio > best.cand.DirtyRatio {
			best = h
		}
	}
	if best != nil {
		p.forgetLocked(best)
		best.ctx, best.cleaning = context.WithCancel(p.ctx)
		best.done = make(chan struct{})
	}
	return best
}

// waitsForLag says whether time alone may make more of the log cleanable:
// its policy has a compaction lag (min.compaction.lag.ms holds committed
// segments back; max.compaction.lag.ms forces a clean) and committed
// records lie past what is cleanable now; or a tombstone's or marker's
// delete horizon is yet to pass.
func waitsForLag(pol segment.CleanPolicy, c segment.CleanCandidate, upTo int64) bool {
	lagged := pol.MinCompactionLag > 0 || pol.MaxCompactionLag > 0 && pol.MaxCompactionLag < time.Duration(1<<62)
	// A delete horizon still to pass (KIP-534) makes the log cleanable
	// with nothing dirty once it has.
	return lagged && (c.CleanableEnd < upTo || c.DirtyBytes > 0 && !c.MustClean) || c.DeleteHorizon != 0 && !c.HorizonDue
}

// clean runs one Clean of h on thread and records what came of it.
func (p *Pool) clean(thread int, h *Handle) {
	p.mu.Lock()
	ctx, cancel, pol := h.ctx, h.cleaning, h.policy
	p.mu.Unlock()
	start := time.Now()
	st, err := h.t.Log.Clean(ctx, segment.CleanOptions{
		Policy: pol, UpTo: h.t.UpTo(), Now: p.cfg.Now(), OffsetMapBytes: p.mapBytes, Throttle: p.throttle.wait,
		Scratch: &p.scratch[thread],
	})
	// Timed here: segment's CleanStats.Duration is set by a deferred
	// assignment after the stats were returned, so it reads 0.
	st.Duration = max(st.Duration, time.Since(start))
	// Stopped means Remove or Close cancelled it; read before the cancel
	// below, which only releases the context.
	stopped := ctx.Err() != nil
	cancel()
	p.mu.Lock()
	defer p.mu.Unlock()
	close(h.done)
	h.ctx, h.cleaning, h.done = nil, nil, nil
	switch {
	case err == nil:
		h.failures = 0
		if st.CleanedTo > st.FirstDirty {
			p.mu.cleans++
			p.mu.last[thread] = st
		}
	case stopped || errors.Is(err, segment.ErrClosed):
		// Removed or closing: nothing changed, nothing to report.
		return
	case errors.Is(err, segment.ErrCleanRaced):
		// A truncation or retention changed the log under the Clean,
		// which swapped nothing: not a failure (Kafka aborts and
		// retries the same way). Clean again after the backoff.
		h.recheck = p.cfg.Now().Add(p.cfg.Backoff)
		p.mu.timed[h] = struct{}{}
		return
	default:
		p.mu.failures++
		h.failures++
		if p.cfg.OnError != nil {
			p.cfg.OnError(h.t.Topic, h.t.Partition, err)
		}
		if h.failures >= uncleanableAfter {
			h.uncleanable = true
			p.log.Error("log cleaner: marking the log uncleanable after repeated failures; it is not cleaned again until it is reopened (restart the node once the cause is fixed)",
				"topic", h.t.Topic, "partition", h.t.Partition, "failures", h.failures, "err", err)
			return
		}
		p.log.Warn("log cleaner: clean failed; retrying after log.cleaner.backoff.ms", "topic", h.t.Topic, "partition", h.t.Partition, "err", err)
		h.recheck = p.cfg.Now().Add(p.cfg.Backoff)
		p.mu.timed[h] = struct{}{}
		return
	}
	switch {
	case h.removed:
	case err == nil && st.CleanedTo <= st.FirstDirty:
		// Nothing was cleanable after all (the measurement and the Clean
		// disagree, or the log changed): look again after the backoff,
		// not at once, so that such a log cannot keep a thread busy.
		h.recheck = p.cfg.Now().Add(p.cfg.Backoff)
		p.mu.timed[h] = struct{}{}
	default:
		p.queueLocked(h) // measure again: another pass may be due
	}
}

// uncleanableAfter is how many Cleans of a log must fail in a row before
// it is marked uncleanable.
const uncleanableAfter = 2

// throttle paces the threads' I/O to a rate shared by all of them
// (Kafka's Throttler): each call reserves its bytes after those reserved
// before it and waits for its turn.
type throttle struct {
	rate float64 // bytes per second; <= 0 or huge: unlimited
	mu   sync.Mutex
	next time.Time // when the bytes reserved so far have been paid for
}

// wait is segment.CleanOptions.Throttle: it returns once n more bytes may
// be read or written, or ctx's error.
func (t *throttle) wait(ctx context.Context, n int) error {
	if t.rate <= 0 || t.rate >= math.MaxFloat64 || math.IsInf(t.rate, 1) {
		return ctx.Err()
	}
	t.mu.Lock()
	now := time.Now()
	if t.next.Before(now) {
		t.next = now
	}
	start := t.next
	t.next = t.next.Add(time.Duration(float64(n) / t.rate * float64(time.Second)))
	t.mu.Unlock()
	d := start.Sub(now)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// Stats is the pool's state for metrics (Kafka's LogCleaner and
// LogCleanerManager gauges).
type Stats struct {
	// MaxDirtyRatio is the largest dirty ratio of the compacted logs as
	// last measured (max-dirty-percent / 100).
	MaxDirtyRatio float64
	// RecopyRatio is bytes written over bytes read by each thread's
	// latest Clean, summed (cleaner-recopy-percent / 100).
	RecopyRatio float64
	// MaxCleanTime is the longest of each thread's latest Clean
	// (max-clean-time-secs).
	MaxCleanTime time.Duration
	// Uncleanable counts the logs marked uncleanable
	// (uncleanable-partitions-count).
	Uncleanable int
	// SinceLastRun is the time since a thread last looked for a log to
	// clean (time-since-last-run-ms).
	SinceLastRun time.Duration
	// Cleans counts the Cleans that moved a log's cleaner checkpoint,
	// Failures those that failed, since the pool started.
	Cleans, Failures int64
	// Cleaning counts the logs being cleaned now.
	Cleaning int
	// Logs are the compacted logs measured so far, with their latest
	// dirty ratio.
	Logs []LogStat
}

// LogStat is one compacted log in Stats.
type LogStat struct {
	Topic       string
	Partition   int32
	DirtyRatio  float64
	Uncleanable bool
}

// Stats returns the pool's state; buf is reused for Stats.Logs. It costs
// one step per registered log (scrape time only).
func (p *Pool) Stats(buf []LogStat) Stats {
	if p == nil {
		return Stats{Logs: buf[:0]}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s := Stats{SinceLastRun: max(p.cfg.Now().Sub(p.mu.lastRun), 0), Cleans: p.mu.cleans, Failures: p.mu.failures, Logs: buf[:0]}
	var read, written int64
	for _, st := range p.mu.last {
		read, written = read+st.BytesRead, written+st.BytesWritten
		s.MaxCleanTime = max(s.MaxCleanTime, st.Duration)
	}
	if read > 0 {
		s.RecopyRatio = float64(written) / float64(read)
	}
	for h := range p.mu.logs {
		if h.uncleanable {
			s.Uncleanable++
		}
		if h.cleaning != nil {
			s.Cleaning++
		}
		if !h.policy.Compact || !h.seen && !h.uncleanable {
			continue
		}
		if !h.uncleanable {
			s.MaxDirtyRatio = max(s.MaxDirtyRatio, h.cand.DirtyRatio)
		}
		s.Logs = append(s.Logs, LogStat{Topic: h.t.Topic, Partition: h.t.Partition, DirtyRatio: h.cand.DirtyRatio, Uncleanable: h.uncleanable})
	}
	return s
}

// String names the handle's log (logs, errors).
func (h *Handle) String() string { return fmt.Sprintf("%s-%d", h.t.Topic, h.t.Partition) }

// Stat is the log's latest measurement; ok is false on a nil handle or
// before the log was measured under a compact policy (scrape time only).
func (h *Handle) Stat() (s LogStat, ok bool) {
	if h == nil {
		return s, false
	}
	h.p.mu.Lock()
	defer h.p.mu.Unlock()
	if !h.policy.Compact || !h.seen && !h.uncleanable {
		return s, false
	}
	return LogStat{Topic: h.t.Topic, Partition: h.t.Partition, DirtyRatio: h.cand.DirtyRatio, Uncleanable: h.uncleanable}, true
}
