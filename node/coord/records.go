package coord

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/sluice-log/sluice/node/group"
	"github.com/sluice-log/sluice/segment"
)

// ErrBadBatch is a batch of the offsets partition this package cannot
// decode: compressed (the coordinator writes none), or records that do not
// match their header.
var ErrBadBatch = errors.New("coord: undecodable offsets batch")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// attrTransactional is RecordBatch v2's transactional attribute bit.
const attrTransactional = 0x10

// producer is the producer a transactional batch is written for.
type producer struct {
	id    int64
	epoch int16
	seq   int32 // base sequence
}

// encodeBatch is one uncompressed RecordBatch v2 of recs (Kafka's record
// format: varint lengths, a null value for a tombstone), relative offsets
// from 0, every record stamped ts (ms), no producer id: what a client
// with acks=all and no idempotence would send.
func encodeBatch(ts int64, recs []group.Record) []byte { return frameBatch(ts, recs, nil) }

// frameBatch is encodeBatch, transactional for p when p is not nil (a
// TxnOffsetCommit's offsets, written as Kafka's coordinator writes them:
// the producer's id and epoch, the transactional attribute).
func frameBatch(ts int64, recs []group.Record, p *producer) []byte {
	b := make([]byte, segment.BatchHeaderSize, segment.BatchHeaderSize+len(recs)*64)
	var rec []byte
	for i, r := range recs {
		rec = rec[:0]
		rec = append(rec, 0)                     // attributes
		rec = binary.AppendVarint(rec, 0)        // timestampDelta
		rec = binary.AppendVarint(rec, int64(i)) // offsetDelta
		rec = appendBytes(rec, r.Key)
		rec = appendBytes(rec, r.Value)
		rec = binary.AppendVarint(rec, 0) // headers
		b = binary.AppendVarint(b, int64(len(rec)))
		b = append(b, rec...)
	}
	be := binary.BigEndian
	be.PutUint64(b[0:], 0)
	be.PutUint32(b[8:], uint32(len(b)-12))
	be.PutUint32(b[12:], 0xffffffff)
	b[16] = 2
	be.PutUint16(b[21:], 0)
	be.PutUint32(b[23:], uint32(len(recs)-1))
	be.PutUint64(b[27:], uint64(ts))
	be.PutUint64(b[35:], uint64(ts))
	be.PutUint64(b[43:], 0xffffffffffffffff)
	be.PutUint16(b[51:], 0xffff)
	be.PutUint32(b[53:], 0xffffffff)
	if p != nil {
		be.PutUint16(b[21:], attrTransactional)
		be.PutUint64(b[43:], uint64(p.id))
		be.PutUint16(b[51:], uint16(p.epoch))
		be.PutUint32(b[53:], uint32(p.seq))
	}
	be.PutUint32(b[57:], uint32(len(recs)))
	be.PutUint32(b[17:], crc32.Checksum(b[21:], castagnoli))
	return b
}

// appendBytes appends a varint length and v; nil is length -1 (null).
func appendBytes(b, v []byte) []byte {
	if v == nil {
		return binary.AppendVarint(b, -1)
	}
	b = binary.AppendVarint(b, int64(len(v)))
	return append(b, v...)
}

// record is one decoded record of the offsets partition. Key and Value
// alias the batch; Value nil is a tombstone. ProducerID is the producer
// of a transactional batch (-1: not transactional). A control batch
// decodes as one record with Marker set: the end of ProducerID's
// transaction (Commit, or an abort).
type record struct {
	Offset         int64
	Key, Value     []byte
	ProducerID     int64
	Marker, Commit bool
}

// decodeBatch appends the records of one whole batch b (header h) to out.
// A control batch is one marker record (Kafka's EndTransactionMarker: key
// version 0, type 0 abort or 1 commit); other control records are none.
func decodeBatch(out []record, h segment.BatchHeader, b []byte) ([]record, error) {
	if h.IsControl() {
		n := len(out)
		out, err := decodeRecords(out, h, b)
		if err != nil {
			return out, err
		}
		if len(out) != n+1 || len(out[n].Key) != 4 || binary.BigEndian.Uint16(out[n].Key) != 0 ||
			binary.BigEndian.Uint16(out[n].Key[2:]) > 1 {
			return out[:n], nil // not a transaction marker: nothing for the coordinator
		}
		commit := binary.BigEndian.Uint16(out[n].Key[2:]) == 1
		out[n] = record{Offset: out[n].Offset, ProducerID: h.ProducerID, Marker: true, Commit: commit}
		return out, nil
	}
	return decodeRecords(out, h, b)
}

// decodeRecords appends the records of one whole batch b (header h) to
// out.
func decodeRecords(out []record, h segment.BatchHeader, b []byte) ([]record, error) {
	pid := int64(-1)
	if h.IsTransactional() {
		pid = h.ProducerID
	}
	if h.Compression() != 0 {
		return out, fmt.Errorf("%w: batch at %d is compressed (codec %d)", ErrBadBatch, h.BaseOffset, h.Compression())
	}
	if len(b) < segment.BatchHeaderSize {
		return out, fmt.Errorf("%w: batch at %d is shorter than its header", ErrBadBatch, h.BaseOffset)
	}
	if h.RecordCount < 0 {
		return out, fmt.Errorf("%w: batch at %d has %d records", ErrBadBatch, h.BaseOffset, h.RecordCount)
	}
	p := b[segment.BatchHeaderSize:]
	for i := int32(0); i < h.RecordCount; i++ {
		n, k := binary.Varint(p)
		if k <= 0 || n < 0 || int64(len(p)-k) < n {
			return out, fmt.Errorf("%w: record %d of the batch at %d: bad length", ErrBadBatch, i, h.BaseOffset)
		}
		r := p[k : k+int(n)]
		p = p[k+int(n):]
		if len(r) < 1 {
			return out, fmt.Errorf("%w: record %d of the batch at %d: empty", ErrBadBatch, i, h.BaseOffset)
		}
		r = r[1:] // attributes
		var vals [2]int64
		for j := range vals {
			v, k := binary.Varint(r)
			if k <= 0 {
				return out, fmt.Errorf("%w: record %d of the batch at %d: bad varint", ErrBadBatch, i, h.BaseOffset)
			}
			vals[j], r = v, r[k:]
		}
		var key, value []byte
		var ok bool
		if key, r, ok = readBytes(r); !ok {
			return out, fmt.Errorf("%w: record %d of the batch at %d: bad key", ErrBadBatch, i, h.BaseOffset)
		}
		if value, _, ok = readBytes(r); !ok {
			return out, fmt.Errorf("%w: record %d of the batch at %d: bad value", ErrBadBatch, i, h.BaseOffset)
		}
		out = append(out, record{Offset: h.BaseOffset + vals[1], Key: key, Value: value, ProducerID: pid})
	}
	if len(p) != 0 {
		return out, fmt.Errorf("%w: %d bytes after the last record of the batch at %d", ErrBadBatch, len(p), h.BaseOffset)
	}
	return out, nil
}

// readBytes reads a varint length and that many bytes (-1: nil).
func readBytes(b []byte) (v, rest []byte, ok bool) {
	n, k := binary.Varint(b)
	switch {
	case k <= 0 || n < -1:
		return nil, nil, false
	case n == -1:
		return nil, b[k:], true
	case int64(len(b)-k) < n:
		return nil, nil, false
	}
	return b[k : k+int(n) : k+int(n)], b[k+int(n):], true
}
