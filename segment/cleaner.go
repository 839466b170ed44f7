package segment

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// cleaner is one Clean's working state: the options, the offset map and
// scratch buffers. It is owned by one goroutine.
type cleaner struct {
	l   *Log
	o   CleanOptions
	ctx context.Context
	st  *CleanStats
	gen int64 // Log.cutGen when the Clean started

	latest *offsetMap // key -> latest offset in the mapped range
	mapEnd int64      // the map covers offsets below it
	keys   []keyAt    // one batch's keys, before they go into latest or are looked up
	recAts []recAt    // one batch's records, beside keys (cleanBatch)
	dec    decompressor

	// Transactions (txnclean.go): the aborted transactions of the range
	// cleaned, by producer; the producers whose transactional data a pass
	// has read since their last marker; the abort markers it removed.
	aborted    map[int64][]AbortedTxn
	txnSeen    map[int64]bool
	goneAborts []int64
	goneMarker int64 // the last marker a pass removed; -1: none

	rd   batchReader
	out  []byte // the segment being written, not yet flushed
	recs []byte // a rebuilt batch's records
	cmp  compressor
}

type keyAt struct {
	h0, h1 uint64
	offset int64
}

func (c *cleaner) close() { c.cmp.close(); c.dec.close() }

// buildMap maps each key of the batches from offset from on to its latest
// offset, until end or until the map is full (at a batch boundary, after
// at least one batch). It returns the offset the map covers up to.
func (c *cleaner) buildMap(from, end int64) (int64, error) {
	if c.latest == nil {
		c.latest = newOffsetMap(c.o.OffsetMapBytes)
	}
	c.latest.reset()
	segs, err := c.l.cleanable(end)
	if err != nil {
		return 0, err
	}
	defer c.l.releaseAll(segs)
	covered := from
	for _, s := range segs {
		if s.next <= from {
			continue
		}
		c.rd.reset(c.l, s)
		for {
			h, b, _, ok, err := c.rd.next(c)
			if err != nil {
				return 0, err
			}
			if !ok || h.BaseOffset >= end {
				break
			}
			if h.NextOffset() <= from {
				continue
			}
			if !h.IsControl() && !c.abortedBatch(h) {
				// Only a batch whose records all decode counts (the others
				// are kept whole, and consumers cannot read them either);
				// an aborted transaction's records go, and count for
				// nothing.
				c.keys = c.keys[:0]
				err := c.eachRecord(b, h, func(r record) bool {
					if r.offset >= from && !r.keyNull {
						h0, h1 := c.latest.hash(r.key)
						c.keys = append(c.keys, keyAt{h0, h1, r.offset})
					}
					return true
				})
				if !c.latest.Fits(len(c.keys)) && covered > from {
					c.mapEnd = covered // the next pass starts at this batch
					return covered, nil
				}
				c.latest.touch(c.keys)
				for _, k := range c.keys {
					if err == nil {
						c.latest.put(k.h0, k.h1, k.offset)
					}
				}
			}
			covered = h.NextOffset()
		}
		covered = max(covered, min(s.next, end))
	}
	c.mapEnd = max(covered, end)
	return c.mapEnd, nil
}

// retain decides one record of a segment cleaned at cleanedAt (noTimestamp:
// never before), k being its key's hash and offset (see batchRecs): a
// record the map supersedes goes, a null key goes, a tombstone goes once
// delete.retention.ms has passed since its segment was first cleaned;
// records at or past the map's end stay.
func (c *cleaner) retain(r *recAt, k keyAt, cleanedAt int64) bool {
	if k.offset >= c.mapEnd {
		return true
	}
	if r.keyNull {
		return false
	}
	if latest, ok := c.latest.get(k.h0, k.h1); ok && k.offset < latest {
		return false
	}
	if r.valueNull && cleanedAt != noTimestamp && c.o.Now.UnixMilli() >= cleanedAt+c.o.Policy.DeleteRetention.Milliseconds() {
		return false
	}
	return true
}

