package segment

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// RecoveryReport says what opening a log found and did. The node logs it and
// exports it as metrics.
type RecoveryReport struct {
	Clean           bool   // the last shutdown was clean: nothing was scanned
	ScannedFrom     int64  // offset the scan started at (the recovery point)
	BatchesScanned  int    // batches validated by the scan
	BytesScanned    int64  // bytes validated by the scan
	LogEndOffset    int64  // log end offset after recovery
	BytesCut        int64  // bytes dropped: the torn or corrupt tail
	BatchesCut      int    // batches framed in the dropped tail (at least this many)
	SegmentsDeleted int    // segment files dropped by the cut or below the log start
	CutReason       string // why the scan stopped early; empty when it did not
	// Damaged names the sealed segments before the scan start whose files
	// are shorter than their seals (bytes lost after they were fsynced: a
	// damaged disk, or a file changed behind the log's back). They are not
	// cut: later segments stay readable, and a read in the missing bytes
	// is ErrCorruptBatch. The node logs and exports them.
	Damaged []DamagedSegment
	// Producers says how the idempotent-producer state was rebuilt.
	Producers ProducerRecovery
}

// DamagedSegment is a sealed segment whose file is shorter than its seal.
type DamagedSegment struct {
	Base     int64 // base offset (the file name)
	SealEnd  int64 // the end its seal records
	FileSize int64 // the bytes its file holds
}

// Open opens the log of one replica in dir (by convention
// <log.dir>/<topic>-<partition>), creating it when absent, with its index
// records under name in idx. After an unclean shutdown it scans from the
// recovery point, validates every batch, cuts the log at the first bad byte
// (sealing the segment there so that no later scan can resurrect batches
// past the cut), and rebuilds the index entries past the recovery point.
func Open(fs vfs.FS, dir, name string, idx *Index, opts Options) (*Log, RecoveryReport, error) {
	opts.EnsureDefaults()
	var rep RecoveryReport
	if err := opts.Validate(); err != nil {
		return nil, rep, err
	}
	l := &Log{fs: fs, dir: dir, name: name, idx: idx, k: newKeys(name), opts: opts,
		maxTs: noTimestamp, lastTsKey: noTimestamp, pendBatch: idx.db.NewBatch()}
	if err := l.open(&rep); err != nil {
		l.closeFiles()
		return nil, rep, fmt.Errorf("segment: open log %s: %w", dir, err)
	}
	l.mu.Lock()
	l.shareFilesLocked()
	l.mu.Unlock()
	// After an unclean shutdown the aborted-transaction index entries
	// past the recovery point may be lost or stale: the producer state is
	// rebuilt from a snapshot at or below it, rewriting them.
	limit := l.leo
	if !rep.Clean {
		limit = l.ckpt.recoveryPoint
	}
	pr, err := l.recoverProducers(limit)
	if err != nil {
		l.mu.Lock()
		l.closeFiles()
		l.mu.Unlock()
		return nil, rep, fmt.Errorf("segment: open log %s: producer state: %w", dir, err)
	}
	rep.Producers = pr
	return l, rep, nil
}

