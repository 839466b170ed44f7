package segment

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Kafka RecordBatch v2 header layout (all big-endian). Replicated appends,
// reads, recovery and ScanBatches read only headers (and the CRC); records
// are decoded by the leader's Append (validate.go) and by the lookups by
// timestamp, in the one batch each lands on (recordTimes in records.go).
//
//	offset  size  field
//	     0     8  baseOffset            rewritten by the leader (outside the CRC)
//	     8     4  batchLength           bytes after this field
//	    12     4  partitionLeaderEpoch  rewritten by the leader (outside the CRC)
//	    16     1  magic                 must be 2
//	    17     4  crc                   CRC-32C of bytes [21, end)
//	    21     2  attributes
//	    23     4  lastOffsetDelta
//	    27     8  baseTimestamp
//	    35     8  maxTimestamp
//	    43     8  producerId
//	    51     2  producerEpoch
//	    53     4  baseSequence
//	    57     4  recordCount
//	    61        records...
const (
	offBaseOffset      = 0
	offBatchLength     = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offBaseTimestamp   = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offRecordCount     = 57

	// BatchHeaderSize is the size of a RecordBatch v2 header, records excluded.
	BatchHeaderSize = 61
	// logOverhead is baseOffset + batchLength: the bytes not counted in batchLength.
	logOverhead = 12
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// BatchHeader is the decoded header of one RecordBatch v2. It is a value
// copied out of the batch bytes; it does not alias them.
type BatchHeader struct {
	BaseOffset      int64
	Length          int32 // batchLength: total size minus 12
	LeaderEpoch     int32
	Magic           int8
	CRC             uint32
	Attributes      int16
	LastOffsetDelta int32
	BaseTimestamp   int64
	MaxTimestamp    int64
	ProducerID      int64
	ProducerEpoch   int16
	BaseSequence    int32
	RecordCount     int32
}

// Size is the batch's total size in bytes, header included.
func (h BatchHeader) Size() int { return int(h.Length) + logOverhead }

// LastOffset is the offset of the batch's last record.
func (h BatchHeader) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// NextOffset is the offset after the batch's last record.
func (h BatchHeader) NextOffset() int64 { return h.LastOffset() + 1 }

// Compression is the batch's codec: 0 none, 1 gzip, 2 snappy, 3 lz4,
// 4 zstd (anything else is refused by Append).
func (h BatchHeader) Compression() int16 { return h.Attributes & attrCompression }

// IsTransactional and IsControl read the attribute bits.
func (h BatchHeader) IsTransactional() bool { return h.Attributes&0x10 != 0 }
func (h BatchHeader) IsControl() bool       { return h.Attributes&0x20 != 0 }

// parseHeader decodes the first BatchHeaderSize bytes of b. It checks nothing
// but length; callers use checkBatch.
func parseHeader(b []byte) BatchHeader {
	_ = b[BatchHeaderSize-1]
	be := binary.BigEndian
	return BatchHeader{
		BaseOffset:      int64(be.Uint64(b[offBaseOffset:])),
		Length:          int32(be.Uint32(b[offBatchLength:])),
		LeaderEpoch:     int32(be.Uint32(b[offLeaderEpoch:])),
		Magic:           int8(b[offMagic]),
		CRC:             be.Uint32(b[offCRC:]),
		Attributes:      int16(be.Uint16(b[offAttributes:])),
		LastOffsetDelta: int32(be.Uint32(b[offLastOffsetDelta:])),
		BaseTimestamp:   int64(be.Uint64(b[offBaseTimestamp:])),
		MaxTimestamp:    int64(be.Uint64(b[offMaxTimestamp:])),
		ProducerID:      int64(be.Uint64(b[offProducerID:])),
		ProducerEpoch:   int16(be.Uint16(b[offProducerEpoch:])),
		BaseSequence:    int32(be.Uint32(b[offBaseSequence:])),
		RecordCount:     int32(be.Uint32(b[offRecordCount:])),
	}
}

// BatchIter walks the RecordBatch v2 batches of a records blob (a
// produce's records, a fetch answer, segment bytes): the one decoder of
// batch headers outside this package. It checks framing only (the length
// field fits and covers a header), not magic, CRC or records: Log.Append
// does that. It aliases the blob and does not allocate.
//
//	it := segment.NewBatchIter(records)
//	for h, b, ok := it.Next(); ok; h, b, ok = it.Next() {
//		// h is b's header; b is the whole batch
//	}
//	if err := it.Err(); err != nil { ... } // ErrInvalidBatch: a frame that does not fit
type BatchIter struct {
	b   []byte
	p   int
	err error
}

// NewBatchIter returns an iterator over the batches of records.
func NewBatchIter(records []byte) BatchIter { return BatchIter{b: records} }

// Next returns the next batch's header and bytes, or false at the end of
// the blob or at a frame that does not fit in it (then Err says why).
func (it *BatchIter) Next() (BatchHeader, []byte, bool) {
	if it.err != nil || it.p == len(it.b) {
		return BatchHeader{}, nil, false
	}
	rest := it.b[it.p:]
	if len(rest) < BatchHeaderSize {
		it.err = fmt.Errorf("%w: %d bytes at byte %d, shorter than a v2 header", ErrInvalidBatch, len(rest), it.p)
		return BatchHeader{}, nil, false
	}
	n := frameLength(rest, len(rest))
	if n < 0 {
		it.err = fmt.Errorf("%w: batchLength at byte %d does not fit the %d bytes left", ErrInvalidBatch, it.p, len(rest))
		return BatchHeader{}, nil, false
	}
	it.p += n
	return parseHeader(rest), rest[:n], true
}

// Err is the framing error that ended the walk, nil at a clean end.
func (it *BatchIter) Err() error { return it.err }

// frameLength reads the total size of the batch starting at b (which must
// hold at least logOverhead bytes), or -1 if the length field is impossible
// for a v2 batch of at most maxSize bytes.
func frameLength(b []byte, maxSize int) int {
	n := int64(int32(binary.BigEndian.Uint32(b[offBatchLength:]))) + logOverhead
	if n < BatchHeaderSize || n > int64(maxSize) {
		return -1
	}
	return int(n)
}

// checkBatch validates the batch at the start of b: framing, magic, header
// consistency and CRC-32C. It returns the header and the batch size. The error
// wraps ErrInvalidBatch, ErrBatchTooLarge or ErrCorruptBatch. It reads the
// whole batch once (the CRC); it never decodes records.
func checkBatch(b []byte, maxSize int) (BatchHeader, int, error) {
	if len(b) < BatchHeaderSize {
		return BatchHeader{}, 0, fmt.Errorf("%w: %d bytes, shorter than the %d-byte v2 header", ErrInvalidBatch, len(b), BatchHeaderSize)
	}
	n := int64(int32(binary.BigEndian.Uint32(b[offBatchLength:]))) + logOverhead
	switch {
	case n < BatchHeaderSize:
		return BatchHeader{}, 0, fmt.Errorf("%w: batchLength %d is shorter than a v2 header", ErrInvalidBatch, n-logOverhead)
	case n > int64(maxSize):
		return BatchHeader{}, 0, fmt.Errorf("%w: batch of %d bytes, limit %d (message.max.bytes)", ErrBatchTooLarge, n, maxSize)
	case n > int64(len(b)):
		return BatchHeader{}, 0, fmt.Errorf("%w: batchLength says %d bytes, only %d present", ErrInvalidBatch, n, len(b))
	}
	h := parseHeader(b)
	if h.Magic != 2 {
		return h, 0, fmt.Errorf("%w: magic %d, only RecordBatch v2 (magic 2) is supported", ErrInvalidBatch, h.Magic)
	}
	if h.RecordCount < 0 || h.LastOffsetDelta < 0 {
		return h, 0, fmt.Errorf("%w: recordCount %d, lastOffsetDelta %d", ErrInvalidBatch, h.RecordCount, h.LastOffsetDelta)
	}
	if got := crc32.Checksum(b[offAttributes:n], castagnoli); got != h.CRC {
		return h, 0, fmt.Errorf("%w: CRC-32C %08x, header says %08x", ErrCorruptBatch, got, h.CRC)
	}
	return h, int(n), nil
}

// baseOffsetAt and nextOffsetAt read a batch's first and next offset from
// its first 27 bytes, for walking batches without a full header.
func baseOffsetAt(b []byte) int64 { return int64(binary.BigEndian.Uint64(b[offBaseOffset:])) }
func nextOffsetAt(b []byte) int64 {
	return baseOffsetAt(b) + int64(int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:]))) + 1
}