// recAt is what cleanBatch keeps of a record between decoding its batch
// and deciding it; its key's hash and offset are in the keyAt beside it.
type recAt struct {
	raw                []byte // aliases the batch (or the decompressor's output)
	tsDelta            int64
	keyNull, valueNull bool
}

// batchRecs decodes batch b's records into c.recAts and their keys'
// hashes and offsets into c.keys (no hash for a null key or a record at
// or past the map's end), then touches the map's slots for them all:
// the lookups that follow find them in cache instead of each waiting
// for memory in turn (map cache misses were most of a Clean's CPU).
func (c *cleaner) batchRecs(b []byte, h BatchHeader) error {
	c.recAts, c.keys = c.recAts[:0], c.keys[:0]
	err := c.eachRecord(b, h, func(r record) bool {
		k := keyAt{offset: r.offset}
		if !r.keyNull && r.offset < c.mapEnd {
			k.h0, k.h1 = c.latest.hash(r.key)
		}
		c.keys = append(c.keys, k)
		c.recAts = append(c.recAts, recAt{raw: r.raw, tsDelta: r.tsDelta, keyNull: r.keyNull, valueNull: r.valueNull})
		return true
	})
	c.latest.touch(c.keys)
	return err
}

// cleanBatch appends to c.out what stays of batch b (header h) of a
// segment cleaned at cleanedAt: b itself when every record stays, a
// rebuilt batch (same base offset, lastOffsetDelta, producer fields and
// base timestamp; new count, maxTimestamp, length and CRC; re-compressed
// with its codec) when some do, an empty batch when none does but it is
// its producer's last (kept for idempotence, as Kafka) or the log's last
// (keep), nothing otherwise.
// An aborted transaction's batch loses all its records; a transaction
// marker goes when dropMarker says so (txnclean.go), else stays whole, as
// do batches whose records do not decode.
func (c *cleaner) cleanBatch(h BatchHeader, b []byte, cleanedAt int64, keep bool) error {
	c.st.RecordsRead += int64(h.RecordCount)
	if h.IsControl() {
		if !keep && c.dropMarker(h, b, cleanedAt) {
			c.st.BatchesDropped++
			return nil
		}
		c.out = append(c.out, b...)
		c.st.RecordsKept += int64(h.RecordCount)
		return nil
	}
	abort := false
	if h.IsTransactional() && h.ProducerID >= 0 {
		c.txnSeen[h.ProducerID] = true
		abort = c.abortedBatch(h)
	}
	c.recs = c.recs[:0]
	kept, total := 0, 0
	maxDelta := int64(-1 << 63)
	err := c.batchRecs(b, h)
	if err == nil {
		total = len(c.recAts)
		for i := range c.recAts {
			r := &c.recAts[i]
			if !abort && c.retain(r, c.keys[i], cleanedAt) {
				kept++
				c.recs = append(c.recs, r.raw...)
				maxDelta = max(maxDelta, r.tsDelta)
			}
		}
	}
	if err != nil || kept == total {
		c.out = append(c.out, b...)
		c.st.RecordsKept += int64(h.RecordCount)
		return nil
	}
	c.st.RecordsKept += int64(kept)
	if kept == 0 && !keep {
		c.st.BatchesDropped++
		return nil
	}
	attrs := h.Attributes
	maxTs := h.MaxTimestamp
	body := c.recs
	if kept == 0 {
		attrs &^= attrCompression
		c.st.EmptyKept++
	} else {
		if attrs&attrLogAppendTime == 0 {
			maxTs = h.BaseTimestamp + maxDelta
		}
		if codec := attrs & attrCompression; codec != codecNone {
			xerial := codec == codecSnappy && len(b) >= BatchHeaderSize+len(xerialMagic) &&
				string(b[BatchHeaderSize:BatchHeaderSize+len(xerialMagic)]) == string(xerialMagic)
			if body, err = c.cmp.compress(codec, xerial, c.recs); err != nil {
				return fmt.Errorf("segment: clean: re-compress batch %d: %w", h.BaseOffset, err)
			}
		}
	}
	p := len(c.out)
	c.out = append(c.out, b[:BatchHeaderSize]...)
	c.out = append(c.out, body...)
	nb := c.out[p:]
	be := binary.BigEndian
	be.PutUint32(nb[offBatchLength:], uint32(len(nb)-logOverhead))
	be.PutUint16(nb[offAttributes:], uint16(attrs))
	be.PutUint64(nb[offMaxTimestamp:], uint64(maxTs))
	be.PutUint32(nb[offRecordCount:], uint32(kept))
	be.PutUint32(nb[offCRC:], crc32c(nb[offAttributes:]))
	return nil
}

