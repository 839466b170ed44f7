package soak

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"text/tabwriter"
	"time"
)

// PrintSummary writes the summary table of r.
func PrintSummary(w io.Writer, r *Report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FAULTS INJECTED\tCOUNT\t")
	for _, k := range slices.Sorted(maps.Keys(r.Faults)) {
		fmt.Fprintf(tw, "  %s\t%d\t\n", k, r.Faults[k])
	}
	for _, k := range slices.Sorted(maps.Keys(r.Skipped)) {
		fmt.Fprintf(tw, "  %s (skipped)\t%d\t\n", k, r.Skipped[k])
	}
	if len(r.Faults)+len(r.Skipped) == 0 {
		fmt.Fprintln(tw, "  none\t0\t")
	}
	c := r.Counts
	fmt.Fprintln(tw, "RECORDS\t\t")
	for _, row := range []struct {
		name string
		n    int
	}{
		{"sent", c.Sent}, {"acknowledged", c.Acked}, {"failed (definitely)", c.Failed},
		{"unknown outcome", c.Unknown}, {"  of which in the log", c.UnknownInLog},
		{"read back (final)", c.Read}, {"read during the run", c.LiveRead},
	} {
		fmt.Fprintf(tw, "  %s\t%d\t\n", row.name, row.n)
	}
	fmt.Fprintln(tw, "INVARIANTS\tVIOLATIONS\t")
	for _, k := range Kinds {
		mark := "ok"
		if r.ByKind[k] > 0 {
			mark = "FAILED"
		}
		fmt.Fprintf(tw, "  %s\t%d\t%s\n", k, r.ByKind[k], mark)
	}
	tw.Flush()

	var worst time.Duration
	for _, win := range r.Windows {
		worst = max(worst, win.Duration)
	}
	fmt.Fprintf(w, "unavailability windows (no ack on a partition): %d, longest %v\n", len(r.Windows), worst.Round(time.Millisecond))
	var slow time.Duration
	never := 0
	for _, rc := range r.Recovery {
		if rc.Took < 0 {
			never++
		}
		slow = max(slow, rc.Took)
	}
	if len(r.Recovery) > 0 {
		fmt.Fprintf(w, "writable again after the last heal (bound %v): slowest partition %v", r.Recovery[0].Bound, slow.Round(time.Millisecond))
		if never > 0 {
			fmt.Fprintf(w, ", %d partition(s) never", never)
		}
		fmt.Fprintln(w)
	}
	for _, v := range r.Violations {
		fmt.Fprintf(w, "  %-15s %-10s off %-8d %s\n", v.Kind, v.TP, v.Offset, v.Detail)
	}
	if r.OK {
		fmt.Fprintln(w, "RESULT: PASS: every invariant held")
	} else {
		fmt.Fprintf(w, "RESULT: FAIL: %d violation(s)\n", c.ViolationsTotal)
	}
}

// FullReport is the JSON report file: the run's settings, its faults and
// the checker's verdict.
type FullReport struct {
	Settings any       `json:"settings"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	Faults   []Fault   `json:"faults"`
	*Report
}

// WriteJSON writes the report to path atomically.
func WriteJSON(path string, fr FullReport) error {
	b, err := json.MarshalIndent(fr, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
