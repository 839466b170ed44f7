package segment

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// cleanedSeg is one rewritten group of segments, fsynced in the .cleaned
// file of its first, waiting for the swap.
type cleanedSeg struct {
	olds           []*segment // the group, oldest first; the file takes olds[0]'s name
	srcSizes       []int64    // each old's size when it was read: a truncation changes it
	file           vfs.File
	path           string
	size           int64
	firstTs, maxTs int64
	lastIndexPos   int64
	index          []indexEntry
	cleanedAt      int64
}

// head is the segment whose name the cleaned file takes; next is the
// offset after the group.
func (o cleanedSeg) head() *segment { return o.olds[0] }
func (o cleanedSeg) next() int64    { return o.olds[len(o.olds)-1].next }

// groupSegments splits segs (consecutive, oldest first, with their sizes)
// into the groups a pass rewrites into one file each, as Kafka's
// LogCleaner.groupSegmentsBySize does: a segment joins the group before
// it while the group's bytes stay within maxBytes (segment.bytes) and
// the group's offsets within 2^31-1 of its base (Kafka's relative
// offsets; an empty segment does not count). Kafka's third bound, the
// index files' size, has no counterpart here: the offset and time
// indexes are Pebble keys, not fixed-size files. Sizes are the sources',
// so the cleaned file never exceeds segment.bytes.
func groupSegments(segs []*segment, sizes []int64, maxBytes int64) [][]int {
	var groups [][]int
	for i := 0; i < len(segs); {
		g := []int{i}
		n := sizes[i]
		j := i + 1
		for ; j < len(segs) && n+sizes[j] <= maxBytes &&
			(sizes[j] == 0 || segs[j].next-1-segs[i].base <= math.MaxInt32); j++ {
			g = append(g, j)
			n += sizes[j]
		}
		groups = append(groups, g)
		i = j
	}
	return groups
}

