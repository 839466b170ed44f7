package soak

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"
)

// Violation kinds: each is one invariant of the checker (see doc.go).
const (
	KindLost            = "lost"             // an acknowledged record is not in the final log
	KindLostUnexplained = "lost-unexplained" // page-cache durability: a lost acknowledged record no power loss explains (explain.go)
	KindDuplicate       = "duplicate"        // one sent record at two offsets
	KindReordered       = "reordered"        // a producer's records out of send order in a partition
	KindConflict        = "offset-conflict"  // one offset seen holding two different values
	KindVanished        = "vanished"         // a record a consumer saw during the run is gone
	KindFailedVisible   = "failed-visible"   // a definitely failed send is in the log
	KindPhantom         = "phantom"          // a record nobody sent (or sent to another partition)
	KindAboveHW         = "above-hw"         // a consumer saw an offset at or above the high watermark
	KindNotWritable     = "not-writable"     // a partition took no write within the bound after the last fault healed
	KindNoEffect        = "no-effect"        // an injected fault did not show its effect
	KindBadAccepted     = "bad-accepted"     // a forged fetch or a poison batch of the bad client was accepted
)

// Kinds lists every violation kind in report order.
var Kinds = []string{KindLost, KindLostUnexplained, KindDuplicate, KindReordered, KindConflict, KindVanished, KindFailedVisible, KindPhantom, KindAboveHW, KindNotWritable, KindNoEffect, KindBadAccepted,
	KindCompactLostLatest, KindCompactPhantom, KindCompactOrder, KindCompactConflict,
	KindGroupBackwards, KindGroupUndelivered, KindGroupDoubleOwner, KindGroupCommitLost,
	KindTxnDuplicate, KindTxnMissing, KindTxnAbortedVisible, KindTxnReordered, KindTxnOffsets, KindTxnPhantom, KindTxnStuck}

// CheckOptions tune the checker.
type CheckOptions struct {
	// RecoveryBound: every partition must acknowledge a write within this
	// long after the last fault healed (after the start when there was
	// none). Default 60s.
	RecoveryBound time.Duration
	// GapThreshold: a pause between two acknowledgements of a partition
	// longer than this is reported as an unavailability window. Default 2s.
	GapThreshold time.Duration
	// MaxExamples caps the violations listed per kind (all are counted).
	// Default 20.
	MaxExamples int
	// Quota is the least number of faults of each kind the schedule
	// planned; the report shows a kind that fell short (not a violation:
	// a slow machine fits fewer faults).
	Quota map[string]int
	// PageCache: the topic acknowledges before fsync (sluice.durability
	// page-cache), so a power loss may lose acknowledged records. A lost,
	// vanished or overwritten record that a power loss explains (its
	// offset in what that power loss dropped, seen before it healed; see
	// explain.go) is counted, not a violation; a lost one no power loss
	// explains is a lost-unexplained violation. Without it every loss is
	// a lost violation.
	PageCache bool
}

func (o *CheckOptions) ensureDefaults() {
	if o.RecoveryBound <= 0 {
		o.RecoveryBound = 60 * time.Second
	}
	if o.GapThreshold <= 0 {
		o.GapThreshold = 2 * time.Second
	}
	if o.MaxExamples <= 0 {
		o.MaxExamples = 20
	}
}

// Violation is one broken invariant, with enough to find it in the logs.
type Violation struct {
	Kind   string `json:"kind"`
	TP     TP     `json:"tp"`
	Offset int64  `json:"offset"` // -1 when not about an offset
	Key    *Key   `json:"key,omitempty"`
	Detail string `json:"detail"`
}

