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
	keys   []keyAt    // one batch's records, before they go into latest or are looked up
	recAts []recAt    // one batch's records' bytes, beside keys (cleanBatch)
	keep   []bool     // which of keys stay (decide)
	// horizon is the earliest delete horizon still to pass of a batch a
	// pass wrote with a tombstone or marker in it (0: none): the log's
	// deleteHorizon after the swap.
	horizon int64
	seen    keyCache // what buildMap decoded, for the rewrite
	dec     decompressor

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

// keyAt is one record as the cleaner decides it: its key's hash (zero for
// a null key, or past the map's end in cleanBatch), its offset, and
// whether its key and value are null.
type keyAt struct {
	h0, h1             uint64
	offset             int64
	keyNull, valueNull bool
}

// keyCache keeps the keyAts of the batches buildMap decoded, in log
// order, so that the rewrite decides them without decompressing and
// parsing them a second time: a batch whose records all stay, or all go,
// is then copied or dropped from its header alone; only a batch that
// loses some records (or gets its delete horizon) is decoded again. It
// holds at most max records (keyAtBytes each); the batches past that are
// decoded again. Keys are kept in chunks, so that growing copies nothing,
// and the chunks are reused by the next pass (and the next Clean, with a
// CleanScratch).
type keyCache struct {
	chunks  [][]keyAt // each with its capacity fixed; chunks[cur] is being filled
	cur     int
	batches []cachedBatch
	n       int // keys held
	next    int // batches[next] is the first the rewrite has not reached
	max     int
}

type cachedBatch struct {
	base int64
	keys []keyAt
}

const (
	keyAtBytes     = 32
	keyChunkLength = 8192 // 256 KiB
)

func (k *keyCache) reset(maxBytes int) {
	k.batches, k.n, k.next, k.cur = k.batches[:0], 0, 0, 0
	k.max = maxBytes / keyAtBytes
	for i := range k.chunks {
		k.chunks[i] = k.chunks[i][:0]
	}
}

// add keeps batch base's keys if they fit.
func (k *keyCache) add(base int64, ks []keyAt) {
	if k.n+len(ks) > k.max {
		k.max = 0 // keep none after one that did not fit: the rewrite reads in order
		return
	}
	for k.cur < len(k.chunks) && cap(k.chunks[k.cur])-len(k.chunks[k.cur]) < len(ks) {
		if len(k.chunks[k.cur]) == 0 { // too small even empty: a bigger one instead
			k.chunks[k.cur] = make([]keyAt, 0, max(keyChunkLength, len(ks)))
			break
		}
		k.cur++
	}
	if k.cur == len(k.chunks) {
		k.chunks = append(k.chunks, make([]keyAt, 0, max(keyChunkLength, len(ks))))
	}
	c := k.chunks[k.cur]
	p := len(c)
	c = append(c, ks...)
	k.chunks[k.cur] = c
	k.batches = append(k.batches, cachedBatch{base, c[p:len(c):len(c)]})
	k.n += len(ks)
}

// get returns batch base's keys, if kept; the rewrite asks in log order.
func (k *keyCache) get(base int64) ([]keyAt, bool) {
	for k.next < len(k.batches) && k.batches[k.next].base < base {
		k.next++
	}
	if k.next < len(k.batches) && k.batches[k.next].base == base {
		return k.batches[k.next].keys, true
	}
	return nil, false
}

// CleanScratch is the memory one cleaner thread reuses from Clean to
// Clean, as Kafka's CleanerThread keeps its offset map and buffers: the
// map, the keys kept for the rewrite, and the write buffer. Without one
// (CleanOptions.Scratch nil) each Clean allocates its own, and a large
// Clean pays the page faults of memory the runtime gave back meanwhile.
// One Clean at a time may use a CleanScratch.
type CleanScratch struct {
	latest *offsetMap
	seen   keyCache
	out    []byte
	rdBuf  []byte
}