func (l *Log) open(rep *RecoveryReport) error {
	if err := mkdirAllSynced(l.fs, l.dir); err != nil {
		return err
	}
	// Whether the FS gives descriptors (Unwritten asks the kernel about
	// them), known without opening a segment file.
	if d, err := l.fs.OpenDir(l.dir); err == nil {
		l.noFd = d.Fd() == vfs.InvalidFd
		_ = d.Close()
	} else {
		return err
	}
	if err := l.finishSwap(); err != nil {
		return fmt.Errorf("finish a clean's swap: %w", err)
	}
	if err := l.loadCleanedTo(); err != nil {
		return err
	}
	names, err := l.fs.List(l.dir)
	if err != nil {
		return err
	}
	sort.Strings(names)
	var bases []int64
	for _, n := range names {
		if strings.HasSuffix(n, deletedSuffix) || strings.HasSuffix(n, cleanedSuffix) {
			if err := l.fs.Remove(l.fs.PathJoin(l.dir, n)); err != nil {
				return err
			}
			continue
		}
		if b, ok := parseSegmentName(n); ok {
			bases = append(bases, b)
		}
	}

	meta, haveMeta, err := l.loadMeta()
	if err != nil {
		return err
	}
	recs, err := l.loadSegRecords()
	if err != nil {
		return err
	}
	if err := l.loadEpochs(); err != nil {
		return err
	}
	wb := l.idx.db.NewBatch()
	defer wb.Close()

	// Records of files that are gone (removed before a crash) go too.
	present := map[int64]bool{}
	for _, b := range bases {
		present[b] = true
	}
	for b := range recs {
		if !present[b] {
			wb.Delete(l.k.segment(b), nil)
			delete(recs, b)
		}
	}
	if !haveMeta && len(bases) > 0 {
		meta.logStart = bases[0]
		meta.recoveryPoint, meta.rpBase = bases[0], bases[0]
	}
	l.logStart = meta.logStart
	// Whole segments below the log start are leftovers of retention.
	for len(bases) > 1 && bases[1] <= l.logStart {
		if err := l.fs.Remove(l.fs.PathJoin(l.dir, segmentName(bases[0]))); err != nil {
			return err
		}
		wb.Delete(l.k.segment(bases[0]), nil)
		delete(recs, bases[0])
		bases = bases[1:]
		rep.SegmentsDeleted++
	}
	if len(bases) > 0 {
		// Index entries below the first segment describe deleted segments.
		wb.DeleteRange(l.k.offset(0), l.k.offset(bases[0]), nil)
		if err := l.dropTimeEntriesBelow(bases[0], wb); err != nil {
			return err
		}
	}
	var short []DamagedSegment
	for _, b := range bases {
		// Files open on first use (files.go): a clean log opens none
		// here, a scan only those it reads.
		st, err := l.fs.Stat(l.fs.PathJoin(l.dir, segmentName(b)))
		if err != nil {
			return err
		}
		s := &segment{base: b, path: l.fs.PathJoin(l.dir, segmentName(b)), size: st.Size(),
			next: b, firstTs: noTimestamp, maxTs: noTimestamp, maxTsOff: -1, fromDisk: st.Size()}
		if r, ok := recs[b]; ok {
			if s.size < r.end {
				short = append(short, DamagedSegment{Base: b, SealEnd: r.end, FileSize: s.size})
			}
			s.sealed = true
			s.size = min(s.size, r.end)
			s.next, s.firstTs, s.maxTs = r.next, r.firstTs, r.maxTs
			s.cleaned, s.cleanedAt = r.cleaned, r.cleanedAt
		}
		l.segs = append(l.segs, s)
	}

	clean := haveMeta && meta.clean && len(l.segs) > 0 && !l.active().sealed &&
		l.active().base == meta.rpBase && l.active().size == meta.rpPos
	if clean {
		act := l.active()
		act.next, act.firstTs, act.maxTs = meta.recoveryPoint, meta.rpFirst, meta.rpMaxTs
		rep.Clean = true
		rep.ScannedFrom = meta.recoveryPoint
	} else if err := l.scan(meta, wb, rep); err != nil {
		return err
	}
	// Damage the scan did not see (and cut) is reported.
	for _, d := range short {
		for _, s := range l.segs {
			if s.base == d.Base && s.next <= rep.ScannedFrom {
				rep.Damaged = append(rep.Damaged, d)
			}
		}
	}
	// A scan that started below the log start re-learnt the epochs of the
	// batches there; the cache starts at the log start, as after
	// AdvanceLogStart.
	dropped, moved := l.epochs.truncateFromStart(l.logStart)
	for _, e := range dropped {
		wb.Delete(l.k.epoch(e), nil)
	}
	if moved != nil {
		wb.Set(l.k.epoch(moved.Epoch), u64bytes(moved.StartOffset), nil)
	}
	for _, s := range l.segs {
		l.maxTs = max(l.maxTs, s.maxTs)
	}
	if len(l.segs) > 0 {
		l.leo = l.active().next
	}
	l.lastTsKey = l.maxTs

	if len(l.segs) == 0 || l.leo < l.logStart {
		// Nothing valid at or after the log start (a fresh log, or a full
		// truncation that a crash interrupted): start empty at the log start.
		for _, s := range l.segs {
			l.removeSegment(s, wb)
		}
		l.segs = nil
		l.leo = l.logStart
		l.epochs.truncateFromEnd(0)
		// No index entry, epoch or seal of the old incarnation may survive:
		// the new segment reuses offsets (and maybe the name) they describe.
		for _, kind := range []byte{kindOffset, kindTime, kindEpoch, kindSegment} {
			wb.DeleteRange(l.k.kind(kind), l.k.upper(kind), nil)
		}
		l.maxTs, l.lastTsKey = noTimestamp, noTimestamp
		l.tsPoints.reset()
	}
	if n := len(l.segs); n > 0 && l.segs[n-1].sealed {
		if l.segs[n-1].size == 0 && l.segs[n-1].base == l.leo {
			// Sealed empty at the log end: drop it so the name can be reused.
			l.removeSegment(l.segs[n-1], wb)
			l.segs = l.segs[:n-1]
		}
	}
	if len(l.segs) == 0 || l.active().sealed {
		// Make the removals durable before reusing a name.
		if err := l.syncDir(); err != nil {
			return err
		}
		seg, err := l.createSegment(l.leo)
		if err != nil {
			return err
		}
		l.segs = append(l.segs, seg)
	} else {
		wb.Delete(l.k.segment(l.active().base), nil)
	}

	// The recovery point stays where it was: what the scan validated may not
	// be fsynced yet (a process crash keeps the page cache). The next
	// Checkpoint moves it.
	l.ckpt = metaRecord{logStart: l.logStart, recoveryPoint: meta.recoveryPoint, rpBase: meta.rpBase,
		rpPos: meta.rpPos, rpFirst: meta.rpFirst, rpMaxTs: meta.rpMaxTs}
	if l.ckpt.recoveryPoint > l.leo || !l.hasSegment(l.ckpt.rpBase) {
		first := l.segs[0]
		l.ckpt.recoveryPoint, l.ckpt.rpBase, l.ckpt.rpPos = first.base, first.base, 0
		l.ckpt.rpFirst, l.ckpt.rpMaxTs = noTimestamp, noTimestamp
	}
	wb.Set(l.k.meta(), l.ckpt.encode(), nil) // clean=false while open
	// Files removed above must be gone for good before their records are:
	// a file that came back after a crash without its seal or log start
	// record would be read as valid.
	if err := l.syncDir(); err != nil {
		return err
	}
	l.dirDirty = false
	if err := wb.Commit(pebble.Sync); err != nil {
		return err
	}
	l.flushed.Store(l.ckpt.recoveryPoint)
	l.flushPos = position{offset: l.ckpt.recoveryPoint, base: l.ckpt.rpBase, pos: l.ckpt.rpPos,
		firstTs: l.ckpt.rpFirst, maxTs: l.ckpt.rpMaxTs}
	rep.LogEndOffset = l.leo
	return nil
}

