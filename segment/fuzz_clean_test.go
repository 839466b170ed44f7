package segment

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// FuzzClean runs the cleaner over a log built from arbitrary bytes: keyed
// batches (any codec, tombstones, null keys, producer ids) and raw batches
// whose records section is whatever the input says (framed and CRC'd, so
// that a follower would take them; their records may not decode), with
// Cleans at arbitrary points and bounds. It checks that the cleaner never
// panics or fails, that every batch read back passes the CRC, that one
// whose records decode holds only records written at their offsets, with
// a count and maxTimestamp that match them, that one whose records do not
// decode is byte for byte the one appended, that each producer's last
// batch stays, that every record keeps its timestamp (a batch stamped
// with a delete horizon re-encodes its deltas, KIP-534), and that the
// latest value of every key is never lost (a latest tombstone may go,
// once its horizon has passed: Cleans run at clocks from 0 to 15 s with
// delete.retention.ms 3 s). Seed corpus: testdata/fuzz/FuzzClean.
func FuzzClean(f *testing.F) {
	f.Add([]byte{0, 3, 1, 2, 3, 0, 3, 1, 2, 4, 7, 0})
	f.Add([]byte{1, 2, 9, 9, 4, 1, 6, 5, 1, 2, 3, 4, 5, 7, 1, 2, 0, 9})
	f.Add(bytes.Repeat([]byte{2, 1, 3, 3, 5, 7, 2}, 20))
	f.Fuzz(func(t *testing.T, data []byte) {
		e := newEnv(t, vfs.NewMem())
		l, _ := e.open(Options{SegmentBytes: 300, IndexIntervalBytes: 64, Now: testNow, MaxBatchBytes: 1 << 16})
		defer l.Close()
		w := written{}
		times := map[int64]int64{}   // record timestamps, by offset
		opaque := map[int64][]byte{} // batches whose records do not decode, by base offset
		lastOfPid := map[int64]int64{}
		next := func() byte {
			if len(data) == 0 {
				return 0
			}
			b := data[0]
			data = data[1:]
			return b
		}
		appendBatch := func(b []byte, replicated bool) {
			var err error
			if replicated {
				setBaseOffset(b, l.LogEndOffset())
				setLeaderEpoch(b, 0)
				_, err = l.AppendReplicated(b)
			} else {
				_, err = l.Append(b, 0)
			}
			if err != nil {
				t.Fatalf("append: %v", err)
			}
			h := parseHeader(b)
			if h.ProducerID >= 0 {
				lastOfPid[h.ProducerID] = h.BaseOffset
			}
			if err := eachRecord(b, h, func(r record) bool {
				w[r.offset] = kv{key: string(r.key), keyNull: r.keyNull, valueNull: r.valueNull, value: string(recordValue(r.raw))}
				times[r.offset] = h.BaseTimestamp + r.tsDelta
				return true
			}); err != nil {
				opaque[h.BaseOffset] = append([]byte(nil), b...)
				for o := h.BaseOffset; o <= h.LastOffset(); o++ {
					delete(w, o)
				}
			}
		}
		for steps := 0; len(data) > 0 && steps < 200; steps++ {
			switch op := next(); op % 8 {
			case 0, 1, 2, 3, 4: // a keyed batch
				recs := make([]kv, 1+next()%4)
				for i := range recs {
					f := next()
					recs[i] = kv{key: fmt.Sprintf("k%d", f%8), value: string(bytes.Repeat([]byte{f}, int(f%5)))}
					recs[i].valueNull = f%11 == 0
					if recs[i].keyNull = f%13 == 0; recs[i].keyNull {
						recs[i].key = ""
					}
				}
				b := buildKVBatch(1000+int64(steps), int16(op%5), recs)
				if op >= 3 { // a producer's batch, replicated (no sequence checks)
					setProducer(b, int64(op%3), 0, int32(next()), int16(op%5))
				}
				appendBatch(b, op >= 3)
			case 5: // a raw batch: framed and CRC'd, records as given
				n := int(next() % 40)
				body := append([]byte(nil), data[:min(n, len(data))]...)
				data = data[min(n, len(data)):]
				appendBatch(framedBatch(body, int32(next()%4), int16(next()%5)), true)
			case 6, 7: // a Clean
				upTo := l.LogEndOffset() - int64(next()%3)
				p := compactPolicy()
				p.DeleteRetention = 3 * time.Second
				_, err := l.Clean(context.Background(), CleanOptions{Policy: p, UpTo: upTo,
					Now: time.UnixMilli(int64(next()%16) * 1000), OffsetMapBytes: int(next()) * 8})
				if err != nil {
					t.Fatalf("clean: %v", err)
				}
			}
		}
		checkFuzzClean(t, l, w, times, opaque, lastOfPid)
	})
}

