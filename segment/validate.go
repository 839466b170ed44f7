package segment

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// The leader's record validation (Kafka's LogValidator): Append checks the
// records of every produced batch before anything is written, so that no
// client can write what a consumer cannot read. Followers trust the leader
// (AppendReplicated checks framing and CRC only).
//
// Per batch: at least one record and lastOffsetDelta = recordCount-1; no
// control batch (clients may not write them: INVALID_RECORD; the leader
// writes markers with AppendMarker); a transactional batch carries a
// producer id; no LogAppendTime
// flag from a producer; an idempotent batch (producerId >= 0) has a
// sequence >= 0; a known codec; a maxTimestamp inside the timestamp bounds.
// Per record, in order: its length varint frames it exactly; its offset
// delta is its index (Kafka rewrites a compressed batch whose inner offsets
// are not 0..n-1; Sluice stores batches verbatim, so it refuses it); its
// timestamp (base + delta, unless -1) lies within
// [now - message.timestamp.before.max.ms, now + message.timestamp.after.max.ms]
// (KIP-937); key, value and header lengths fit; a key is present (not
// null; empty is a key) when the log requires keys (SetKeysRequired: a
// compacted topic, Kafka's "Compacted topic cannot accept message without
// key"); no byte is left after the
// last record. A compressed batch is decompressed as a stream (gzip, lz4,
// xerial snappy, zstd past zstdFlatMax) or whole into a pooled buffer (a
// raw snappy block; zstd up to zstdFlatMax), never past maxDecompressed
// bytes; an uncompressed batch is walked in place. Neither allocates per
// record.

// recordCheck holds the bounds one Append checks its records against.
type recordCheck struct {
	minTs, maxTs int64 // allowed CreateTime timestamps, inclusive
	requireKey   bool  // refuse a record with a null key
}

// SetKeysRequired makes Append (the leader) refuse a batch holding a record
// without a key (ErrInvalidRecord), as Kafka refuses one produced to a
// compacted topic: the cleaner keeps the latest record per key, and a
// record without one has no latest. The node sets it from the topic's
// cleanup.policy when the log opens and whenever the policy changes;
// appends already in flight see the old setting. AppendReplicated is not
// affected (the leader decided).
func (l *Log) SetKeysRequired(on bool) { l.keysRequired.Store(on) }

// newRecordCheck bounds timestamps to [now-before, now+after], saturating.
func newRecordCheck(now, before, after int64) recordCheck {
	rc := recordCheck{minTs: math.MinInt64, maxTs: math.MaxInt64}
	if before >= 0 && now-before <= now {
		rc.minTs = now - before
	}
	if after >= 0 && now+after >= now {
		rc.maxTs = now + after
	}
	return rc
}

// kafkaNoTimestamp is Kafka's NO_TIMESTAMP: a record without one is not
// bounded.
const kafkaNoTimestamp = -1

func (rc *recordCheck) timestamp(ts int64) error {
	if ts != kafkaNoTimestamp && (ts < rc.minTs || ts > rc.maxTs) {
		return fmt.Errorf("%w: timestamp %d outside [%d, %d] (message.timestamp.before.max.ms / after.max.ms)", ErrInvalidTimestamp, ts, rc.minTs, rc.maxTs)
	}
	return nil
}