// useScratch takes s's memory for this Clean; the returned func gives it
// back.
func (c *cleaner) useScratch(s *CleanScratch) func() {
	if s == nil {
		return func() {}
	}
	if s.latest != nil && s.latest.bytes == c.o.OffsetMapBytes {
		c.latest = s.latest
	}
	c.seen, c.out, c.rd.buf = s.seen, s.out, s.rdBuf
	return func() { s.latest, s.seen, s.out, s.rdBuf = c.latest, c.seen, c.out, c.rd.buf }
}

// resetMap empties the offset map, made on first use.
func (c *cleaner) resetMap() {
	if c.latest == nil {
		c.latest = newOffsetMap(c.o.OffsetMapBytes)
	}
	c.latest.reset()
}

func (c *cleaner) close() { c.cmp.close(); c.dec.close() }

// buildMap maps each key of the batches from offset from on to its latest
// offset, until end or until the map is full (at a batch boundary, after
// at least one batch). It returns the offset the map covers up to. The
// batches it decodes go into c.seen for the rewrite.
func (c *cleaner) buildMap(from, end int64) (int64, error) {
	c.resetMap()
	c.seen.reset(c.o.OffsetMapBytes)
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
				n := 0
				err := c.eachRecord(b, h, func(r record) bool {
					k := keyAt{offset: r.offset, keyNull: r.keyNull, valueNull: r.valueNull}
					if !r.keyNull {
						k.h0, k.h1 = c.latest.hash(r.key)
						if r.offset >= from {
							n++
						}
					}
					c.keys = append(c.keys, k)
					return true
				})
				if !c.latest.Fits(n) && covered > from {
					c.mapEnd = covered // the next pass starts at this batch
					return covered, nil
				}
				if err == nil {
					c.latest.touch(c.keys)
					for _, k := range c.keys {
						if k.offset >= from && !k.keyNull {
							c.latest.put(k.h0, k.h1, k.offset)
						}
					}
					c.seen.add(h.BaseOffset, c.keys)
				}
			}
			covered = h.NextOffset()
		}
		covered = max(covered, min(s.next, end))
	}
	c.mapEnd = max(covered, end)
	return c.mapEnd, nil
}

// retain decides one record k of a batch whose delete horizon is hz
// (noTimestamp: none yet): a record the map supersedes goes, a null key
// goes, a tombstone goes once the horizon has passed; records at or past
// the map's end stay.
func (c *cleaner) retain(k *keyAt, hz int64) bool {
	if k.offset >= c.mapEnd {
		return true
	}
	if k.keyNull {
		return false
	}
	if latest, ok := c.latest.get(k.h0, k.h1); ok && k.offset < latest {
		return false
	}
	if k.valueNull && hz != noTimestamp && c.o.Now.UnixMilli() >= hz {
		return false
	}
	return true
}

// decide sets c.keep for ks (a batch's records; none stay when abort)
// and returns how many stay and whether a tombstone is among them.
func (c *cleaner) decide(ks []keyAt, abort bool, hz int64) (kept int, tombstone bool) {
	c.keep = c.keep[:0]
	for i := range ks {
		ok := !abort && c.retain(&ks[i], hz)
		c.keep = append(c.keep, ok)
		if ok {
			kept++
			tombstone = tombstone || ks[i].valueNull
		}
	}
	return kept, tombstone
}

// recAt is what cleanBatch keeps of a record between decoding its batch
// and deciding it, beside its keyAt.
type recAt struct {
	raw     []byte // aliases the batch (or the decompressor's output)
	tsDelta int64
}

// batchRecs decodes batch b's records into c.recAts and c.keys (no hash
// for a null key or a record at or past the map's end), then touches the
// map's slots for them all: the lookups that follow find them in cache
// instead of each waiting for memory in turn (map cache misses were most
// of a Clean's CPU).
func (c *cleaner) batchRecs(b []byte, h BatchHeader) error {
	c.recAts, c.keys = c.recAts[:0], c.keys[:0]
	err := c.eachRecord(b, h, func(r record) bool {
		k := keyAt{offset: r.offset, keyNull: r.keyNull, valueNull: r.valueNull}
		if !r.keyNull && r.offset < c.mapEnd {
			k.h0, k.h1 = c.latest.hash(r.key)
		}
		c.keys = append(c.keys, k)
		c.recAts = append(c.recAts, recAt{raw: r.raw, tsDelta: r.tsDelta})
		return true
	})
	c.latest.touch(c.keys)
	return err
}

