package segment

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Span is what Read would return, left in its segment file: the batches'
// bounds without their bytes, for sending them without a copy through user
// memory (sendfile). The segment file stays open until Release, even if
// retention or a truncation removes the segment meanwhile; its bytes in the
// span never change (segments are append-only: a cut seals a segment and
// later appends go to a new one).
type Span struct {
	Chunk // Data is nil
	l     *Log
	seg   *segment
}

// ReadSpan is Read without the copy: it reads only the batch headers to find
// the same whole batches Read returns, and leaves them in the file. A Span
// with Size 0 holds no segment (nothing to read). The caller must Release a
// Span it got with Size > 0.
func (l *Log) ReadSpan(offset int64, maxBytes int, upTo int64) (*Span, error) {
	from := offset
	for {
		at, c, err := l.locate(from, upTo)
		if err != nil || at.seg == nil {
			c.First, c.Next = offset, offset
			return &Span{Chunk: c}, err
		}
		out, err := at.find(c, func(pos int64, c Chunk) (Chunk, error) {
			return l.spanFrom(at.seg, pos, at.end, from, maxBytes, at.upTo, c)
		})
		if err == nil && out.Size > 0 {
			out, err = l.verifySpan(at.seg, at.vs, from, out)
		}
		l.hint(at.seg, out, err)
		if err != nil || out.Size == 0 {
			l.release(at.seg)
			if next, again := at.retry(err); again {
				from = max(from, next)
				continue
			}
			return &Span{Chunk: out}, err
		}
		return &Span{Chunk: out, l: l, seg: at.seg}, nil
	}
}

// spanFrom walks the batch headers from pos (a batch boundary at or before
// offset's batch) to find offset's batch and the whole batches after it that
// fit in maxBytes (the first always does) and start below upTo: readFrom's
// answer, reading BatchHeaderSize bytes per batch.
func (l *Log) spanFrom(seg *segment, pos, end, offset int64, maxBytes int, upTo int64, c Chunk) (Chunk, error) {
	var h [BatchHeaderSize]byte
	start := int64(-1)
	p := pos
	for p+BatchHeaderSize <= end {
		n, err := readFull(seg.file, h[:], p)
		if err != nil {
			return c, fmt.Errorf("segment: read %s at %d: %w", seg.path, p, err)
		}
		if n < len(h) {
			return c, fmt.Errorf("%w: truncated batch header at %s position %d", ErrCorruptBatch, seg.path, p)
		}
		size := int64(frameLength(h[:], l.opts.MaxBatchBytes))
		if size < 0 || p+size > end {
			return c, fmt.Errorf("%w: bad batch length at %s position %d", ErrCorruptBatch, seg.path, p)
		}
		if start < 0 {
			if nextOffsetAt(h[:]) <= offset {
				p += size
				continue
			}
			if baseOffsetAt(h[:]) >= upTo {
				return c, nil // offset is in a hole that reaches upTo
			}
			start = p
			c.First = baseOffsetAt(h[:])
		} else if p-start+size > int64(maxBytes) || baseOffsetAt(h[:]) >= upTo {
			break
		}
		c.Next = nextOffsetAt(h[:])
		p += size
	}
	if start < 0 && p >= end {
		return c, errHoleToEnd
	}
	if start < 0 {
		return c, fmt.Errorf("%w: no batch holds offset %d at %s after position %d", ErrCorruptBatch, offset, seg.path, pos)
	}
	c.Position, c.Size = start, p-start
	return c, nil
}

// Fd is the segment file's descriptor for sendfile, or vfs.InvalidFd when
// the file has none (an in-memory FS) or the span is empty.
func (s *Span) Fd() uintptr {
	if s.seg == nil {
		return vfs.InvalidFd
	}
	return s.seg.file.Fd()
}

// Len is the span's size in bytes.
func (s *Span) Len() int { return int(s.Size) }

// Pos is the file position of the span's first byte.
func (s *Span) Pos() int64 { return s.Position }

// AppendTo appends the span's bytes to dst, read from the file.
func (s *Span) AppendTo(dst []byte) ([]byte, error) {
	if s.Size == 0 {
		return dst, nil
	}
	n := len(dst)
	dst = append(dst, make([]byte, s.Size)...)
	m, err := readFull(s.seg.file, dst[n:], s.Position)
	if err == nil && int64(m) < s.Size {
		err = fmt.Errorf("%w: %s ends at %d, before the span's end %d", ErrCorruptBatch, s.seg.path, s.Position+int64(m), s.Position+s.Size)
	}
	if err != nil {
		return dst[:n], fmt.Errorf("segment: read %s at %d: %w", s.seg.path, s.Position, err)
	}
	return dst, nil
}

// Release lets the segment file go. Safe to call more than once.
func (s *Span) Release() {
	if s.seg != nil {
		s.l.release(s.seg)
		s.seg = nil
	}
}