// batch checks batch b (header h, framing and CRC already checked by
// checkBatch) as a leader does before appending a producer's batch.
func (rc *recordCheck) batch(b []byte, h BatchHeader) error {
	switch {
	case h.RecordCount < 1 || h.LastOffsetDelta != h.RecordCount-1:
		return fmt.Errorf("%w: %d records but lastOffsetDelta %d", ErrInvalidRecord, h.RecordCount, h.LastOffsetDelta)
	case h.IsControl():
		return fmt.Errorf("%w: clients may not write control batches", ErrInvalidRecord)
	case h.IsTransactional() && h.ProducerID < 0:
		return fmt.Errorf("%w: a transactional batch without a producer id", ErrInvalidRecord)
	case h.Attributes&attrLogAppendTime != 0:
		return fmt.Errorf("%w: a producer may not set the LogAppendTime flag", ErrInvalidTimestamp)
	case h.ProducerID >= 0 && h.BaseSequence < 0:
		return fmt.Errorf("%w: producer id %d with sequence %d", ErrInvalidRecord, h.ProducerID, h.BaseSequence)
	}
	if err := rc.timestamp(h.MaxTimestamp); err != nil {
		return fmt.Errorf("batch maxTimestamp: %w", err)
	}
	body := b[BatchHeaderSize:h.Size()]
	codec := h.Attributes & attrCompression
	if codec == codecNone {
		return rc.records(body, h)
	}
	if codec > codecZstd {
		return fmt.Errorf("%w: codec %d", ErrUnsupportedCompression, codec)
	}
	d := decoderPool.Get().(*decoders)
	defer d.release()
	r, flat, err := d.open(codec, body)
	if err != nil {
		return fmt.Errorf("%w: decompress (codec %d): %v", ErrCorruptBatch, codec, err)
	}
	if r == nil {
		return rc.records(flat, h)
	}
	return rc.stream(r, h)
}

// cursor reads the fields of one record held in memory. Once bad, every
// read returns 0 and it stays bad.
type cursor struct {
	b   []byte
	p   int
	bad bool
}

func (c *cursor) varint() int64 {
	if c.p < len(c.b) && c.b[c.p] < 0x80 && !c.bad { // one byte: most fields
		u := int64(c.b[c.p])
		c.p++
		return u>>1 ^ -(u & 1)
	}
	if c.bad {
		return 0
	}
	v, n := binary.Varint(c.b[c.p:])
	if n <= 0 {
		c.bad = true
		return 0
	}
	c.p += n
	return v
}

// skip passes over n bytes; least is the smallest valid n (-1 for a
// nullable field, 0 for a header key).
func (c *cursor) skip(n, least int64) {
	if c.bad || n < least || n > int64(len(c.b)-c.p) {
		c.bad = true
		return
	}
	if n > 0 {
		c.p += int(n)
	}
}

// records walks an uncompressed records section.
func (rc *recordCheck) records(recs []byte, h BatchHeader) error {
	p := 0
	for i := int32(0); i < h.RecordCount; i++ {
		length, n := binary.Varint(recs[p:])
		if n <= 0 {
			return fmt.Errorf("%w: record %d: %s", ErrInvalidRecord, i, missingOrBad(p, len(recs)))
		}
		p += n
		if length < 1 || length > int64(len(recs)-p) {
			return fmt.Errorf("%w: record %d: length %d, %d bytes left", ErrInvalidRecord, i, length, len(recs)-p)
		}
		if err := rc.record(recs[p:p+int(length)], i, h); err != nil {
			return err
		}
		p += int(length)
	}
	if p != len(recs) {
		return fmt.Errorf("%w: %d bytes after the last of %d records", ErrInvalidRecord, len(recs)-p, h.RecordCount)
	}
	return nil
}

func missingOrBad(p, n int) string {
	if p >= n {
		return "missing: the batch holds fewer records than its count"
	}
	return "bad length varint"
}

// record checks one record body (after its length): attributes,
// timestampDelta, offsetDelta, key, value, headers, nothing more.
func (rc *recordCheck) record(b []byte, i int32, h BatchHeader) error {
	c := cursor{b: b, p: 1} // past the attributes byte (length >= 1)
	tsDelta := c.varint()
	offDelta := c.varint()
	key := c.varint()
	c.skip(key, -1)
	c.skip(c.varint(), -1) // value
	hdrs := c.varint()
	if hdrs < 0 {
		c.bad = true
	}
	for j := int64(0); j < hdrs && !c.bad; j++ {
		c.skip(c.varint(), 0)  // header key
		c.skip(c.varint(), -1) // header value
	}
	return rc.fields(c.bad || c.p != len(b), key < 0, tsDelta, offDelta, i, h)
}

