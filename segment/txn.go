package segment

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"sort"

	"github.com/cockroachdb/pebble/v2"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Transactions on the log side (Kafka's ProducerStateManager and
// TransactionIndex): a transactional producer's batches open a transaction
// on the partition; a control batch (the EndTransactionMarker the
// coordinator has the leader write, AppendMarker) ends it, committed or
// aborted. The log keeps, per producer, the first offset of its open
// transaction and the last coordinator epoch it saw; the oldest open
// transaction's first offset is the first unstable offset (the LSO is the
// smaller of it and the high watermark); an aborted transaction gets an
// entry in the aborted-transaction index ('a' keys in the Pebble index)
// that read_committed fetches ask for (AbortedTxns).

// Marker is an EndTransactionMarker: the end of producer ProducerID's
// transaction on this partition, written by the leader when the transaction
// coordinator asks (WriteTxnMarkers).
type Marker struct {
	ProducerID       int64
	ProducerEpoch    int16
	Commit           bool  // commit; false: abort
	CoordinatorEpoch int32 // the coordinator's partition leader epoch
	Timestamp        int64 // ms: the batch's base and max timestamp; 0: the log's clock
}

// AbortedTxn is an aborted transaction: producer ProducerID's data from
// FirstOffset, ended by the abort marker at LastOffset. Fetch's
// AbortedTransactions carry the producer id and first offset.
type AbortedTxn struct {
	ProducerID, FirstOffset, LastOffset int64
}

// ProducerInfo describes one producer's state on this partition
// (DescribeProducers).
type ProducerInfo struct {
	ProducerID            int64
	Epoch                 int16
	LastSequence          int32 // -1: no data batch remembered
	LastTimestamp         int64 // ms, the log's clock when its latest batch was written
	CoordinatorEpoch      int32 // -1: no marker seen
	CurrentTxnStartOffset int64 // -1: no open transaction
}

// Control record types (Kafka's ControlRecordType) and their versions.
const (
	controlAbort  = 0
	controlCommit = 1
	// markerRecordSize is an EndTransactionMarker record's body: the bytes
	// after its length varint.
	markerRecordSize  = 1 + 1 + 1 + 1 + 4 + 1 + 6 + 1
	markerBatchSize   = BatchHeaderSize + 1 + markerRecordSize
	attrTransactional = 0x10
	attrControl       = 0x20
)

// controlRecord is what a control batch's one record says.
type controlRecord struct {
	commit     bool
	coordEpoch int32
}

// appendMarkerBatch appends the control batch of m to dst, with relative
// offsets (baseOffset 0) and leader epoch -1, as a producer's batch.
func appendMarkerBatch(dst []byte, m Marker) []byte {
	p := len(dst)
	dst = append(dst, make([]byte, BatchHeaderSize)...)
	key := kmsg.ControlRecordKey{Type: kmsg.ControlRecordKeyType(controlAbort)}
	if m.Commit {
		key.Type = controlCommit
	}
	val := kmsg.EndTxnMarker{CoordinatorEpoch: m.CoordinatorEpoch}
	dst = append(dst, markerRecordSize<<1) // length varint (zig-zag; small)
	dst = append(dst, 0, 0, 0)             // attributes, timestampDelta 0, offsetDelta 0
	dst = append(dst, 4<<1)                // key length 4
	dst = key.AppendTo(dst)
	dst = append(dst, 6<<1) // value length 6
	dst = val.AppendTo(dst)
	dst = append(dst, 0) // headers count
	b := dst[p:]
	be := binary.BigEndian
	be.PutUint32(b[offBatchLength:], uint32(len(b)-logOverhead))
	be.PutUint32(b[offLeaderEpoch:], 0xffffffff)
	b[offMagic] = 2
	be.PutUint16(b[offAttributes:], attrTransactional|attrControl)
	be.PutUint64(b[offBaseTimestamp:], uint64(m.Timestamp))
	be.PutUint64(b[offMaxTimestamp:], uint64(m.Timestamp))
	be.PutUint64(b[offProducerID:], uint64(m.ProducerID))
	be.PutUint16(b[offProducerEpoch:], uint16(m.ProducerEpoch))
	be.PutUint32(b[offBaseSequence:], 0xffffffff)
	be.PutUint32(b[offRecordCount:], 1)
	be.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
	return dst
}

// parseControl reads the control record of control batch b (whole, header
// included). ok is false when it is not a transaction marker that decodes
// (an empty batch the cleaner left, or another control type): such a
// batch ends nothing.
func parseControl(b []byte) (c controlRecord, ok bool) {
	if len(b) < BatchHeaderSize || int32(binary.BigEndian.Uint32(b[offRecordCount:])) < 1 ||
		binary.BigEndian.Uint16(b[offAttributes:])&attrCompression != 0 {
		return c, false
	}
	cur := cursor{b: b, p: BatchHeaderSize}
	n := cur.varint()
	if cur.bad || n < 0 || int64(len(b)-cur.p) < n {
		return c, false
	}
	cur.b = b[:cur.p+int(n)]
	cur.p++ // attributes
	cur.varint()
	cur.varint()
	kl := cur.varint()
	if cur.bad || kl < 4 || kl > int64(len(cur.b)-cur.p) {
		return c, false
	}
	var key kmsg.ControlRecordKey
	if key.ReadFrom(cur.b[cur.p:cur.p+int(kl)]) != nil || key.Type != controlAbort && key.Type != controlCommit {
		return c, false
	}
	cur.p += int(kl)
	c.commit = key.Type == controlCommit
	c.coordEpoch = -1
	var val kmsg.EndTxnMarker
	if vl := cur.varint(); !cur.bad && vl >= 6 && vl <= int64(len(cur.b)-cur.p) && val.ReadFrom(cur.b[cur.p:cur.p+int(vl)]) == nil {
		c.coordEpoch = val.CoordinatorEpoch
	}
	return c, true
}

// AppendMarker writes, as leader at leaderEpoch, the control batch that
// ends producer m.ProducerID's transaction (Kafka's EndTransactionMarker
// record: key version 0 + type 0 abort / 1 commit; value version 0 +
// coordinator epoch) and returns its offset. The producer's open
// transaction, if any, ends; an abort is recorded in the aborted-
// transaction index. A marker for a producer with no open transaction is
// written all the same (the coordinator retries markers), and ends nothing.
//
// Errors: ErrInvalidProducerEpoch (m's epoch older than the producer's),
// ErrTransactionCoordinatorFenced (m's coordinator epoch older than the
// last one this partition saw from the producer), ErrStaleEpoch, and the
// write errors of Append.
func (l *Log) AppendMarker(m Marker, leaderEpoch int32) (int64, error) {
	if m.ProducerID < 0 {
		return -1, fmt.Errorf("%w: marker without a producer id", ErrInvalidRecord)
	}
	l.mu.Lock()
	if err := l.writable(); err != nil {
		l.mu.Unlock()
		return -1, err
	}
	if last, ok := l.epochs.latest(); ok && leaderEpoch < last.Epoch {
		l.mu.Unlock()
		return -1, fmt.Errorf("%w: marker at epoch %d, log is at epoch %d", ErrStaleEpoch, leaderEpoch, last.Epoch)
	}
	if err := l.pstate.checkMarker(m); err != nil {
		l.mu.Unlock()
		return -1, err
	}
	if m.Timestamp == 0 {
		m.Timestamp = l.opts.Now().UnixMilli() // as Kafka's markers: the broker's time
	}
	l.markerBuf = appendMarkerBatch(l.markerBuf[:0], m)
	b := l.markerBuf
	h := parseHeader(b)
	setBaseOffset(b, l.leo)
	setLeaderEpoch(b, leaderEpoch)
	h.BaseOffset, h.LeaderEpoch = l.leo, leaderEpoch
	l.markerHdr = append(l.markerHdr[:0], h)
	info := AppendInfo{MaxTimestamp: h.MaxTimestamp, Bytes: len(b), Batches: 1, Records: 1, Headers: l.markerHdr}
	info, err := l.appendLocked(b, info) // unlocks
	if err != nil {
		return -1, err
	}
	return info.FirstOffset, nil
}

// FirstUnstableOffset returns the first offset of the oldest open
// transaction (never below the log start); ok is false when no transaction
// is open. The LSO is min(high watermark, this). O(1): the open
// transactions are kept in a heap by first offset.
func (l *Log) FirstUnstableOffset() (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.firstUnstableLocked()
}

func (l *Log) firstUnstableLocked() (int64, bool) {
	off, ok := l.pstate.firstUnstable()
	return max(off, l.logStart), ok
}

// LastStableOffset returns the last stable offset (LSO) for high
// watermark hw: hw, or the first offset of the oldest transaction that is
// open or whose marker is not yet below hw, when that is lower (never
// below the log start). A marker at or above the high watermark may still
// be truncated away, so its transaction stays unstable until hw passes it,
// as Kafka completes a transaction on high-watermark advance. Call it
// with a non-decreasing hw: it forgets the transactions whose markers are
// below hw.
func (l *Log) LastStableOffset(hw int64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastStableLocked(hw)
}

func (l *Log) lastStableLocked(hw int64) int64 {
	if hw <= l.logStart {
		return hw
	}
	return max(l.pstate.lastStable(hw), l.logStart)
}

// Bounds returns the log start offset, the log end offset and
// LastStableOffset(hw) under one lock: what a fetch with nothing to read
// answers, so that an idle partition's fetch costs no segment read.
func (l *Log) Bounds(hw int64) (logStart, logEnd, lastStable int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.logStart, l.leo, l.lastStableLocked(hw)
}

// OngoingTxn returns the first offset and epoch of producer producerID's
// open transaction on this partition; ok is false when it has none.
func (l *Log) OngoingTxn(producerID int64) (firstOffset int64, epoch int16, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.pstate.producers[producerID]
	if e == nil || e.txnFirst < 0 {
		return -1, 0, false
	}
	return e.txnFirst, e.epoch, true
}

// Producers appends the state of every producer the log remembers to dst,
// by producer id, and returns it (DescribeProducers).
func (l *Log) Producers(dst []ProducerInfo) []ProducerInfo {
	l.mu.Lock()
	n := len(dst)
	for id, e := range l.pstate.producers {
		pi := ProducerInfo{ProducerID: id, Epoch: e.epoch, LastSequence: -1, LastTimestamp: e.lastTs,
			CoordinatorEpoch: e.coordEpoch, CurrentTxnStartOffset: e.txnFirst}
		if k := len(e.batches); k > 0 {
			pi.LastSequence = e.batches[k-1].lastSeq
		}
		dst = append(dst, pi)
	}
	l.mu.Unlock()
	sort.Slice(dst[n:], func(i, j int) bool { return dst[n+i].ProducerID < dst[n+j].ProducerID })
	return dst
}

// Aborted-transaction index entries: key 'a' + marker offset (8, BE);
// value producer id (8) | first offset (8) | last stable offset after the
// abort (8). The last stable offset bounds a scan: every transaction
// aborted later began at or after it.
const abortValueSize = 24

func (k keys) abort(off int64) []byte { return k.u64(kindAbort, uint64(off)) }

func encodeAbort(pid, first, lso int64) []byte {
	var v [abortValueSize]byte
	binary.BigEndian.PutUint64(v[0:], uint64(pid))
	binary.BigEndian.PutUint64(v[8:], uint64(first))
	binary.BigEndian.PutUint64(v[16:], uint64(lso))
	return v[:]
}

// AbortedTxns appends to dst the aborted transactions whose data overlaps
// [from, upTo) (their first offset below upTo, their marker at or after
// from), oldest marker first, and returns it: Fetch's AbortedTransactions
// for read_committed, upTo being the LSO. A range scan of the index from
// from that stops at the first entry whose last stable offset reaches
// upTo. An index read error answers what was found before it.
func (l *Log) AbortedTxns(from, upTo int64, dst []AbortedTxn) []AbortedTxn {
	if from >= upTo {
		return dst
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return dst
	}
	// Entries of markers appended since the last commit sit in the
	// pending batch: commit it so the scan sees them.
	err := l.commitPendingLocked()
	l.mu.Unlock()
	if err != nil {
		return dst
	}
	it, err := l.idx.db.NewIter(&pebble.IterOptions{LowerBound: l.k.abort(from), UpperBound: l.k.upper(kindAbort)})
	if err != nil {
		return dst
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		k, v := it.Key(), it.Value()
		if len(v) != abortValueSize || len(k) < 8 {
			break
		}
		first := int64(binary.BigEndian.Uint64(v[8:]))
		if first < upTo {
			dst = append(dst, AbortedTxn{ProducerID: int64(binary.BigEndian.Uint64(v)), FirstOffset: first,
				LastOffset: int64(binary.BigEndian.Uint64(k[len(k)-8:]))})
		}
		if int64(binary.BigEndian.Uint64(v[16:])) >= upTo {
			break
		}
	}
	return dst
}

// trackBatchLocked updates the producer state with batch b (header h, its
// final offset) written at nowMs and, when b is an abort marker, writes
// its aborted-transaction index entry into wb. Called with mu held (or
// before the log is shared).
func (l *Log) trackBatchLocked(wb *pebble.Batch, h BatchHeader, b []byte, nowMs int64) {
	if !h.IsControl() || h.ProducerID < 0 {
		l.pstate.update(h, nowMs)
		return
	}
	c, ok := parseControl(b)
	if !ok {
		return
	}
	first, was := l.pstate.endTxn(h, c, nowMs)
	if was && !c.commit && wb != nil {
		lso, open := l.pstate.firstUnstable()
		if !open {
			lso = h.NextOffset()
		}
		wb.Set(l.k.abort(h.BaseOffset), encodeAbort(h.ProducerID, first, lso), nil)
	}
}
