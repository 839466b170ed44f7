package segment

import (
	"encoding/binary"
	"errors"
	"testing"
)

// FuzzRecordTimes: recordTimes (the record decoder of the lookups by time)
// never panics on any bytes, compressed by any codec or none; it reports
// only ErrCorruptBatch or
// ErrInvalidBatch; every offset it reports lies in the batch's offset range;
// and on the records of a well-formed batch it returns each record's
// timestamp (its base timestamp plus its delta) in order.
func FuzzRecordTimes(f *testing.F) {
	f.Add(int64(1000), []byte{0, 1, 2}, uint8(0), []byte{})
	f.Add(int64(-5), []byte{200, 0, 7, 7}, uint8(0), []byte{1, 2, 3})
	f.Add(int64(1<<40), []byte{128}, uint8(0), batchTimes(9, 1, 2, 3)[BatchHeaderSize:])
	for codec := range 5 {
		f.Add(int64(7), []byte{1, 2}, uint8(codec), compressBatch(f, batchTimes(7, 1, 2), codec)[BatchHeaderSize:])
	}
	f.Add(int64(7), []byte{1, 2}, uint8(codecSnappy), compressBatch(f, batchTimes(7, 1, 2), -codecSnappy)[BatchHeaderSize:])
	f.Fuzz(func(t *testing.T, baseTs int64, deltas []byte, codec uint8, tail []byte) {
		if len(deltas) == 0 || len(deltas) > 64 {
			return
		}
		ds := make([]int64, len(deltas))
		for i, d := range deltas {
			ds[i] = int64(int8(d)) * 1000
		}
		good := batchTimes(baseTs, ds...)
		i := 0
		err := recordTimes(good, func(off, ts int64) bool {
			if off != int64(i) || ts != baseTs+ds[i] {
				t.Fatalf("record %d: offset %d ts %d, want %d ts %d", i, off, ts, i, baseTs+ds[i])
			}
			i++
			return true
		})
		if err != nil || i != len(ds) {
			t.Fatalf("well-formed batch: %d records, %v", i, err)
		}
		// The same header over arbitrary record bytes.
		bad := append(append([]byte(nil), good[:BatchHeaderSize]...), tail...)
		binary.BigEndian.PutUint32(bad[offBatchLength:], uint32(len(bad)-logOverhead))
		binary.BigEndian.PutUint16(bad[offAttributes:], uint16(codec%8))
		last := int64(binary.BigEndian.Uint32(bad[offLastOffsetDelta:]))
		err = recordTimes(bad, func(off, ts int64) bool {
			if off < 0 || off > last {
				t.Fatalf("offset %d outside the batch's [0, %d]", off, last)
			}
			return true
		})
		if err != nil && !errors.Is(err, ErrCorruptBatch) && !errors.Is(err, ErrInvalidBatch) {
			t.Fatalf("error wraps no sentinel: %v", err)
		}
	})
}