// fields judges what a record walk found.
func (rc *recordCheck) fields(bad, nullKey bool, tsDelta, offDelta int64, i int32, h BatchHeader) error {
	switch {
	case bad:
		return fmt.Errorf("%w: record %d: fields do not match its length", ErrInvalidRecord, i)
	case offDelta != int64(i):
		return fmt.Errorf("%w: record %d has offset delta %d", ErrInvalidRecord, i, offDelta)
	case nullKey && rc.requireKey:
		return fmt.Errorf("%w: record %d has no key: a compacted topic (cleanup.policy=compact) keeps the latest record of each key, so every record needs one", ErrInvalidRecord, i)
	}
	if err := rc.timestamp(h.BaseTimestamp + tsDelta); err != nil {
		return fmt.Errorf("record %d: %w", i, err)
	}
	return nil
}

// errBadVarint: a varint longer than 10 bytes; errCutVarint: the stream
// ends inside one.
var (
	errBadVarint = errors.New("varint too long")
	errCutVarint = errors.New("stream ends inside a varint")
)

// stream walks the records of a decompressing reader. A record that fits
// in the reader's buffer is checked in place (Peek); a longer one field by
// field. io.EOF before the last record means the count lies; any other
// read error is the decompressor's (corrupt payload).
func (rc *recordCheck) stream(r *bufio.Reader, h BatchHeader) error {
	streamErr := func(i int32, err error) error {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%w: record %d missing: the batch holds fewer records than its count", ErrInvalidRecord, i)
		}
		if errors.Is(err, errBadVarint) || errors.Is(err, errCutVarint) {
			return fmt.Errorf("%w: record %d: bad length varint", ErrInvalidRecord, i)
		}
		return fmt.Errorf("%w: decompress (codec %d): %v", ErrCorruptBatch, h.Attributes&attrCompression, err)
	}
	for i := int32(0); i < h.RecordCount; i++ {
		length, _, err := readVarint(r)
		if err != nil {
			return streamErr(i, err)
		}
		if length < 1 || length > maxDecompressed {
			return fmt.Errorf("%w: record %d: length %d", ErrInvalidRecord, i, length)
		}
		if length <= int64(r.Size()) {
			b, err := r.Peek(int(length))
			if err != nil {
				return streamErr(i, err)
			}
			if err := rc.record(b, i, h); err != nil {
				return err
			}
			_, _ = r.Discard(int(length))
			continue
		}
		s := streamCursor{r: r, left: length}
		if err := s.record(rc, i, h); err != nil {
			return err
		}
		if s.err != nil {
			return streamErr(i, s.err)
		}
	}
	switch _, err := r.ReadByte(); {
	case err == nil:
		return fmt.Errorf("%w: bytes after the last of %d records", ErrInvalidRecord, h.RecordCount)
	case !errors.Is(err, io.EOF):
		return streamErr(h.RecordCount, err)
	}
	return nil
}

// readVarint reads a zig-zag varint and says how many bytes it took;
// io.EOF only at its first byte.
func readVarint(r *bufio.Reader) (int64, int, error) {
	var x uint64
	for i := 0; i < binary.MaxVarintLen64; i++ {
		b, err := r.ReadByte()
		if err != nil {
			if i > 0 && errors.Is(err, io.EOF) {
				return 0, i, errCutVarint
			}
			return 0, i, err
		}
		x |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return int64(x>>1) ^ -int64(x&1), i + 1, nil
		}
	}
	return 0, binary.MaxVarintLen64, errBadVarint
}

// streamCursor is cursor over a reader, for a record longer than the
// reader's buffer: left counts the record's bytes not yet read. bad marks
// a record whose fields do not fit it; err a read error.
type streamCursor struct {
	r    *bufio.Reader
	left int64
	bad  bool
	err  error
}

