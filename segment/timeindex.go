package segment

import (
	"sort"

	"github.com/cockroachdb/pebble/v2"
)

// OffsetForTimestamp answers ListOffsets by timestamp: the first batch whose
// maxTimestamp is at or after ts, as (its base offset, its maxTimestamp).
// ok is false when no batch is that recent. The answer is at batch
// granularity: a consumer that starts there sees every record at or after
// ts, and possibly a few older records of the same batch.
func (l *Log) OffsetForTimestamp(ts int64) (offset, batchTs int64, ok bool, err error) {
	// The time index holds (running max timestamp -> offset); the last
	// entry below ts is a safe place to start: nothing before it reaches ts.
	start := int64(-1)
	it, err := l.idx.db.NewIter(&pebble.IterOptions{LowerBound: l.k.kind(kindTime), UpperBound: l.k.time(ts)})
	if err != nil {
		return 0, 0, false, err
	}
	if it.Last() {
		start = decodeU64(it.Value())
	}
	if err := it.Close(); err != nil {
		return 0, 0, false, err
	}

	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return 0, 0, false, ErrClosed
	}
	logStart := l.logStart
	start = max(start, logStart)
	// Pending (uncommitted) time entries are not in Pebble; starting earlier
	// is always safe, only slower.
	segs := append([]*segment(nil), l.segs...)
	sizes := make([]int64, len(segs))
	for i, s := range segs {
		sizes[i] = s.size
		s.refs++
	}
	l.mu.Unlock()
	defer func() {
		for _, s := range segs {
			l.release(s)
		}
	}()

	i := sort.Search(len(segs), func(i int) bool { return segs[i].base > start }) - 1
	i = max(i, 0)
	var hdr [BatchHeaderSize]byte
	for ; i < len(segs); i++ {
		s := segs[i]
		if s.maxTs != noTimestamp && s.maxTs < ts && s.sealed {
			continue // nothing in this closed segment is recent enough
		}
		pos := int64(0)
		if start > s.base {
			if pos, err = l.lookupPos(s, start); err != nil {
				return 0, 0, false, err
			}
		}
		for pos+BatchHeaderSize <= sizes[i] {
			if _, err := readFull(s.file, hdr[:], pos); err != nil {
				return 0, 0, false, err
			}
			h := parseHeader(hdr[:])
			if h.MaxTimestamp >= ts && h.NextOffset() > logStart {
				return max(h.BaseOffset, logStart), h.MaxTimestamp, true, nil
			}
			pos += int64(h.Size())
		}
	}
	return 0, 0, false, nil
}
