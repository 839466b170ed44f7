package segment

import (
	"fmt"
	"sort"
)

// tsPoint is a batch where the log's running maximum timestamp rose: its
// maxTimestamp, base offset and next offset.
type tsPoint struct{ ts, off, next int64 }

// tsRingSize is how many of the latest rises the log keeps: enough to cover
// the batches between a high watermark and the log end.
const tsRingSize = 64

// tsRing holds the latest rises of the running maximum timestamp, oldest
// first, in a fixed ring: a contiguous suffix of all rises, so that the
// last rise below an offset, when the ring holds any rise below it, is the
// last rise below it in the whole log. Guarded by Log.mu.
type tsRing struct {
	p    [tsRingSize]tsPoint
	head int // index of the oldest point
	n    int
}

func (r *tsRing) push(p tsPoint) {
	if r.n == tsRingSize {
		r.p[r.head] = p
		r.head = (r.head + 1) % tsRingSize
		return
	}
	r.p[(r.head+r.n)%tsRingSize] = p
	r.n++
}

func (r *tsRing) at(i int) tsPoint { return r.p[(r.head+i)%tsRingSize] }
func (r *tsRing) reset()           { r.head, r.n = 0, 0 }

// truncate drops the rises in batches at or past next (a log truncation).
func (r *tsRing) truncate(next int64) {
	for r.n > 0 && r.at(r.n-1).next > next {
		r.n--
	}
}

// lastBelow returns the last rise in a batch that ends at or before upTo,
// if the ring holds one.
func (r *tsRing) lastBelow(upTo int64) (tsPoint, bool) {
	i := sort.Search(r.n, func(i int) bool { return r.at(i).next > upTo }) - 1
	if i < 0 {
		return tsPoint{}, false
	}
	return r.at(i), true
}

// MaxTimestamp answers ListOffsets for the max timestamp (-3, KIP-734): the
// offset and timestamp of the record with the largest timestamp among the
// batches that lie wholly in [log start, upTo), the first such record when
// several share it; ok is false when there is none. upTo is the high
// watermark (a batch boundary; the log end for a replica's own view).
//
// It is cheap: the log keeps the latest rises of its running maximum
// timestamp in memory, so when the high watermark is near the log end the
// answer's batch is known at once; otherwise each segment's largest
// timestamp (kept with the segment, and recorded in its seal) picks the
// segment, and only a segment that the range cuts, or one whose batch of the
// largest timestamp is not known since the log was opened, has its batch
// headers read. Then the one batch found is decoded (decompressed if need
// be) to find the record; a batch whose records do not decode answers
// with its base offset.
func (l *Log) MaxTimestamp(upTo int64) (offset, ts int64, ok bool, err error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return 0, 0, false, ErrClosed
	}
	logStart := l.logStart
	upTo = min(upTo, l.leo)
	var segs []*segment
	if p, found := l.tsPoints.lastBelow(upTo); found && p.off >= logStart {
		i := max(sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > p.off })-1, 0)
		segs = []*segment{l.segs[i]}
		if err := l.pinLocked(segs[0]); err != nil {
			l.mu.Unlock()
			return 0, 0, false, err
		}
		size := segs[0].size
		l.mu.Unlock()
		defer l.release(segs[0])
		return l.maxRecord(segs[0], size, p.off, logStart)
	}
	var sizes []int64
	for _, s := range l.segs {
		if s.base < upTo && s.next > logStart && s.maxTs != noTimestamp {
			if err = l.pinLocked(s); err != nil {
				break
			}
			segs = append(segs, s)
			sizes = append(sizes, s.size)
		}
	}
	l.mu.Unlock()
	defer func() {
		for _, s := range segs {
			l.release(s)
		}
	}()
	if err != nil {
		return 0, 0, false, err
	}

	// A segment wholly in the range has its largest timestamp there; one
	// that the range cuts (at the log start, at upTo) is read, if it could
	// win. In offset order with a strict comparison, the first batch wins a
	// tie. Only the winner's batch is looked for, so a log opened with
	// many segments reads at most one of them whole.
	best, bestSeg := tsPoint{ts: noTimestamp, off: -1}, -1
	for i, s := range segs {
		l.mu.Lock()
		maxTs, maxTsOff, next := s.maxTs, s.maxTsOff, s.next
		l.mu.Unlock()
		if maxTs <= best.ts {
			continue // an earlier batch has a timestamp at least as large
		}
		whole := next <= upTo && (s.base >= logStart || maxTsOff >= logStart)
		if !whole {
			p, err := l.maxBatchIn(s, sizes[i], logStart, upTo)
			if err != nil {
				return 0, 0, false, err
			}
			if p.off < 0 || p.ts <= best.ts {
				continue
			}
			maxTs, maxTsOff = p.ts, p.off
		}
		best, bestSeg = tsPoint{ts: maxTs, off: maxTsOff}, i
	}
	if bestSeg < 0 {
		return 0, 0, false, nil
	}
	if best.off < 0 {
		// The winner is whole, but where its largest timestamp sits is not
		// known since the log was opened: read it, once.
		s := segs[bestSeg]
		p, err := l.maxBatchIn(s, sizes[bestSeg], s.base, upTo)
		if err != nil {
			return 0, 0, false, err
		}
		if p.off < 0 {
			return 0, 0, false, nil // truncated away meanwhile
		}
		l.mu.Lock()
		if s.maxTs == p.ts && s.maxTsOff < 0 {
			s.maxTsOff = p.off
		}
		l.mu.Unlock()
		best = p
	}
	return l.maxRecord(segs[bestSeg], sizes[bestSeg], best.off, logStart)
}

