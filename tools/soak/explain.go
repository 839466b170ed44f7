package soak

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Power-loss attribution. A power loss (FaultPowerLoss, or the page-cache
// control's scenario) records, per replica and partition, the offsets of
// the batches powerfs cut from its segment files (Fault.Dropped). A
// record is explained by a power loss when
//
//   - its offset (where it was acknowledged, or where a consumer read it)
//     lies in what that power loss dropped from some replica of its
//     partition, and
//   - it was acknowledged (or read) before that power loss healed:
//     offsets are reused after it, so a later record at the same offset
//     is not its to explain.
//
// The first power loss, in fault order, that passes both explains it.
// "Some replica" is as precise as the history can be: which replica the
// operator's unclean election picked is not recorded, and a record one
// replica dropped is lost only if that one became the leader.

// PowerLossReport is one power loss, what it dropped and what it explains.
type PowerLossReport struct {
	Fault  int       `json:"fault"` // index in the history's faults
	Kind   string    `json:"kind"`
	Target string    `json:"target"`
	Start  time.Time `json:"start"`
	Healed time.Time `json:"healed"`
	// Dropped is what it cut, by replica and partition (Fault.Dropped).
	Dropped []Dropped `json:"dropped,omitempty"`
	// Unsynced is how long the oldest batch it dropped had been written
	// when the files were cut: the page-cache window it hit.
	Unsynced time.Duration `json:"unsynced_ns"`
	// The lost acknowledged records, vanished live reads and overwritten
	// offsets it explains.
	Lost      int `json:"lost"`
	Vanished  int `json:"vanished"`
	Conflicts int `json:"offset_conflicts"`
	// FirstAck and LastAck bound the acknowledgement times of the lost
	// records it explains.
	FirstAck time.Time `json:"first_ack,omitzero"`
	LastAck  time.Time `json:"last_ack,omitzero"`
}

// isPowerLoss says whether f cut the nodes' files back to what they had
// fsynced.
func isPowerLoss(f Fault) bool {
	return f.Skipped == "" && (f.Kind == FaultPowerLoss || f.Kind == ScenarioPageCache || len(f.Dropped) > 0)
}

// powerWindows indexes the history's power losses by partition.
type powerWindows struct {
	byTP    map[TP][]Dropped
	fault   map[TP][]int // byTP[tp][i] was dropped by fault fault[tp][i]
	healed  []time.Time  // by fault index
	reports []PowerLossReport
	at      map[int]int // fault index -> index in reports
}

func newPowerWindows(faults []Fault) *powerWindows {
	w := &powerWindows{byTP: map[TP][]Dropped{}, fault: map[TP][]int{}, at: map[int]int{}}
	for i, f := range faults {
		w.healed = append(w.healed, f.Healed)
		if !isPowerLoss(f) {
			continue
		}
		rep := PowerLossReport{Fault: i, Kind: f.Kind, Target: f.Target, Start: f.Start, Healed: f.Healed, Dropped: f.Dropped}
		for _, d := range f.Dropped {
			w.byTP[d.TP] = append(w.byTP[d.TP], d)
			w.fault[d.TP] = append(w.fault[d.TP], i)
			cut := d.Cut
			if cut.IsZero() {
				cut = f.Start
			}
			if !d.FirstWritten.IsZero() {
				rep.Unsynced = max(rep.Unsynced, cut.Sub(d.FirstWritten))
			}
		}
		w.at[i] = len(w.reports)
		w.reports = append(w.reports, rep)
	}
	return w
}

// explain returns the index of the power loss that explains a record of
// tp at off, acknowledged or read at t; -1 when none does.
func (w *powerWindows) explain(tp TP, off int64, t time.Time) int {
	for i, d := range w.byTP[tp] {
		f := w.fault[tp][i]
		if off >= d.FirstOffset && off <= d.LastOffset && !w.healed[f].Before(t) {
			return f
		}
	}
	return -1
}

// report is fault's entry in the power-loss report (fault must be a
// power loss).
func (w *powerWindows) report(fault int) *PowerLossReport { return &w.reports[w.at[fault]] }

// excused tallies a loss on the power loss fault (when one explains it:
// fault >= 0) and reports whether that excuses it: page-cache durability.
func (c *checker) excused(fault int, tally func(*PowerLossReport)) bool {
	if fault < 0 {
		return false
	}
	tally(c.power.report(fault))
	return c.o.PageCache
}

// lost books an acknowledged record missing from the final log: explained
// by a power loss with page-cache durability (counted), else a violation:
// lost-unexplained with page-cache durability, lost with sync.
func (c *checker) lost(h *History, s *Send) {
	c.tp(s.TP).Lost++
	c.r.Counts.Lost++
	pl := c.power.explain(s.TP, s.Offset, s.Done)
	if c.excused(pl, func(p *PowerLossReport) {
		p.Lost++
		if p.FirstAck.IsZero() || s.Done.Before(p.FirstAck) {
			p.FirstAck = s.Done
		}
		if s.Done.After(p.LastAck) {
			p.LastAck = s.Done
		}
	}) {
		c.r.Counts.LostExplained++
		return
	}
	why := "is not in the log"
	if _, read := h.FinalHW[s.TP]; !read {
		why = "cannot be read: the partition gave no high watermark at the end"
	}
	v := Violation{Kind: KindLost, TP: s.TP, Offset: s.Offset, Key: &s.Key,
		Detail: fmt.Sprintf("%s acknowledged at offset %d at %s %s", s.Key, s.Offset, s.Done.Format(time.RFC3339Nano), why)}
	switch {
	case c.o.PageCache:
		v.Kind = KindLostUnexplained
		v.Detail += "; no power loss dropped that offset before it healed (" + c.windowsOf(s.TP) + ")"
	case pl >= 0:
		v.Detail += fmt.Sprintf("; power loss #%d dropped that offset, which sync durability must never let it do", pl+1)
	}
	c.add(v)
}

// conflictAt is conflict for a value seen at t (acknowledged or read
// during the run) that the final log holds another record in place of:
// explained when a power loss dropped off after t.
func (c *checker) conflictAt(tp TP, off int64, t time.Time, a, b []byte, why string) {
	if c.excused(c.power.explain(tp, off, t), func(p *PowerLossReport) { p.Conflicts++ }) {
		c.r.Counts.ConflictsExplained++
		return
	}
	c.conflict(tp, off, a, b, why)
}

// windowsOf lists what the power losses dropped of tp, for a violation.
func (c *checker) windowsOf(tp TP) string {
	ds := c.power.byTP[tp]
	if len(ds) == 0 {
		return "no power loss dropped anything of " + tp.String()
	}
	var s []string
	for i, d := range ds {
		f := c.power.fault[tp][i]
		s = append(s, fmt.Sprintf("#%d node %d %d–%d", f+1, d.Node, d.FirstOffset, d.LastOffset))
	}
	return "dropped: " + strings.Join(s, ", ")
}

// powerLosses puts the power-loss report in r.
func (c *checker) powerLosses() {
	c.r.PowerLosses = slices.Clone(c.power.reports)
}
