package segment

import (
	"fmt"
	"sort"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// TruncateTo removes every batch at or after offset: a follower's answer to
// a diverging log (KIP-101/279). When offset falls inside a batch, that whole
// batch goes and the log end becomes its base offset, as in Kafka. The cut
// segment is sealed, durably, before anything else changes, and appends go
// to a new segment: no later recovery can read the old batches past the cut.
// A corrupt batch a scrub found at or below offset (Corruption) cuts the log
// at that batch instead, by its recorded position (scrub.go).
// Below the log start it is TruncateFullyAndStartAt(offset); when the batch
// to cut holds the log start, TruncateFullyAndStartAt(log start).
func (l *Log) TruncateTo(offset int64) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writable(); err != nil {
		return err
	}
	if offset >= l.leo {
		return nil
	}
	if offset < l.logStart {
		return l.truncateFullyLocked(offset)
	}
	l.cutGen++
	if err := l.commitPendingLocked(); err != nil {
		return err
	}
	var i int
	var seg *segment
	var pos, base int64
	if c := l.corrupt; c != nil && offset >= c.Offset {
		// Cut where the scrub found the damage, without reading it.
		i = sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > c.Segment }) - 1
		seg, pos, base = l.segs[i], c.Pos, c.Offset
	} else {
		i = sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > offset }) - 1
		seg = l.segs[i]
		var err error
		if pos, base, err = l.batchStart(seg, offset); err != nil {
			return err
		}
	}
	// In an offset hole (a cleaned log) the batch found starts past offset:
	// the log ends at offset all the same, so that a follower refetches
	// what its leader has there.
	base = min(base, offset)
	if base < l.logStart {
		// The batch to cut holds the log start: nothing readable is left.
		return l.truncateFullyLocked(l.logStart)
	}
	// Recompute what the kept bytes of seg hold (timestamps) by their headers.
	firstTs, maxTs, maxTsOff, err := l.headerStats(seg, pos)
	if err != nil {
		return err
	}
	wb := l.idx.db.NewBatch()
	defer wb.Close()
	wb.Set(l.k.segment(seg.base), segRecord{end: pos, next: base, firstTs: firstTs, maxTs: maxTs,
		cleaned: seg.cleaned, cleanedAt: seg.cleanedAt}.encode(), nil)
	for _, t := range l.segs[i+1:] {
		wb.Delete(l.k.segment(t.base), nil)
	}
	wb.DeleteRange(l.k.offset(base), l.k.upper(kindOffset), nil)
	wb.DeleteRange(l.k.abort(base), l.k.upper(kindAbort), nil)
	if err := l.dropTimeEntriesFrom(base, wb); err != nil {
		return err
	}
	for _, e := range l.epochs.truncateFromEnd(base) {
		wb.Delete(l.k.epoch(e), nil)
	}
	if l.cleanedTo > base {
		wb.Set(l.k.cleaner(), u64bytes(base), nil)
	}
	if l.ckpt.recoveryPoint > base || l.ckpt.rpBase > seg.base {
		l.ckpt.recoveryPoint, l.ckpt.rpBase, l.ckpt.rpPos, l.ckpt.rpFirst, l.ckpt.rpMaxTs = base, seg.base, pos, firstTs, maxTs
	}
	wb.Set(l.k.meta(), l.ckpt.encode(), nil)
	if err := wb.Commit(pebble.Sync); err != nil {
		l.failed = fmt.Errorf("%w: truncate: %v", ErrLogFailed, err)
		return l.failed
	}
	// The seal is durable; now the files may go.
	wb.Reset()
	for _, t := range l.segs[i+1:] {
		l.removeSegment(t, wb)
	}
	l.segs = l.segs[:i+1]
	if l.corrupt != nil && l.corrupt.Offset >= base {
		l.corrupt = nil
	}
	l.cleanedTo = min(l.cleanedTo, base)
	seg.size, seg.next, seg.firstTs, seg.maxTs, seg.maxTsOff, seg.sealed = pos, base, firstTs, maxTs, maxTsOff, true
	if pos == 0 {
		l.removeSegment(seg, wb)
		l.segs = l.segs[:i]
	}
	// Snapshots past the cut describe removed batches; restartLocked
	// makes their removal durable before any append.
	if err := l.removeSnapshotsAboveLocked(base); err != nil {
		l.failed = fmt.Errorf("%w: truncate: %v", ErrLogFailed, err)
		return l.failed
	}
	if err := l.restartLocked(base, wb); err != nil {
		return err
	}
	// Roll the producer state back: the newest snapshot at or below the
	// cut, then the batches after it.
	l.rebuildProducersLocked(base)
	return nil
}