// maxBatchIn reads the headers of seg (up to size) and returns the first
// batch with the largest maxTimestamp among those wholly in [from, upTo);
// off is -1 when there is none.
func (l *Log) maxBatchIn(seg *segment, size, from, upTo int64) (tsPoint, error) {
	best := tsPoint{ts: noTimestamp, off: -1}
	pos := int64(0)
	if from > seg.base {
		var err error
		if pos, err = l.indexedPos(seg, from); err != nil {
			return best, err
		}
	}
	r := headerReader{f: seg, end: size, buf: make([]byte, headerReadSize), maxBatch: l.opts.MaxBatchBytes}
	for pos < size {
		h, err := r.at(pos)
		if err != nil {
			return best, err
		}
		if h.NextOffset() > upTo {
			break
		}
		if h.BaseOffset >= from && h.MaxTimestamp > best.ts {
			best = tsPoint{ts: h.MaxTimestamp, off: h.BaseOffset, next: h.NextOffset()}
		}
		pos += int64(h.Size())
	}
	return best, nil
}

// maxRecord finds the batch at base offset off in seg and returns its
// first record with the batch's maxTimestamp.
func (l *Log) maxRecord(seg *segment, size, off, logStart int64) (int64, int64, bool, error) {
	pos, err := l.indexedPos(seg, off)
	if err != nil {
		return 0, 0, false, err
	}
	r := headerReader{f: seg, end: size, buf: make([]byte, BatchHeaderSize), maxBatch: l.opts.MaxBatchBytes}
	for pos < size {
		h, err := r.at(pos)
		if err != nil {
			return 0, 0, false, err
		}
		if h.BaseOffset < off {
			pos += int64(h.Size())
			continue
		}
		if h.BaseOffset != off {
			break
		}
		b, err := l.readBatch(seg, pos, h, nil)
		if err != nil {
			return 0, 0, false, err
		}
		found := int64(-1)
		err = recordTimes(b, func(o, t int64) bool {
			if t == h.MaxTimestamp && o >= logStart {
				found = o
			}
			return found < 0
		})
		if err != nil || found < 0 {
			// Records that do not decode, or none with the batch's
			// maxTimestamp (a producer's inconsistent batch): the batch.
			found = off
		}
		return found, h.MaxTimestamp, true, nil
	}
	return 0, 0, false, fmt.Errorf("%w: no batch starts at offset %d in %s", ErrCorruptBatch, off, seg.path)
}
