package bench

import (
	"context"
	"encoding/binary"
	"fmt"
	"github.com/sluice-log/sluice/tools/internal/stats"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// valuePool hands out record values of one size whose first 8 bytes are
// overwritten with the send time (UnixNano) and whose rest is random (so
// that nothing compresses it). A value goes back after its ack. The free
// list is a buffered channel of slices: unlike a sync.Pool of *[]byte, a
// put allocates nothing.
type valuePool struct {
	size int
	fill []byte
	free chan []byte
}

// minSize holds the timestamp.
const minSize = 8

func newValuePool(size int) *valuePool {
	if size < minSize {
		size = minSize
	}
	p := &valuePool{size: size, fill: make([]byte, size), free: make(chan []byte, kgoMaxBuffered+4096)}
	r := rand.New(rand.NewPCG(uint64(size), 8))
	for i := range p.fill {
		p.fill[i] = byte(r.Uint32())
	}
	return p
}

// get returns a value stamped with now.
func (p *valuePool) get(now time.Time) []byte {
	var b []byte
	select {
	case b = <-p.free:
	default:
		b = make([]byte, p.size)
		copy(b, p.fill)
	}
	binary.BigEndian.PutUint64(b, uint64(now.UnixNano()))
	return b
}

// put gives a value back once nothing refers to it.
func (p *valuePool) put(b []byte) {
	if len(b) != p.size {
		return
	}
	select {
	case p.free <- b:
	default:
	}
}

// stamp reads the send time of a value.
func stamp(v []byte) (time.Time, bool) {
	if len(v) < minSize {
		return time.Time{}, false
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(v))), true
}

// pacer paces an offered load: Take returns how many records may be sent
// now so that sent/elapsed stays at the rate. A zero rate is unpaced.
type pacer struct {
	perSec float64 // records per second; 0: as fast as acks allow
	start  time.Time
	sent   int64
}

func newPacer(rateMBps float64, size int, start time.Time) *pacer {
	if rateMBps <= 0 {
		return &pacer{start: start}
	}
	return &pacer{perSec: rateMBps * (1 << 20) / float64(size), start: start}
}

// allowance is how many records the pace allows at now (at most burst).
func (p *pacer) allowance(now time.Time, burst int64) int64 {
	if p.perSec == 0 {
		return burst
	}
	due := int64(now.Sub(p.start).Seconds()*p.perSec) - p.sent
	if due > burst {
		due = burst
	}
	if due < 0 {
		return 0
	}
	return due
}

// produceLoop is the load of a cell, the same for Sluice and the peer: for
// d from start, as fast as send returns (the client's back-pressure) or at
// the cell's offered rate, until the deadline, a failure reported to m, or
// the end of ctx. send publishes one value from vals and returns false
// when the load must stop (it has told m why).
func produceLoop(ctx context.Context, m *meter, c Cell, start time.Time, d time.Duration, vals *valuePool, send func(v []byte) bool) {
	pace := newPacer(c.RateMBps, c.Size, start)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		n := pace.allowance(time.Now(), 256)
		for i := int64(0); i < n; i++ {
			if !send(vals.get(time.Now())) {
				return
			}
		}
		pace.sent += n
		select {
		case <-deadline.C:
			return
		case <-m.failed:
			return
		case <-ctx.Done():
			return
		default:
		}
		if pace.perSec > 0 {
			select {
			case <-tick.C:
			case <-deadline.C:
				return
			case <-m.failed:
				return
			}
		}
	}
}

// waitConsumed lets the consumer catch up with what was acknowledged: it
// returns when it has, when the cell failed, or when ctx ends.
func waitConsumed(ctx context.Context, m *meter) {
	want := m.records.Load()
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for m.consumed.Load() < want && ctx.Err() == nil && m.failure() == nil {
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
}

// meter counts acknowledged records for the cell and for Kafka-style
// progress lines every interval.
type meter struct {
	records, bytes atomic.Int64
	produce        stats.Histogram
	e2e            stats.Histogram
	consumed       atomic.Int64
	errOnce        sync.Once
	err            error
	failed         chan struct{}
	consMu         sync.Mutex
	consErr        error // first consumer error: reported, not fatal
}

func (m *meter) consumeErr(err error) {
	m.consMu.Lock()
	defer m.consMu.Unlock()
	if m.consErr == nil {
		m.consErr = err
	}
}

func newMeter() *meter { return &meter{failed: make(chan struct{})} }

// ack records one acknowledged record sent at sent.
func (m *meter) ack(sent time.Time, size int, now time.Time) {
	m.records.Add(1)
	m.bytes.Add(int64(size))
	m.produce.Record(now.Sub(sent))
}

// fail keeps the first error and tells the load loop to stop.
func (m *meter) fail(err error) {
	m.errOnce.Do(func() {
		m.err = err
		close(m.failed)
	})
}

// failure is the first error, nil if none (safe to call any time).
func (m *meter) failure() error {
	select {
	case <-m.failed:
		return m.err
	default:
		return nil
	}
}

// progress prints a producer-perf-test window line every interval until
// ctx ends: "N records sent, X records/sec (Y MB/sec), A ms avg latency, M ms max latency."
func (m *meter) progress(ctx context.Context, w io.Writer, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	lastN, lastB := int64(0), int64(0)
	lastSum, lastCount, last := uint64(0), uint64(0), time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			n, b := m.records.Load(), m.bytes.Load()
			cnt, sum, maxUS := m.produce.Running()
			secs := now.Sub(last).Seconds()
			avg := 0.0
			if cnt > lastCount {
				avg = float64(sum-lastSum) / float64(cnt-lastCount) / 1000
			}
			fmt.Fprintf(w, "  %d records sent, %.1f records/sec (%.2f MB/sec), %.1f ms avg latency, %.1f ms max latency.\n",
				n-lastN, float64(n-lastN)/secs, float64(b-lastB)/secs/(1<<20), avg, float64(maxUS)/1000)
			lastN, lastB, lastSum, lastCount, last = n, b, sum, cnt, now
		}
	}
}

// result turns the meter into a Result.
func (m *meter) result(system string, c Cell, elapsed time.Duration) Result {
	r := Result{System: system, Cell: c, Name: c.Name(), Records: m.records.Load(), Bytes: m.bytes.Load(),
		Produce: m.produce.Summary(), E2E: m.e2e.Summary(), Consumed: m.consumed.Load()}
	if err := m.failure(); err != nil {
		r.Err = err.Error()
	}
	m.consMu.Lock()
	if m.consErr != nil {
		r.Note = "consumer: " + m.consErr.Error()
	}
	m.consMu.Unlock()
	r.finish(elapsed)
	return r
}
