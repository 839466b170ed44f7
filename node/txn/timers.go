package txn

import (
	"container/heap"
	"math"
	"slices"
	"strings"
	"time"
)

func sortStrings(s []string) { slices.Sort(s) }

// checkAfter is the first periodic check (every interval from the load,
// the first one interval after it) at or after t; strictly after t when
// strict.
func (s *Shard) checkAfter(t time.Time, interval time.Duration, strict bool) time.Time {
	if interval <= 0 {
		interval = time.Millisecond
	}
	d := t.Sub(s.anchor)
	k := int64(1)
	if d > 0 {
		k = int64(d / interval)
		if time.Duration(k)*interval < d || (strict && time.Duration(k)*interval == d) {
			k++
		}
		if k < 1 {
			k = 1
		}
	}
	return s.anchor.Add(time.Duration(k) * interval)
}

// dueOf is when the clock next changes t (zero: never): a retry, the
// abort of its timed-out transaction, or its expiry.
func (s *Shard) dueOf(t *txn) time.Time {
	if !t.retryAt.IsZero() {
		return t.retryAt
	}
	if t.busy() {
		return time.Time{}
	}
	var d time.Time
	var interval time.Duration
	switch {
	case t.state == Ongoing:
		// Kafka aborts at the first check after start + timeout.
		interval = s.cfg.AbortInterval
		d = s.checkAfter(t.start.Add(t.timeout), interval, true)
	case t.state.idle():
		// Removed at the first check at or after updated + expiration.
		interval = s.cfg.RemoveInterval
		d = s.checkAfter(t.updated.Add(s.cfg.IDExpiration), interval, false)
	default:
		return time.Time{}
	}
	if !t.failedAt.IsZero() {
		if r := s.checkAfter(t.failedAt, interval, true); r.After(d) {
			d = r
		}
	}
	return d
}

func (s *Shard) nextDue() time.Time {
	if len(s.timers) == 0 {
		return time.Time{}
	}
	return s.timers[0].due
}

// touch marks t changed: its due time is recomputed at the end of the
// event (flushTimers).
func (s *Shard) touch(t *txn) { s.dirty[t] = true }

// flushTimers puts the changed ids at their due times in the heap (or
// out of it, and out of it if they are gone).
func (s *Shard) flushTimers() {
	if !s.loaded {
		return
	}
	for t := range s.dirty {
		delete(s.dirty, t)
		due := time.Time{}
		if s.txns[t.id] == t {
			due = s.dueOf(t)
		}
		t.due = due
		switch {
		case due.IsZero() && t.at > 0:
			heap.Remove(&s.timers, t.at-1)
		case !due.IsZero() && t.at > 0:
			heap.Fix(&s.timers, t.at-1)
		case !due.IsZero():
			heap.Push(&s.timers, t)
		}
	}
}

func (s *Shard) tick(now time.Time) {
	s.flushTimers()
	var fire []*txn
	for len(s.timers) > 0 && !s.timers[0].due.After(now) {
		t := heap.Pop(&s.timers).(*txn)
		t.due = time.Time{}
		s.touch(t)
		fire = append(fire, t)
	}
	slices.SortFunc(fire, func(a, b *txn) int { return strings.Compare(a.id, b.id) })
	for _, t := range fire {
		switch {
		case !t.retryAt.IsZero():
			if t.markersDone {
				s.complete(t, now)
			} else {
				retry := t.retry
				t.retry, t.retryAt = nil, time.Time{}
				s.sendMarkers(t, retry)
			}
		case t.state == Ongoing:
			s.fenceAbort(t, now, nil, true)
		case t.state.idle():
			s.write(&op{t: t, remove: true})
		}
	}
}

// timerHeap orders ids by due time, then id.
type timerHeap []*txn

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if !h[i].due.Equal(h[j].due) {
		return h[i].due.Before(h[j].due)
	}
	return h[i].id < h[j].id
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].at, h[j].at = i+1, j+1
}
func (h *timerHeap) Push(x any) {
	t := x.(*txn)
	t.at = len(*h) + 1
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	*h = old[:len(old)-1]
	t.at = 0
	return t
}

// fenceAbort aborts t's ongoing transaction with the epoch bumped (Kafka's
// prepareFenceProducerEpoch then endTransaction(ABORT)): on a timeout, or
// when a new incarnation of the producer calls InitProducerId. done
// answers who waits, when PrepareAbort is written.
func (s *Shard) fenceAbort(t *txn, now time.Time, done func(int16), timedOut bool) {
	next := t.meta
	if next.epoch < math.MaxInt16 {
		next.epoch++
	}
	next.state, next.updated = PrepareAbort, now
	s.write(&op{t: t, next: next, lastEpoch: -1, done: done, timedOut: timedOut})
}
