package soak

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"time"
)

// FaultWritable is, for one injected fault, how long after its start
// every partition took a write sent after that start: the time until the
// whole topic is writable again.
type FaultWritable struct {
	Fault int    `json:"fault"` // index in the history's faults
	Kind  string `json:"kind"`
	// Took is -1 when some partition acknowledged no write sent after
	// the start before the run ended.
	Took time.Duration `json:"took_ns"`
	// Slowest is the partition that took longest.
	Slowest TP `json:"slowest"`
}

// WritableStats are the percentiles of FaultWritable.Took of one fault
// kind (nearest rank, over the faults whose partitions all recovered).
type WritableStats struct {
	Kind  string        `json:"kind"`
	N     int           `json:"n"`
	Never int           `json:"never"` // faults after which some partition took no write
	P50   time.Duration `json:"p50_ns"`
	P99   time.Duration `json:"p99_ns"`
	Max   time.Duration `json:"max_ns"`
}

// writableAfterFaults measures FaultWritable for every injected fault of
// h over tps. A fault that lasts (a pause, a network partition) counts
// from its start too: its number includes its own length.
func writableAfterFaults(h *History, tps []TP) []FaultWritable {
	// Per partition: acknowledged sends by send time, with the earliest
	// acknowledgement of any send from there on (suffix minimum).
	type acked struct{ sent, firstDone []time.Time }
	per := map[TP]*acked{}
	for _, tp := range tps {
		per[tp] = &acked{}
	}
	byTP := map[TP][]Send{}
	for _, s := range h.Sends {
		if s.Outcome == Acked {
			byTP[s.TP] = append(byTP[s.TP], s)
		}
	}
	for tp, ss := range byTP {
		a := per[tp]
		if a == nil {
			continue
		}
		slices.SortFunc(ss, func(x, y Send) int { return x.Sent.Compare(y.Sent) })
		a.sent = make([]time.Time, len(ss))
		a.firstDone = make([]time.Time, len(ss))
		for i := len(ss) - 1; i >= 0; i-- {
			a.sent[i], a.firstDone[i] = ss[i].Sent, ss[i].Done
			if i+1 < len(ss) && a.firstDone[i+1].Before(a.firstDone[i]) {
				a.firstDone[i] = a.firstDone[i+1]
			}
		}
	}
	var out []FaultWritable
	for i, f := range h.Faults {
		if f.Skipped != "" || f.Start.IsZero() {
			continue
		}
		fw := FaultWritable{Fault: i, Kind: f.Kind}
		for _, tp := range tps {
			a := per[tp]
			j, _ := slices.BinarySearchFunc(a.sent, f.Start, func(t, start time.Time) int { return t.Compare(start) })
			if j == len(a.sent) {
				fw.Took, fw.Slowest = -1, tp
				break
			}
			if d := a.firstDone[j].Sub(f.Start); d > fw.Took {
				fw.Took, fw.Slowest = d, tp
			}
		}
		out = append(out, fw)
	}
	return out
}

// writableStats summarizes fws per fault kind, sorted by kind.
func writableStats(fws []FaultWritable) []WritableStats {
	by := map[string][]time.Duration{}
	never := map[string]int{}
	for _, fw := range fws {
		if fw.Took < 0 {
			never[fw.Kind]++
			if _, ok := by[fw.Kind]; !ok {
				by[fw.Kind] = nil // listed even when no fault of it recovered
			}
			continue
		}
		by[fw.Kind] = append(by[fw.Kind], fw.Took)
	}
	var out []WritableStats
	for _, k := range slices.Sorted(maps.Keys(by)) {
		ds := by[k]
		slices.Sort(ds)
		s := WritableStats{Kind: k, N: len(ds), Never: never[k]}
		if len(ds) > 0 {
			s.P50, s.P99, s.Max = rank(ds, 0.50), rank(ds, 0.99), ds[len(ds)-1]
		}
		out = append(out, s)
	}
	return out
}

// rank is the nearest-rank q-quantile of sorted ds.
func rank(ds []time.Duration, q float64) time.Duration {
	i := int(q*float64(len(ds))+0.999999) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}

// printWritable prints the per-kind percentiles of the time until every
// partition was writable again.
func printWritable(w io.Writer, r *Report) {
	if len(r.Writable) == 0 {
		return
	}
	fmt.Fprintln(w, "writable again after a fault's start (every partition took a write sent after it), per kind:")
	fmt.Fprintf(w, "  %-22s %4s %9s %9s %9s %6s\n", "KIND", "N", "P50", "P99", "MAX", "NEVER")
	for _, s := range r.Writable {
		fmt.Fprintf(w, "  %-22s %4d %9s %9s %9s %6d\n", s.Kind, s.N, round(s.P50), round(s.P99), round(s.Max), s.Never)
	}
}

func round(d time.Duration) string { return d.Round(time.Millisecond).String() }