// Window is a stretch in which a partition acknowledged nothing, with the
// faults it overlaps (its likely causes).
type Window struct {
	TP       TP            `json:"tp"`
	Start    time.Time     `json:"start"`
	End      time.Time     `json:"end"`
	Duration time.Duration `json:"duration_ns"`
	// Faults are the indexes (in the history's faults) of the faults that
	// were in progress at some point of the window.
	Faults []int `json:"faults,omitempty"`
	// Cause names those faults ("no fault" when none).
	Cause string `json:"cause"`
	// AfterHeal is how long the window lasted after the last of its faults
	// healed: the time to recover (the window itself when no fault).
	AfterHeal time.Duration `json:"after_heal_ns"`
}

// Loss is a group of lost acknowledged records of one partition, put
// down to the fault that was in progress when they were acknowledged or
// came next (the first fault that healed after their acknowledgement).
type Loss struct {
	Fault      int       `json:"fault"` // index in the history's faults; -1: none after them
	Kind       string    `json:"kind,omitempty"`
	Target     string    `json:"target,omitempty"`
	FaultStart time.Time `json:"fault_start"`
	TP         TP        `json:"tp"`
	Records    int       `json:"records"`
	// Explained: Fault is a power loss whose dropped offsets hold these
	// records (explain.go); otherwise Fault is the first fault that
	// healed after their acknowledgement.
	Explained bool `json:"explained,omitempty"`
	// The lost records' acknowledged offsets and acknowledgement times.
	FirstOffset int64     `json:"first_offset"`
	LastOffset  int64     `json:"last_offset"`
	FirstAck    time.Time `json:"first_ack"`
	LastAck     time.Time `json:"last_ack"`
}

// Recovery is how long a partition took to take a write after the last
// fault healed.
type Recovery struct {
	TP    TP            `json:"tp"`
	Took  time.Duration `json:"took_ns"` // -1: no write acknowledged after the heal
	Bound time.Duration `json:"bound_ns"`
}

// Counts are the report's numbers.
type Counts struct {
	Sent         int `json:"sent"`
	Acked        int `json:"acked"`
	Failed       int `json:"failed"`
	Unknown      int `json:"unknown"`
	UnknownInLog int `json:"unknown_in_log"` // unknown sends that were written after all
	Read         int `json:"read"`           // records in the final read
	LiveRead     int `json:"live_read"`      // records consumers saw during the run
	Lost         int `json:"lost"`           // every lost acknowledged record, explained or not
	// LostExplained, VanishedExplained and ConflictsExplained are the
	// losses a power loss explains (explain.go); with page-cache
	// durability they are not violations.
	LostExplained      int `json:"lost_explained"`
	LostUnexplained    int `json:"lost_unexplained"`
	VanishedExplained  int `json:"vanished_explained"`
	ConflictsExplained int `json:"offset_conflicts_explained"`
	Duplicated         int `json:"duplicated"`
	Reordered          int `json:"reordered"`
	Conflicts          int `json:"offset_conflicts"`
	Vanished           int `json:"vanished"`
	FailedVisible      int `json:"failed_visible"`
	Phantoms           int `json:"phantoms"`
	AboveHW            int `json:"above_hw"`
	NotWritable        int `json:"not_writable"`
	NoEffect           int `json:"no_effect"`
	BadAccepted        int `json:"bad_accepted"`
	// BadSent and BadRefused count the bad client's requests, and those
	// answered with an error code (the rest had no answer: a node down).
	BadSent    int `json:"bad_sent"`
	BadRefused int `json:"bad_refused"`
	// The compaction invariants' violations (compactcheck.go).
	CompactLostLatest int `json:"compaction_lost_latest"`
	CompactPhantoms   int `json:"compaction_phantoms"`
	CompactOrder      int `json:"compaction_offset_order"`
	CompactConflicts  int `json:"compaction_offset_conflicts"`
	// The consumer-group invariants' violations (groupcheck.go).
	GroupBackwards   int `json:"group_offset_backwards"`
	GroupUndelivered int `json:"group_undelivered"`
	GroupDoubleOwner int `json:"group_double_owner"`
	GroupCommitLost  int `json:"group_commit_lost"`
	// The exactly-once pipeline's violations (eoscheck.go).
	TxnDuplicate      int `json:"txn_duplicate"`
	TxnMissing        int `json:"txn_missing"`
	TxnAbortedVisible int `json:"txn_aborted_visible"`
	TxnReordered      int `json:"txn_reordered"`
	TxnOffsets        int `json:"txn_offsets_mismatch"`
	TxnPhantom        int `json:"txn_phantom"`
	TxnStuck          int `json:"txn_lso_stuck"`
	ViolationsTotal   int `json:"violations"`
}

