package bench

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"github.com/sluice-log/sluice/tools/internal/stats"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// PerfLine is the cell's summary in the words of Kafka's
// kafka-producer-perf-test, so that the two can be read side by side.
func PerfLine(r Result) string {
	if r.Err != "" {
		return fmt.Sprintf("FAILED: %s", r.Err)
	}
	return stats.PerfLine(r.Records, r.RecPerSec, r.MBPerSec, r.Produce)
}

// DetailLine adds the sub-millisecond percentiles and the end-to-end ones.
func DetailLine(r Result) string {
	if r.Err != "" {
		return ""
	}
	s := fmt.Sprintf("produce p50 %.3f ms, p99 %.3f ms, p99.9 %.3f ms; end-to-end p50 %.3f ms, p99 %.3f ms, p99.9 %.3f ms (%d of %d records read back)",
		r.Produce.P50, r.Produce.P99, r.Produce.P999, r.E2E.P50, r.E2E.P99, r.E2E.P999, r.Consumed, r.Records)
	if r.Note != "" {
		s += "; " + r.Note
	}
	return s
}

// Report is everything one run measured.
type Report struct {
	Started     string   `json:"started"`
	CellSeconds float64  `json:"cell_seconds"`
	Nodes       int      `json:"nodes"`
	Machine     string   `json:"machine"`
	Sluice      []Result `json:"sluice"`
	Peer        []Result `json:"peer,omitempty"`
	PeerName    string   `json:"peer_name,omitempty"`
	PeerVersion string   `json:"peer_version,omitempty"`
}

// peerFor is the peer result measured for a Sluice cell, if any.
func (rep *Report) peerFor(c Cell) (Result, bool) {
	k := peerKey(c)
	for _, p := range rep.Peer {
		if k != "" && peerCellKey(p.Cell) == k {
			return p, true
		}
	}
	return Result{}, false
}

// ratio is a/b as a string, "-" when either is missing.
func ratio(a, b float64) string {
	if a <= 0 || b <= 0 {
		return "-"
	}
	return strconv.FormatFloat(a/b, 'f', 2, 64) + "x"
}

// WriteTable prints one row per Sluice cell (and the peer's numbers and the
// Sluice/peer ratios when a peer ran).
func WriteTable(w io.Writer, rep *Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	hdr := "cell\trecords/s\tMB/s\tp50 ms\tp99 ms\tp99.9 ms\te2e p50\te2e p99\te2e p99.9\t"
	if len(rep.Peer) > 0 {
		hdr += rep.PeerName + " rec/s\t" + rep.PeerName + " p99\trec/s sluice/" + rep.PeerName + "\tp99 sluice/" + rep.PeerName + "\t"
	}
	fmt.Fprintln(tw, hdr)
	var failed []Result
	for _, r := range rep.Sluice {
		if r.Err != "" {
			line := r.Name + "\tFAILED" + strings.Repeat("\t-", 8) + "\t"
			if len(rep.Peer) > 0 {
				line += strings.Repeat("-\t", 4)
			}
			fmt.Fprintln(tw, line)
			failed = append(failed, r)
			continue
		}
		line := fmt.Sprintf("%s\t%.0f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t", r.Name, r.RecPerSec, r.MBPerSec,
			r.Produce.P50, r.Produce.P99, r.Produce.P999, r.E2E.P50, r.E2E.P99, r.E2E.P999)
		if len(rep.Peer) > 0 {
			if p, ok := rep.peerFor(r.Cell); ok && p.OK() {
				line += fmt.Sprintf("%.0f\t%.2f\t%s\t%s\t", p.RecPerSec, p.Produce.P99, ratio(r.RecPerSec, p.RecPerSec), ratio(r.Produce.P99, p.Produce.P99))
			} else {
				line += "-\t-\t-\t-\t"
			}
		}
		fmt.Fprintln(tw, line)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, rs := range [][]Result{failed, rep.Peer} {
		for _, r := range rs {
			if r.Err != "" {
				fmt.Fprintf(w, "FAILED %s %s: %s\n", r.System, r.Name, r.Err)
			}
		}
	}
	return nil
}

// csvHeader is the first row of the CSV file.
var csvHeader = []string{"system", "cell", "acks", "durability", "record_size", "replication_factor", "partitions", "batching",
	"offered_mb_per_sec", "records", "seconds", "records_per_sec", "mb_per_sec",
	"produce_avg_ms", "produce_max_ms", "produce_p50_ms", "produce_p95_ms", "produce_p99_ms", "produce_p999_ms",
	"e2e_p50_ms", "e2e_p99_ms", "e2e_p999_ms", "consumed", "error", "note"}

// WriteCSV writes one row per result, Sluice first, then the peer.
func WriteCSV(w io.Writer, rep *Report) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	for _, rs := range [][]Result{rep.Sluice, rep.Peer} {
		for _, r := range rs {
			c := r.Cell
			row := []string{r.System, r.Name, c.Acks, c.Durability, strconv.Itoa(c.Size), strconv.Itoa(c.RF), strconv.Itoa(c.Partitions), c.Batching,
				f(c.RateMBps), strconv.FormatInt(r.Records, 10), f(r.Seconds), f(r.RecPerSec), f(r.MBPerSec),
				f(r.Produce.Avg), f(r.Produce.Max), f(r.Produce.P50), f(r.Produce.P95), f(r.Produce.P99), f(r.Produce.P999),
				f(r.E2E.P50), f(r.E2E.P99), f(r.E2E.P999), strconv.FormatInt(r.Consumed, 10), r.Err, r.Note}
			if err := cw.Write(row); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteJSON writes the report, indented.
func WriteJSON(w io.Writer, rep *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}
