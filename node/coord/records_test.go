package coord

import (
	"bytes"
	"testing"

	"github.com/sluice-log/sluice/node/group"
	"github.com/sluice-log/sluice/segment"
)

// TestBatchRoundTrip: what encodeBatch writes passes the log's validation
// and decodes back, tombstones as nil values.
func TestBatchRoundTrip(t *testing.T) {
	recs := []group.Record{{Key: []byte("k1"), Value: []byte("v1")}, {Key: []byte("k2")}, {Key: []byte{}, Value: []byte{}}}
	b := encodeBatch(1234, recs)
	if _, n, err := segment.ValidateBatches(b, 1<<20); err != nil || n != 3 {
		t.Fatalf("ValidateBatches: %d records, %v", n, err)
	}
	it := segment.NewBatchIter(b)
	h, whole, ok := it.Next()
	if !ok {
		t.Fatal(it.Err())
	}
	got, err := decodeBatch(nil, h, whole)
	if err != nil || len(got) != 3 {
		t.Fatalf("decode: %v, %d records", err, len(got))
	}
	for i, r := range got {
		if r.Offset != int64(i) || !bytes.Equal(r.Key, recs[i].Key) || !bytes.Equal(r.Value, recs[i].Value) || (r.Value == nil) != (recs[i].Value == nil) {
			t.Errorf("record %d: %+v, want %+v", i, r, recs[i])
		}
	}
}

// TestTxnBatch: a transactional batch carries the producer and passes the
// log's validation; a marker decodes as the end of its producer's
// transaction.
func TestTxnBatch(t *testing.T) {
	b := frameBatch(9, []group.Record{{Key: []byte("k"), Value: []byte("v")}}, &producer{id: 77, epoch: 5, seq: 12})
	if _, n, err := segment.ValidateBatches(b, 1<<20); err != nil || n != 1 {
		t.Fatalf("ValidateBatches: %d records, %v", n, err)
	}
	it := segment.NewBatchIter(b)
	h, whole, _ := it.Next()
	if !h.IsTransactional() || h.IsControl() || h.ProducerID != 77 || h.ProducerEpoch != 5 || h.BaseSequence != 12 {
		t.Fatalf("header %+v", h)
	}
	got, err := decodeBatch(nil, h, whole)
	if err != nil || len(got) != 1 || got[0].ProducerID != 77 || got[0].Marker {
		t.Fatalf("decode: %v %+v", err, got)
	}
	for _, commit := range []bool{true, false} {
		it := segment.NewBatchIter(markerBatch(8, commit))
		h, whole, _ := it.Next()
		got, err := decodeBatch(nil, h, whole)
		if err != nil || len(got) != 1 || !got[0].Marker || got[0].Commit != commit || got[0].ProducerID != 8 {
			t.Fatalf("marker (commit %v): %v %+v", commit, err, got)
		}
	}
}

// FuzzDecodeBatch: any bytes decode or fail with ErrBadBatch, never panic
// or read out of bounds; corpus in testdata/fuzz.
func FuzzDecodeBatch(f *testing.F) {
	f.Add(encodeBatch(1, []group.Record{{Key: []byte("k"), Value: []byte("v")}, {Key: []byte("t")}}))
	f.Add(encodeBatch(1, []group.Record{{Key: nil, Value: nil}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		it := segment.NewBatchIter(b)
		for h, whole, ok := it.Next(); ok; h, whole, ok = it.Next() {
			recs, err := decodeBatch(nil, h, whole)
			if err == nil && int32(len(recs)) != h.RecordCount && !h.IsControl() {
				t.Fatalf("%d records decoded, header says %d", len(recs), h.RecordCount)
			}
			if err == nil && h.IsControl() && len(recs) > 1 {
				t.Fatalf("%d records decoded, header says %d", len(recs), h.RecordCount)
			}
		}
	})
}
