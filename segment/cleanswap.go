package segment

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// cleanedSeg is one rewritten segment, fsynced in its .cleaned file,
// waiting for the swap.
type cleanedSeg struct {
	old            *segment
	srcSize        int64 // old's size when it was read: a truncation changes it
	file           vfs.File
	path           string
	size           int64
	firstTs, maxTs int64
	lastIndexPos   int64
	index          []indexEntry
	cleanedAt      int64
}

// pass rewrites the segments below mapEnd with the map built over
// [dirty, mapEnd) and swaps them in.
func (c *cleaner) pass(dirty, mapEnd int64) error {
	l := c.l
	segs, err := l.cleanable(mapEnd)
	if err != nil {
		return err
	}
	defer l.releaseAll(segs)
	l.mu.Lock()
	last := make(map[int64]int64, len(l.pstate.producers))
	for pid, e := range l.pstate.producers {
		if n := len(e.batches); n > 0 {
			last[pid] = e.batches[n-1].lastOffset
		}
	}
	// With an empty active segment the log's last batch stays (empty if
	// need be), so that the log end stays a batch's end: else a follower
	// fetching below it would find nothing to copy and never catch up.
	logLast := int64(-1)
	if l.active().size == 0 {
		logLast = l.leo
	}
	cleanedAt := make([]int64, len(segs))
	for i, s := range segs {
		cleanedAt[i] = s.cleanedAt
		if !s.cleaned {
			cleanedAt[i] = c.o.Now.UnixMilli()
		}
	}
	l.mu.Unlock()
	var outs []cleanedSeg
	ok := false
	defer func() {
		if !ok {
			for _, o := range outs {
				_ = o.file.Close()
				_ = l.fs.Remove(o.path)
			}
		}
	}()
	clear(c.txnSeen)
	c.goneAborts, c.goneMarker = c.goneAborts[:0], -1
	for i, s := range segs {
		wasCleaned := cleanedAt[i]
		if !s.cleaned {
			wasCleaned = noTimestamp // its tombstones were never through a clean
		}
		o, err := c.rewrite(s, wasCleaned, last, logLast)
		if o.file != nil {
			o.cleanedAt = cleanedAt[i]
			outs = append(outs, o)
		}
		if err != nil {
			return err
		}
	}
	if err := c.dropStaleSnapshots(); err != nil {
		return err
	}
	if err := l.swapCleaned(outs, mapEnd, c.gen); err != nil {
		return err
	}
	ok = true
	c.forgetGoneAborts()
	c.st.SegmentsCleaned += len(outs)
	return nil
}

// rewrite writes what stays of s to its .cleaned file and fsyncs it.
// cleanedAt is when s was first cleaned (noTimestamp: never); the batches
// that stay even when emptied are each producer's last (last: producer id
// -> its last batch's last offset) and the one ending at logLast.
func (c *cleaner) rewrite(s *segment, cleanedAt int64, last map[int64]int64, logLast int64) (cleanedSeg, error) {
	l := c.l
	f, path, err := l.createCleaned(s.base)
	if err != nil {
		return cleanedSeg{}, err
	}
	o := cleanedSeg{old: s, file: f, path: path, firstTs: noTimestamp, maxTs: noTimestamp}
	c.out = c.out[:0]
	var written int64 // bytes of o flushed to f
	c.rd.reset(l, s)
	o.srcSize = c.rd.end
	for {
		h, b, _, more, err := c.rd.next(c)
		if err != nil {
			return o, err
		}
		if !more {
			break
		}
		start := len(c.out)
		lastOff, known := last[h.ProducerID]
		keepBatch := h.ProducerID >= 0 && known && lastOff == h.LastOffset() || h.NextOffset() == logLast
		if err := c.cleanBatch(h, b, cleanedAt, keepBatch); err != nil {
			return o, err
		}
		if len(c.out) == start {
			continue
		}
		pos := written + int64(start)
		nh := parseHeader(c.out[start:])
		if o.firstTs == noTimestamp {
			o.firstTs = nh.MaxTimestamp
		}
		o.maxTs = max(o.maxTs, nh.MaxTimestamp)
		if pos > 0 && pos-o.lastIndexPos >= l.opts.IndexIntervalBytes {
			o.lastIndexPos = pos
			o.index = append(o.index, indexEntry{nh.BaseOffset, pos})
		}
		if len(c.out) >= cleanReadSize {
			written += int64(len(c.out))
			if err := c.flushOut(f); err != nil {
				return o, err
			}
		}
	}
	written += int64(len(c.out))
	if err := c.flushOut(f); err != nil {
		return o, err
	}
	o.size = written
	if err := f.Sync(); err != nil {
		return o, fmt.Errorf("segment: clean: fsync %s: %w", path, err)
	}
	return o, nil
}

// swapCleaned swaps the rewritten segments in for the old ones, which must
// still be the log's first segments, with no truncation or deletion since
// the Clean began (gen). The commit point is one synced Pebble
// batch: the new segment records and offset index entries, the cleaner
// checkpoint, and a swap record naming the segments whose .cleaned files
// are to be renamed over their .log files; recovery finishes a swap whose
// record it finds (finishSwap). Readers of an old segment keep reading its
// file; one whose index lookup raced with the swap is told to retry
// (errSegmentReplaced).
func (l *Log) swapCleaned(outs []cleanedSeg, cleanedTo, gen int64) error {
	if len(outs) == 0 {
		return nil
	}
	// flushMu keeps out everything else that changes segment files
	// (flush, truncation, retention) for the whole swap; Log.mu, which
	// appends and reads wait for, is held only while the index and the
	// segment list change: the directory fsyncs and the renames happen
	// outside it.
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	// The .cleaned files' directory entries must be durable before the
	// record that names them.
	if err := l.syncDir(); err != nil {
		return fmt.Errorf("segment: clean: %w", err)
	}
	if err := l.commitSwapLocked(outs, cleanedTo, gen); err != nil {
		return err
	}
	// The swap is committed: the segment list already holds the cleaned
	// files (open under their .cleaned names); give them their names.
	// A crash from here on is finished by the next open (finishSwap).
	fail := func(err error) error {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.failed = fmt.Errorf("%w: clean: %v (reopen finishes the swap)", ErrLogFailed, err)
		return l.failed
	}
	for _, o := range outs {
		if err := l.fs.Rename(o.path, o.old.path); err != nil {
			return fail(fmt.Errorf("rename %s: %v", o.path, err))
		}
	}
	if err := l.syncDir(); err != nil {
		return fail(err)
	}
	if err := l.idx.db.Delete(l.k.swap(), pebble.Sync); err != nil {
		return fail(err)
	}
	return nil
}

