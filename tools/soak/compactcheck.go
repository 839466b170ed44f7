package soak

import (
	"fmt"
	"sort"
	"time"
)

// The compaction invariants, over the compacted topic's final read (see
// doc.go, "The compacted topic"). The latest acknowledged write of a key
// is its acknowledged send at the highest offset. Compaction may remove
// any record of a key but its latest, and a tombstone once
// delete.retention.ms passed; nothing else.
const (
	// KindCompactLostLatest: a key's latest acknowledged value is not in
	// the final log (gone, or an older value in its place), or its latest
	// acknowledged tombstone is gone within delete.retention.ms of being
	// sent, or an older value came back after it.
	KindCompactLostLatest = "compaction-lost-latest"
	// KindCompactPhantom: a record of the compacted topic that no send
	// explains (a value never sent, sent to another partition or under
	// another key, a tombstone no send of that key wrote).
	KindCompactPhantom = "compaction-phantom"
	// KindCompactOrder: the final read's offsets of a partition do not
	// strictly increase (holes are allowed).
	KindCompactOrder = "compaction-offset-order"
	// KindCompactConflict: an acknowledged offset holds another record
	// (compaction may empty it, never refill it).
	KindCompactConflict = "compaction-offset-conflict"
)

// CompactCounts are the compacted topic's numbers.
type CompactCounts struct {
	Sent       int `json:"sent"`
	Acked      int `json:"acked"`
	Tombstones int `json:"tombstones_acked"`
	Unknown    int `json:"unknown"`
	Read       int `json:"read"`
	// Holes: offsets below the final high watermarks that the final read
	// skipped: what the cleaners removed.
	Holes int64 `json:"holes"`
	// Keys written with an acknowledged send; of them, LatestPresent
	// still have their latest acknowledged record in the log (or a later
	// unknown one), Deleted end in a tombstone (kept or removed).
	Keys          int `json:"keys"`
	LatestPresent int `json:"latest_present"`
	Deleted       int `json:"deleted"`
	// TombstonesKept: latest tombstones still in the log.
	TombstonesKept int `json:"tombstones_kept"`
	// Explained: losses a power loss explains (page-cache durability).
	Explained int `json:"explained"`
	// Cleans and CleanFailures are the nodes' (CompactHistory): of every
	// compacted log, the soak's and any other.
	Cleans        int64 `json:"cleans"`
	CleanFailures int64 `json:"clean_failures"`
}

// compactKey is one record key of one partition.
type compactKey struct {
	tp  TP
	key string
}