// Report is the checker's verdict.
type Report struct {
	OK         bool           `json:"ok"`
	Counts     Counts         `json:"counts"`
	ByKind     map[string]int `json:"violations_by_kind"`
	Violations []Violation    `json:"violations"` // up to MaxExamples per kind
	Faults     map[string]int `json:"faults_by_kind"`
	Skipped    map[string]int `json:"faults_skipped_by_kind,omitempty"`
	Windows    []Window       `json:"unavailability_windows"`
	Losses     []Loss         `json:"losses,omitempty"`
	// PowerLosses: every power loss, what it dropped and what it explains.
	PowerLosses []PowerLossReport `json:"power_losses,omitempty"`
	// PageCache: the run's durability excused explained losses
	// (CheckOptions.PageCache).
	PageCache bool           `json:"page_cache,omitempty"`
	Quota     map[string]int `json:"fault_quota,omitempty"`
	Recovery  []Recovery     `json:"recovery"`
	// FaultWritable: per injected fault, the time until every partition
	// took a write sent after its start; Writable its percentiles per
	// fault kind (writable.go).
	FaultWritable []FaultWritable `json:"fault_writable,omitempty"`
	Writable      []WritableStats `json:"writable_after_fault,omitempty"`
	LastHeal      time.Time       `json:"last_heal"`
	// Start is the start of the run; GapThreshold the shortest window.
	Start        time.Time           `json:"start"`
	GapThreshold time.Duration       `json:"gap_threshold_ns"`
	PerTP        map[string]TPCounts `json:"per_partition"`
	// Compact: the compacted topic's numbers (nil: no compacted topic).
	Compact *CompactCounts `json:"compacted_topic,omitempty"`
	// Groups: the group workload's numbers (nil: no group workload).
	Groups *GroupCounts `json:"groups,omitempty"`
	// EOS: the exactly-once pipeline's numbers (nil: no pipeline).
	EOS *EOSCounts `json:"exactly_once,omitempty"`
}

// TPCounts are one partition's numbers.
type TPCounts struct {
	Acked   int   `json:"acked"`
	Read    int   `json:"read"`
	Live    int   `json:"live_read"` // records the consumer read during the run
	Lost    int   `json:"lost"`
	FinalHW int64 `json:"final_hw"`
}

type checker struct {
	o         CheckOptions
	faultList []Fault // the history's
	r         *Report
	per       map[TP]*TPCounts
	power     *powerWindows
}

func (c *checker) add(v Violation) {
	c.r.ByKind[v.Kind]++
	if c.r.ByKind[v.Kind] <= c.o.MaxExamples {
		c.r.Violations = append(c.r.Violations, v)
	}
}

func (c *checker) tp(tp TP) *TPCounts {
	p := c.per[tp]
	if p == nil {
		p = &TPCounts{FinalHW: -1}
		c.per[tp] = p
	}
	return p
}

