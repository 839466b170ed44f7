package soak

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"
)

// The consumer-group invariants, over the group workload's history (see
// doc.go, "Consumer groups"). Times are intervals: a commit took effect
// somewhere between its send and its answer, a FetchOffsets answer
// describes a moment between its send and its answer; one observation is
// before another only when it ended before the other began.
const (
	// KindGroupBackwards: a group's committed offset of a partition was
	// seen lower than an earlier observation of it (an acknowledged commit
	// or a FetchOffsets answer), with no explicit reset in between and no
	// unknown-outcome commit of that lower offset.
	KindGroupBackwards = "group-offset-backwards"
	// KindGroupUndelivered: an acknowledged record below an acknowledged
	// commit of a group was not delivered to any member of that group
	// before the commit was acknowledged (at-least-once).
	KindGroupUndelivered = "group-undelivered"
	// KindGroupDoubleOwner: two members of a group claimed the same
	// partition in the same generation at the same time.
	KindGroupDoubleOwner = "group-double-owner"
	// KindGroupCommitLost: a group's final committed offset of a
	// partition is not what its last acknowledged commit (or an
	// unknown-outcome commit after it) wrote, or could not be read.
	KindGroupCommitLost = "group-commit-lost"
)

// groupTP is one partition of one group.
type groupTP struct {
	group string
	tp    TP
}

// offsetObs is one observation of a committed offset, in effect somewhere
// in [lo, hi].
type offsetObs struct {
	v      int64
	lo, hi time.Time
	what   string
	reset  bool
}

// groups checks the group workload's history. found is where each
// acknowledged record of the soak topic is in the final log.
func (c *checker) groups(h *History, found map[Key][]Read) {
	gh := h.Groups
	if gh == nil {
		return
	}
	gc := &GroupCounts{Groups: len(gh.Groups), Lag: map[string]int64{}}
	c.r.Groups = gc
	members := map[string]bool{}
	for _, a := range gh.Assignments {
		members[a.Member] = true
		gc.Assignments++
	}
	gc.Members = len(members)
	gc.Snapshots = len(gh.Snapshots)
	var lat []time.Duration
	for _, cm := range gh.Commits {
		gc.Commits++
		all := len(cm.Parts) > 0
		for _, p := range cm.Parts {
			switch p.Outcome {
			case Acked:
				gc.CommitAcked++
			case Failed:
				gc.CommitFailed++
				all = false
			default:
				gc.CommitUnk++
				all = false
			}
		}
		if all {
			lat = append(lat, cm.Done.Sub(cm.Sent))
		}
	}
	gc.CommitLatency = percentiles(lat)
	var rb []time.Duration
	for _, r := range gh.Rebalances {
		if r.End.IsZero() {
			gc.Unsettled++
			continue
		}
		rb = append(rb, r.End.Sub(r.Start))
	}
	gc.RebalanceTime = percentiles(rb)
	gc.Rebalances = gh.Rebalances

	c.groupGenerations(gh)
	c.groupBackwards(gh)
	c.groupAtLeastOnce(h, gh, found)
	c.groupOwners(h, gh)
	c.groupFinal(h, gh)
}

// groupGenerations counts generations handed out below one already
// synced (GroupCounts.GenRegressions).
func (c *checker) groupGenerations(gh *GroupHistory) {
	gc := c.r.Groups
	evs := slices.Clone(gh.Assignments)
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].At.Before(evs[j].At) })
	type synced struct {
		gen    int32
		at     time.Time
		member string
	}
	var hist = map[string][]synced{} // per group, assigned events in time order
	for _, a := range evs {
		if a.Event != "assigned" && a.Event != "generation" {
			continue
		}
		for _, s := range hist[a.Group] {
			if a.At.Sub(s.at) > time.Second && a.Generation < s.gen {
				gc.GenRegressions++
				if len(gc.GenExamples) < 10 {
					gc.GenExamples = append(gc.GenExamples, fmt.Sprintf("group %s: %s %s generation %d at %s, after %s was assigned partitions in generation %d at %s",
						a.Group, a.Member, map[bool]string{true: "was assigned partitions in", false: "joined"}[a.Event == "assigned"], a.Generation, c.at(a.At), s.member, s.gen, c.at(s.at)))
				}
				break
			}
		}
		if a.Event == "assigned" {
			hist[a.Group] = append(hist[a.Group], synced{a.Generation, a.At, a.Member})
		}
	}
}