// horizon is batch h's delete horizon (KIP-534): its base timestamp when
// the attribute says it holds one, else noTimestamp (never cleaned with a
// tombstone or an emptied transaction's marker in it).
func horizon(h BatchHeader) int64 {
	if h.Attributes&attrDeleteHorizon != 0 {
		return h.BaseTimestamp
	}
	return noTimestamp
}

// newHorizon is the delete horizon a batch gets when first cleaned with a
// tombstone (or as an emptied transaction's marker) in it.
func (c *cleaner) newHorizon() int64 {
	return c.o.Now.UnixMilli() + c.o.Policy.DeleteRetention.Milliseconds()
}

// noteHorizon notes that a batch with delete horizon hz stays with a
// tombstone or marker in it; one already passed (kept for another
// reason: past the map's end, or a producer's last) is not counted.
func (c *cleaner) noteHorizon(hz int64) {
	if hz > c.o.Now.UnixMilli() && (c.horizon == 0 || hz < c.horizon) {
		c.horizon = hz
	}
}

// cleanBatch appends to c.out what stays of batch b (header h): b itself
// when every record stays, a rebuilt batch (same base offset,
// lastOffsetDelta and producer fields; new count, maxTimestamp, length
// and CRC; re-compressed with its codec) when some do, an empty batch
// when none does but it is its producer's last (kept for idempotence, as
// Kafka) or the log's last (keep), nothing otherwise. A batch that keeps
// a tombstone and has no delete horizon yet is rebuilt with one (see
// doc.go, KIP-534). An aborted transaction's batch loses all its records;
// a transaction marker goes when decideMarker says so (txnclean.go), else
// stays, as do batches whose records do not decode.
func (c *cleaner) cleanBatch(h BatchHeader, b []byte, keep bool) error {
	c.st.RecordsRead += int64(h.RecordCount)
	hz := horizon(h)
	if h.IsControl() {
		drop, stamp := c.decideMarker(h, b, hz, keep)
		if drop {
			c.st.BatchesDropped++
			return nil
		}
		c.st.RecordsKept += int64(h.RecordCount)
		if stamp != noTimestamp {
			c.noteHorizon(stamp)
		} else if hz != noTimestamp {
			c.noteHorizon(hz)
		}
		if stamp == noTimestamp {
			c.out = append(c.out, b...)
			return nil
		}
		c.recAts = c.recAts[:0]
		err := c.eachRecord(b, h, func(r record) bool {
			c.recAts = append(c.recAts, recAt{raw: r.raw, tsDelta: r.tsDelta})
			return true
		})
		if err != nil {
			c.out = append(c.out, b...) // as a batch that does not decode
			return nil
		}
		c.keep = c.keep[:0]
		for range c.recAts {
			c.keep = append(c.keep, true)
		}
		return c.rebuild(h, b, len(c.recAts), stamp)
	}
	abort := false
	if h.IsTransactional() && h.ProducerID >= 0 {
		c.txnSeen[h.ProducerID] = true
		abort = c.abortedBatch(h)
	}
	total := int(h.RecordCount)
	if ks, ok := c.seen.get(h.BaseOffset); ok && !abort {
		// Decided from what buildMap decoded: no second decode unless the
		// batch is rebuilt.
		kept, tomb := c.decide(ks, false, hz)
		switch {
		case kept == total && !(tomb && hz == noTimestamp):
			if tomb {
				c.noteHorizon(hz)
			}
			c.out = append(c.out, b...)
			c.st.RecordsKept += int64(total)
			return nil
		case kept == 0:
			return c.emptied(h, b, keep)
		}
	}
	if err := c.batchRecs(b, h); err != nil {
		c.out = append(c.out, b...)
		c.st.RecordsKept += int64(h.RecordCount)
		return nil
	}
	kept, tomb := c.decide(c.keys, abort, hz)
	stamp := noTimestamp
	if tomb && hz == noTimestamp {
		stamp = c.newHorizon()
	}
	if tomb {
		c.noteHorizon(max(stamp, hz))
	}
	switch {
	case kept == total && stamp == noTimestamp:
		c.out = append(c.out, b...)
		c.st.RecordsKept += int64(total)
		return nil
	case kept == 0:
		return c.emptied(h, b, keep)
	}
	c.st.RecordsKept += int64(kept)
	return c.rebuild(h, b, kept, stamp)
}