// Check runs every invariant over h; see doc.go for what each means.
func Check(h *History, o CheckOptions) *Report {
	o.ensureDefaults()
	r := &Report{ByKind: map[string]int{}, Faults: map[string]int{}, Skipped: map[string]int{}, PerTP: map[string]TPCounts{}, Quota: o.Quota, Start: h.Start, GapThreshold: o.GapThreshold, PageCache: o.PageCache}
	c := &checker{o: o, r: r, per: map[TP]*TPCounts{}, power: newPowerWindows(h.Faults), faultList: h.Faults}
	for _, tp := range h.Partitions {
		c.tp(tp)
	}
	for tp, hw := range h.FinalHW {
		c.tp(tp).FinalHW = hw
	}

	sends := make(map[Key]*Send, len(h.Sends))
	for i := range h.Sends {
		s := &h.Sends[i]
		sends[s.Key] = s
		r.Counts.Sent++
		switch s.Outcome {
		case Acked:
			r.Counts.Acked++
			c.tp(s.TP).Acked++
		case Failed:
			r.Counts.Failed++
		default:
			r.Counts.Unknown++
		}
	}

	// The final log, partition by partition in offset order.
	final := make(map[TP]map[int64][]byte)
	found := make(map[Key][]Read) // where each key sits in the final log
	byTP := make(map[TP][]Read)
	for _, rd := range h.Final {
		byTP[rd.TP] = append(byTP[rd.TP], rd)
	}
	for _, tp := range sortedTPs(byTP) {
		reads := byTP[tp]
		sort.SliceStable(reads, func(i, j int) bool { return reads[i].Offset < reads[j].Offset })
		offs := map[int64][]byte{}
		final[tp] = offs
		lastSeq := map[int]int64{}
		for _, rd := range reads {
			r.Counts.Read++
			c.tp(tp).Read++
			c.checkHW(rd, "final read")
			if old, ok := offs[rd.Offset]; ok {
				if !bytes.Equal(old, rd.Value) {
					c.conflict(tp, rd.Offset, old, rd.Value, "the final read returned the offset twice")
				}
				continue
			}
			offs[rd.Offset] = rd.Value
			k, ok := c.known(rd, sends)
			if !ok {
				continue
			}
			if prev := found[k]; len(prev) > 0 {
				c.add(Violation{Kind: KindDuplicate, TP: tp, Offset: rd.Offset, Key: &k,
					Detail: fmt.Sprintf("%s is at offsets %d and %d", k, prev[0].Offset, rd.Offset)})
				found[k] = append(prev, rd)
				continue
			}
			found[k] = append(found[k], rd)
			if last, ok := lastSeq[k.Producer]; ok && k.Seq < last {
				c.add(Violation{Kind: KindReordered, TP: tp, Offset: rd.Offset, Key: &k,
					Detail: fmt.Sprintf("producer %d: seq %d after seq %d", k.Producer, k.Seq, last)})
			} else {
				lastSeq[k.Producer] = k.Seq
			}
		}
	}

	// Every send against the final log.
	var lost []*Send
	for i := range h.Sends {
		s := &h.Sends[i]
		where := found[s.Key]
		switch s.Outcome {
		case Acked:
			if len(where) == 0 {
				lost = append(lost, s)
				c.lost(h, s)
			}
			if v, ok := final[s.TP][s.Offset]; ok {
				if k, ok := DecodeValue(v); !ok || k != s.Key {
					c.conflictAt(s.TP, s.Offset, s.Done, EncodeValue(s.Key, 0), v, "acknowledged offset holds another record")
				}
			}
		case Failed:
			if len(where) > 0 {
				c.add(Violation{Kind: KindFailedVisible, TP: s.TP, Offset: where[0].Offset, Key: &s.Key,
					Detail: fmt.Sprintf("%s failed definitely (%s) but is at offset %d", s.Key, s.Err, where[0].Offset)})
			}
		default:
			if len(where) > 0 {
				r.Counts.UnknownInLog++
			}
		}
	}

	// What consumers saw during the run.
	for _, rd := range h.Live {
		r.Counts.LiveRead++
		c.tp(rd.TP).Live++
		c.checkHW(rd, "live read")
		k, ok := c.known(rd, sends)
		if ok && sends[k].Outcome == Failed && len(found[k]) == 0 {
			c.add(Violation{Kind: KindFailedVisible, TP: rd.TP, Offset: rd.Offset, Key: &k,
				Detail: fmt.Sprintf("%s failed definitely but a consumer read it at offset %d", k, rd.Offset)})
		}
		v, inFinal := final[rd.TP][rd.Offset]
		switch {
		case !inFinal:
			if c.excused(c.power.explain(rd.TP, rd.Offset, rd.At), func(p *PowerLossReport) { p.Vanished++ }) {
				c.r.Counts.VanishedExplained++
				break
			}
			c.add(Violation{Kind: KindVanished, TP: rd.TP, Offset: rd.Offset, Key: keyPtr(k, ok),
				Detail: fmt.Sprintf("read at offset %d during the run (hw %d), absent from the final log", rd.Offset, rd.HW)})
		case !bytes.Equal(v, rd.Value):
			c.conflictAt(rd.TP, rd.Offset, rd.At, rd.Value, v, "read during the run, another record there at the end")
		}
	}

	c.groups(h, found)
	c.eos(h)
	c.faults(h)
	c.badRequests(h)
	c.windows(h)
	c.losses(h, append(lost, c.compaction(h)...))
	c.powerLosses()
	c.recovery(h)
	tps := h.Partitions
	if len(tps) == 0 {
		tps = sortedTPs(c.per)
	}
	r.FaultWritable = writableAfterFaults(h, tps)
	r.Writable = writableStats(r.FaultWritable)

	for _, tp := range sortedTPs(c.per) {
		r.PerTP[tp.String()] = *c.per[tp]
	}
	r.Counts.LostUnexplained = r.ByKind[KindLostUnexplained]
	r.Counts.Duplicated = r.ByKind[KindDuplicate]
	r.Counts.Reordered = r.ByKind[KindReordered]
	r.Counts.Conflicts = r.ByKind[KindConflict]
	r.Counts.Vanished = r.ByKind[KindVanished]
	r.Counts.FailedVisible = r.ByKind[KindFailedVisible]
	r.Counts.Phantoms = r.ByKind[KindPhantom]
	r.Counts.AboveHW = r.ByKind[KindAboveHW]
	r.Counts.NotWritable = r.ByKind[KindNotWritable]
	r.Counts.NoEffect = r.ByKind[KindNoEffect]
	r.Counts.BadAccepted = r.ByKind[KindBadAccepted]
	r.Counts.CompactLostLatest = r.ByKind[KindCompactLostLatest]
	r.Counts.CompactPhantoms = r.ByKind[KindCompactPhantom]
	r.Counts.CompactOrder = r.ByKind[KindCompactOrder]
	r.Counts.CompactConflicts = r.ByKind[KindCompactConflict]
	r.Counts.GroupBackwards = r.ByKind[KindGroupBackwards]
	r.Counts.GroupUndelivered = r.ByKind[KindGroupUndelivered]
	r.Counts.GroupDoubleOwner = r.ByKind[KindGroupDoubleOwner]
	r.Counts.GroupCommitLost = r.ByKind[KindGroupCommitLost]
	r.Counts.TxnDuplicate = r.ByKind[KindTxnDuplicate]
	r.Counts.TxnMissing = r.ByKind[KindTxnMissing]
	r.Counts.TxnAbortedVisible = r.ByKind[KindTxnAbortedVisible]
	r.Counts.TxnReordered = r.ByKind[KindTxnReordered]
	r.Counts.TxnOffsets = r.ByKind[KindTxnOffsets]
	r.Counts.TxnPhantom = r.ByKind[KindTxnPhantom]
	r.Counts.TxnStuck = r.ByKind[KindTxnStuck]
	for _, n := range r.ByKind {
		r.Counts.ViolationsTotal += n
	}
	r.OK = r.Counts.ViolationsTotal == 0
	return r
}

