package soak

import (
	"encoding/binary"
	"hash/crc32"
	"testing"
	"time"

	"github.com/sluice-log/sluice/segment"
)

// TestPoisonBatchesPassTheCRC: each poison batch must be wrong only in its
// content, so that a broker checking just the framing and the CRC-32C
// would take it (the defect the bad client probes for).
func TestPoisonBatchesPassTheCRC(t *testing.T) {
	for _, kind := range []string{BadGarbageGzip, BadCountMismatch, BadControlBatch} {
		b := PoisonBatch(kind, time.Now().UnixMilli())
		be := binary.BigEndian
		if n := int(be.Uint32(b[8:])) + 12; n != len(b) || len(b) <= segment.BatchHeaderSize || b[16] != 2 {
			t.Errorf("%s: framing: length field %d, %d bytes, magic %d", kind, n, len(b), b[16])
		}
		if crc := crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)); crc != be.Uint32(b[17:]) {
			t.Errorf("%s: CRC-32C %08x, header says %08x", kind, crc, be.Uint32(b[17:]))
		}
	}
}

// TestCheckerReportsAcceptedBadRequest feeds the checker a history where
// one forged fetch was accepted, one refused and one never answered.
func TestCheckerReportsAcceptedBadRequest(t *testing.T) {
	tp := TP{Topic: "t", Partition: 0}
	h := &History{Partitions: []TP{tp}, Start: time.Now(), End: time.Now(), Bad: []BadRequest{
		{Kind: BadForgedReplicaFetch, TP: tp, Broker: 1, Code: 0},
		{Kind: BadGarbageGzip, TP: tp, Broker: 1, Code: 2},
		{Kind: BadFutureEpochFetch, TP: tp, Broker: 2, Code: -1, Err: "connection refused"},
	}}
	r := Check(h, CheckOptions{})
	if r.OK || r.ByKind[KindBadAccepted] != 1 {
		t.Fatalf("accepted forged fetch: ok=%v bad-accepted=%d, want one violation", r.OK, r.ByKind[KindBadAccepted])
	}
	if r.Counts.BadSent != 3 || r.Counts.BadRefused != 1 {
		t.Fatalf("counts sent=%d refused=%d, want 3 and 1", r.Counts.BadSent, r.Counts.BadRefused)
	}
	h.Bad = h.Bad[1:]
	if r := Check(h, CheckOptions{}); r.ByKind[KindBadAccepted] != 0 {
		t.Fatalf("refused requests reported as accepted: %+v", r.Violations)
	}
}
