package segment

import (
	"fmt"
	"strings"
	"time"
)

// Scrubbing and verified reads: a byte that rots in a segment file after
// the log accepted it (bit rot, a bad sector, a stray write) must not reach
// a consumer or a follower, and must be found without waiting for a read.
//
//   - Reads (Read, ReadSpan) CRC-check the batches they hand out that came
//     from disk unchecked since the log opened: bytes this process wrote
//     were validated by Append, so a steady reader at the log end pays
//     nothing, and a reader of old data pays one read of each range once
//     (each segment remembers the latest range a read or scrub checked).
//     A read that meets a bad batch returns the good batches before it, or
//     a *CorruptionError when the bad one is first.
//   - ScrubNext verifies one sealed segment whole (framing, magic, CRC-32C,
//     contiguous offsets up to its seal), through the log's vfs, holding no
//     lock of the log while it reads, paced by the caller's wait function.
//     The first bad batch found is remembered (Corruption) until a
//     truncation or retention removes it.
//   - TruncateTo at or past a remembered corruption cuts the log at the bad
//     batch's position, found by the scrub, not by the damaged bytes; so does
//     TruncateBeforeCorruption. The cut is the usual durable seal.

// CorruptionError is a batch that fails its checks in bytes the log had
// accepted: found by a scrub or a read. It wraps ErrCorruptBatch.
type CorruptionError struct {
	Path    string // the segment file
	Segment int64  // the segment's base offset
	Pos     int64  // file position of the bad batch
	// Offset is the first offset lost: the offset the bad batch should
	// start at (the next offset of the good batch before it). A read
	// that meets damage at the first batch it returns says the offset it
	// was asked for.
	Offset int64
	Reason string
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("%v: %s at %s position %d (offset %d)", ErrCorruptBatch, e.Reason, e.Path, e.Pos, e.Offset)
}

// reason is err's text without this package's sentinel prefix.
func reason(err error) string {
	s := err.Error()
	for _, e := range []error{ErrCorruptBatch, ErrInvalidBatch, ErrBatchTooLarge} {
		s = strings.TrimPrefix(s, e.Error()+": ")
	}
	return s
}

// Unwrap makes errors.Is(err, ErrCorruptBatch) hold.
func (e *CorruptionError) Unwrap() error { return ErrCorruptBatch }

// Corruption returns the lowest corrupt batch a scrub found that is still
// in the log, or nil. The caller must not modify it.
func (l *Log) Corruption() *CorruptionError {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.corrupt
}

// TruncateBeforeCorruption removes the corrupt batch Corruption names and
// everything after it (TruncateTo its offset) and returns the new log end.
// With no known corruption it does nothing.
func (l *Log) TruncateBeforeCorruption() (int64, error) {
	c := l.Corruption()
	if c == nil {
		return l.LogEndOffset(), nil
	}
	if err := l.TruncateTo(c.Offset); err != nil {
		return 0, err
	}
	return l.LogEndOffset(), nil
}

// ScrubResult says what ScrubNext verified.
type ScrubResult struct {
	Segment int64 // base offset of the segment scrubbed
	Bytes   int64 // bytes read
	Batches int   // good batches before the end or the corruption
	// Corrupt is the first bad batch of the segment, or nil.
	Corrupt *CorruptionError
}

// scrubChunk is how much a scrub reads at a time (more when a batch is
// larger): the throttle's grain.
const scrubChunk = 256 << 10

// ScrubNext verifies the sealed segment least recently scrubbed, if one was
// last scrubbed before due (never-scrubbed segments first); ok is false when
// none is due. wait is called before each read with the bytes about to be
// read (a throttle); its error ends the scrub and is returned. The log's
// lock is not held while reading, so appends and reads go on; a segment
// removed meanwhile is read to the end from its open file and its result
// discarded. err is an I/O error (or wait's), not corruption: that is in
// the result.
func (l *Log) ScrubNext(due time.Time, wait func(n int) error) (res ScrubResult, ok bool, err error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return res, false, ErrClosed
	}
	var seg *segment
	for _, s := range l.segs[:len(l.segs)-1] {
		if s.sealed && s.scrubbed.Before(due) && (seg == nil || s.scrubbed.Before(seg.scrubbed)) {
			seg = s
		}
	}
	if seg == nil {
		l.mu.Unlock()
		return res, false, nil
	}
	if err := l.pinLocked(seg); err != nil {
		l.mu.Unlock()
		return res, false, err
	}
	size, next := seg.size, seg.next
	l.mu.Unlock()
	defer l.release(seg)

	res.Segment = seg.base
	res.Bytes, res.Batches, res.Corrupt, err = l.verifySegment(seg, size, next, wait)
	if err != nil {
		return res, true, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	seg.scrubbed = l.opts.Now()
	if seg.removed || seg.replaced.Load() || seg.size < size {
		return res, true, nil // truncated, deleted or cleaned meanwhile: the result is moot
	}
	if c := res.Corrupt; c != nil {
		if l.corrupt == nil || c.Offset < l.corrupt.Offset {
			l.corrupt = c
		}
		seg.vLo, seg.vHi = 0, c.Pos
	} else {
		seg.vLo, seg.vHi = 0, size
	}
	return res, true, nil
}