// known decodes rd's key and checks that it was sent to rd's partition;
// otherwise it reports a phantom.
func (c *checker) known(rd Read, sends map[Key]*Send) (Key, bool) {
	k, ok := DecodeValue(rd.Value)
	if !ok {
		c.add(Violation{Kind: KindPhantom, TP: rd.TP, Offset: rd.Offset, Detail: fmt.Sprintf("value %q was not written by the workload", abbrev(rd.Value))})
		return Key{}, false
	}
	s, sent := sends[k]
	switch {
	case !sent:
		c.add(Violation{Kind: KindPhantom, TP: rd.TP, Offset: rd.Offset, Key: &k, Detail: fmt.Sprintf("%s was never sent", k)})
		return k, false
	case s.TP != rd.TP:
		c.add(Violation{Kind: KindPhantom, TP: rd.TP, Offset: rd.Offset, Key: &k, Detail: fmt.Sprintf("%s was sent to %s", k, s.TP)})
		return k, false
	}
	return k, true
}

func (c *checker) checkHW(rd Read, what string) {
	if rd.HW >= 0 && rd.Offset >= rd.HW {
		c.add(Violation{Kind: KindAboveHW, TP: rd.TP, Offset: rd.Offset,
			Detail: fmt.Sprintf("%s returned offset %d with high watermark %d", what, rd.Offset, rd.HW)})
	}
}

