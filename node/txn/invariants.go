package txn

import (
	"fmt"
	"math"
	"sort"
)

func (s *Shard) check(what string) {
	s.flushTimers()
	if !invariantsOn {
		return
	}
	if err := s.checkInvariants(); err != nil {
		panic(fmt.Sprintf("txn: invariant after %s (partition %d): %v", what, s.partition, err))
	}
}

// checkInvariants reports the first broken invariant of the shard.
func (s *Shard) checkInvariants() error {
	writes := map[*txn]int{}
	for id, o := range s.ops {
		writes[o.t]++
		if o.t.pending != o {
			return fmt.Errorf("append %d for %q is not its pending write", id, o.t.id)
		}
		if s.txns[o.t.id] != o.t {
			return fmt.Errorf("append %d for %q, which the shard does not hold", id, o.t.id)
		}
	}
	inMarkers := map[*txn]int{}
	for id, t := range s.markers {
		inMarkers[t]++
		if t.markersID != id {
			return fmt.Errorf("markers %d for %q, which waits for %d", id, t.id, t.markersID)
		}
	}
	for id, t := range s.txns {
		switch {
		case t.id != id:
			return fmt.Errorf("%q held as %q", t.id, id)
		case writes[t] > 1 || inMarkers[t] > 1 || writes[t]+inMarkers[t] > 1:
			return fmt.Errorf("%q: %d writes and %d markers in flight", id, writes[t], inMarkers[t])
		case t.state < Empty || t.state > CompleteAbort:
			return fmt.Errorf("%q in state %v", id, t.state)
		case t.epoch < -1 || t.epoch == math.MaxInt16 && t.state != PrepareAbort && t.state != CompleteAbort && !t.rotating:
			return fmt.Errorf("%q at epoch %d in %v", id, t.epoch, t.state)
		case (t.state == Ongoing || t.state == PrepareCommit || t.state == PrepareAbort) && (t.start.IsZero() || len(t.parts) == 0):
			return fmt.Errorf("%q %v with start %v and %d partitions", id, t.state, t.start, len(t.parts))
		case (t.state.idle()) && len(t.parts) > 0:
			return fmt.Errorf("%q %v with partitions %v", id, t.state, t.parts)
		case !sort.SliceIsSorted(t.parts, func(i, j int) bool {
			a, b := t.parts[i], t.parts[j]
			return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
		}):
			return fmt.Errorf("%q partitions unsorted: %v", id, t.parts)
		}
		// Markers are in flight or due exactly while a prepared
		// transaction is loaded, and keep it busy.
		prepared := t.state == PrepareCommit || t.state == PrepareAbort
		markerWork := inMarkers[t] > 0 || len(t.retry) > 0
		if markerWork && (!prepared || !t.busy()) {
			return fmt.Errorf("%q has markers in flight in %v (busy %v)", id, t.state, t.busy())
		}
		if s.loaded && prepared && !markerWork && writes[t] == 0 && !t.markersDone {
			return fmt.Errorf("%q is %v with no markers nor completion in flight", id, t.state)
		}
		if len(t.held) > 0 && (t.pending == nil || len(t.retry) > 0 || len(t.held) > maxHeld) {
			return fmt.Errorf("%q holds %d adds (busy %v, %d markers to retry)", id, len(t.held), t.busy(), len(t.retry))
		}
		if t.pending != nil && writes[t] == 0 && !markerWork {
			return fmt.Errorf("%q is busy with nothing in flight", id)
		}
	}
	for i, t := range s.timers {
		if t.at != i+1 || s.txns[t.id] != t {
			return fmt.Errorf("timer %d is %q at %d", i, t.id, t.at)
		}
	}
	for id, t := range s.txns {
		if t.at > len(s.timers) || t.at > 0 && s.timers[t.at-1] != t {
			return fmt.Errorf("%q due %v is not at heap slot %d", id, t.due, t.at)
		}
		if d := s.dueOf(t); !d.Equal(t.due) || d.IsZero() != (t.at == 0) {
			return fmt.Errorf("%q due %v, timer at %v (heap slot %d)", id, d, t.due, t.at)
		}
	}
	if len(s.waitPID) > 0 && s.pidNext < s.pidEnd {
		return fmt.Errorf("%d requests wait for producer ids while %d are left", len(s.waitPID), s.pidEnd-s.pidNext)
	}
	return nil
}