func (s *streamCursor) varint() int64 {
	if s.bad || s.err != nil {
		return 0
	}
	v, n, err := readVarint(s.r)
	switch {
	case errors.Is(err, errBadVarint) || errors.Is(err, errCutVarint) || errors.Is(err, io.EOF):
		s.bad = true // the record ends inside a field
	case err != nil:
		s.err = err
	}
	s.left -= int64(n)
	if s.left < 0 {
		s.bad = true
	}
	return v
}

func (s *streamCursor) skip(n, least int64) {
	if s.bad || s.err != nil {
		return
	}
	if n < least || n > s.left {
		s.bad = true
		return
	}
	for n > 0 {
		k, err := s.r.Discard(int(min(n, 1<<30)))
		n -= int64(k)
		s.left -= int64(k)
		if err != nil {
			s.err = err
			return
		}
	}
}

// record is recordCheck.record over the stream.
func (s *streamCursor) record(rc *recordCheck, i int32, h BatchHeader) error {
	s.skip(1, 1) // attributes
	tsDelta := s.varint()
	offDelta := s.varint()
	key := s.varint()
	s.skip(key, -1)
	s.skip(s.varint(), -1)
	hdrs := s.varint()
	if hdrs < 0 {
		s.bad = true
	}
	for j := int64(0); j < hdrs && !s.bad && s.err == nil; j++ {
		s.skip(s.varint(), 0)
		s.skip(s.varint(), -1)
	}
	if s.err != nil {
		return nil // the caller reports the read error
	}
	return rc.fields(s.bad || s.left != 0, key < 0, tsDelta, offDelta, i, h)
}

// decoders are one validation's reusable decompressors, pooled: a gzip,
// lz4 or zstd reader costs allocations to build but little to reset.
type decoders struct {
	src  bytes.Reader
	lim  limitReader
	br   *bufio.Reader
	gz   *gzip.Reader
	lz   *lz4.Reader
	zd   *zstd.Decoder // streams
	zs   *zstd.Decoder // decodes small bodies whole (zstdFlatMax)
	xr   xerialReader
	flat []byte // a raw snappy block, decoded
}

// streamBuffer is the buffer of the reader records are walked from:
// records up to this size are checked in place.
const streamBuffer = 16 << 10

var decoderPool = sync.Pool{New: func() any {
	return &decoders{br: bufio.NewReaderSize(nil, streamBuffer)}
}}

// maxPooledFlat bounds the snappy buffer kept in the pool.
const maxPooledFlat = 1 << 20

func (d *decoders) release() {
	d.src.Reset(nil)
	d.br.Reset(nil)
	d.xr = xerialReader{buf: d.xr.buf[:0]}
	if cap(d.flat) > maxPooledFlat {
		d.flat = nil
	}
	if cap(d.xr.buf) > maxPooledFlat {
		d.xr.buf = nil
	}
	decoderPool.Put(d)
}