func (c *checker) conflict(tp TP, off int64, a, b []byte, why string) {
	c.add(Violation{Kind: KindConflict, TP: tp, Offset: off,
		Detail: fmt.Sprintf("%s: %q vs %q", why, abbrev(a), abbrev(b))})
}

func (c *checker) faults(h *History) {
	for _, f := range h.Faults {
		if f.Skipped != "" {
			c.r.Skipped[f.Kind]++
			continue
		}
		c.r.Faults[f.Kind]++
		if f.NoEffect != "" {
			c.add(Violation{Kind: KindNoEffect, Offset: -1,
				Detail: fmt.Sprintf("%s %s at %s: %s", f.Kind, f.Target, f.Start.Format(time.RFC3339Nano), f.NoEffect)})
		}
		if f.Healed.After(c.r.LastHeal) {
			c.r.LastHeal = f.Healed
		}
	}
}

// windows reports, per partition, every stretch longer than GapThreshold
// without an acknowledgement between the start and the end of the run.
func (c *checker) windows(h *History) {
	acks := map[TP][]time.Time{}
	for _, s := range h.Sends {
		if s.Outcome == Acked {
			acks[s.TP] = append(acks[s.TP], s.Done)
		}
	}
	for _, tp := range sortedTPs(c.per) {
		ts := acks[tp]
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
		prev := h.Start
		for _, t := range append(ts, h.End) {
			if d := t.Sub(prev); d > c.o.GapThreshold {
				c.r.Windows = append(c.r.Windows, attribute(Window{TP: tp, Start: prev, End: t, Duration: d}, h.Faults))
			}
			if t.After(prev) {
				prev = t
			}
		}
	}
}

// attribute finds the faults in progress during w.
func attribute(w Window, faults []Fault) Window {
	var names []string
	var healed time.Time
	for i, f := range faults {
		if f.Skipped != "" || f.Start.After(w.End) || f.Healed.Before(w.Start) {
			continue
		}
		w.Faults = append(w.Faults, i)
		names = append(names, fmt.Sprintf("#%d %s %s", i+1, f.Kind, f.Target))
		if f.Healed.After(healed) {
			healed = f.Healed
		}
	}
	w.AfterHeal = w.Duration
	if len(names) == 0 {
		w.Cause = "no fault"
		return w
	}
	w.Cause = strings.Join(names, "; ")
	w.AfterHeal = max(w.End.Sub(healed), 0)
	return w
}