func (l *Log) hasSegment(base int64) bool {
	for _, s := range l.segs {
		if s.base == base {
			return true
		}
	}
	return false
}

// scan validates the log from the recovery point to its end, cuts it at the
// first bad byte, and rebuilds index entries and epochs past the recovery
// point. It runs on l before l is shared, so mu is not taken.
func (l *Log) scan(meta metaRecord, wb *pebble.Batch, rep *RecoveryReport) error {
	if len(l.segs) == 0 {
		return nil
	}
	// Start at the recovery point when its segment is still here; otherwise
	// at the start of the segment holding the log start, which is always
	// safe. A log whose segments begin after its log start lost its head
	// (a segment created and never fsynced into the directory): nothing is
	// readable, and recovery restarts it empty at the log start.
	si, pos, expect := -1, int64(0), int64(0)
	for i, s := range l.segs {
		if s.base == meta.rpBase && meta.recoveryPoint >= s.base && meta.recoveryPoint >= l.logStart && meta.rpPos <= s.size {
			si, pos, expect = i, meta.rpPos, meta.recoveryPoint
		}
	}
	if si < 0 {
		si = sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > l.logStart }) - 1
		if si < 0 {
			rep.CutReason = fmt.Sprintf("first segment starts at %d, after the log start %d", l.segs[0].base, l.logStart)
			for _, s := range l.segs {
				rep.BytesCut += s.size
				rep.SegmentsDeleted++
				l.removeSegment(s, wb)
			}
			l.segs = nil
			return nil // open() restarts the log empty at the log start
		}
		expect = l.segs[si].base
	}
	rep.ScannedFrom = expect
	for _, s := range l.segs[si:] {
		s.sealed, s.next = false, s.base
		s.firstTs, s.maxTs, s.maxTsOff = noTimestamp, noTimestamp, -1
	}
	if pos > 0 {
		s := l.segs[si]
		s.firstTs, s.maxTs, s.next = meta.rpFirst, meta.rpMaxTs, expect
	}
	// Index entries, time entries and epochs past the scan start are rebuilt.
	wb.DeleteRange(l.k.offset(expect), l.k.upper(kindOffset), nil)
	if err := l.dropTimeEntriesFrom(expect, wb); err != nil {
		return err
	}
	for _, e := range l.epochs.truncateFromEnd(expect) {
		wb.Delete(l.k.epoch(e), nil)
	}
	recs, err := l.loadSegRecords()
	if err != nil {
		return err
	}
	l.maxTs = noTimestamp
	for _, s := range l.segs[:si] {
		l.maxTs = max(l.maxTs, s.maxTs)
	}
	l.maxTs = max(l.maxTs, l.segs[si].maxTs)
	l.lastTsKey = l.maxTs

	buf := make([]byte, 0, 64<<10)
	for i := si; i < len(l.segs); i++ {
		s := l.segs[i]
		limit := s.size
		if r, ok := recs[s.base]; ok {
			limit = min(limit, r.end)
		}
		if i > si {
			pos = 0
			if s.base != expect {
				return l.cut(i-1, l.segs[i-1].size, expect, fmt.Sprintf("segment %d does not start at the expected offset %d", s.base, expect), wb, rep)
			}
		}
		s.lastIndexPos = 0
		if pos < limit {
			if err := l.openLocked(s); err != nil {
				return err
			}
		}
		for pos < limit {
			h, n, err := readBatchAt(s.file, pos, limit, l.opts.MaxBatchBytes, &buf)
			// Offsets rise; they may leave holes (a cleaned segment, or a
			// follower's copy of one), never overlap.
			if err == nil && h.BaseOffset < expect {
				err = fmt.Errorf("%w: batch at offset %d, expected %d or later", ErrCorruptBatch, h.BaseOffset, expect)
			}
			if err == nil && h.LeaderEpoch >= 0 {
				if last, ok := l.epochs.latest(); ok && h.LeaderEpoch < last.Epoch {
					err = fmt.Errorf("%w: epoch %d after epoch %d", ErrCorruptBatch, h.LeaderEpoch, last.Epoch)
				}
			}
			if err != nil {
				return l.cut(i, pos, expect, fmt.Sprintf("%s position %d: %v", s.path, pos, err), wb, rep)
			}
			l.indexBatchLocked(wb, s, h, pos)
			s.size = pos + int64(n)
			pos += int64(n)
			expect = h.NextOffset()
			rep.BatchesScanned++
			rep.BytesScanned += int64(n)
		}
		s.size = limit
		if r, ok := recs[s.base]; ok && r.cleaned && r.next > s.next {
			// The cleaner removed its last batches: it still ends where
			// it ended before (the next segment's base).
			s.next, expect = r.next, r.next
			l.leo = s.next
		}
		// Every segment but the last is closed; the last is closed when it
		// was sealed before. Closed segments get their record (re)written.
		if r, ok := recs[s.base]; ok || i < len(l.segs)-1 {
			s.sealed = true
			s.cleaned, s.cleanedAt = r.cleaned, r.cleanedAt
			wb.Set(l.k.segment(s.base), segRecord{end: s.size, next: s.next, firstTs: s.firstTs, maxTs: s.maxTs,
				cleaned: r.cleaned, cleanedAt: r.cleanedAt}.encode(), nil)
		}
	}
	l.pending = l.pending[:0] // scanned entries are in wb, committed by open
	return nil
}

