package replica

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/sluice-log/sluice/partition"
	"github.com/sluice-log/sluice/segment"
)

// The scrubber: one goroutine per node verifies the sealed segments of every
// local log (segment.Log.ScrubNext), each once per
// sluice.log.scrub.interval.ms, reading at most
// sluice.log.scrub.max.bytes.per.second over all logs. A read that meets a
// bad batch (segment verifies what came from disk) asks it to scrub that
// log at once. A bad batch found is reported (ERROR log with topic,
// partition, offset and file; sluice_log_corrupt_batches_total) and stepped
// into the replica's state machine as partition.LogCorrupt: a follower
// truncates before it and fetches it again from the leader; a leader hands
// leadership to another in-sync replica and then does the same; the only
// in-sync copy keeps serving what is valid below the damage.

// scrubPoll is how often the scrubber looks for due segments when none was.
const scrubPoll = time.Second

// scrubber is the node's scrub state. Its fields are used by its goroutine
// only, except urgent (scrubSoon).
type scrubber struct {
	m        *Manager
	interval time.Duration // 0: no periodic scrub
	rate     int64         // bytes per second; 0: no limit
	urgent   chan *Replica // logs a read found damaged
	next     time.Time     // the throttle: when the next byte may be read
	found    atomic.Int64  // bad batches reported (tests)
}

func newScrubber(m *Manager, interval time.Duration, rate int64) *scrubber {
	return &scrubber{
		m: m, interval: interval, rate: rate,
		urgent: make(chan *Replica, 64),
	}
}

// scrubSoon asks the scrubber to verify r's log now: a read met damage.
func (m *Manager) scrubSoon(r *Replica) {
	if m.scrub == nil {
		return
	}
	select {
	case m.scrub.urgent <- r:
	default: // already asked often enough
	}
}

func (s *scrubber) run() {
	defer s.m.wg.Done()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-s.m.stop:
			return
		case r := <-s.urgent:
			// Every segment not verified this instant (the read does not
			// say which one it was), unless the damage is known already.
			if r.log.Corruption() == nil && !s.scrubLog(r, time.Now(), len(r.log.Segments())) {
				return
			}
		case <-t.C:
			if s.interval > 0 {
				due := time.Now().Add(-s.interval)
				for _, r := range s.m.Replicas() {
					if !s.scrubLog(r, due, -1) {
						return
					}
				}
			}
			t.Reset(min(scrubPoll, max(s.interval, 10*time.Millisecond)))
		}
	}
}

// scrubLog scrubs r's sealed segments last verified before due, at most
// limit of them (-1: all), and acts on what it finds. It returns false when
// the node stops.
func (s *scrubber) scrubLog(r *Replica, due time.Time, limit int) bool {
	for i := 0; limit < 0 || i < limit; i++ {
		res, ok, err := r.log.ScrubNext(due, s.wait)
		switch {
		case errors.Is(err, errStopped):
			return false
		case errors.Is(err, segment.ErrClosed):
			return true
		case err != nil:
			s.m.log.Warn("node: scrub failed", "topic", r.topic, "partition", r.partition, "err", err)
			return true
		case !ok:
			return true
		}
		if res.Corrupt != nil {
			s.report(r, res.Corrupt)
		}
	}
	return true
}

// wait is the throttle: it returns once n more bytes may be read at the
// configured rate, or errStopped.
func (s *scrubber) wait(n int) error {
	if s.rate <= 0 {
		select {
		case <-s.m.stop:
			return errStopped
		default:
			return nil
		}
	}
	now := time.Now()
	if s.next.Before(now) {
		s.next = now
	}
	at := s.next
	s.next = s.next.Add(time.Duration(float64(n) / float64(s.rate) * float64(time.Second)))
	if d := at.Sub(now); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-s.m.stop:
			return errStopped
		case <-t.C:
		}
	}
	return nil
}

// report logs a bad batch, counts it and tells the replica's state machine,
// which repairs it where another copy is in sync.
func (s *scrubber) report(r *Replica, c *segment.CorruptionError) {
	s.found.Add(1)
	if s.m.onCorrupt != nil {
		s.m.onCorrupt(r.topic, r.partition)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.dead {
		return
	}
	st := r.mu.part.Status()
	s.m.log.Error("node: corrupt batch in a local log",
		"topic", r.topic, "partition", r.partition, "offset", c.Offset, "file", c.Path, "position", c.Pos,
		"reason", c.Reason, "role", st.Role.String(), "isr", st.ISR)
	if err := r.step(partition.LogCorrupt{Offset: c.Offset}); err != nil {
		r.logErr("corruption report", err)
	}
	r.process()
	if st := r.mu.part.Status(); st.Role == partition.Leader && r.mu.part.Damage() >= 0 && st.PendingISR == nil {
		s.m.log.Error("node: this replica is the only in-sync copy of a corrupt log: it keeps leading and serves only what lies below the damage",
			"topic", r.topic, "partition", r.partition, "offset", c.Offset, "file", c.Path, "isr", st.ISR)
	}
}