// record is one decoded record of a batch: its bytes (length prefix
// included) and the fields the cleaner needs. Slices alias the batch.
type record struct {
	raw                []byte
	offset, tsDelta    int64
	key                []byte
	keyNull, valueNull bool
}

// eachRecord calls fn for each record of batch b (header h), decompressed
// when compressed, until fn returns false. A record that does not decode
// is ErrCorruptBatch (and fn has seen the records before it).
func eachRecord(b []byte, h BatchHeader, fn func(record) bool) error {
	recs, err := batchRecords(b, h)
	if err != nil {
		return err
	}
	return eachRecordIn(recs, h, fn)
}

// eachRecord is eachRecord with the cleaner's reused decompressors.
func (c *cleaner) eachRecord(b []byte, h BatchHeader, fn func(record) bool) error {
	recs, err := c.dec.records(b, h)
	if err != nil {
		return err
	}
	return eachRecordIn(recs, h, fn)
}

// eachRecordIn is eachRecord over recs, batch h's records section.
func eachRecordIn(recs []byte, h BatchHeader, fn func(record) bool) error {
	bad := func(i int32, what string) error {
		return fmt.Errorf("%w: record %d of batch %d: %s", ErrCorruptBatch, i, h.BaseOffset, what)
	}
	p := 0
	for i := int32(0); i < h.RecordCount; i++ {
		length, n := binary.Varint(recs[p:])
		if n <= 0 || length < 1 || length > int64(len(recs)-p-n) {
			return bad(i, "bad length")
		}
		r := record{raw: recs[p : p+n+int(length)]}
		body := recs[p+n+1 : p+n+int(length)] // past attributes
		q := 0
		next := func() (int64, bool) {
			v, m := binary.Varint(body[q:])
			if m <= 0 {
				return 0, false
			}
			q += m
			return v, true
		}
		var ok bool
		var od, kl, vl int64
		if r.tsDelta, ok = next(); !ok {
			return bad(i, "bad timestamp delta")
		}
		if od, ok = next(); !ok || od < 0 || od > int64(h.LastOffsetDelta) {
			return bad(i, "bad offset delta")
		}
		r.offset = h.BaseOffset + od
		if kl, ok = next(); !ok || kl < -1 || kl > int64(len(body)-q) {
			return bad(i, "bad key length")
		}
		if r.keyNull = kl < 0; !r.keyNull {
			r.key = body[q : q+int(kl)]
			q += int(kl)
		}
		if vl, ok = next(); !ok || vl < -1 || vl > int64(len(body)-q) {
			return bad(i, "bad value length")
		}
		r.valueNull = vl < 0
		if !fn(r) {
			return nil
		}
		p += n + int(length)
	}
	if p != len(recs) {
		return fmt.Errorf("%w: batch %d: %d bytes after its last record", ErrCorruptBatch, h.BaseOffset, len(recs)-p)
	}
	return nil
}

// batchReader reads the batches of one segment in order through a large
// buffer, checking each one's CRC (the cleaner never copies bad bytes).
type batchReader struct {
	l        *Log
	seg      *segment
	end      int64 // the segment's size when the pass started
	buf      []byte
	bufPos   int64 // file position of buf[0]
	lo, hi   int   // buf[lo:hi] is unread
	nextPos  int64 // file position of buf[lo]
	maxBatch int
}