// framedBatch frames body as the records of a batch claiming count records.
func framedBatch(body []byte, count int32, codec int16) []byte {
	b := make([]byte, BatchHeaderSize, BatchHeaderSize+len(body))
	b = append(b, body...)
	be := binary.BigEndian
	be.PutUint32(b[offBatchLength:], uint32(len(b)-logOverhead))
	b[offMagic] = 2
	be.PutUint16(b[offAttributes:], uint16(codec))
	be.PutUint32(b[offLastOffsetDelta:], uint32(max(count-1, 0)))
	be.PutUint64(b[offBaseTimestamp:], 500)
	be.PutUint64(b[offMaxTimestamp:], 500)
	be.PutUint64(b[offProducerID:], 0xffffffffffffffff)
	be.PutUint32(b[offRecordCount:], uint32(count))
	be.PutUint32(b[offCRC:], crc32c(b[offAttributes:]))
	return b
}

func checkFuzzClean(t *testing.T, l *Log, w written, times map[int64]int64, opaque map[int64][]byte, lastOfPid map[int64]int64) {
	leo := l.LogEndOffset()
	got := map[string]string{}
	pids := map[int64]int64{}
	for off := l.LogStartOffset(); off < leo; {
		c, err := l.Read(off, 1<<20, leo, nil)
		if err != nil {
			t.Fatalf("read %d: %v", off, err)
		}
		if c.Size == 0 {
			break
		}
		it := NewBatchIter(c.Data)
		for h, b, ok := it.Next(); ok; h, b, ok = it.Next() {
			if _, _, err := checkBatch(b, DefaultMaxBatchBytes); err != nil {
				t.Fatalf("batch %d: %v", h.BaseOffset, err)
			}
			if h.ProducerID >= 0 {
				pids[h.ProducerID] = h.BaseOffset
			}
			if orig, ok := opaque[h.BaseOffset]; ok {
				if !bytes.Equal(b[BatchHeaderSize:], orig[BatchHeaderSize:]) || !bytes.Equal(b[offAttributes:BatchHeaderSize], orig[offAttributes:BatchHeaderSize]) {
					t.Fatalf("batch %d, whose records do not decode, was changed", h.BaseOffset)
				}
				continue
			}
			n, maxTs := int32(0), int64(-1<<63)
			if err := eachRecord(b, h, func(r record) bool {
				n++
				maxTs = max(maxTs, h.BaseTimestamp+r.tsDelta)
				k := kv{key: string(r.key), keyNull: r.keyNull, valueNull: r.valueNull, value: string(recordValue(r.raw))}
				if w[r.offset] != k {
					t.Fatalf("offset %d holds %+v, %+v was written", r.offset, k, w[r.offset])
				}
				if ts := h.BaseTimestamp + r.tsDelta; ts != times[r.offset] {
					t.Fatalf("offset %d has timestamp %d, was written at %d", r.offset, ts, times[r.offset])
				}
				if !r.keyNull {
					got[k.key] = k.value
					if k.valueNull {
						got[k.key] = "!"
					}
				}
				return true
			}); err != nil {
				t.Fatalf("batch %d: %v", h.BaseOffset, err)
			}
			if n != h.RecordCount || n > 0 && h.Attributes&attrLogAppendTime == 0 && h.MaxTimestamp != maxTs {
				t.Fatalf("batch %d: %d records, header says %d; maxTimestamp %d, records' %d", h.BaseOffset, n, h.RecordCount, h.MaxTimestamp, maxTs)
			}
		}
		off = c.Next
	}
	want := latestWritten(w, leo)
	for k, v := range want {
		if _, ok := got[k]; !ok && v == "!" {
			delete(want, k) // a latest tombstone past its horizon
		}
	}
	if !maps.Equal(got, want) {
		t.Fatalf("key view:\n got %v\nwant %v", got, want)
	}
	for pid, base := range lastOfPid {
		if pids[pid] != base {
			t.Fatalf("producer %d's last batch at %d is gone (last seen %d)", pid, base, pids[pid])
		}
	}
}
