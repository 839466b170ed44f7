package segment

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// CleanPolicy is a log's compaction settings (Kafka topic configs).
type CleanPolicy struct {
	Compact                bool          // cleanup.policy has compact
	Delete                 bool          // cleanup.policy has delete (retention still applies as today)
	MinCleanableDirtyRatio float64       // min.cleanable.dirty.ratio (0.5)
	MinCompactionLag       time.Duration // min.compaction.lag.ms (0)
	MaxCompactionLag       time.Duration // max.compaction.lag.ms (0 or huge: never forces)
	DeleteRetention        time.Duration // delete.retention.ms (1 day)
}

// CleanCandidate says how dirty a log is and what may be cleaned now.
type CleanCandidate struct {
	FirstDirty   int64 // the cleaner checkpoint: below it the log is clean
	CleanableEnd int64 // exclusive end of what may be cleaned now
	CleanBytes   int64
	DirtyBytes   int64
	DirtyRatio   float64 // DirtyBytes / (CleanBytes + DirtyBytes)
	MustClean    bool    // max.compaction.lag.ms passed for some dirty record
	// DeleteHorizon (unix ms; 0: none) is the earliest delete horizon of a
	// tombstone or transaction marker the last Clean kept in the clean
	// section (KIP-534); HorizonDue says it has passed, so that a Clean
	// would remove it even with nothing dirty.
	DeleteHorizon int64
	HorizonDue    bool
}

// Cleanable says whether the candidate is worth a Clean under p: some dirty
// bytes, and a dirty ratio at or above min.cleanable.dirty.ratio or a
// record past max.compaction.lag.ms (Kafka's LogCleanerManager rule); or
// a delete horizon that has passed (Kafka cleans such a log when no other
// is cleanable; here the pool's order does that: see node/cleaner).
func (c CleanCandidate) Cleanable(p CleanPolicy) bool {
	return c.DirtyBytes > 0 && (c.MustClean || c.DirtyRatio >= p.MinCleanableDirtyRatio) || c.HorizonDue
}

// CleanOptions are the arguments of one Clean.
type CleanOptions struct {
	Policy CleanPolicy
	// UpTo is the exclusive bound from the caller: min(high watermark,
	// last stable offset); the active segment is never cleaned regardless.
	UpTo int64
	Now  time.Time
	// OffsetMapBytes is the memory for the key->offset map (a share of
	// log.cleaner.dedupe.buffer.size); several passes when keys do not fit.
	// 0 picks 16 MiB. As much again at most keeps what the map's pass
	// decoded (32 bytes a record) for the rewrite; both grow as used.
	OffsetMapBytes int
	// Scratch, when not nil, lends this Clean its memory and keeps what
	// the Clean grew for the next (see CleanScratch).
	Scratch *CleanScratch
	// Throttle is called before each read and write of n bytes
	// (log.cleaner.io.max.bytes.per.second); nil: unthrottled. Its error
	// ends the Clean, which changes nothing then.
	Throttle func(ctx context.Context, bytes int) error
}

// CleanStats says what a Clean did.
type CleanStats struct {
	BytesRead, BytesWritten   int64
	RecordsRead, RecordsKept  int64
	SegmentsCleaned, Passes   int // segments rewritten; passes
	SegmentsWritten           int // files they were rewritten into (small neighbours are grouped)
	Duration                  time.Duration
	FirstDirty, CleanedTo     int64 // the cleaner checkpoint before and after
	BatchesDropped, EmptyKept int   // batches left out whole; batches kept empty (a producer's last)
}

// CleanCandidate measures the log against p for a Clean bounded by upTo
// (see CleanOptions.UpTo) at now. It reads no file: segment sizes and
// timestamps only. With p.Compact false the candidate is empty.
func (l *Log) CleanCandidate(p CleanPolicy, upTo int64, now time.Time) CleanCandidate {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.candidateLocked(p, upTo, now)
}

// candidateLocked is CleanCandidate under mu. The cleanable end is a
// segment base: the first segment that is active, reaches upTo, holds a
// record newer than min.compaction.lag.ms, or holds a batch a scrub found
// corrupt, ends the range.
func (l *Log) candidateLocked(p CleanPolicy, upTo int64, now time.Time) CleanCandidate {
	c := CleanCandidate{FirstDirty: max(l.cleanedTo, l.logStart)}
	if fu, ok := l.firstUnstableLocked(); ok {
		upTo = min(upTo, fu) // never past an open transaction
	}
	for _, t := range l.pstate.ended {
		if t.marker >= upTo { // nor one whose marker is not below upTo
			upTo = min(upTo, max(t.first, l.logStart))
		}
	}
	if !p.Compact || l.closed || len(l.segs) == 0 {
		c.CleanableEnd = c.FirstDirty
		return c
	}
	if l.deleteHorizon != 0 {
		c.DeleteHorizon = l.deleteHorizon
		c.HorizonDue = now.UnixMilli() >= l.deleteHorizon
	}
	lagEdge := now.Add(-p.MinCompactionLag).UnixMilli()
	end := l.segs[0].base
	for _, s := range l.segs[:len(l.segs)-1] {
		if s.next > upTo || (p.MinCompactionLag > 0 && s.maxTs != noTimestamp && s.maxTs > lagEdge) ||
			(l.corrupt != nil && l.corrupt.Segment == s.base) {
			break
		}
		end = s.next
	}
	c.CleanableEnd = max(end, c.FirstDirty)
	maxEdge := int64(-1 << 63)
	if p.MaxCompactionLag > 0 && p.MaxCompactionLag < time.Duration(1<<62) {
		maxEdge = now.Add(-p.MaxCompactionLag).UnixMilli()
	}
	for _, s := range l.segs {
		switch {
		case s.next <= c.FirstDirty:
			c.CleanBytes += s.size
		case s.base < c.CleanableEnd:
			c.DirtyBytes += s.size
			if s.size > 0 && s.firstTs != noTimestamp && s.firstTs < maxEdge {
				c.MustClean = true
			}
		}
	}
	if t := c.CleanBytes + c.DirtyBytes; t > 0 {
		c.DirtyRatio = float64(c.DirtyBytes) / float64(t)
	}
	return c
}