// pass rewrites the segments below mapEnd with the map built over
// [dirty, mapEnd), groups of small neighbours into one file each
// (groupSegments), and swaps them in.
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
	sizes := make([]int64, len(segs))
	for i, s := range segs {
		cleanedAt[i] = s.cleanedAt
		if !s.cleaned {
			cleanedAt[i] = c.o.Now.UnixMilli()
		}
		sizes[i] = s.size
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
	c.horizon = 0
	for _, g := range groupSegments(segs, sizes, l.opts.SegmentBytes) {
		members := make([]*segment, len(g))
		groupAt := noTimestamp
		for k, i := range g {
			members[k] = segs[i]
			// When the group was first cleaned, for the record only:
			// tombstones and markers go by their batches' own delete
			// horizons (KIP-534), not by their segment's.
			groupAt = max(groupAt, cleanedAt[i])
		}
		o, err := c.rewrite(members, last, logLast)
		if o.file != nil {
			o.cleanedAt = groupAt
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
	l.mu.Lock()
	l.deleteHorizon = c.horizon // the pass rewrote the whole clean section
	l.mu.Unlock()
	c.forgetGoneAborts()
	for _, o := range outs {
		c.st.SegmentsCleaned += len(o.olds)
	}
	c.st.SegmentsWritten += len(outs)
	return nil
}

// rewrite writes what stays of the group segs to the .cleaned file of its
// first segment and fsyncs it. The batches that stay even when emptied
// are each producer's last (last: producer id -> its last batch's last
// offset) and the one ending at logLast.
func (c *cleaner) rewrite(segs []*segment, last map[int64]int64, logLast int64) (cleanedSeg, error) {
	l := c.l
	f, path, err := l.createCleaned(segs[0].base)
	if err != nil {
		return cleanedSeg{}, err
	}
	o := cleanedSeg{olds: segs, file: f, path: path, firstTs: noTimestamp, maxTs: noTimestamp}
	if cap(c.out) == 0 {
		c.out = make([]byte, 0, 2*cleanReadSize) // flushed at cleanReadSize: never grows
	}
	c.out = c.out[:0]
	var written int64 // bytes of o flushed to f
	for _, s := range segs {
		c.rd.reset(l, s)
		o.srcSizes = append(o.srcSizes, c.rd.end)
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
			if err := c.cleanBatch(h, b, keepBatch); err != nil {
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

// swapCleaned swaps the rewritten groups in for the old segments, which
// must still be the log's first segments, with no truncation or deletion
// since the Clean began (gen). The commit point is one synced Pebble
// batch: the new segment records (the records of the other members of a
// group go) and offset index entries, the cleaner checkpoint, and a swap
// record naming, per group, the segment whose .cleaned file is to be
// renamed over its .log file and the segments whose files are to go;
// recovery finishes a swap whose record it finds (finishSwap). Readers of
// an old segment keep reading its file; one whose index lookup raced with
// the swap is told to retry (errSegmentReplaced).
func (l *Log) swapCleaned(outs []cleanedSeg, cleanedTo, gen int64) error {
	if len(outs) == 0 {
		return nil
	}
	// flushMu keeps out everything else that changes segment files
	// (flush, truncation, retention) for the whole swap; Log.mu, which
	// appends and reads wait for, is held only while the index and the
	// segment list change: the directory fsyncs, renames and removals
	// happen outside it.
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
	// files (open under their .cleaned names); give them their names and
	// retire the other members of each group (renamed to .deleted,
	// removed once no reader holds them). A crash from here on is
	// finished by the next open (finishSwap).
	fail := func(err error) error {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.failed = fmt.Errorf("%w: clean: %v (reopen finishes the swap)", ErrLogFailed, err)
		return l.failed
	}
	for _, o := range outs {
		if err := l.fs.Rename(o.path, o.head().path); err != nil {
			return fail(fmt.Errorf("rename %s: %v", o.path, err))
		}
		for _, s := range o.olds[1:] {
			if err := l.fs.Rename(s.path, s.path+deletedSuffix); err != nil {
				return fail(fmt.Errorf("rename %s: %v", s.path, err))
			}
		}
	}
	var drop []*segment
	var closing []vfs.File
	l.mu.Lock()
	for _, o := range outs {
		for _, s := range o.olds[1:] {
			s.removed = true // release removes it at refs == 0
			if s.refs == 0 {
				drop = append(drop, s)
				if f := l.takeFileLocked(s); f != nil {
					closing = append(closing, f)
				}
			}
		}
		// The cleaned file has its name now: the budget may close it.
		for _, s := range l.segs {
			if s.path == o.head().path && s.cleaned && s.refs > 0 && s.swapPin {
				s.swapPin = false
				s.refs--
			}
		}
	}
	l.mu.Unlock()
	for _, f := range closing {
		_ = f.Close()
	}
	for _, s := range drop {
		_ = l.fs.Remove(s.path + deletedSuffix)
	}
	if err := l.syncDir(); err != nil {
		return fail(err)
	}
	if err := l.idx.db.Delete(l.k.swap(), pebble.Sync); err != nil {
		return fail(err)
	}
	return nil
}

// commitSwapLocked commits the swap and puts the cleaned segments in the
// list; flushMu must be held (it keeps the old segments, the checkpoint
// and cutGen as they are: truncation, retention, flushes and checkpoints
// all take it). Log.mu is held twice, briefly: to check that nothing
// raced the Clean and commit the appends' pending index entries (some may
// describe an old segment), and to install the new segments. The synced
// Pebble commit between (seals, offset index, cleaner checkpoint,
// recovery point, swap record) runs without it, so appends and reads of
// other segments go on during the fsync; a read whose index lookup in an
// old segment may see the new positions finds it replaced and waits for
// the install (swapWait) before it starts again.
func (l *Log) commitSwapLocked(outs []cleanedSeg, cleanedTo, gen int64) error {
	l.mu.Lock()
	if err := l.writable(); err != nil {
		l.mu.Unlock()
		return err
	}
	if l.cutGen != gen {
		l.mu.Unlock()
		return ErrCleanRaced // the map may name offsets a truncation removed
	}
	i := 0 // l.segs[i] is the next old segment
	for _, o := range outs {
		for k, s := range o.olds {
			if i >= len(l.segs)-1 || l.segs[i] != s || s.removed || s.size != o.srcSizes[k] {
				l.mu.Unlock()
				return ErrCleanRaced
			}
			i++
		}
	}
	if err := l.commitPendingLocked(); err != nil {
		l.mu.Unlock()
		return err
	}
	endBase := l.segs[i].base
	ckpt := l.ckpt
	installed := make(chan struct{})
	l.swapInstalled = installed
	for _, o := range outs {
		for _, s := range o.olds {
			s.replaced.Store(true) // before the index entries change
		}
	}
	l.mu.Unlock()
	done := func() {
		l.swapInstalled = nil
		close(installed)
	}

	wb := l.idx.db.NewBatch()
	defer wb.Close()
	for _, o := range outs {
		head := o.head()
		for _, s := range o.olds[1:] {
			wb.Delete(l.k.segment(s.base), nil)
		}
		wb.Set(l.k.segment(head.base), segRecord{end: o.size, next: o.next(), firstTs: o.firstTs, maxTs: o.maxTs,
			cleaned: true, cleanedAt: o.cleanedAt}.encode(), nil)
		wb.DeleteRange(l.k.offset(head.base), l.k.offset(max(o.next(), head.base+1)), nil)
		for _, e := range o.index {
			var v [binary.MaxVarintLen64]byte
			wb.Set(l.k.offset(e.offset), binary.AppendUvarint(v[:0], uint64(e.pos)), nil)
		}
	}
	wb.Set(l.k.swap(), swapRecord(outs), nil)
	wb.Set(l.k.cleaner(), u64bytes(cleanedTo), nil)
	// Every byte below endBase is fsynced now: recovery need not scan it.
	if ckpt.recoveryPoint < endBase || ckpt.rpBase < endBase {
		ckpt.recoveryPoint, ckpt.rpBase, ckpt.rpPos, ckpt.rpFirst, ckpt.rpMaxTs = endBase, endBase, 0, noTimestamp, noTimestamp
		ckpt.clean = false
		wb.Set(l.k.meta(), ckpt.encode(), nil)
	}
	err := wb.Commit(pebble.Sync)

	l.mu.Lock()
	defer l.mu.Unlock()
	defer done()
	if err != nil {
		for _, o := range outs {
			for _, s := range o.olds {
				s.replaced.Store(false) // the old segments stay; reads need not wait
			}
		}
		l.failed = fmt.Errorf("%w: clean: swap: %v", ErrLogFailed, err)
		return l.failed
	}
	l.ckpt = ckpt
	segs := make([]*segment, 0, len(outs)+len(l.segs)-i)
	for _, o := range outs {
		old := o.head()
		// The new segment is pinned until swapCleaned has renamed its
		// file over old's name: closed before, it could not reopen.
		ns := &segment{base: old.base, path: old.path, size: o.size, next: o.next(),
			firstTs: o.firstTs, maxTs: o.maxTs, maxTsOff: -1, sealed: true, lastIndexPos: o.lastIndexPos,
			cleaned: true, cleanedAt: o.cleanedAt, refs: 1, swapPin: true}
		l.setFileLocked(ns, o.file)
		segs = append(segs, ns)
		if old.refs == 0 {
			l.closeSegFileLocked(old)
		} else {
			old.closeLate = true
		}
		// The other members are closed and removed by swapCleaned once
		// their files are renamed.
	}
	l.segs = append(segs, l.segs[i:]...) // appends may have rolled meanwhile
	l.cleanedTo = cleanedTo
	l.tsPoints.reset() // its batches may be gone or have lower timestamps
	if l.flushed.Load() < endBase {
		l.flushed.Store(endBase)
		l.flushPos = position{offset: endBase, base: endBase, firstTs: noTimestamp, maxTs: noTimestamp}
	}
	return nil
}

// swapWait waits until the swap in flight, if any, has put its segments
// in the list: a read that found its segment replaced starts again after.
func (l *Log) swapWait() {
	l.mu.Lock()
	ch := l.swapInstalled
	l.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

// swapRecord encodes the swap record of outs. Version 2: a 2, then per
// group the base of the segment its .cleaned file replaces (8, BE), the
// number of other members (4, BE) and their bases (8, BE each). Version
// 1 (a Clean before grouping, len%8 == 0) is the bases alone.
func swapRecord(outs []cleanedSeg) []byte {
	b := []byte{2}
	for _, o := range outs {
		b = binary.BigEndian.AppendUint64(b, uint64(o.head().base))
		b = binary.BigEndian.AppendUint32(b, uint32(len(o.olds)-1))
		for _, s := range o.olds[1:] {
			b = binary.BigEndian.AppendUint64(b, uint64(s.base))
		}
	}
	return b
}

// swapGroup is one group of a swap record: the segment its .cleaned file
// replaces and the segments whose files go.
type swapGroup struct {
	head int64
	gone []int64
}

func decodeSwapRecord(v []byte) ([]swapGroup, error) {
	var gs []swapGroup
	if len(v)%8 == 0 { // version 1
		for p := 0; p < len(v); p += 8 {
			gs = append(gs, swapGroup{head: decodeU64(v[p:])})
		}
		return gs, nil
	}
	bad := fmt.Errorf("%w: swap record of %d bytes, version %d", ErrCorruptIndex, len(v), first(v))
	if v[0] != 2 {
		return nil, bad
	}
	for p := 1; p < len(v); {
		if len(v)-p < 12 {
			return nil, bad
		}
		g := swapGroup{head: decodeU64(v[p:])}
		n := int(binary.BigEndian.Uint32(v[p+8:]))
		p += 12
		if n > (len(v)-p)/8 {
			return nil, bad
		}
		for ; n > 0; n-- {
			g.gone = append(g.gone, decodeU64(v[p:]))
			p += 8
		}
		gs = append(gs, g)
	}
	return gs, nil
}

// finishSwap completes a swap that committed before a crash: each group's
// .cleaned file, when still there, is renamed over its first segment's
// .log file, and the files of its other members, when still there, are
// removed; then the swap record goes. Other .cleaned files are left for
// open to remove (a Clean that did not commit). Runs before open lists
// the segment files.
func (l *Log) finishSwap() error {
	v, ok, err := l.idx.get(l.k.swap())
	if err != nil || !ok {
		return err
	}
	groups, err := decodeSwapRecord(v)
	if err != nil {
		return err
	}
	exists := func(path string) (bool, error) {
		if _, err := l.fs.Stat(path); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return false, nil
			}
			return false, err
		}
		return true, nil
	}
	for _, g := range groups {
		from := l.fs.PathJoin(l.dir, cleanedName(g.head))
		if ok, err := exists(from); err != nil {
			return err
		} else if ok {
			if err := l.fs.Rename(from, l.fs.PathJoin(l.dir, segmentName(g.head))); err != nil {
				return err
			}
		}
		for _, b := range g.gone {
			path := l.fs.PathJoin(l.dir, segmentName(b))
			if ok, err := exists(path); err != nil {
				return err
			} else if ok {
				if err := l.fs.Remove(path); err != nil {
					return err
				}
			}
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