// cut ends the log at position pos of segment i (offset next): that segment
// is sealed there and every later one removed. The seal is what keeps a
// later scan from reading the CRC-valid batches that may lie past pos.
func (l *Log) cut(i int, pos, next int64, reason string, wb *pebble.Batch, rep *RecoveryReport) error {
	rep.CutReason = reason
	s := l.segs[i]
	var tail int64
	for _, t := range l.segs[i+1:] {
		tail += t.size
	}
	if err := l.openLocked(s); err != nil {
		return err
	}
	st, err := s.file.Stat()
	if err != nil {
		return err
	}
	rep.BytesCut = st.Size() - pos + tail
	rep.BatchesCut = countFramed(s.file, pos, st.Size(), l.opts.MaxBatchBytes)
	s.size, s.next, s.sealed = pos, next, true
	wb.Set(l.k.segment(s.base), segRecord{end: pos, next: next, firstTs: s.firstTs, maxTs: s.maxTs,
		cleaned: s.cleaned, cleanedAt: s.cleanedAt}.encode(), nil)
	for _, t := range l.segs[i+1:] {
		wb.Delete(l.k.segment(t.base), nil)
	}
	// The seal must be durable before anything is written after it.
	if err := wb.Commit(pebble.Sync); err != nil {
		return err
	}
	wb.Reset()
	for _, t := range l.segs[i+1:] {
		if l.openLocked(t) == nil {
			rep.BatchesCut += countFramed(t.file, 0, t.size, l.opts.MaxBatchBytes)
		}
		l.removeSegment(t, wb)
		rep.SegmentsDeleted++
	}
	l.segs = l.segs[:i+1]
	l.pending = l.pending[:0] // scanned entries are in wb, committed by open
	return nil
}