// Clean compacts the log as Kafka's LogCleaner does: it maps each key of
// the dirty section [FirstDirty, CleanableEnd) to its latest offset, then
// rewrites every segment below the end of what the map covers keeping only
// the latest record per key, and swaps the rewritten segments in. See
// clean's section in doc.go for what is kept. It holds no log lock while
// it reads and writes; only the swap takes them, briefly. One Clean runs
// at a time per log (others wait). With nothing cleanable it does nothing.
//
// Errors: ErrCleanRaced (a truncation or retention came first; clean again
// later), ctx's or Throttle's error, ErrClosed, ErrLogFailed, and I/O or
// ErrCorruptBatch errors that make the log uncleanable until someone looks
// (the node marks it so, as Kafka does). Nothing is swapped on an error
// except when a later pass of the same Clean fails: the earlier passes
// stay, each a complete swap.
func (l *Log) Clean(ctx context.Context, o CleanOptions) (st CleanStats, err error) {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	start := time.Now()
	if o.Now.IsZero() {
		o.Now = l.opts.Now()
	}
	if o.OffsetMapBytes <= 0 {
		o.OffsetMapBytes = 16 << 20
	}
	defer func() { st.Duration = time.Since(start) }() // st is the result
	l.mu.Lock()
	if err := l.writable(); err != nil {
		l.mu.Unlock()
		return st, err
	}
	cand := l.candidateLocked(o.Policy, o.UpTo, o.Now)
	gen := l.cutGen
	l.mu.Unlock()
	st.FirstDirty, st.CleanedTo = cand.FirstDirty, cand.FirstDirty
	if !o.Policy.Compact || cand.CleanableEnd <= cand.FirstDirty && !cand.HorizonDue {
		return st, nil
	}
	if err := l.removeCleanedFiles(); err != nil {
		return st, err
	}
	c := &cleaner{l: l, o: o, ctx: ctx, st: &st, gen: gen}
	defer c.close()
	defer c.useScratch(o.Scratch)()
	c.loadAborted(cand.CleanableEnd)
	dirty := cand.FirstDirty
	if dirty >= cand.CleanableEnd {
		// Nothing dirty, but a delete horizon has passed: one pass over
		// the clean section with an empty map removes what it allows.
		c.resetMap()
		c.seen.reset(0)
		c.mapEnd = dirty
		if err := c.pass(dirty, dirty); err != nil {
			return st, err
		}
		st.Passes++
		return st, nil
	}
	for dirty < cand.CleanableEnd {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		mapEnd, err := c.buildMap(dirty, cand.CleanableEnd)
		if err != nil {
			return st, err
		}
		if err := c.pass(dirty, mapEnd); err != nil {
			return st, err
		}
		st.Passes++
		dirty = mapEnd
		st.CleanedTo = dirty
	}
	return st, nil
}

// cleanable takes a reference on the segments a pass may rewrite: every
// segment from the first to the one holding offset end-1, none of them
// active. The caller releases them.
func (l *Log) cleanable(end int64) ([]*segment, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writable(); err != nil {
		return nil, err
	}
	n := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base >= end })
	n = min(n, len(l.segs)-1)
	segs := append([]*segment(nil), l.segs[:n]...)
	for i, s := range segs {
		if err := l.pinLocked(s); err != nil {
			for _, p := range segs[:i] {
				p.refs-- // their files stay open; the budget closes them when idle
			}
			return nil, err
		}
	}
	return segs, nil
}

// cleanedName is the file a rewritten segment is written to before the swap.
func cleanedName(base int64) string { return segmentName(base) + cleanedSuffix }

const cleanedSuffix = ".cleaned"

// removeCleanedFiles removes the .cleaned files an interrupted Clean left,
// durably: a later swap's record must never name a stale one.
func (l *Log) removeCleanedFiles() error {
	names, err := l.fs.List(l.dir)
	if err != nil {
		return fmt.Errorf("segment: clean: list %s: %w", l.dir, err)
	}
	removed := false
	for _, n := range names {
		if len(n) > len(cleanedSuffix) && n[len(n)-len(cleanedSuffix):] == cleanedSuffix {
			if err := l.fs.Remove(l.fs.PathJoin(l.dir, n)); err != nil {
				return fmt.Errorf("segment: clean: remove %s: %w", n, err)
			}
			removed = true
		}
	}
	if removed {
		return l.syncDir()
	}
	return nil
}

// writeCleaned creates the .cleaned file of base and returns it with its
// path; the caller writes, syncs and closes or keeps it.
func (l *Log) createCleaned(base int64) (vfs.File, string, error) {
	path := l.fs.PathJoin(l.dir, cleanedName(base))
	f, err := l.fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, "", fmt.Errorf("segment: clean: create %s: %w", path, err)
	}
	return f, path, nil
}