const cleanReadSize = 1 << 20

func (r *batchReader) reset(l *Log, s *segment) {
	l.mu.Lock()
	r.end = s.size
	if err := l.openLocked(s); err != nil {
		r.end = 0 // the Clean pinned s, so it is open: only tests get here
	}
	l.mu.Unlock()
	r.l, r.seg, r.lo, r.hi, r.nextPos, r.maxBatch = l, s, 0, 0, 0, l.opts.MaxBatchBytes
	if r.buf == nil {
		r.buf = make([]byte, cleanReadSize)
	}
}

// next returns the next batch, its header and position; the bytes are
// valid until the next call. ok is false at the segment's end.
func (r *batchReader) next(c *cleaner) (h BatchHeader, b []byte, pos int64, ok bool, err error) {
	if r.nextPos >= r.end {
		return h, nil, 0, false, nil
	}
	if err := r.fill(c, BatchHeaderSize); err != nil {
		return h, nil, 0, false, err
	}
	n := frameLength(r.buf[r.lo:], r.maxBatch)
	if n < 0 || r.nextPos+int64(n) > r.end {
		return h, nil, 0, false, fmt.Errorf("%w: bad batch length at %s position %d", ErrCorruptBatch, r.seg.path, r.nextPos)
	}
	if err := r.fill(c, n); err != nil {
		return h, nil, 0, false, err
	}
	b = r.buf[r.lo : r.lo+n]
	if h, _, err = checkBatch(b, r.maxBatch); err != nil {
		return h, nil, 0, false, fmt.Errorf("segment: clean %s position %d: %w", r.seg.path, r.nextPos, err)
	}
	pos = r.nextPos
	r.lo += n
	r.nextPos += int64(n)
	return h, b, pos, true, nil
}

// fill makes at least n unread bytes available (n fits before r.end).
func (r *batchReader) fill(c *cleaner, n int) error {
	if r.hi-r.lo >= n {
		return nil
	}
	if n > len(r.buf) {
		nb := make([]byte, n)
		copy(nb, r.buf[r.lo:r.hi])
		r.buf = nb
	} else {
		copy(r.buf, r.buf[r.lo:r.hi])
	}
	r.hi -= r.lo
	r.lo = 0
	want := int(min(int64(len(r.buf)-r.hi), r.end-r.nextPos-int64(r.hi)))
	if want <= 0 {
		return fmt.Errorf("%w: %s ends inside a batch at %d", ErrCorruptBatch, r.seg.path, r.nextPos)
	}
	if err := c.throttle(want); err != nil {
		return err
	}
	m, err := readFull(r.seg.file, r.buf[r.hi:r.hi+want], r.nextPos+int64(r.hi))
	c.st.BytesRead += int64(m)
	if err != nil {
		return fmt.Errorf("segment: clean: read %s: %w", r.seg.path, err)
	}
	r.hi += m
	if r.hi < n {
		return fmt.Errorf("%w: %s ends inside a batch at %d", ErrCorruptBatch, r.seg.path, r.nextPos)
	}
	return nil
}

func (c *cleaner) throttle(n int) error {
	if c.o.Throttle == nil {
		return c.ctx.Err()
	}
	return c.o.Throttle(c.ctx, n)
}

// flushOut writes c.out to f (throttled) and empties it.
func (c *cleaner) flushOut(f vfs.File) error {
	if len(c.out) == 0 {
		return nil
	}
	if err := c.throttle(len(c.out)); err != nil {
		return err
	}
	if _, err := f.Write(c.out); err != nil {
		return fmt.Errorf("segment: clean: write: %w", err)
	}
	c.st.BytesWritten += int64(len(c.out))
	c.out = c.out[:0]
	return nil
}

func (l *Log) releaseAll(segs []*segment) {
	for _, s := range segs {
		l.release(s)
	}
}