// restartLocked finishes a truncation: the log now ends at next; removals in
// wb are made durable, then a fresh active segment starts at next.
func (l *Log) restartLocked(next int64, wb *pebble.Batch) error {
	if err := l.syncDir(); err != nil {
		l.failed = fmt.Errorf("%w: truncate: %v", ErrLogFailed, err)
		return l.failed
	}
	l.dirDirty = false
	if err := wb.Commit(pebble.Sync); err != nil {
		l.failed = fmt.Errorf("%w: truncate: %v", ErrLogFailed, err)
		return l.failed
	}
	seg, err := l.createSegment(next)
	if err != nil {
		l.failed = fmt.Errorf("%w: truncate: %v", ErrLogFailed, err)
		return l.failed
	}
	l.segs = append(l.segs, seg)
	l.leo = next
	l.gen++
	l.maxTs = noTimestamp
	for _, s := range l.segs {
		l.maxTs = max(l.maxTs, s.maxTs)
	}
	l.lastTsKey = l.maxTs
	l.tsPoints.truncate(next)
	if l.flushed.Load() > next {
		l.flushed.Store(next)
	}
	if l.flushPos.offset > next {
		l.flushPos = position{offset: l.ckpt.recoveryPoint, base: l.ckpt.rpBase, pos: l.ckpt.rpPos, firstTs: l.ckpt.rpFirst, maxTs: l.ckpt.rpMaxTs}
	}
	l.unflushed = 0
	return nil
}

// TruncateFullyAndStartAt empties the log and restarts it at offset: a
// follower whose log lies wholly outside the leader's.
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writable(); err != nil {
		return err
	}
	return l.truncateFullyLocked(offset)
}

func (l *Log) truncateFullyLocked(offset int64) error {
	if offset < 0 {
		return fmt.Errorf("%w: start offset %d", ErrOffsetOutOfRange, offset)
	}
	if err := l.commitPendingLocked(); err != nil {
		return err
	}
	wb := l.idx.db.NewBatch()
	defer wb.Close()
	lo, hi := l.k.all()
	wb.DeleteRange(lo, hi, nil)
	l.cleanedTo = 0
	l.cutGen++
	// Every old segment is sealed empty until its file is gone.
	for _, s := range l.segs {
		wb.Set(l.k.segment(s.base), segRecord{end: 0, next: s.base, firstTs: noTimestamp, maxTs: noTimestamp}.encode(), nil)
	}
	// No snapshot may survive to describe the new offsets: they go, for
	// good, before the new log start is recorded.
	if err := l.removeSnapshotsAboveLocked(-1); err != nil {
		l.failed = fmt.Errorf("%w: truncate: %v", ErrLogFailed, err)
		return l.failed
	}
	if err := l.syncDir(); err != nil {
		l.failed = fmt.Errorf("%w: truncate: %v", ErrLogFailed, err)
		return l.failed
	}
	l.pstate = newProducerState(offset > 0)
	l.logStart = offset
	l.gen++
	l.ckpt = metaRecord{logStart: offset, recoveryPoint: offset, rpBase: offset, rpFirst: noTimestamp, rpMaxTs: noTimestamp}
	wb.Set(l.k.meta(), l.ckpt.encode(), nil)
	if err := wb.Commit(pebble.Sync); err != nil {
		l.failed = fmt.Errorf("%w: truncate: %v", ErrLogFailed, err)
		return l.failed
	}
	wb.Reset()
	for _, s := range l.segs {
		l.removeSegment(s, wb)
	}
	l.segs = nil
	l.corrupt = nil
	l.epochs = epochCache{}
	l.tsPoints.reset()
	l.flushed.Store(offset)
	l.flushPos = position{offset: offset, base: offset, firstTs: noTimestamp, maxTs: noTimestamp}
	return l.restartLocked(offset, wb)
}