// removeSegment drops a segment: its record and index keys go into wb, and
// its file is renamed to .deleted and removed once no reader holds it.
// Callers commit, durably, whatever makes the file unneeded (a seal, a new
// log start) before they call it.
func (l *Log) removeSegment(s *segment, wb *pebble.Batch) {
	wb.Delete(l.k.segment(s.base), nil)
	wb.DeleteRange(l.k.offset(s.base), l.k.offset(max(s.next, s.base+1)), nil)
	if s.removed {
		return
	}
	s.removed = true
	// A failed rename leaves the file under its name: the index no longer
	// names it, and the log start or a seal keeps a later open from using it.
	_ = l.fs.Rename(s.path, s.path+deletedSuffix)
	l.dirDirty = true
	if s.refs == 0 {
		l.closeSegFileLocked(s)
		_ = l.fs.Remove(s.path + deletedSuffix)
	}
}

// readBatchAt reads and validates the batch at pos (bounded by limit) of f.
func readBatchAt(f vfs.File, pos, limit int64, maxSize int, buf *[]byte) (BatchHeader, int, error) {
	if limit-pos < BatchHeaderSize {
		return BatchHeader{}, 0, fmt.Errorf("%w: %d bytes left, shorter than a batch header", ErrCorruptBatch, limit-pos)
	}
	var hdr [logOverhead]byte
	if _, err := readFull(f, hdr[:], pos); err != nil {
		return BatchHeader{}, 0, err
	}
	n := frameLength(hdr[:], maxSize)
	if n < 0 {
		return BatchHeader{}, 0, fmt.Errorf("%w: impossible batch length", ErrCorruptBatch)
	}
	if int64(n) > limit-pos {
		return BatchHeader{}, 0, fmt.Errorf("%w: batch of %d bytes, %d left", ErrCorruptBatch, n, limit-pos)
	}
	*buf = grow(*buf, n)
	m, err := readFull(f, *buf, pos)
	if err != nil {
		return BatchHeader{}, 0, err
	}
	if m < n {
		return BatchHeader{}, 0, fmt.Errorf("%w: short read", ErrCorruptBatch)
	}
	h, n, err := checkBatch(*buf, maxSize)
	if err != nil && !errors.Is(err, ErrCorruptBatch) {
		err = fmt.Errorf("%w: %v", ErrCorruptBatch, err)
	}
	return h, n, err
}

