package segment

import "time"

// Unflushed describes the tail of a log that is written but not yet
// fsynced: what a power cut now would take from this replica.
type Unflushed struct {
	// Offset is the flushed offset: every offset below it is fsynced.
	Offset int64
	// Bytes are the log bytes past Offset.
	Bytes int64
	// Since is when the oldest append not yet fsynced happened, as the
	// log's clock (Options.Now) told it; zero when nothing is unflushed or
	// the time is unknown (a tail recovered after a crash). An append made
	// while a flush was running that the flush did not cover is dated
	// from the end of that flush.
	Since time.Time
}

// Unflushed returns the unflushed tail of the log. It only reads.
func (l *Log) Unflushed() Unflushed {
	l.mu.Lock()
	defer l.mu.Unlock()
	u := Unflushed{Offset: l.flushed.Load()}
	if u.Offset >= l.leo {
		return u
	}
	for _, s := range l.segs {
		switch {
		case s.base == l.flushPos.base:
			u.Bytes += max(s.size-l.flushPos.pos, 0)
		case s.base > l.flushPos.base:
			u.Bytes += s.size
		}
	}
	if l.unflushed > 0 {
		u.Since = l.unflushAt
	}
	return u
}