// AdvanceLogStart moves the log start offset forward to offset
// (DeleteRecords): offsets below it become unreadable and whole segments
// below it are deleted. The caller bounds offset by the high watermark.
func (l *Log) AdvanceLogStart(offset int64) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writable(); err != nil {
		return err
	}
	if offset > l.leo {
		return fmt.Errorf("%w: log start %d past the log end %d", ErrOffsetOutOfRange, offset, l.leo)
	}
	if offset <= l.logStart {
		return nil
	}
	return l.deleteBelowLocked(offset, sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > offset })-1)
}

// deleteBelowLocked sets the log start to start and deletes segs[:n]. The
// new start is recorded durably before any file goes.
func (l *Log) deleteBelowLocked(start int64, n int) error {
	l.cutGen++
	if err := l.commitPendingLocked(); err != nil {
		return err
	}
	wb := l.idx.db.NewBatch()
	defer wb.Close()
	l.logStart = start
	l.gen++
	dropped, moved := l.epochs.truncateFromStart(start)
	for _, e := range dropped {
		wb.Delete(l.k.epoch(e), nil)
	}
	if moved != nil {
		wb.Set(l.k.epoch(moved.Epoch), u64bytes(moved.StartOffset), nil)
	}
	gone := l.segs[:n]
	l.segs = l.segs[n:]
	if l.corrupt != nil && l.corrupt.Segment < l.segs[0].base {
		l.corrupt = nil
	}
	if err := l.dropTimeEntriesBelow(l.segs[0].base, wb); err != nil {
		return err
	}
	// Aborted transactions whose markers lie below the log start can
	// overlap no fetch.
	wb.DeleteRange(l.k.abort(0), l.k.abort(start), nil)
	if !l.hasSegment(l.ckpt.rpBase) {
		first := l.segs[0]
		l.ckpt.recoveryPoint, l.ckpt.rpBase, l.ckpt.rpPos, l.ckpt.rpFirst, l.ckpt.rpMaxTs = first.base, first.base, 0, noTimestamp, noTimestamp
	}
	l.ckpt.logStart = start
	wb.Set(l.k.meta(), l.ckpt.encode(), nil)
	if err := wb.Commit(pebble.Sync); err != nil {
		l.failed = fmt.Errorf("%w: log start: %v", ErrLogFailed, err)
		return l.failed
	}
	// The new log start is durable; the files below it may go.
	wb.Reset()
	for _, s := range gone {
		l.removeSegment(s, wb)
	}
	// The renames become durable before the records of the files go, so
	// that no file comes back after a crash without its record.
	if err := l.syncDir(); err != nil {
		l.failed = fmt.Errorf("%w: log start: %v", ErrLogFailed, err)
		return l.failed
	}
	l.pruneSnapshotsLocked() // the snapshots of the segments gone go too
	return wb.Commit(pebble.NoSync)
}

// RetentionResult says what EnforceRetention deleted.
type RetentionResult struct {
	SegmentsDeleted int
	BytesDeleted    int64
	LogStartOffset  int64
}