// groupBackwards: a committed offset never moves backwards outside an
// explicit reset.
func (c *checker) groupBackwards(gh *GroupHistory) {
	obs := map[groupTP][]offsetObs{}
	type unk struct {
		v    int64
		sent time.Time
	}
	unknown := map[groupTP][]unk{}
	for _, cm := range gh.Commits {
		for _, p := range cm.Parts {
			k := groupTP{cm.Group, p.TP}
			switch p.Outcome {
			case Acked:
				obs[k] = append(obs[k], offsetObs{v: p.Offset, lo: cm.Sent, hi: cm.Done,
					what: fmt.Sprintf("%s's commit of %d (generation %d), acknowledged at %s", cm.Member, p.Offset, cm.Generation, c.at(cm.Done))})
			case Unknown:
				unknown[k] = append(unknown[k], unk{p.Offset, cm.Sent})
			}
		}
	}
	for _, s := range gh.Snapshots {
		for tp, v := range s.Offsets {
			k := groupTP{s.Group, tp}
			obs[k] = append(obs[k], offsetObs{v: v, lo: s.Sent, hi: s.Done, what: fmt.Sprintf("FetchOffsets answered %d at %s", v, c.at(s.Done))})
		}
	}
	resets := map[groupTP][]offsetObs{}
	for _, r := range gh.Resets {
		k := groupTP{r.Group, r.TP}
		resets[k] = append(resets[k], offsetObs{v: r.Offset, lo: r.Sent, hi: r.Done, reset: true, what: "reset"})
	}
	for _, k := range sortedGroupTPs(obs) {
		byLo := slices.Clone(obs[k])
		sort.SliceStable(byLo, func(i, j int) bool { return byLo[i].lo.Before(byLo[j].lo) })
		settled := append(slices.Clone(obs[k]), resets[k]...)
		sort.SliceStable(settled, func(i, j int) bool { return settled[i].hi.Before(settled[j].hi) })
		var best *offsetObs // the highest observation that ended before e began
		var reported *offsetObs
		j := 0
		for i := range byLo {
			e := &byLo[i]
			for ; j < len(settled) && settled[j].hi.Before(e.lo); j++ {
				if s := &settled[j]; s.reset || best == nil || s.v > best.v {
					best = s
				}
			}
			if best == nil || e.v >= best.v || best == reported {
				continue
			}
			excused := false
			for _, r := range resets[k] {
				excused = excused || (!r.lo.After(e.hi) && !r.hi.Before(best.lo))
			}
			for _, u := range unknown[k] {
				excused = excused || (u.v == e.v && !u.sent.After(e.hi))
			}
			if !excused && c.groupPowerLoss(best.lo, e.hi) {
				c.r.Groups.Explained++
				excused = true
			}
			if excused {
				continue
			}
			reported = best
			c.add(Violation{Kind: KindGroupBackwards, TP: k.tp, Offset: e.v,
				Detail: fmt.Sprintf("group %s: committed offset went back from %d to %d: %s, then %s", k.group, best.v, e.v, best.what, e.what)})
		}
	}
}