// setBaseOffset and setLeaderEpoch rewrite the two fields that lie outside
// the CRC, in place.
func setBaseOffset(b []byte, off int64) { binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(off)) }
func setLeaderEpoch(b []byte, e int32)  { binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(e)) }

// ValidateBatches checks that records holds one or more whole, valid v2
// batches and returns their headers' summary. It is the check Append and
// AppendReplicated run before writing anything; the protocol layer may call it
// to answer CORRUPT_MESSAGE before reaching a log.
func ValidateBatches(records []byte, maxBatchBytes int) (batches int, records32 int64, err error) {
	for p := 0; p < len(records); {
		h, n, err := checkBatch(records[p:], maxBatchBytes)
		if err != nil {
			return 0, 0, fmt.Errorf("batch %d at byte %d: %w", batches, p, err)
		}
		batches++
		records32 += int64(h.LastOffsetDelta) + 1
		p += n
	}
	if batches == 0 {
		return 0, 0, fmt.Errorf("%w: no record batch", ErrInvalidBatch)
	}
	return batches, records32, nil
}

// BuildBatch encodes an uncompressed RecordBatch v2 holding one record per
// value, with keys left null, for tests, tools and benchmarks. Offsets are
// relative (baseOffset 0), as a producer sends them.
func BuildBatch(baseTimestamp int64, values ...[]byte) []byte {
	b := make([]byte, BatchHeaderSize, BatchHeaderSize+len(values)*16)
	for i, v := range values {
		var rec []byte
		rec = append(rec, 0)                          // attributes
		rec = binary.AppendVarint(rec, 0)             // timestampDelta
		rec = binary.AppendVarint(rec, int64(i))      // offsetDelta
		rec = binary.AppendVarint(rec, -1)            // key length: null
		rec = binary.AppendVarint(rec, int64(len(v))) // value length
		rec = append(rec, v...)                       // value
		rec = binary.AppendVarint(rec, 0)             // headers count
		b = binary.AppendVarint(b, int64(len(rec)))
		b = append(b, rec...)
	}
	be := binary.BigEndian
	be.PutUint32(b[offBatchLength:], uint32(len(b)-logOverhead))
	be.PutUint32(b[offLeaderEpoch:], 0xffffffff)
	b[offMagic] = 2
	be.PutUint32(b[offLastOffsetDelta:], uint32(len(values)-1))
	be.PutUint64(b[offBaseTimestamp:], uint64(baseTimestamp))
	be.PutUint64(b[offMaxTimestamp:], uint64(baseTimestamp))
	be.PutUint64(b[offProducerID:], 0xffffffffffffffff)
	be.PutUint16(b[offProducerEpoch:], 0xffff)
	be.PutUint32(b[offBaseSequence:], 0xffffffff)
	be.PutUint32(b[offRecordCount:], uint32(len(values)))
	be.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
	return b
}
