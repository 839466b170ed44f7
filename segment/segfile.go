package segment

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// segment is one file of a log. Fields are guarded by Log.mu; the file itself
// is safe for concurrent ReadAt, and for Sync concurrent with WriteAt (true of
// OS files and vfs.MemFS; see the FS contract in doc.go).
type segment struct {
	base int64 // offset of its first batch; the file name
	path string
	// file is nil while closed: opened on first use (openLocked, pinLocked)
	// and closed by the node's budget (Files) when idle. Never nil and
	// never changed while refs > 0.
	file vfs.File
	// owner, used, ringed and slot are the budget's (files.go): used is
	// set by every use and cleared by the sweep (under Log.mu); slot is
	// the place in the ring (under Files.mu).
	owner   *Log
	used    bool
	ringed  bool
	slot    int
	size    int64 // bytes of whole, valid batches: the logical end
	next    int64 // offset after its last batch (== base when empty)
	firstTs int64 // maxTimestamp of its first batch (segment.ms); noTimestamp when empty
	maxTs   int64 // largest batch maxTimestamp in it (retention.ms, time index)
	// maxTsOff is the base offset of its first batch whose maxTimestamp is
	// maxTs, or -1 when not known (not persisted: found again by a header
	// scan when MaxTimestamp needs it; see maxts.go).
	maxTsOff int64
	// sealed: the segment takes no more appends. Its end (size) is recorded in
	// the index (kindSegment), durably where a truncation or recovery cut it.
	sealed bool
	// lastIndexPos is the position of its last offset index entry (0: none).
	lastIndexPos int64
	refs         int // readers and flushers using file
	// wbDue and wbDone bound its batched writeback (writeback.go): bytes
	// before wbDue are due, bytes before wbDone were requested.
	wbDue, wbDone int64
	removed       bool // renamed to .deleted; close and remove at refs == 0
	// Verification (scrub.go): bytes before fromDisk were in the file when
	// the log opened and are CRC-checked before a read hands them out,
	// except within [vLo, vHi), the latest range a read or scrub checked.
	// Bytes from fromDisk on were validated when this process wrote them.
	fromDisk, vLo, vHi int64
	scrubbed           time.Time // when a scrub last verified it whole
	closeLate          bool      // the log closed while refs > 0: close at refs == 0
	swapPin            bool      // a Clean's swap holds a reference until its file is renamed
	// cleaned: the cleaner rewrote it (its batches may leave offset
	// holes), first at cleanedAt (ms): delete.retention.ms counts from
	// then for its tombstones.
	cleaned   bool
	cleanedAt int64
	// replaced: a Clean swapped a rewritten file in for this one. Set
	// before the index changes, so that a reader whose index lookup may
	// have seen the new positions knows to retry (errSegmentReplaced).
	replaced atomic.Bool
}

const noTimestamp = int64(-1 << 63)

const (
	segSuffix     = ".log"
	deletedSuffix = ".deleted"
)

func segmentName(base int64) string { return fmt.Sprintf("%020d%s", base, segSuffix) }

// parseSegmentName returns the base offset of a segment file name.
func parseSegmentName(name string) (int64, bool) {
	if len(name) != 20+len(segSuffix) || !strings.HasSuffix(name, segSuffix) {
		return 0, false
	}
	v, err := strconv.ParseInt(name[:20], 10, 64)
	return v, err == nil && v >= 0
}

// segRecord is the index record of a sealed segment: its logical end (bytes
// past it are never read, even when CRC-valid), its next offset and newest
// timestamp, so that opening a log does not rescan closed segments.
//
// Version 2 adds when the cleaner first rewrote the segment: its batches
// may leave offset holes, and its tombstones expire from then on.
type segRecord struct {
	end, next, firstTs, maxTs int64
	cleaned                   bool
	cleanedAt                 int64
}

func (r segRecord) encode() []byte {
	b := make([]byte, 0, 41)
	b = append(b, 1) // version
	vs := []int64{r.end, r.next, r.firstTs, r.maxTs}
	if r.cleaned {
		b[0] = 2
		vs = append(vs, r.cleanedAt)
	}
	for _, v := range vs {
		b = binary.BigEndian.AppendUint64(b, uint64(v))
	}
	return b
}

func decodeSegRecord(b []byte) (segRecord, error) {
	if !(len(b) == 33 && b[0] == 1 || len(b) == 41 && b[0] == 2) {
		return segRecord{}, fmt.Errorf("%w: segment record of %d bytes, version %d", ErrCorruptIndex, len(b), first(b))
	}
	r := segRecord{
		end: decodeU64(b[1:]), next: decodeU64(b[9:]), firstTs: decodeU64(b[17:]), maxTs: decodeU64(b[25:]),
	}
	if b[0] == 2 {
		r.cleaned, r.cleanedAt = true, decodeU64(b[33:])
	}
	return r, nil
}

// metaRecord is a log's checkpoint: the log start offset, the recovery point
// (every byte before it is fsynced and validated) with its position, facts
// about the recovery point's segment that a scan from there cannot see, and
// whether the log was closed cleanly.
type metaRecord struct {
	logStart         int64
	recoveryPoint    int64
	rpBase, rpPos    int64
	rpFirst, rpMaxTs int64 // firstTs and maxTs of the rp segment's bytes before rpPos
	clean            bool
}

func (m metaRecord) encode() []byte {
	b := make([]byte, 0, 50)
	b = append(b, 1)
	for _, v := range []int64{m.logStart, m.recoveryPoint, m.rpBase, m.rpPos, m.rpFirst, m.rpMaxTs} {
		b = binary.BigEndian.AppendUint64(b, uint64(v))
	}
	if m.clean {
		return append(b, 1)
	}
	return append(b, 0)
}

func decodeMeta(b []byte) (metaRecord, error) {
	if len(b) != 50 || b[0] != 1 {
		return metaRecord{}, fmt.Errorf("%w: checkpoint record of %d bytes, version %d", ErrCorruptIndex, len(b), first(b))
	}
	return metaRecord{
		logStart: decodeU64(b[1:]), recoveryPoint: decodeU64(b[9:]), rpBase: decodeU64(b[17:]),
		rpPos: decodeU64(b[25:]), rpFirst: decodeU64(b[33:]), rpMaxTs: decodeU64(b[41:]), clean: b[49] == 1,
	}, nil
}

func first(b []byte) int {
	if len(b) == 0 {
		return -1
	}
	return int(b[0])
}