// countFramed counts the batches whose length fields chain from pos to
// limit: a lower bound on the batches in a cut tail.
func countFramed(f vfs.File, pos, limit int64, maxSize int) int {
	var hdr [logOverhead]byte
	n := 0
	for limit-pos >= BatchHeaderSize {
		if m, err := readFull(f, hdr[:], pos); err != nil || m < logOverhead {
			break
		}
		size := frameLength(hdr[:], maxSize)
		if size < 0 || pos+int64(size) > limit {
			break
		}
		n++
		pos += int64(size)
	}
	return n
}

func (l *Log) loadMeta() (metaRecord, bool, error) {
	v, ok, err := l.idx.get(l.k.meta())
	if err != nil || !ok {
		return metaRecord{rpFirst: noTimestamp, rpMaxTs: noTimestamp}, false, err
	}
	m, err := decodeMeta(v)
	return m, err == nil, err
}

func (l *Log) loadSegRecords() (map[int64]segRecord, error) {
	out := map[int64]segRecord{}
	err := l.idx.scan(l.k.kind(kindSegment), l.k.upper(kindSegment), func(k, v []byte) error {
		r, err := decodeSegRecord(v)
		if err != nil {
			return err
		}
		out[decodeU64(k[len(k)-8:])] = r
		return nil
	})
	return out, err
}

func (l *Log) loadEpochs() error {
	l.epochs = epochCache{}
	return l.idx.scan(l.k.kind(kindEpoch), l.k.upper(kindEpoch), func(k, v []byte) error {
		e := int32(decodeU32(k[len(k)-4:]) ^ (1 << 31))
		l.epochs.entries = append(l.epochs.entries, EpochEntry{Epoch: e, StartOffset: decodeU64(v)})
		return nil
	})
}

// dropTimeEntriesFrom deletes the time index entries at offsets >= from.
// Entries hold a running maximum, so they ascend in offset as in key order:
// the ones to drop are a suffix.
func (l *Log) dropTimeEntriesFrom(from int64, wb *pebble.Batch) error {
	it, err := l.idx.db.NewIter(&pebble.IterOptions{LowerBound: l.k.kind(kindTime), UpperBound: l.k.upper(kindTime)})
	if err != nil {
		return err
	}
	var first []byte
	for ok := it.Last(); ok && decodeU64(it.Value()) >= from; ok = it.Prev() {
		first = append(first[:0], it.Key()...)
	}
	if err := it.Close(); err != nil {
		return err
	}
	if first != nil {
		wb.DeleteRange(first, l.k.upper(kindTime), nil)
	}
	return nil
}

// dropTimeEntriesBelow deletes the time index entries at offsets below
// before: a prefix in key order, as in dropTimeEntriesFrom.
func (l *Log) dropTimeEntriesBelow(before int64, wb *pebble.Batch) error {
	it, err := l.idx.db.NewIter(&pebble.IterOptions{LowerBound: l.k.kind(kindTime), UpperBound: l.k.upper(kindTime)})
	if err != nil {
		return err
	}
	var last []byte
	for ok := it.First(); ok && decodeU64(it.Value()) < before; ok = it.Next() {
		last = append(last[:0], it.Key()...)
	}
	if err := it.Close(); err != nil {
		return err
	}
	if last != nil {
		wb.DeleteRange(l.k.kind(kindTime), append(last, 0), nil)
	}
	return nil
}

// closeFiles closes every segment file (open failed or log closed).
func (l *Log) closeFiles() {
	for _, s := range l.segs {
		if s.swapPin { // a swap that failed before its renames
			s.swapPin = false
			s.refs--
		}
		switch {
		case s.removed:
		case s.refs > 0:
			// A reader holds it (a Span on its way to a socket by its
			// descriptor): the last release closes it, so that the
			// descriptor is never reused under the reader.
			s.closeLate = true
		default:
			l.closeSegFileLocked(s)
		}
	}
	l.segs = nil
}