// compaction checks the compacted topic and returns the sends whose loss
// it reported, for the losses table. Its partitions are not in the
// per-partition table, the unavailability windows or the recovery bound,
// which are the soak topic's.
func (c *checker) compaction(h *History) []*Send {
	ch := h.Compact
	if ch == nil {
		return nil
	}
	cc := &CompactCounts{Cleans: ch.Cleans, CleanFailures: ch.CleanFailures}
	c.r.Compact = cc
	sends := make(map[Key]*Send, len(ch.Sends))
	latest := map[compactKey]*Send{}
	ackedTomb := map[TP]map[int64]*Send{}
	unknownTomb := map[compactKey][]*Send{}
	for i := range ch.Sends {
		s := &ch.Sends[i]
		sends[s.Key] = s
		cc.Sent++
		ck := compactKey{s.TP, s.RecordKey}
		switch s.Outcome {
		case Acked:
			cc.Acked++
			if s.Tombstone {
				cc.Tombstones++
				if ackedTomb[s.TP] == nil {
					ackedTomb[s.TP] = map[int64]*Send{}
				}
				ackedTomb[s.TP][s.Offset] = s
			}
			// Offsets are reused only after a loss; then the later
			// acknowledgement is the latest.
			if l := latest[ck]; l == nil || s.Offset > l.Offset || (s.Offset == l.Offset && s.Done.After(l.Done)) {
				latest[ck] = s
			}
		case Unknown:
			cc.Unknown++
			if s.Tombstone {
				unknownTomb[ck] = append(unknownTomb[ck], s)
			}
		}
	}

	// The final log: offsets in read order, each record put down to its
	// send.
	byTP := map[TP][]Read{}
	for _, rd := range ch.Final {
		byTP[rd.TP] = append(byTP[rd.TP], rd)
	}
	atOffset := map[TP]map[int64]*Send{} // the send of each record read
	last := map[compactKey]int64{}       // each key's highest offset read
	lastSend := map[compactKey]*Send{}
	for _, tp := range sortedTPs(byTP) {
		atOffset[tp] = map[int64]*Send{}
		prev := int64(-1)
		for _, rd := range byTP[tp] {
			cc.Read++
			c.checkHW(rd, "final read of the compacted topic")
			if rd.Offset <= prev {
				c.add(Violation{Kind: KindCompactOrder, TP: tp, Offset: rd.Offset,
					Detail: fmt.Sprintf("the final read returned offset %d after offset %d", rd.Offset, prev)})
				continue
			}
			cc.Holes += rd.Offset - prev - 1
			prev = rd.Offset
			s, why := identify(rd, sends, ackedTomb, unknownTomb)
			if s == nil {
				c.add(Violation{Kind: KindCompactPhantom, TP: tp, Offset: rd.Offset, Detail: why})
				continue
			}
			if s.Outcome == Acked && s.Offset != rd.Offset && !c.compactExcused(tp, s.Offset, s.Done) {
				c.add(Violation{Kind: KindCompactConflict, TP: tp, Offset: rd.Offset, Key: &s.Key,
					Detail: fmt.Sprintf("key %q: %s was acknowledged at offset %d, read at offset %d", s.RecordKey, describe(s), s.Offset, rd.Offset)})
			}
			atOffset[tp][rd.Offset] = s
			ck := compactKey{tp, s.RecordKey}
			last[ck], lastSend[ck] = rd.Offset, s
		}
		if hw, ok := ch.FinalHW[tp]; ok && hw-1 > prev {
			cc.Holes += hw - 1 - prev
		}
	}

	// An acknowledged offset may be empty, not hold another record.
	for i := range ch.Sends {
		s := &ch.Sends[i]
		if s.Outcome != Acked {
			continue
		}
		if got, ok := atOffset[s.TP][s.Offset]; ok && got != s {
			if c.compactExcused(s.TP, s.Offset, s.Done) {
				continue
			}
			c.add(Violation{Kind: KindCompactConflict, TP: s.TP, Offset: s.Offset, Key: &s.Key,
				Detail: fmt.Sprintf("key %q: %s was acknowledged at offset %d, which holds %s", s.RecordKey, describe(s), s.Offset, describe(got))})
		}
	}

	// Every key's latest acknowledged write.
	keys := make([]compactKey, 0, len(latest))
	for ck := range latest {
		keys = append(keys, ck)
	}
	sort.Slice(keys, func(i, j int) bool {
		if d := cmpTP(keys[i].tp, keys[j].tp); d != 0 {
			return d < 0
		}
		return keys[i].key < keys[j].key
	})
	var lost []*Send
	for _, ck := range keys {
		a := latest[ck]
		cc.Keys++
		if a.Tombstone {
			cc.Deleted++
		}
		off, found := last[ck]
		var problem string
		switch {
		case found && off == a.Offset && lastSend[ck] == a:
			if a.Tombstone {
				cc.TombstonesKept++
			} else {
				cc.LatestPresent++
			}
		case found && off > a.Offset:
			// A later unacknowledged write of the key (its send was
			// identified, so it was sent to this key).
			if !a.Tombstone {
				cc.LatestPresent++
			}
		case found:
			problem = fmt.Sprintf("%s at offset %d is missing; the key's last record is %s at offset %d", describe(a), a.Offset, describe(lastSend[ck]), off)
		case a.Tombstone:
			if age := ch.FinalAt.Sub(a.Sent); age < ch.DeleteRetention {
				problem = fmt.Sprintf("%s at offset %d is gone %v after it was sent, within delete.retention.ms (%v)", describe(a), a.Offset, age.Round(time.Millisecond), ch.DeleteRetention)
			}
		case laterUnknown(unknownTomb[ck], a):
			// An unacknowledged tombstone sent after it may have
			// deleted the key.
		default:
			problem = fmt.Sprintf("%s at offset %d is missing, and the key has no record left", describe(a), a.Offset)
		}
		if problem == "" {
			continue
		}
		if c.compactExcused(a.TP, a.Offset, a.Done) {
			continue
		}
		lost = append(lost, a)
		c.add(Violation{Kind: KindCompactLostLatest, TP: a.TP, Offset: a.Offset, Key: &a.Key,
			Detail: fmt.Sprintf("key %q: the latest acknowledged write %s", ck.key, problem)})
	}
	return lost
}

