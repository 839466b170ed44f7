package txn

import (
	"math"
	"slices"
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
	var due time.Time
	for _, t := range s.txns {
		if d := s.dueOf(t); !d.IsZero() && (due.IsZero() || d.Before(due)) {
			due = d
		}
	}
	return due
}

func (s *Shard) tick(now time.Time) {
	for _, id := range sortedIDs(s.txns) {
		t := s.txns[id]
		d := s.dueOf(t)
		if d.IsZero() || d.After(now) {
			continue
		}
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