// open prepares body (compressed by codec) for reading: a buffered reader
// of the decompressed stream, or, for a raw snappy block, the decoded bytes.
func (d *decoders) open(codec int16, body []byte) (*bufio.Reader, []byte, error) {
	d.src.Reset(body)
	var r io.Reader
	switch codec {
	case codecGzip:
		if d.gz == nil {
			d.gz = new(gzip.Reader)
		}
		if err := d.gz.Reset(&d.src); err != nil {
			return nil, nil, err
		}
		d.gz.Multistream(false)
		r = d.gz
	case codecSnappy:
		if !bytes.HasPrefix(body, xerialMagic) {
			var err error
			d.flat, err = snappyBlock(d.flat, body)
			return nil, d.flat, err
		}
		if len(body) < 16 {
			return nil, nil, fmt.Errorf("xerial header of %d bytes", len(body))
		}
		d.xr = xerialReader{src: body[16:], buf: d.xr.buf[:0]}
		r = &d.xr
	case codecLz4:
		if d.lz == nil {
			d.lz = lz4.NewReader(nil)
		}
		d.lz.Reset(&d.src)
		r = d.lz
	case codecZstd:
		// Small batches (nearly all) decode in one call into a pooled
		// buffer: a stream costs ~10 µs of setup per frame. A body that
		// decodes past zstdFlatMax falls back to the stream.
		if d.zs == nil {
			var err error
			d.zs, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
				zstd.WithDecoderMaxMemory(zstdFlatMax), zstd.WithDecoderMaxWindow(zstdMaxWindow))
			if err != nil {
				return nil, nil, err
			}
		}
		flat, err := d.zs.DecodeAll(body, d.flat[:0])
		if err == nil {
			d.flat = flat
			return nil, flat, nil
		}
		if !errors.Is(err, zstd.ErrDecoderSizeExceeded) {
			return nil, nil, err
		}
		if d.zd == nil {
			var err error
			d.zd, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
				zstd.WithDecoderMaxMemory(maxDecompressed), zstd.WithDecoderMaxWindow(zstdMaxWindow))
			if err != nil {
				return nil, nil, err
			}
		}
		if err := d.zd.Reset(&d.src); err != nil {
			return nil, nil, err
		}
		r = d.zd
	}
	d.lim = limitReader{r: r, left: maxDecompressed}
	d.br.Reset(&d.lim)
	return d.br, nil, nil
}

// zstdFlatMax is the most a zstd body is decoded to at once; larger
// ones are streamed.
const zstdFlatMax = 1 << 20

// zstdMaxWindow is the largest zstd window accepted: zstd-jni's default
// limit (windowLogMax 27), so nothing a Java consumer reads is refused.
// The decoder allocates the window a frame claims, so a tiny frame can
// still cost this much memory while it is checked.
const zstdMaxWindow = 1 << 27

// limitReader fails a stream that decompresses past maxDecompressed.
type limitReader struct {
	r    io.Reader
	left int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	l.left -= int64(n)
	if l.left < 0 {
		return n, fmt.Errorf("decompresses past %d bytes", maxDecompressed)
	}
	return n, err
}

// snappyExpansion bounds how much a standard snappy block can grow: its
// densest element, a 3-byte copy of 64 bytes, is 21.3 to 1. A block that
// claims more is refused before its buffer is allocated.
const snappyExpansion = 22

// snappyBlock decodes one standard snappy block into buf (reused when
// large enough). The S2 extensions that s2.Decode also accepts are
// refused: Kafka's clients (snappy-java, librdkafka) could not read them.
// golang/snappy's decoder is that strict one in assembly (klauspost's
// snappy.DecodeStrict is the same rules in Go, about twice as slow).
func snappyBlock(buf, block []byte) ([]byte, error) {
	n, err := snappy.DecodedLen(block)
	if err != nil {
		return nil, err
	}
	if n > snappyExpansion*len(block)+8 || n > maxDecompressed {
		return nil, fmt.Errorf("snappy block of %d bytes claims %d decoded", len(block), n)
	}
	return snappy.Decode(grow(buf, n), block)
}

// xerialReader decodes xerial-framed snappy chunks one at a time.
type xerialReader struct {
	src []byte // chunks not yet decoded
	buf []byte // the current chunk, decoded
	off int    // read position in buf
}

func (x *xerialReader) Read(p []byte) (int, error) {
	for x.off == len(x.buf) {
		if len(x.src) == 0 {
			return 0, io.EOF
		}
		if len(x.src) < 4 {
			return 0, fmt.Errorf("xerial chunk length cut: %d bytes", len(x.src))
		}
		n := int(binary.BigEndian.Uint32(x.src))
		if n > len(x.src)-4 {
			return 0, fmt.Errorf("xerial chunk of %d bytes, %d left", n, len(x.src)-4)
		}
		chunk := x.src[4 : 4+n]
		x.src = x.src[4+n:]
		var err error
		if x.buf, err = snappyBlock(x.buf, chunk); err != nil {
			return 0, err
		}
		x.off = 0
	}
	n := copy(p, x.buf[x.off:])
	x.off += n
	return n, nil
}
