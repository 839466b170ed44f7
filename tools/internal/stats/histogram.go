package stats

import (
	"fmt"
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// Histogram records latencies in microseconds in log-linear buckets: exact
// below 64 µs, then 32 buckets per power of two (at most ~3% relative
// error), up to 2^40 µs. Record is safe for concurrent use and does not
// allocate; read it (Summary, Quantile) after the writers are done.
type Histogram struct {
	counts [histBuckets]atomic.Uint64
	n      atomic.Uint64
	sum    atomic.Uint64 // µs
	max    atomic.Uint64 // µs
}

const (
	histSub     = 32 // buckets per power of two above histLinear
	histLinear  = 64 // exact buckets 0..63 µs
	histMaxExp  = 40
	histBuckets = histLinear + histMaxExp*histSub
)

// bucketOf maps a latency in µs to its bucket.
func bucketOf(us uint64) int {
	if us < histLinear {
		return int(us)
	}
	e := bits.Len64(us) - 6 // us>>e is in [32, 63]
	i := histLinear + (e-1)*histSub + int(us>>uint(e)) - histSub
	if i >= histBuckets {
		return histBuckets - 1
	}
	return i
}

// bucketValue is the middle of bucket i, in µs.
func bucketValue(i int) float64 {
	if i < histLinear {
		return float64(i)
	}
	e := (i-histLinear)/histSub + 1
	sub := (i-histLinear)%histSub + histSub
	lo := float64(uint64(sub) << uint(e))
	return lo + float64(uint64(1)<<uint(e))/2
}

// Record adds one latency; negative ones count as zero.
func (h *Histogram) Record(d time.Duration) {
	us := uint64(0)
	if d > 0 {
		us = uint64(d / time.Microsecond)
	}
	h.counts[bucketOf(us)].Add(1)
	h.n.Add(1)
	h.sum.Add(us)
	for {
		m := h.max.Load()
		if us <= m || h.max.CompareAndSwap(m, us) {
			return
		}
	}
}

// Count is the number of recorded latencies.
func (h *Histogram) Count() uint64 { return h.n.Load() }

// Quantile is the latency at q in [0, 1] in milliseconds: the value of the
// bucket holding the ceil(q*n)-th smallest latency (nearest rank), never
// above the recorded maximum. It is 0 for an empty histogram.
func (h *Histogram) Quantile(q float64) float64 {
	n := h.n.Load()
	if n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(n)))
	if rank < 1 {
		rank = 1
	}
	if rank >= n {
		return float64(h.max.Load()) / 1000
	}
	var seen uint64
	for i := range h.counts {
		seen += h.counts[i].Load()
		if seen >= rank {
			return math.Min(bucketValue(i), float64(h.max.Load())) / 1000
		}
	}
	return float64(h.max.Load()) / 1000
}

// Latency summarises a histogram in milliseconds.
type Latency struct {
	Count uint64  `json:"count"`
	Avg   float64 `json:"avg_ms"`
	Max   float64 `json:"max_ms"`
	P50   float64 `json:"p50_ms"`
	P95   float64 `json:"p95_ms"`
	P99   float64 `json:"p99_ms"`
	P999  float64 `json:"p999_ms"`
}

// Summary reads the histogram.
func (h *Histogram) Summary() Latency {
	n := h.n.Load()
	if n == 0 {
		return Latency{}
	}
	return Latency{
		Count: n,
		Avg:   float64(h.sum.Load()) / float64(n) / 1000,
		Max:   float64(h.max.Load()) / 1000,
		P50:   h.Quantile(0.50),
		P95:   h.Quantile(0.95),
		P99:   h.Quantile(0.99),
		P999:  h.Quantile(0.999),
	}
}

// PerfLine is a produce run's summary in the words of Kafka's
// kafka-producer-perf-test, so that the two can be read side by side.
func PerfLine(records int64, recPerSec, mbPerSec float64, p Latency) string {
	return fmt.Sprintf("%d records sent, %.1f records/sec (%.2f MB/sec), %.2f ms avg latency, %.2f ms max latency, %d ms 50th, %d ms 95th, %d ms 99th, %d ms 99.9th.",
		records, recPerSec, mbPerSec, p.Avg, p.Max, int(p.P50), int(p.P95), int(p.P99), int(p.P999))
}

// Running returns the count, the sum and the max (µs) recorded so far; it is
// safe beside writers, for progress lines during a run.
func (h *Histogram) Running() (n, sumUS, maxUS uint64) {
	return h.n.Load(), h.sum.Load(), h.max.Load()
}
