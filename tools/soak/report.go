package soak

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// PrintSummary writes the summary table of r.
func PrintSummary(w io.Writer, r *Report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FAULTS INJECTED\tCOUNT\tQUOTA")
	kinds := map[string]int{}
	maps.Copy(kinds, r.Faults)
	for k := range r.Quota {
		kinds[k] += 0 // a kind of the quota never injected shows as short
	}
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		q := ""
		if n, ok := r.Quota[k]; ok {
			q = strconv.Itoa(n)
			if r.Faults[k] < n {
				q += " (short)"
			}
		}
		fmt.Fprintf(tw, "  %s\t%d\t%s\n", k, r.Faults[k], q)
	}
	for _, k := range slices.Sorted(maps.Keys(r.Skipped)) {
		fmt.Fprintf(tw, "  %s (skipped)\t%d\t\n", k, r.Skipped[k])
	}
	if len(kinds)+len(r.Skipped) == 0 {
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
		{"bad client requests", c.BadSent}, {"  of which refused", c.BadRefused},
		{"lost (acknowledged)", c.Lost}, {"  explained by a power loss", c.LostExplained},
	} {
		fmt.Fprintf(tw, "  %s\t%d\t\n", row.name, row.n)
	}
	if cc := r.Compact; cc != nil {
		fmt.Fprintln(tw, "COMPACTED TOPIC\t\t")
		for _, row := range []struct {
			name string
			n    int64
		}{
			{"sent", int64(cc.Sent)}, {"acknowledged", int64(cc.Acked)}, {"  of which tombstones", int64(cc.Tombstones)},
			{"unknown outcome", int64(cc.Unknown)}, {"read back (final)", int64(cc.Read)},
			{"offsets compacted away (holes)", cc.Holes}, {"cleans (nodes' /metrics)", cc.Cleans}, {"  failed cleans", cc.CleanFailures},
			{"keys acknowledged", int64(cc.Keys)},
			{"  latest value present", int64(cc.LatestPresent)}, {"  deleted (latest is a tombstone)", int64(cc.Deleted)},
			{"  tombstone still there", int64(cc.TombstonesKept)}, {"losses explained by a power loss", int64(cc.Explained)},
		} {
			fmt.Fprintf(tw, "  %s\t%d\t\n", row.name, row.n)
		}
	}
	if g := r.Groups; g != nil {
		fmt.Fprintln(tw, "CONSUMER GROUPS\t\t")
		for _, row := range []struct {
			name string
			n    int
		}{
			{"groups", g.Groups}, {"member incarnations", g.Members}, {"records delivered", g.Deliveries},
			{"  redelivered (at-least-once)", g.Redelivered}, {"commits", g.Commits},
			{"  partitions acknowledged", g.CommitAcked}, {"  partitions refused", g.CommitFailed}, {"  partitions unknown", g.CommitUnk},
			{"offsets read back during the run", g.Snapshots}, {"assignment changes", g.Assignments},
			{"records checked delivered before a commit", g.Checked}, {"rebalances unsettled", g.Unsettled},
			{"losses explained by a power loss", g.Explained},
		} {
			fmt.Fprintf(tw, "  %s\t%d\t\n", row.name, row.n)
		}
	}
	if e := r.EOS; e != nil {
		fmt.Fprintln(tw, "EXACTLY-ONCE PIPELINE\t\t")
		for _, row := range []struct {
			name string
			n    int
		}{
			{"member incarnations", e.Members}, {"transactions", e.Txns}, {"  committed", e.Committed},
			{"  aborted", e.Aborted}, {"  unknown outcome", e.Unknown}, {"  control crashes (produce committed, offsets not)", e.Crashed},
			{"records produced", e.Produced}, {"output read (read_committed)", e.Output},
			{"input records below the committed offsets", e.Covered}, {"aborted records checked invisible", e.AbortedChecked},
			{"losses explained by a power loss", e.Explained},
		} {
			fmt.Fprintf(tw, "  %s\t%d\t\n", row.name, row.n)
		}
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

	printWindows(w, r)
	printWritable(w, r)
	if g := r.Groups; g != nil {
		fmt.Fprintf(w, "consumer groups: rebalance time %s; commit latency %s; final lag %v\n", g.RebalanceTime, g.CommitLatency, g.Lag)
		shown := 0
		for _, rb := range g.Rebalances {
			if rb.End.IsZero() && shown < 3 {
				shown++
				fmt.Fprintf(w, "  unsettled: %s %s at +%v: %s\n", rb.Group, rb.Cause, rb.Start.Sub(r.Start).Round(100*time.Millisecond), rb.Unsettled)
			}
		}
		if g.GenRegressions > 0 {
			fmt.Fprintf(w, "consumer groups: %d generation(s) handed out below one already synced (a lost group record?), e.g.:\n", g.GenRegressions)
			for _, e := range g.GenExamples {
				fmt.Fprintf(w, "  %s\n", e)
			}
		}
	}
	if e := r.EOS; e != nil {
		fmt.Fprintf(w, "exactly-once pipeline: committed transactions took %s; final lag %d\n", e.TxnTime, e.Lag)
	}
	printPowerLosses(w, r)
	printLosses(w, r)
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

// printWindows says how many unavailability windows there were and lists
// the longest with the faults they overlap.
func printWindows(w io.Writer, r *Report) {
	byLen := slices.Clone(r.Windows)
	slices.SortStableFunc(byLen, func(a, b Window) int { return cmp.Compare(b.Duration, a.Duration) })
	noFault := 0
	var worstAfter time.Duration
	for _, win := range r.Windows {
		if len(win.Faults) == 0 {
			noFault++
		}
		worstAfter = max(worstAfter, win.AfterHeal)
	}
	fmt.Fprintf(w, "unavailability windows (no ack on a partition for over %v): %d, %d overlapping no fault; longest after a heal %v\n",
		r.GapThreshold, len(r.Windows), noFault, worstAfter.Round(time.Millisecond))
	if len(byLen) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  LONGEST\tPARTITION\tFROM\tAFTER HEAL\tCAUSE")
	for _, win := range byLen[:min(len(byLen), 5)] {
		fmt.Fprintf(tw, "  %v\t%s\t+%v\t%v\t%s\n", win.Duration.Round(time.Millisecond), win.TP,
			win.Start.Sub(r.Start).Round(100*time.Millisecond), win.AfterHeal.Round(time.Millisecond), win.Cause)
	}
	tw.Flush()
}

// printLosses lists the lost records by the fault that lost them.
func printLosses(w io.Writer, r *Report) {
	if len(r.Losses) == 0 {
		return
	}
	// One line per fault first, then the groups by partition.
	var order []int
	total := map[int]int{}
	for _, l := range r.Losses {
		if _, ok := total[l.Fault]; !ok {
			order = append(order, l.Fault)
		}
		total[l.Fault] += l.Records
	}
	for _, f := range order {
		name := "no fault after them"
		for _, l := range r.Losses {
			if l.Fault == f && f >= 0 {
				name = fmt.Sprintf("#%d %s at +%v", f+1, l.Kind, l.FaultStart.Sub(r.Start).Round(100*time.Millisecond))
				break
			}
		}
		fmt.Fprintf(w, "lost by %s: %d acknowledged records\n", name, total[f])
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "LOST\tPARTITION\tOFFSETS\tACKNOWLEDGED\tFAULT")
	const maxRows = 30
	for i, l := range r.Losses {
		if i == maxRows {
			fmt.Fprintf(tw, "  …\t%d more groups in the JSON report (losses)\t\t\t\n", len(r.Losses)-maxRows)
			break
		}
		f := "none after them (lost at the end?)"
		if l.Fault >= 0 {
			f = fmt.Sprintf("#%d %s at +%v: %s", l.Fault+1, l.Kind, l.FaultStart.Sub(r.Start).Round(100*time.Millisecond), l.Target)
		}
		if l.Explained {
			f = "in its dropped window: " + f
		}
		fmt.Fprintf(tw, "  %d\t%s\t%d–%d\t+%v…+%v\t%s\n", l.Records, l.TP, l.FirstOffset, l.LastOffset,
			l.FirstAck.Sub(r.Start).Round(100*time.Millisecond), l.LastAck.Sub(r.Start).Round(100*time.Millisecond), f)
	}
	tw.Flush()
}

// printPowerLosses lists every power loss: the offsets it dropped from
// each partition (the union over the replicas), how long the oldest of
// them had waited for an fsync, and what it explains.
func printPowerLosses(w io.Writer, r *Report) {
	if len(r.PowerLosses) == 0 {
		return
	}
	c := r.Counts
	if r.PageCache {
		fmt.Fprintf(w, "power losses: %d; they explain %d of %d lost acknowledged records, %d vanished reads, %d overwritten offsets; unexplained losses %d\n",
			len(r.PowerLosses), c.LostExplained, c.Lost, c.VanishedExplained, c.ConflictsExplained, c.LostUnexplained)
	} else {
		fmt.Fprintf(w, "power losses: %d; sync durability: they may lose nothing acknowledged (lost: %d)\n", len(r.PowerLosses), c.Lost)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  POWER LOSS\tUNSYNCED\tLOST\tVANISHED\tDROPPED (offsets, union over replicas)")
	for _, p := range r.PowerLosses {
		fmt.Fprintf(tw, "  #%d %s at +%v\t%v\t%d\t%d\t%s\n", p.Fault+1, p.Kind, p.Start.Sub(r.Start).Round(100*time.Millisecond),
			p.Unsynced.Round(100*time.Millisecond), p.Lost, p.Vanished, strings.TrimPrefix(strings.TrimPrefix(droppedSummary(p.Dropped), "; offsets dropped: "), "; "))
	}
	tw.Flush()
}

// FullReport is the JSON report file: the run's settings, its faults and
// the checker's verdict.
type FullReport struct {
	Settings any       `json:"settings"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	Faults   []Fault   `json:"faults"`
	// NetFaultsOff says why network partitions were left out of the
	// schedule ("not asked for", "not root", ...); "" when they were in it.
	NetFaultsOff string `json:"net_faults_off,omitempty"`
	// EOSOff says why the exactly-once pipeline did not run although
	// asked for (Options.EOSIfServed: the nodes serve no transactions).
	EOSOff string `json:"exactly_once_off,omitempty"`
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
