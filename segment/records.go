package segment

import (
	"encoding/binary"
	"fmt"
)

// Attribute bits of a RecordBatch v2 that record decoding needs.
const (
	attrCompression   = 0x07 // codec: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd
	attrLogAppendTime = 0x08 // every record's timestamp is the batch maxTimestamp
	// attrDeleteHorizon (KIP-534): the base timestamp is the batch's delete
	// horizon, set by the cleaner; record timestamp deltas count from it.
	attrDeleteHorizon = 0x40
)

// recordTimes calls fn with the offset and timestamp of each record of b,
// one whole v2 batch, in order, until fn returns false. Only the fields
// before the key are decoded (length, attributes, timestamp delta, offset
// delta); keys, values and headers are skipped by length. A compressed
// batch is decompressed whole first (batchRecords), which is why this is
// only for the rare lookups by timestamp (ListOffsets); the leader's append
// walks records as a stream instead (validate.go).
// With LogAppendTime every record's timestamp is the batch maxTimestamp, as
// Kafka reads it. A malformed record or compressed body is ErrCorruptBatch.
func recordTimes(b []byte, fn func(offset, ts int64) bool) error {
	if len(b) < BatchHeaderSize {
		return fmt.Errorf("%w: %d bytes, shorter than a batch header", ErrCorruptBatch, len(b))
	}
	h := parseHeader(b)
	recs, err := batchRecords(b[:min(len(b), max(h.Size(), BatchHeaderSize))], h)
	if err != nil {
		return err
	}
	p := 0
	for i := int32(0); i < h.RecordCount; i++ {
		length, n := binary.Varint(recs[p:])
		if n <= 0 || length < 3 || length > int64(len(recs)-p-n) {
			return fmt.Errorf("%w: record %d of batch %d: bad length", ErrCorruptBatch, i, h.BaseOffset)
		}
		p += n
		rec := recs[p+1 : p+int(length)] // past the record's attributes byte
		tsDelta, n1 := binary.Varint(rec)
		if n1 <= 0 {
			return fmt.Errorf("%w: record %d of batch %d: bad timestamp delta", ErrCorruptBatch, i, h.BaseOffset)
		}
		offDelta, n2 := binary.Varint(rec[n1:])
		if n2 <= 0 || offDelta < 0 || offDelta > int64(h.LastOffsetDelta) {
			return fmt.Errorf("%w: record %d of batch %d: bad offset delta", ErrCorruptBatch, i, h.BaseOffset)
		}
		ts := h.BaseTimestamp + tsDelta
		if h.Attributes&attrLogAppendTime != 0 {
			ts = h.MaxTimestamp
		}
		if !fn(h.BaseOffset+offDelta, ts) {
			return nil
		}
		p += int(length)
	}
	return nil
}

// readBatch reads the whole batch at pos of seg (whose header is h) into
// buf, grown as needed, and checks it (CRC-32C).
func (l *Log) readBatch(seg *segment, pos int64, h BatchHeader, buf []byte) ([]byte, error) {
	buf = grow(buf, h.Size())
	n, err := readFull(seg.file, buf, pos)
	if err != nil {
		return nil, fmt.Errorf("segment: read %s at %d: %w", seg.path, pos, err)
	}
	if _, _, err := checkBatch(buf[:n], l.opts.MaxBatchBytes); err != nil {
		return nil, fmt.Errorf("%s position %d: %w", seg.path, pos, err)
	}
	return buf[:n], nil
}