// groupAtLeastOnce: every acknowledged record below an acknowledged commit
// was delivered to a member of the group before that commit was
// acknowledged. Records lost from the log are the lost invariant's.
func (c *checker) groupAtLeastOnce(h *History, gh *GroupHistory, found map[Key][]Read) {
	gc := c.r.Groups
	type dkey struct {
		group string
		tp    TP
		off   int64
		key   Key
	}
	first := map[dkey]time.Time{}
	type okey struct {
		group string
		tp    TP
		off   int64
	}
	atOffset := map[okey][]Delivery{} // what the group got at each offset
	for _, d := range gh.Deliveries {
		gc.Deliveries++
		if !d.Valid {
			continue
		}
		atOffset[okey{d.Group, d.TP, d.Offset}] = append(atOffset[okey{d.Group, d.TP, d.Offset}], d)
		k := dkey{d.Group, d.TP, d.Offset, d.Key}
		if t, ok := first[k]; ok {
			gc.Redelivered++
			if !d.At.Before(t) {
				continue
			}
		}
		first[k] = d.At
	}
	type ackedPart struct {
		off  int64
		done time.Time
		cm   *Commit
	}
	commits := map[groupTP][]ackedPart{}
	resetFloor := map[groupTP]int64{}
	for i := range gh.Commits {
		cm := &gh.Commits[i]
		for _, p := range cm.Parts {
			if p.Outcome == Acked {
				k := groupTP{cm.Group, p.TP}
				commits[k] = append(commits[k], ackedPart{p.Offset, cm.Done, cm})
			}
		}
	}
	for _, r := range gh.Resets {
		k := groupTP{r.Group, r.TP}
		resetFloor[k] = max(resetFloor[k], r.Offset)
	}
	var sends []*Send
	for i := range h.Sends {
		if s := &h.Sends[i]; s.Outcome == Acked && s.TP.Topic == gh.Topic && len(found[s.Key]) > 0 {
			sends = append(sends, s)
		}
	}
	for _, g := range slices.Sorted(maps.Keys(gh.Groups)) {
		for _, tp := range gh.Partitions {
			k := groupTP{g, tp}
			cs := commits[k]
			sort.Slice(cs, func(i, j int) bool { return cs[i].off < cs[j].off })
			// earliest[i]: the commit acknowledged first among cs[i:].
			earliest := make([]int, len(cs))
			for i := len(cs) - 1; i >= 0; i-- {
				earliest[i] = i
				if i+1 < len(cs) && cs[earliest[i+1]].done.Before(cs[i].done) {
					earliest[i] = earliest[i+1]
				}
			}
			for _, s := range sends {
				if s.TP != tp || s.Offset < resetFloor[k] {
					continue
				}
				i := sort.Search(len(cs), func(i int) bool { return cs[i].off > s.Offset })
				if i == len(cs) {
					continue // no acknowledged commit covers it
				}
				cv := cs[earliest[i]]
				gc.Checked++
				d, ok := first[dkey{g, tp, s.Offset, s.Key}]
				if ok && d.Before(cv.done) {
					continue
				}
				if c.excused(c.power.explain(tp, s.Offset, s.Done), func(p *PowerLossReport) {}) {
					gc.Explained++
					continue
				}
				// The offset was rewritten: a power loss cut it from a
				// replica after the commit was sent, or after the group
				// got another record there, and s took its place once the
				// log grew again. The commit is about what the power loss
				// took (page-cache durability's loss, which the lost
				// invariant books), not about s.
				rewritten := c.power.explain(tp, s.Offset, cv.cm.Sent)
				for _, d := range atOffset[okey{g, tp, s.Offset}] {
					if rewritten < 0 && d.Key != s.Key && d.At.Before(cv.done) {
						rewritten = c.power.explain(tp, s.Offset, d.At)
					}
				}
				if c.excused(rewritten, func(p *PowerLossReport) {}) {
					gc.Explained++
					continue
				}
				when := "never delivered to any member"
				if ok {
					when = "first delivered at " + c.at(d)
				}
				c.add(Violation{Kind: KindGroupUndelivered, TP: tp, Offset: s.Offset, Key: &s.Key,
					Detail: fmt.Sprintf("group %s: %s (acknowledged at %s) is below %s's commit of %d (generation %d), acknowledged at %s, and was %s",
						g, s.Key, c.at(s.Done), cv.cm.Member, cv.off, cv.cm.Generation, c.at(cv.done), when)})
			}
		}
	}
}

// groupOwners: no partition is claimed by two members of one generation
// at once. A member's claim is its owned partitions from one assignment
// event to its next (or the end).
func (c *checker) groupOwners(h *History, gh *GroupHistory) {
	end := gh.FinalAt
	if end.IsZero() {
		end = h.End
	}
	byMember := map[string][]Assignment{}
	var names []string
	for _, a := range gh.Assignments {
		if _, ok := byMember[a.Member]; !ok {
			names = append(names, a.Member)
		}
		byMember[a.Member] = append(byMember[a.Member], a)
	}
	type ckey struct {
		group string
		gen   int32
		tp    TP
	}
	type claim struct {
		member   string
		from, to time.Time
	}
	claims := map[ckey][]claim{}
	var keys []ckey
	for _, m := range names {
		evs := byMember[m]
		sort.SliceStable(evs, func(i, j int) bool { return evs[i].At.Before(evs[j].At) })
		for i, a := range evs {
			to := end
			if i+1 < len(evs) {
				to = evs[i+1].At
			}
			for _, tp := range a.Owned {
				k := ckey{a.Group, a.Generation, tp}
				if _, ok := claims[k]; !ok {
					keys = append(keys, k)
				}
				claims[k] = append(claims[k], claim{m, a.At, to})
			}
		}
	}
	for _, k := range keys {
		cl := claims[k]
		sort.SliceStable(cl, func(i, j int) bool { return cl[i].from.Before(cl[j].from) })
		cur := cl[0]
		for _, x := range cl[1:] {
			if x.member != cur.member && x.from.Before(cur.to) {
				c.add(Violation{Kind: KindGroupDoubleOwner, TP: k.tp, Offset: -1,
					Detail: fmt.Sprintf("group %s generation %d: %s owned it from %s to %s, %s from %s to %s",
						k.group, k.gen, cur.member, c.at(cur.from), c.at(cur.to), x.member, c.at(x.from), c.at(x.to))})
			}
			if x.to.After(cur.to) {
				cur = x
			}
		}
	}
}