// losses groups the lost records by the fault that lost them and by
// partition: the power loss that explains them (explain.go), else the
// first fault that healed after the record was acknowledged.
func (c *checker) losses(h *History, lost []*Send) {
	type key struct {
		fault     int
		tp        TP
		explained bool
	}
	groups := map[key]*Loss{}
	var order []key
	for _, s := range lost {
		k := key{fault: c.power.explain(s.TP, s.Offset, s.Done), tp: s.TP}
		k.explained = k.fault >= 0
		for i, f := range h.Faults {
			if k.fault >= 0 {
				break
			}
			if f.Skipped == "" && !f.Healed.Before(s.Done) {
				k.fault = i
			}
		}
		g := groups[k]
		if g == nil {
			g = &Loss{Fault: k.fault, Explained: k.explained, TP: s.TP, FirstOffset: s.Offset, LastOffset: s.Offset, FirstAck: s.Done, LastAck: s.Done}
			if k.fault >= 0 {
				f := h.Faults[k.fault]
				g.Kind, g.Target, g.FaultStart = f.Kind, f.Target, f.Start
			}
			groups[k] = g
			order = append(order, k)
		}
		g.Records++
		g.FirstOffset, g.LastOffset = min(g.FirstOffset, s.Offset), max(g.LastOffset, s.Offset)
		if s.Done.Before(g.FirstAck) {
			g.FirstAck = s.Done
		}
		if s.Done.After(g.LastAck) {
			g.LastAck = s.Done
		}
	}
	slices.SortFunc(order, func(a, b key) int {
		if a.fault != b.fault {
			return a.fault - b.fault
		}
		if a.explained != b.explained {
			return map[bool]int{true: -1, false: 1}[a.explained]
		}
		return cmpTP(a.tp, b.tp)
	})
	for _, k := range order {
		c.r.Losses = append(c.r.Losses, *groups[k])
	}
}

// recovery checks that every partition acknowledged a write within
// RecoveryBound of the last heal.
func (c *checker) recovery(h *History) {
	from := c.r.LastHeal
	if from.IsZero() {
		from = h.Start
	}
	first := map[TP]time.Time{}
	for _, s := range h.Sends {
		if s.Outcome != Acked || s.Done.Before(from) {
			continue
		}
		if t, ok := first[s.TP]; !ok || s.Done.Before(t) {
			first[s.TP] = s.Done
		}
	}
	for _, tp := range sortedTPs(c.per) {
		rc := Recovery{TP: tp, Took: -1, Bound: c.o.RecoveryBound}
		if t, ok := first[tp]; ok {
			rc.Took = t.Sub(from)
		}
		c.r.Recovery = append(c.r.Recovery, rc)
		if rc.Took < 0 || rc.Took > c.o.RecoveryBound {
			took := "nothing acknowledged before the end"
			if rc.Took >= 0 {
				took = "first acknowledgement after " + rc.Took.Round(time.Millisecond).String()
			}
			c.add(Violation{Kind: KindNotWritable, TP: tp, Offset: -1,
				Detail: fmt.Sprintf("not writable within %v of the last heal: %s", c.o.RecoveryBound, took)})
		}
	}
}

func keyPtr(k Key, ok bool) *Key {
	if !ok {
		return nil
	}
	return &k
}

func abbrev(v []byte) string {
	if len(v) > 40 {
		return string(v[:40]) + "…"
	}
	return string(v)
}

func sortedTPs[V any](m map[TP]V) []TP {
	return slices.SortedFunc(maps.Keys(m), cmpTP)
}

func cmpTP(a, b TP) int {
	if c := strings.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return int(a.Partition) - int(b.Partition)
}

// badRequests: every request of the bad client that got an answer must
// have been refused (an error code); one taken is a violation even when
// nothing was lost by it (yet).
func (c *checker) badRequests(h *History) {
	for _, b := range h.Bad {
		c.r.Counts.BadSent++
		switch {
		case b.Accepted():
			c.add(Violation{Kind: KindBadAccepted, TP: b.TP, Offset: -1,
				Detail: fmt.Sprintf("%s to node %d at %s was accepted", b.Kind, b.Broker, b.Time.Format(time.RFC3339Nano))})
		case b.Answered():
			c.r.Counts.BadRefused++
		}
	}
}