// commitSwapLocked takes Log.mu, checks that nothing raced the Clean,
// commits the swap record with the cleaned segments' index (one synced
// Pebble batch) and puts the cleaned segments in the list.
func (l *Log) commitSwapLocked(outs []cleanedSeg, cleanedTo, gen int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writable(); err != nil {
		return err
	}
	if l.cutGen != gen {
		return ErrCleanRaced // the map may name offsets a truncation removed
	}
	for i, o := range outs {
		if i >= len(l.segs)-1 || l.segs[i] != o.old || o.old.removed || o.old.size != o.srcSize {
			return ErrCleanRaced
		}
	}
	if err := l.commitPendingLocked(); err != nil {
		return err
	}
	wb := l.idx.db.NewBatch()
	defer wb.Close()
	var bases []byte
	for _, o := range outs {
		s := o.old
		bases = binary.BigEndian.AppendUint64(bases, uint64(s.base))
		wb.Set(l.k.segment(s.base), segRecord{end: o.size, next: s.next, firstTs: o.firstTs, maxTs: o.maxTs,
			cleaned: true, cleanedAt: o.cleanedAt}.encode(), nil)
		wb.DeleteRange(l.k.offset(s.base), l.k.offset(max(s.next, s.base+1)), nil)
		for _, e := range o.index {
			var v [binary.MaxVarintLen64]byte
			wb.Set(l.k.offset(e.offset), binary.AppendUvarint(v[:0], uint64(e.pos)), nil)
		}
	}
	wb.Set(l.k.swap(), bases, nil)
	wb.Set(l.k.cleaner(), u64bytes(cleanedTo), nil)
	// Every byte below endBase is fsynced now: recovery need not scan it.
	endBase := l.segs[len(outs)].base
	ckpt := l.ckpt
	if ckpt.recoveryPoint < endBase || ckpt.rpBase < endBase {
		ckpt.recoveryPoint, ckpt.rpBase, ckpt.rpPos, ckpt.rpFirst, ckpt.rpMaxTs = endBase, endBase, 0, noTimestamp, noTimestamp
		ckpt.clean = false
		wb.Set(l.k.meta(), ckpt.encode(), nil)
	}
	for _, o := range outs {
		o.old.replaced.Store(true) // before the index entries change
	}
	if err := wb.Commit(pebble.Sync); err != nil {
		l.failed = fmt.Errorf("%w: clean: swap: %v", ErrLogFailed, err)
		return l.failed
	}
	l.ckpt = ckpt
	for i, o := range outs {
		old := o.old
		l.segs[i] = &segment{base: old.base, path: old.path, file: o.file, size: o.size, next: old.next,
			firstTs: o.firstTs, maxTs: o.maxTs, maxTsOff: -1, sealed: true, lastIndexPos: o.lastIndexPos,
			cleaned: true, cleanedAt: o.cleanedAt}
		if old.refs == 0 {
			_ = old.file.Close()
		} else {
			old.closeLate = true
		}
	}
	l.cleanedTo = cleanedTo
	l.tsPoints.reset() // its batches may be gone or have lower timestamps
	if l.flushed.Load() < endBase {
		l.flushed.Store(endBase)
		l.flushPos = position{offset: endBase, base: endBase, firstTs: noTimestamp, maxTs: noTimestamp}
	}
	return nil
}

// finishSwap completes a swap that committed before a crash: each named
// segment's .cleaned file, when still there, is renamed over its .log
// file; then the swap record goes. Other .cleaned files are left for
// open to remove (a Clean that did not commit). Runs before open lists
// the segment files.
func (l *Log) finishSwap() error {
	v, ok, err := l.idx.get(l.k.swap())
	if err != nil || !ok {
		return err
	}
	if len(v)%8 != 0 {
		return fmt.Errorf("%w: swap record of %d bytes", ErrCorruptIndex, len(v))
	}
	for p := 0; p < len(v); p += 8 {
		base := decodeU64(v[p:])
		from := l.fs.PathJoin(l.dir, cleanedName(base))
		if _, err := l.fs.Stat(from); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // renamed before the crash
			}
			return err
		}
		if err := l.fs.Rename(from, l.fs.PathJoin(l.dir, segmentName(base))); err != nil {
			return err
		}
	}
	if err := l.syncDir(); err != nil {
		return err
	}
	return l.idx.db.Delete(l.k.swap(), pebble.Sync)
}

// loadCleanedTo reads the cleaner checkpoint (0 when the log was never cleaned).
func (l *Log) loadCleanedTo() error {
	v, ok, err := l.idx.get(l.k.cleaner())
	if err != nil || !ok {
		return err
	}
	if len(v) != 8 {
		return fmt.Errorf("%w: cleaner checkpoint of %d bytes", ErrCorruptIndex, len(v))
	}
	l.cleanedTo = decodeU64(v)
	return nil
}