// groupFinal: each group's final committed offsets are what its last
// acknowledged commits wrote: the acknowledged commits no other
// acknowledged commit was sent after, or an unknown-outcome commit not
// over before they began.
func (c *checker) groupFinal(h *History, gh *GroupHistory) {
	gc := c.r.Groups
	for _, g := range slices.Sorted(maps.Keys(gh.Groups)) {
		if why, ok := gh.FinalErr[g]; ok {
			c.add(Violation{Kind: KindGroupCommitLost, Offset: -1,
				Detail: fmt.Sprintf("group %s: the final committed offsets could not be read: %s", g, why)})
			continue
		}
		for _, tp := range gh.Partitions {
			f, ok := gh.Final[g][tp]
			if !ok {
				f = -1
			}
			if hw, ok := h.FinalHW[tp]; ok {
				gc.Lag[g] += hw - max(f, 0)
			}
			var acked, unknown []CommitPart
			var ackedCm, unknownCm []*Commit
			for i := range gh.Commits {
				cm := &gh.Commits[i]
				if cm.Group != g {
					continue
				}
				for _, p := range cm.Parts {
					switch {
					case p.TP != tp:
					case p.Outcome == Acked:
						acked, ackedCm = append(acked, p), append(ackedCm, cm)
					case p.Outcome == Unknown:
						unknown, unknownCm = append(unknown, p), append(unknownCm, cm)
					}
				}
			}
			var lastReset *Reset
			for i := range gh.Resets {
				if r := &gh.Resets[i]; r.Group == g && r.TP == tp && (lastReset == nil || r.Done.After(lastReset.Done)) {
					lastReset = r
				}
			}
			// The last acknowledged commits: none acknowledged was sent
			// after they were answered.
			var lastSent time.Time
			for _, cm := range ackedCm {
				if lastSent.Before(cm.Sent) {
					lastSent = cm.Sent
				}
			}
			var want []int64
			var from time.Time // when the last commits began
			var lastWhat string
			for i, cm := range ackedCm {
				if lastReset != nil && cm.Done.Before(lastReset.Sent) {
					continue
				}
				if !cm.Done.Before(lastSent) {
					want = append(want, acked[i].Offset)
					if from.IsZero() || cm.Sent.Before(from) {
						from = cm.Sent
					}
					lastWhat = fmt.Sprintf("%s's commit of %d acknowledged at %s", cm.Member, acked[i].Offset, c.at(cm.Done))
				}
			}
			if lastReset != nil && (len(want) == 0 || from.Before(lastReset.Done)) {
				want = append(want, lastReset.Offset)
			}
			if len(want) == 0 {
				want = append(want, -1) // nothing acknowledged: none, or an unknown one
				lastWhat = "no acknowledged commit"
			}
			for i, u := range unknown {
				if from.IsZero() || !unknownCm[i].Done.Before(from) {
					want = append(want, u.Offset)
				}
			}
			if slices.Contains(want, f) {
				continue
			}
			if !from.IsZero() && c.groupPowerLoss(from, gh.FinalAt) {
				gc.Explained++
				continue
			}
			c.add(Violation{Kind: KindGroupCommitLost, TP: tp, Offset: f,
				Detail: fmt.Sprintf("group %s: the final committed offset is %d; the last commits wrote %v (%s)", g, f, want, lastWhat)})
		}
	}
}

// groupPowerLoss: with page-cache durability (which the run gives
// __consumer_offsets too), a power loss between from and to may have
// lost a commit: a committed offset that went back across it is
// explained, not a violation.
func (c *checker) groupPowerLoss(from, to time.Time) bool {
	if !c.o.PageCache {
		return false
	}
	for _, f := range c.faultList {
		if f.Skipped == "" && (f.Kind == FaultPowerLoss || f.Kind == ScenarioPageCache) && f.Start.Before(to) && f.Healed.After(from) {
			return true
		}
	}
	return false
}

// at is t as an offset from the start of the run.
func (c *checker) at(t time.Time) string {
	return "+" + t.Sub(c.r.Start).Round(time.Millisecond).String()
}

func sortedGroupTPs[V any](m map[groupTP]V) []groupTP {
	ks := make([]groupTP, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(a, b groupTP) int {
		if d := strings.Compare(a.group, b.group); d != 0 {
			return d
		}
		return cmpTP(a.tp, b.tp)
	})
	return ks
}
