package segment

import (
	"sort"

	"github.com/cockroachdb/pebble/v2"
)

// OffsetForTimestamp answers ListOffsets by timestamp as Kafka does: the
// first record at or after the log start whose timestamp is at or after ts,
// as (its offset, its timestamp); ok is false when no record is that
// recent. Batch headers find the first batch whose maxTimestamp reaches ts
// (the time index says where to start); only that batch's records are
// decoded (recordTimes; decompressed first when compressed). A batch whose
// records do not decode answers with its first offset (at or after the log
// start) and its maxTimestamp, from which a consumer misses no record at or
// after ts.
func (l *Log) OffsetForTimestamp(ts int64) (offset, recordTs int64, ok bool, err error) {
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
		if err := l.pinLocked(s); err != nil {
			for _, p := range segs[:i] {
				p.refs--
			}
			l.mu.Unlock()
			return 0, 0, false, err
		}
	}
	l.mu.Unlock()
	defer func() {
		for _, s := range segs {
			l.release(s)
		}
	}()

	i := sort.Search(len(segs), func(i int) bool { return segs[i].base > start }) - 1
	i = max(i, 0)
	buf := make([]byte, headerReadSize)
	var batch []byte
	for ; i < len(segs); i++ {
		s := segs[i]
		if s.maxTs != noTimestamp && s.maxTs < ts && s.sealed {
			continue // nothing in this closed segment is recent enough
		}
		pos := int64(0)
		if start > s.base {
			if pos, err = l.indexedPos(s, start); err != nil {
				return 0, 0, false, err
			}
		}
		r := headerReader{f: s, end: sizes[i], buf: buf, maxBatch: l.opts.MaxBatchBytes}
		for pos < sizes[i] {
			h, err := r.at(pos)
			if err != nil {
				return 0, 0, false, err
			}
			if h.MaxTimestamp >= ts && h.NextOffset() > logStart {
				if batch, err = l.readBatch(s, pos, h, batch); err != nil {
					return 0, 0, false, err
				}
				err = recordTimes(batch, func(o, t int64) bool {
					if t >= ts && o >= logStart {
						offset, recordTs, ok = o, t, true
					}
					return !ok
				})
				if err != nil {
					// Records that do not decode (the CRC held: a
					// producer's malformed batch): the batch answers.
					return max(h.BaseOffset, logStart), h.MaxTimestamp, true, nil
				}
				if ok {
					return offset, recordTs, ok, nil
				}
				// The records that reach ts lie below the log start.
			}
			pos += int64(h.Size())
		}
	}
	return 0, 0, false, nil
}
