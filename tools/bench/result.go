package bench

import (
	"github.com/sluice-log/sluice/tools/internal/stats"
	"time"
)

// Result is what one cell measured on one system. A cell that could not run
// (the broker refused the topic config, acks=all without enough replicas,
// ...) has Err set and the rest zero; the run goes on with the next cell.
type Result struct {
	System  string  `json:"system"` // "sluice" or the peer's name
	Cell    Cell    `json:"cell"`
	Name    string  `json:"name"`
	Err     string  `json:"error,omitempty"`
	Records int64   `json:"records"` // acknowledged (acks=0: sent)
	Bytes   int64   `json:"bytes"`
	Seconds float64 `json:"seconds"`
	// RecPerSec and MBPerSec are acknowledged records and value bytes per
	// second of the cell (MB = 2^20 bytes, as Kafka's perf tool).
	RecPerSec float64       `json:"records_per_sec"`
	MBPerSec  float64       `json:"mb_per_sec"`
	Produce   stats.Latency `json:"produce_latency"`
	E2E       stats.Latency `json:"end_to_end_latency"`
	// Consumed counts records read back by the cell's consumer.
	Consumed int64 `json:"consumed"`
	// Note says what differs from the Sluice cell (peer cells).
	Note string `json:"note,omitempty"`
}

// finish fills the rates from the counts and the elapsed time.
func (r *Result) finish(elapsed time.Duration) {
	r.Seconds = elapsed.Seconds()
	if r.Seconds > 0 {
		r.RecPerSec = float64(r.Records) / r.Seconds
		r.MBPerSec = float64(r.Bytes) / r.Seconds / (1 << 20)
	}
}

// OK is whether the cell measured something.
func (r Result) OK() bool { return r.Err == "" && r.Records > 0 }