// EnforceRetention deletes the oldest segments that retention.ms (newest
// timestamp older than now minus RetentionMs, or emptied by the cleaner)
// or retention.bytes (log larger
// than RetentionBytes without them) condemn, whole segments only, never one
// holding offsets at or past highWatermark. An expired active segment is
// rolled first so that it can go too, as Kafka does. The log start offset
// advances to the first kept segment.
func (l *Log) EnforceRetention(now time.Time, highWatermark int64) (RetentionResult, error) {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	var res RetentionResult
	if err := l.writable(); err != nil {
		return res, err
	}
	// A segment the cleaner emptied has no timestamp and holds nothing:
	// under retention.ms it goes (else it would hold back those after it).
	expired := func(s *segment) bool {
		return l.opts.RetentionMs >= 0 && (s.maxTs != noTimestamp && now.UnixMilli()-s.maxTs > l.opts.RetentionMs.Milliseconds() ||
			s.size == 0 && s.cleaned)
	}
	if act := l.active(); act.size > 0 && act.next <= highWatermark && expired(act) {
		if err := l.rollLocked(); err != nil {
			return res, err
		}
	}
	var total int64
	for _, s := range l.segs {
		total += s.size
	}
	n := 0
	for n < len(l.segs)-1 {
		s := l.segs[n]
		if s.next > highWatermark {
			break
		}
		overSize := l.opts.RetentionBytes >= 0 && total-s.size >= l.opts.RetentionBytes
		if !expired(s) && !overSize && s.next > l.logStart {
			break
		}
		total -= s.size
		res.BytesDeleted += s.size
		n++
	}
	res.LogStartOffset = l.logStart
	if n == 0 {
		return res, nil
	}
	res.SegmentsDeleted = n
	start := max(l.logStart, l.segs[n].base)
	res.LogStartOffset = start
	return res, l.deleteBelowLocked(start, n)
}

// Close checkpoints the log with the clean-shutdown marker and closes its
// files. A failed log closes without the marker, so that the next Open
// recovers.
func (l *Log) Close() error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	var err error
	if l.Err() == nil {
		err = l.checkpointLocked(true)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	l.closed = true
	l.closeFiles()
	_ = l.pendBatch.Close()
	return err
}

// Delete closes the log and removes its files and index records (topic
// deletion). The index records go first, durably.
func (l *Log) Delete() error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	l.closed = true
	lo, hi := l.k.all()
	if err := l.idx.db.DeleteRange(lo, hi, pebble.Sync); err != nil {
		return fmt.Errorf("segment: delete %s: %w", l.dir, err)
	}
	l.closeFiles()
	_ = l.pendBatch.Close()
	return l.fs.RemoveAll(l.dir)
}

// batchStart returns the position and base offset of the batch of seg that
// holds offset (seg.size and seg.next when offset is at seg's end).
func (l *Log) batchStart(seg *segment, offset int64) (pos, base int64, err error) {
	if offset >= seg.next {
		return seg.size, seg.next, nil
	}
	if pos, err = l.lookupPos(seg, offset); err != nil {
		return 0, 0, err
	}
	if err := l.openLocked(seg); err != nil {
		return 0, 0, err
	}
	var hdr [offLastOffsetDelta + 4]byte
	for pos < seg.size {
		if _, err := readFull(seg.file, hdr[:], pos); err != nil {
			return 0, 0, err
		}
		if nextOffsetAt(hdr[:]) > offset {
			return pos, baseOffsetAt(hdr[:]), nil
		}
		n := frameLength(hdr[:], l.opts.MaxBatchBytes)
		if n < 0 {
			return 0, 0, fmt.Errorf("%w: bad batch length at %s position %d", ErrCorruptBatch, seg.path, pos)
		}
		pos += int64(n)
	}
	return seg.size, seg.next, nil
}

// headerStats returns the first and largest batch maxTimestamp of seg's
// bytes before end, and the base offset of the first batch with the
// largest, by reading batch headers only.
func (l *Log) headerStats(seg *segment, end int64) (firstTs, maxTs, maxTsOff int64, err error) {
	firstTs, maxTs, maxTsOff = noTimestamp, noTimestamp, -1
	if err := l.openLocked(seg); err != nil {
		return 0, 0, 0, err
	}
	r := headerReader{f: seg, end: end, buf: make([]byte, headerReadSize), maxBatch: l.opts.MaxBatchBytes}
	for pos := int64(0); pos < end; {
		h, err := r.at(pos)
		if err != nil {
			return 0, 0, 0, err
		}
		if firstTs == noTimestamp {
			firstTs = h.MaxTimestamp
		}
		if h.MaxTimestamp > maxTs {
			maxTs, maxTsOff = h.MaxTimestamp, h.BaseOffset
		}
		pos += int64(h.Size())
	}
	return firstTs, maxTs, maxTsOff, nil
}
