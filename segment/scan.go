package segment

import (
	"fmt"
	"math"
	"sort"
)

// LastSequence is the sequence number of the batch's last record
// (baseSequence + lastOffsetDelta, wrapping past MaxInt32 to 0 as Kafka's
// DefaultRecordBatch.incrementSequence does), or -1 when the batch carries
// no sequence (not from an idempotent producer).
func (h BatchHeader) LastSequence() int32 {
	if h.BaseSequence < 0 {
		return -1
	}
	if h.BaseSequence > math.MaxInt32-h.LastOffsetDelta {
		return h.BaseSequence - (math.MaxInt32 - h.LastOffsetDelta) - 1
	}
	return h.BaseSequence + h.LastOffsetDelta
}

// headerReadSize is how much ScanBatches reads at a time: several headers
// of small batches in one read, one page per header of large ones.
const headerReadSize = 8 << 10

// ScanBatches calls fn with the header of every batch holding an offset in
// [from, to), oldest first, reading headers only: record bodies are neither
// read nor checked (their CRC was checked when they were appended or
// recovered). The range is clamped to the log, [log start, log end) when
// the scan starts; a batch holding the log start is included whole. Batches
// appended while it runs are not seen; a truncation while it runs does not
// disturb it (it reads the segments as they were when it started). fn runs
// without any lock of the log held and may call the log; an error from fn
// ends the scan and is returned as is.
//
// The producer id, epoch and sequence range of each batch are in its
// 61-byte header.
func (l *Log) ScanBatches(from, to int64, fn func(BatchHeader) error) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	from = max(from, l.logStart)
	to = min(to, l.leo)
	if from >= to {
		l.mu.Unlock()
		return nil
	}
	i := max(sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > from })-1, 0)
	segs := append([]*segment(nil), l.segs[i:]...)
	sizes := make([]int64, len(segs))
	for j, s := range segs {
		sizes[j] = s.size
		if err := l.pinLocked(s); err != nil {
			for _, p := range segs[:j] {
				p.refs--
			}
			l.mu.Unlock()
			return err
		}
	}
	pos := l.pendingPos(segs[0], from)
	l.mu.Unlock()
	defer func() {
		for _, s := range segs {
			l.release(s)
		}
	}()

	if pos < 0 {
		var err error
		if pos, err = l.indexedPos(segs[0], from); err != nil {
			return err
		}
	}
	buf := make([]byte, headerReadSize)
	for j, s := range segs {
		if j > 0 {
			pos = 0
		}
		r := headerReader{f: s, end: sizes[j], buf: buf, maxBatch: l.opts.MaxBatchBytes}
		for pos < sizes[j] {
			h, err := r.at(pos)
			if err != nil {
				return err
			}
			if h.BaseOffset >= to {
				return nil
			}
			if h.LastOffset() >= from {
				if err := fn(h); err != nil {
					return err
				}
			}
			pos += int64(h.Size())
		}
	}
	return nil
}

// indexedPos is lookupPos that checks the batch found where the index
// points: an entry written for a later incarnation of the offsets (after a
// truncation that raced with the caller) is ignored, and the walk starts at
// the segment's beginning.
func (l *Log) indexedPos(seg *segment, offset int64) (int64, error) {
	k, v, ok, err := l.idx.seekLE(l.k.offset(seg.base), l.k.offset(offset))
	if err != nil || !ok || seg.replaced.Load() {
		return 0, err // a replaced segment's entries may describe its new file: walk from 0
	}
	pos := decodeUvarint(v)
	var hdr [8]byte
	if n, err := readFull(seg.file, hdr[:], pos); err != nil || n < len(hdr) || baseOffsetAt(hdr[:]) != decodeU64(k[len(k)-8:]) {
		return 0, err
	}
	return pos, nil
}

// headerReader reads batch headers of one segment through a small buffer,
// so that a run of small batches costs one read, not one per batch.
type headerReader struct {
	f        *segment
	end      int64 // logical end of the segment when the scan started
	buf      []byte
	bufPos   int64 // file position of buf[0]
	bufLen   int   // valid bytes in buf
	maxBatch int
}

// at returns the header of the batch at pos, checking that its frame fits
// before the segment's end.
func (r *headerReader) at(pos int64) (BatchHeader, error) {
	if r.end-pos < BatchHeaderSize {
		return BatchHeader{}, fmt.Errorf("%w: %d bytes at %s position %d, shorter than a batch header", ErrCorruptBatch, r.end-pos, r.f.path, pos)
	}
	if pos < r.bufPos || pos+BatchHeaderSize > r.bufPos+int64(r.bufLen) {
		n, err := readFull(r.f.file, r.buf[:min(int64(len(r.buf)), r.end-pos)], pos)
		if err != nil {
			return BatchHeader{}, fmt.Errorf("segment: read %s at %d: %w", r.f.path, pos, err)
		}
		r.bufPos, r.bufLen = pos, n
		if n < BatchHeaderSize {
			return BatchHeader{}, fmt.Errorf("%w: short read at %s position %d", ErrCorruptBatch, r.f.path, pos)
		}
	}
	b := r.buf[pos-r.bufPos:]
	size := frameLength(b, r.maxBatch)
	if size < 0 || pos+int64(size) > r.end || b[offMagic] != 2 {
		return BatchHeader{}, fmt.Errorf("%w: bad batch header at %s position %d", ErrCorruptBatch, r.f.path, pos)
	}
	return parseHeader(b), nil
}

// whole returns the bytes of the batch h at pos (its header read by at)
// when they fit in the buffer, reading them into it when needed; nil for a
// batch larger than the buffer. For control batches, which are small.
func (r *headerReader) whole(pos int64, h BatchHeader) []byte {
	n := int64(h.Size())
	if n > int64(len(r.buf)) {
		return nil
	}
	if pos < r.bufPos || pos+n > r.bufPos+int64(r.bufLen) {
		m, err := readFull(r.f.file, r.buf[:min(int64(len(r.buf)), r.end-pos)], pos)
		if err != nil || int64(m) < n {
			return nil
		}
		r.bufPos, r.bufLen = pos, m
	}
	return r.buf[pos-r.bufPos : pos-r.bufPos+n]
}