// verifySegment reads seg's bytes before size and checks every batch, and
// that the offsets run from seg's base to next.
func (l *Log) verifySegment(seg *segment, size, next int64, wait func(n int) error) (read int64, batches int, bad *CorruptionError, err error) {
	buf := make([]byte, min(scrubChunk, max(size, BatchHeaderSize)))
	expect := seg.base
	corrupt := func(pos int64, why string) *CorruptionError {
		return &CorruptionError{Path: seg.path, Segment: seg.base, Pos: pos, Offset: expect, Reason: why}
	}
	for pos := int64(0); pos < size; {
		want := int(min(int64(len(buf)), size-pos))
		if wait != nil {
			if err := wait(want); err != nil {
				return read, batches, nil, err
			}
		}
		n, err := readFull(seg.file, buf[:want], pos)
		read += int64(n)
		if err != nil {
			return read, batches, nil, fmt.Errorf("segment: scrub %s at %d: %w", seg.path, pos, err)
		}
		if n < want {
			return read, batches, corrupt(pos+int64(n), fmt.Sprintf("file ends before the seal at %d", size)), nil
		}
		p := 0
		for p < n {
			if n-p < BatchHeaderSize {
				if pos+int64(n) == size {
					return read, batches, corrupt(pos+int64(p), "bytes after the last batch"), nil
				}
				break
			}
			sz := frameLength(buf[p:], l.opts.MaxBatchBytes)
			if sz < 0 || pos+int64(p+sz) > size {
				return read, batches, corrupt(pos+int64(p), "impossible batch length"), nil
			}
			if p+sz > n {
				if p == 0 {
					buf = make([]byte, sz) // a batch larger than a chunk
				}
				break
			}
			h, _, err := checkBatch(buf[p:p+sz], l.opts.MaxBatchBytes)
			if err != nil {
				return read, batches, corrupt(pos+int64(p), reason(err)), nil
			}
			// Offsets rise; a cleaned segment, or a follower's copy
			// of a compacted log, has holes.
			if h.BaseOffset < expect {
				return read, batches, corrupt(pos+int64(p), fmt.Sprintf("batch base offset %d", h.BaseOffset)), nil
			}
			expect = h.NextOffset()
			batches++
			p += sz
		}
		pos += int64(p)
	}
	if expect > next || expect < next && !seg.cleaned {
		return read, batches, corrupt(size, fmt.Sprintf("batches end at offset %d, the seal says %d", expect, next)), nil
	}
	return read, batches, nil, nil
}

// verifyState is what a read needs to know, taken under mu when it starts,
// to decide which of the bytes it returns to check (see segment.fromDisk).
type verifyState struct {
	fromDisk, vLo, vHi int64
}

func (s verifyState) needs(from, to int64) bool {
	to = min(to, s.fromDisk)
	return from < to && !(from >= s.vLo && to <= s.vHi)
}

// checkBatches checks the whole batches in b, which sit at file position
// pos of seg, and returns how many bytes of good batches lead it and the
// offset after them (first when none is good). bad describes the first bad
// batch, with first as its offset when it leads.
func (l *Log) checkBatches(seg *segment, b []byte, pos, first int64) (good int, next int64, bad *CorruptionError) {
	next = first
	for good < len(b) {
		sz := frameLength(b[good:], l.opts.MaxBatchBytes)
		why := "impossible batch length"
		if sz >= 0 && good+sz <= len(b) {
			h, _, err := checkBatch(b[good:good+sz], l.opts.MaxBatchBytes)
			if err == nil {
				next = h.NextOffset()
				good += sz
				continue
			}
			why = reason(err)
		}
		return good, next, &CorruptionError{Path: seg.path, Segment: seg.base, Pos: pos + int64(good), Offset: next, Reason: why}
	}
	return good, next, nil
}

// verifyChunk checks the batches of a Read answer that need it: it returns
// c cut before the first bad batch, or the corruption when that is c's first.
func (l *Log) verifyChunk(seg *segment, vs verifyState, offset int64, c Chunk) (Chunk, error) {
	if !vs.needs(c.Position, c.Position+c.Size) {
		return c, nil
	}
	good, next, bad := l.checkBatches(seg, c.Data, c.Position, offset)
	return l.verified(seg, c, good, next, bad)
}

// verifySpan is verifyChunk for ReadSpan: it reads the span's bytes to
// check them when they need it.
func (l *Log) verifySpan(seg *segment, vs verifyState, offset int64, c Chunk) (Chunk, error) {
	if !vs.needs(c.Position, c.Position+c.Size) {
		return c, nil
	}
	b := make([]byte, c.Size)
	n, err := readFull(seg.file, b, c.Position)
	if err != nil {
		return c, fmt.Errorf("segment: read %s at %d: %w", seg.path, c.Position, err)
	}
	good, next, bad := l.checkBatches(seg, b[:n], c.Position, offset)
	if bad == nil && int64(n) < c.Size {
		bad = &CorruptionError{Path: seg.path, Segment: seg.base, Pos: c.Position + int64(n), Offset: next, Reason: "file ends inside the batch"}
	}
	return l.verified(seg, c, good, next, bad)
}

// verified records that good bytes from c's start are checked and cuts c
// to them; with none good it returns bad.
func (l *Log) verified(seg *segment, c Chunk, good int, next int64, bad *CorruptionError) (Chunk, error) {
	if good > 0 {
		l.mu.Lock()
		lo, hi := c.Position, c.Position+int64(good)
		if lo <= seg.vHi && hi >= seg.vLo {
			seg.vLo, seg.vHi = min(lo, seg.vLo), max(hi, seg.vHi)
		} else {
			seg.vLo, seg.vHi = lo, hi
		}
		l.mu.Unlock()
	}
	if bad == nil {
		return c, nil
	}
	if good == 0 {
		c.Size, c.Data, c.Next = 0, nil, c.First
		return c, bad
	}
	c.Size, c.Next = int64(good), next
	if c.Data != nil {
		c.Data = c.Data[:good]
	}
	return c, nil
}