// emptied drops batch h (bytes b), none of whose records stay, or writes
// it empty and uncompressed when keep.
func (c *cleaner) emptied(h BatchHeader, b []byte, keep bool) error {
	if !keep {
		c.st.BatchesDropped++
		return nil
	}
	c.st.EmptyKept++
	c.keep = c.keep[:0]
	return c.rebuild(h, b, 0, noTimestamp)
}

// rebuild appends to c.out batch h (bytes b) with the kept of its records
// (c.recAts where c.keep; kept of them), re-compressed with its codec
// (none when empty). With stamp (not noTimestamp) the batch gets that
// delete horizon: the attribute bit, the horizon as its base timestamp,
// and each record's timestamp delta re-encoded against it, so that every
// record keeps its timestamp (as Kafka's MemoryRecordsBuilder does).
func (c *cleaner) rebuild(h BatchHeader, b []byte, kept int, stamp int64) error {
	attrs, maxTs, base := h.Attributes, h.MaxTimestamp, h.BaseTimestamp
	if stamp != noTimestamp {
		attrs |= attrDeleteHorizon
		base = stamp
	}
	c.recs = c.recs[:0]
	maxDelta := int64(-1 << 63)
	for i := range c.keep {
		if !c.keep[i] {
			continue
		}
		r := &c.recAts[i]
		maxDelta = max(maxDelta, r.tsDelta)
		if stamp == noTimestamp {
			c.recs = append(c.recs, r.raw...)
		} else {
			c.recs = appendRetimed(c.recs, r.raw, h.BaseTimestamp+r.tsDelta-base)
		}
	}
	body := c.recs
	if kept == 0 {
		attrs &^= attrCompression
	} else {
		if attrs&attrLogAppendTime == 0 && kept < int(h.RecordCount) {
			maxTs = h.BaseTimestamp + maxDelta
		}
		if codec := attrs & attrCompression; codec != codecNone {
			xerial := codec == codecSnappy && len(b) >= BatchHeaderSize+len(xerialMagic) &&
				string(b[BatchHeaderSize:BatchHeaderSize+len(xerialMagic)]) == string(xerialMagic)
			var err error
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
	be.PutUint64(nb[offBaseTimestamp:], uint64(base))
	be.PutUint64(nb[offMaxTimestamp:], uint64(maxTs))
	be.PutUint32(nb[offRecordCount:], uint32(kept))
	be.PutUint32(nb[offCRC:], crc32c(nb[offAttributes:]))
	return nil
}

// appendRetimed appends record raw (length prefix included, as decoded by
// eachRecordIn) with its timestamp delta replaced by delta.
func appendRetimed(dst, raw []byte, delta int64) []byte {
	_, n := binary.Varint(raw)
	_, m := binary.Varint(raw[n+1:])
	rest := raw[n+1+m:]
	var d [binary.MaxVarintLen64]byte
	dl := binary.PutVarint(d[:], delta)
	dst = binary.AppendVarint(dst, int64(1+dl+len(rest)))
	dst = append(dst, raw[n])
	dst = append(dst, d[:dl]...)
	return append(dst, rest...)
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