// compactExcused: with page-cache durability, a loss a power loss
// explains is counted, not a violation (explain.go).
func (c *checker) compactExcused(tp TP, off int64, at time.Time) bool {
	if c.excused(c.power.explain(tp, off, at), func(p *PowerLossReport) { p.Lost++ }) {
		c.r.Compact.Explained++
		return true
	}
	return false
}

// identify puts a record of the compacted topic down to its send: a value
// by its content, a tombstone by the acknowledged tombstone at its offset
// or an unacknowledged one of its key. nil and why when nothing explains
// it.
func identify(rd Read, sends map[Key]*Send, ackedTomb map[TP]map[int64]*Send, unknownTomb map[compactKey][]*Send) (*Send, string) {
	rk := string(rd.Key)
	if rd.Key == nil {
		return nil, fmt.Sprintf("a record without a key (value %q) in a compacted topic", abbrev(rd.Value))
	}
	if rd.Tombstone {
		if s := ackedTomb[rd.TP][rd.Offset]; s != nil && s.RecordKey == rk {
			return s, ""
		}
		if u := unknownTomb[compactKey{rd.TP, rk}]; len(u) > 0 {
			return u[0], ""
		}
		return nil, fmt.Sprintf("a tombstone of key %q that no acknowledged or unknown send of that key explains", rk)
	}
	k, ok := DecodeValue(rd.Value)
	if !ok {
		return nil, fmt.Sprintf("key %q: value %q was not written by the workload", rk, abbrev(rd.Value))
	}
	s, sent := sends[k]
	switch {
	case !sent:
		return nil, fmt.Sprintf("key %q: %s was never sent", rk, k)
	case s.TP != rd.TP:
		return nil, fmt.Sprintf("key %q: %s was sent to %s", rk, k, s.TP)
	case s.RecordKey != rk:
		return nil, fmt.Sprintf("%s was sent with key %q, read with key %q", k, s.RecordKey, rk)
	case s.Tombstone:
		return nil, fmt.Sprintf("key %q: %s was sent as a tombstone, read with a value", rk, k)
	case s.Outcome == Failed:
		return nil, fmt.Sprintf("key %q: %s failed definitely (%s)", rk, k, s.Err)
	}
	return s, ""
}

// laterUnknown says whether one of us (unacknowledged tombstones of a's
// key) was sent after a (one producer's sends of one key are in
// sequence order).
func laterUnknown(us []*Send, a *Send) bool {
	for _, u := range us {
		if u.Key.Producer == a.Key.Producer && u.Key.Seq > a.Key.Seq {
			return true
		}
	}
	return false
}

func describe(s *Send) string {
	what := "value"
	if s.Tombstone {
		what = "tombstone"
	}
	return fmt.Sprintf("%s %s (%s)", what, s.Key, s.Outcome)
}
