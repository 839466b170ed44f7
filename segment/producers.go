package segment

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"sort"
)

// producerWindow is how many recent batches per producer are remembered for
// duplicate detection: Kafka's 5, the most in-flight requests an idempotent
// producer may have.
const producerWindow = 5

// producerBatch is one remembered batch of a producer.
type producerBatch struct {
	firstSeq, lastSeq       int32
	firstOffset, lastOffset int64
}

// producerEntry is what a log remembers of one producer id (Kafka's
// ProducerStateEntry).
type producerEntry struct {
	epoch   int16
	lastTs  int64           // when its latest batch was written (ms, the log's clock): expiry counts from it
	batches []producerBatch // oldest first, at most producerWindow
	// txnFirst is the first offset of its open transaction, -1 when none
	// (Kafka's currentTxnFirstOffset); coordEpoch the coordinator epoch of
	// the last marker seen, -1 when none.
	txnFirst   int64
	coordEpoch int32
	hi         int // its index in producerState.open while txnFirst >= 0
}

func newProducerEntry(epoch int16) *producerEntry {
	return &producerEntry{epoch: epoch, txnFirst: -1, coordEpoch: -1, hi: -1}
}

// producerState is the idempotent-producer state of a log at one offset:
// what its batches below that offset say about each producer id (Kafka's
// ProducerStateManager, Redpanda's rm_stm). The log keeps it under Log.mu,
// checks leader appends against it, updates it with every batch written,
// snapshots it (producers_snapshot.go) and rebuilds it after a truncation.
type producerState struct {
	producers map[int64]*producerEntry
	// lossy says that producers may be missing: one expired, or the state
	// was rebuilt without the batches below the log start. A producer id
	// the state does not know may then be one it forgot.
	lossy bool
	// open holds the producers with an open transaction, a min-heap by
	// txnFirst: its root is the first unstable offset.
	open []*producerEntry
	// ended are the transactions whose marker was written, in marker
	// order, until a high watermark passes the marker (Kafka's
	// unreplicatedTxns): until then the marker may be truncated away and
	// the transaction is still unstable. Log.LastStableOffset prunes it.
	ended []endedTxn
}

// endedTxn is a transaction ended by the marker at marker, its data from
// first.
type endedTxn struct{ first, marker int64 }

// maxEnded bounds producerState.ended on a replica nobody asks for its
// LSO: past it the oldest entries go (their markers are long committed in
// any cluster that moves its high watermark).
const maxEnded = 4096

func newProducerState(lossy bool) producerState {
	return producerState{producers: map[int64]*producerEntry{}, lossy: lossy}
}

// idempotent says whether h is an idempotent producer's data batch: a
// producer id and a sequence. Control batches (transaction markers) carry
// no sequence to check.
func idempotent(h BatchHeader) bool {
	return h.ProducerID >= 0 && !h.IsControl()
}

// nextSeq is the sequence after s (sequences wrap at MaxInt32 to 0).
func nextSeq(s int32) int32 {
	if s == math.MaxInt32 {
		return 0
	}
	return s + 1
}

// check decides a leader append of the idempotent batch h (its offsets not
// yet assigned) and changes nothing. A retry of one of the producer's last
// producerWindow batches is a duplicate: dup is the original. Otherwise
// the error is ErrInvalidProducerEpoch (an older epoch: a fenced producer)
// or ErrOutOfOrderSequence (a gap, a new epoch not starting at sequence 0,
// or a producer the state does not know starting past 0 while the state
// is complete); nil means append it.
func (s *producerState) check(h BatchHeader) (dup producerBatch, isDup bool, err error) {
	e := s.producers[h.ProducerID]
	if e == nil {
		if h.BaseSequence != 0 && !s.lossy {
			return dup, false, fmt.Errorf("%w: producer %d has no state in this partition and starts at sequence %d, not 0",
				ErrOutOfOrderSequence, h.ProducerID, h.BaseSequence)
		}
		return dup, false, nil
	}
	switch {
	case h.ProducerEpoch < e.epoch:
		return dup, false, fmt.Errorf("%w: producer %d epoch %d, the partition has seen epoch %d",
			ErrInvalidProducerEpoch, h.ProducerID, h.ProducerEpoch, e.epoch)
	case h.ProducerEpoch > e.epoch:
		if h.BaseSequence != 0 {
			return dup, false, fmt.Errorf("%w: producer %d new epoch %d starts at sequence %d, not 0",
				ErrOutOfOrderSequence, h.ProducerID, h.ProducerEpoch, h.BaseSequence)
		}
		return dup, false, nil
	}
	last := h.LastSequence()
	for _, b := range e.batches {
		if b.firstSeq == h.BaseSequence && b.lastSeq == last {
			return b, true, nil
		}
	}
	if n := len(e.batches); n > 0 && h.BaseSequence != nextSeq(e.batches[n-1].lastSeq) {
		return dup, false, fmt.Errorf("%w: producer %d epoch %d sequence %d, expected %d",
			ErrOutOfOrderSequence, h.ProducerID, h.ProducerEpoch, h.BaseSequence, nextSeq(e.batches[n-1].lastSeq))
	}
	return dup, false, txnCheck(e, h)
}

// txnCheck refuses a producer's non-transactional batch while it has a
// transaction open on the partition (Kafka's "Expected transactional
// write from producer").
func txnCheck(e *producerEntry, h BatchHeader) error {
	if e.txnFirst >= 0 && !h.IsTransactional() {
		return fmt.Errorf("%w: producer %d has a transaction open at offset %d and sent a non-transactional batch",
			ErrInvalidTxnState, h.ProducerID, e.txnFirst)
	}
	return nil
}

// checkMarker decides a leader's marker m and changes nothing: an epoch
// older than the producer's is ErrInvalidProducerEpoch, a coordinator
// epoch older than the last marker's ErrTransactionCoordinatorFenced.
func (s *producerState) checkMarker(m Marker) error {
	e := s.producers[m.ProducerID]
	switch {
	case e == nil:
		return nil
	case m.ProducerEpoch < e.epoch:
		return fmt.Errorf("%w: marker for producer %d at epoch %d, the partition has seen epoch %d",
			ErrInvalidProducerEpoch, m.ProducerID, m.ProducerEpoch, e.epoch)
	case m.CoordinatorEpoch < e.coordEpoch:
		return fmt.Errorf("%w: marker for producer %d from coordinator epoch %d, the partition has seen %d",
			ErrTransactionCoordinatorFenced, m.ProducerID, m.CoordinatorEpoch, e.coordEpoch)
	}
	return nil
}

// update remembers the batch h, written with its final offsets at nowMs
// by the log's clock. Batches that are not idempotent change nothing.
//
// Expiry counts from nowMs, not from the batch's timestamp: that is the
// producer's clock (CreateTime), which may be skewed or, in tests, 1970,
// and would expire a live producer at once. A rebuild from the log, which
// cannot know when a batch was written, passes the time of the rebuild:
// a producer seen in a scan lives one expiration past it.
func (s *producerState) update(h BatchHeader, nowMs int64) {
	if !idempotent(h) {
		return
	}
	e := s.entry(h.ProducerID, h.ProducerEpoch)
	if h.ProducerEpoch != e.epoch {
		e.epoch = h.ProducerEpoch
		e.batches = e.batches[:0]
	}
	if len(e.batches) == producerWindow {
		e.batches = append(e.batches[:0], e.batches[1:]...)
	}
	e.batches = append(e.batches, producerBatch{firstSeq: h.BaseSequence, lastSeq: h.LastSequence(),
		firstOffset: h.BaseOffset, lastOffset: h.LastOffset()})
	e.lastTs = nowMs
	if h.IsTransactional() && e.txnFirst < 0 {
		e.txnFirst = h.BaseOffset
		s.pushOpen(e)
	}
}

// entry returns pid's entry, created at epoch when absent.
func (s *producerState) entry(pid int64, epoch int16) *producerEntry {
	e := s.producers[pid]
	if e == nil {
		e = newProducerEntry(epoch)
		s.producers[pid] = e
	}
	return e
}

// endTxn applies the marker h (control record c) written at nowMs: the
// producer's open transaction ends; first is its first offset, was says
// whether one was open. A newer epoch replaces the producer's (its
// remembered batches go, as Kafka's maybeUpdateProducerHigherEpoch).
func (s *producerState) endTxn(h BatchHeader, c controlRecord, nowMs int64) (first int64, was bool) {
	e := s.entry(h.ProducerID, h.ProducerEpoch)
	if h.ProducerEpoch > e.epoch {
		e.epoch = h.ProducerEpoch
		e.batches = e.batches[:0]
	}
	e.coordEpoch = c.coordEpoch
	e.lastTs = nowMs
	if e.txnFirst < 0 {
		return -1, false
	}
	first = e.txnFirst
	s.removeOpen(e)
	e.txnFirst = -1
	if len(s.ended) >= maxEnded {
		s.ended = append(s.ended[:0], s.ended[len(s.ended)-maxEnded/2:]...)
	}
	s.ended = append(s.ended, endedTxn{first: first, marker: h.BaseOffset})
	return first, true
}

// lastStable is the last stable offset for high watermark hw (Kafka's
// firstUnstableOffset over ongoing and unreplicated transactions, capped
// by hw): the smallest of hw, the oldest open transaction's first offset
// and the first offset of every transaction whose marker is at or above
// hw. It forgets the ended transactions whose marker is below hw.
func (s *producerState) lastStable(hw int64) int64 {
	lso := hw
	if len(s.open) > 0 {
		lso = min(lso, s.open[0].txnFirst)
	}
	i := 0
	for i < len(s.ended) && s.ended[i].marker < hw {
		i++
	}
	if i > 0 {
		s.ended = append(s.ended[:0], s.ended[i:]...)
	}
	for _, t := range s.ended {
		lso = min(lso, t.first)
	}
	return lso
}

// firstUnstable is the first offset of the oldest open transaction.
func (s *producerState) firstUnstable() (int64, bool) {
	if len(s.open) == 0 {
		return -1, false
	}
	return s.open[0].txnFirst, true
}

// The open-transaction heap (a min-heap by txnFirst, each entry knowing
// its index, so that a transaction's end removes it in O(log n)).

func (s *producerState) pushOpen(e *producerEntry) {
	e.hi = len(s.open)
	s.open = append(s.open, e)
	s.heapUp(e.hi)
}

func (s *producerState) removeOpen(e *producerEntry) {
	i := e.hi
	if i < 0 || i >= len(s.open) || s.open[i] != e {
		panic(fmt.Sprintf("segment: producer state: open transaction at %d not in its heap", e.txnFirst))
	}
	last := len(s.open) - 1
	s.swapOpen(i, last)
	s.open[last] = nil
	s.open = s.open[:last]
	e.hi = -1
	if i < last {
		s.heapDown(i)
		s.heapUp(i)
	}
}

func (s *producerState) swapOpen(i, j int) {
	s.open[i], s.open[j] = s.open[j], s.open[i]
	s.open[i].hi, s.open[j].hi = i, j
}

func (s *producerState) heapUp(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if s.open[p].txnFirst <= s.open[i].txnFirst {
			return
		}
		s.swapOpen(i, p)
		i = p
	}
}

func (s *producerState) heapDown(i int) {
	for {
		m := i
		for _, c := range [2]int{2*i + 1, 2*i + 2} {
			if c < len(s.open) && s.open[c].txnFirst < s.open[m].txnFirst {
				m = c
			}
		}
		if m == i {
			return
		}
		s.swapOpen(i, m)
		i = m
	}
}

// forget drops pid's entry and its open transaction.
func (s *producerState) forget(pid int64, e *producerEntry) {
	if e.txnFirst >= 0 {
		s.removeOpen(e)
	}
	delete(s.producers, pid)
}

// forgetBefore forgets the producers whose last batch ends below off.
func (s *producerState) forgetBefore(off int64) {
	for pid, e := range s.producers {
		if n := len(e.batches); n == 0 || e.batches[n-1].lastOffset < off {
			s.forget(pid, e)
		}
	}
}

// expire forgets the producers whose latest batch was written ttlMs or
// more before nowMs (producer.id.expiration.ms); only pid when pid >= 0. A
// non-positive ttlMs expires nothing; a producer with an open transaction
// never expires.
func (s *producerState) expire(nowMs, ttlMs, pid int64) {
	if ttlMs <= 0 {
		return
	}
	gone := func(e *producerEntry) bool { return e.txnFirst < 0 && nowMs-e.lastTs >= ttlMs }
	if pid >= 0 {
		if e := s.producers[pid]; e != nil && gone(e) {
			delete(s.producers, pid)
			s.lossy = true
		}
		return
	}
	for id, e := range s.producers {
		if gone(e) {
			delete(s.producers, id)
			s.lossy = true
		}
	}
}

// Producer-state snapshot format (see the package doc), big-endian.
const (
	snapMagic      = "SLPS"
	snapVersion    = 3                     // 2 adds the open transaction and coordinator epoch, 3 the ended transactions; 1 and 2 still load
	snapHeaderSize = 4 + 1 + 4 + 8 + 1 + 4 // magic, version, crc, offset, flags, count
	snapFlagLossy  = 1
)

// encode returns the snapshot of s at offset off.
func (s *producerState) encode(off int64) []byte {
	ids := make([]int64, 0, len(s.producers))
	for id := range s.producers {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	be := binary.BigEndian
	b := make([]byte, snapHeaderSize, snapHeaderSize+len(ids)*(31+producerWindow*24))
	copy(b, snapMagic)
	b[4] = snapVersion
	be.PutUint64(b[9:], uint64(off))
	if s.lossy {
		b[17] = snapFlagLossy
	}
	be.PutUint32(b[18:], uint32(len(ids)))
	for _, id := range ids {
		e := s.producers[id]
		b = be.AppendUint64(b, uint64(id))
		b = be.AppendUint16(b, uint16(e.epoch))
		b = be.AppendUint64(b, uint64(e.lastTs))
		b = be.AppendUint64(b, uint64(e.txnFirst))
		b = be.AppendUint32(b, uint32(e.coordEpoch))
		b = append(b, byte(len(e.batches)))
		for _, pb := range e.batches {
			b = be.AppendUint32(b, uint32(pb.firstSeq))
			b = be.AppendUint32(b, uint32(pb.lastSeq))
			b = be.AppendUint64(b, uint64(pb.firstOffset))
			b = be.AppendUint64(b, uint64(pb.lastOffset))
		}
	}
	// v3: the transactions ended by a marker the high watermark may not
	// have passed (ended): a restart keeps them unstable until it does.
	b = be.AppendUint32(b, uint32(len(s.ended)))
	for _, t := range s.ended {
		b = be.AppendUint64(b, uint64(t.first))
		b = be.AppendUint64(b, uint64(t.marker))
	}
	be.PutUint32(b[5:], crc32.Checksum(b[9:], castagnoli))
	return b
}

// decodeProducerState parses a snapshot that must be at offset off. The
// error wraps ErrCorruptSnapshot.
func decodeProducerState(b []byte, off int64) (producerState, error) {
	bad := func(format string, args ...any) (producerState, error) {
		return producerState{}, fmt.Errorf("%w: %s", ErrCorruptSnapshot, fmt.Sprintf(format, args...))
	}
	be := binary.BigEndian
	if len(b) < snapHeaderSize || string(b[:4]) != snapMagic {
		return bad("no snapshot header")
	}
	v := b[4]
	if v < 1 || v > snapVersion {
		return bad("version %d", v)
	}
	fixed := 19 // id, epoch, latest write, n
	if v >= 2 {
		fixed += 12 // open transaction's first offset, coordinator epoch
	}
	if got, want := crc32.Checksum(b[9:], castagnoli), be.Uint32(b[5:]); got != want {
		return bad("CRC-32C %08x, header says %08x", got, want)
	}
	if at := int64(be.Uint64(b[9:])); at != off {
		return bad("offset %d in a file named for %d", at, off)
	}
	s := newProducerState(b[17]&snapFlagLossy != 0)
	n := int(be.Uint32(b[18:]))
	p := snapHeaderSize
	for range n {
		if len(b)-p < fixed {
			return bad("truncated producer entry")
		}
		id := int64(be.Uint64(b[p:]))
		if s.producers[id] != nil {
			return bad("producer %d twice", id)
		}
		e := newProducerEntry(int16(be.Uint16(b[p+8:])))
		e.lastTs = int64(be.Uint64(b[p+10:]))
		if v >= 2 {
			e.txnFirst, e.coordEpoch = int64(be.Uint64(b[p+18:])), int32(be.Uint32(b[p+26:]))
			if e.txnFirst < -1 || e.txnFirst >= off {
				return bad("producer %d: open transaction at %d", id, e.txnFirst)
			}
		}
		k := int(b[p+fixed-1])
		p += fixed
		if k > producerWindow || len(b)-p < k*24 {
			return bad("producer %d: %d batches", id, k)
		}
		for range k {
			e.batches = append(e.batches, producerBatch{firstSeq: int32(be.Uint32(b[p:])), lastSeq: int32(be.Uint32(b[p+4:])),
				firstOffset: int64(be.Uint64(b[p+8:])), lastOffset: int64(be.Uint64(b[p+16:]))})
			p += 24
		}
		s.producers[id] = e
		if e.txnFirst >= 0 {
			s.pushOpen(e)
		}
	}
	if v >= 3 {
		if len(b)-p < 4 {
			return bad("no ended transactions")
		}
		k := int(be.Uint32(b[p:]))
		p += 4
		if k > maxEnded || len(b)-p < k*16 {
			return bad("%d ended transactions", k)
		}
		for range k {
			t := endedTxn{first: int64(be.Uint64(b[p:])), marker: int64(be.Uint64(b[p+8:]))}
			p += 16
			if t.first < 0 || t.marker < t.first || t.marker >= off ||
				len(s.ended) > 0 && t.marker <= s.ended[len(s.ended)-1].marker {
				return bad("ended transaction %d..%d", t.first, t.marker)
			}
			s.ended = append(s.ended, t)
		}
	}
	if p != len(b) {
		return bad("%d bytes after the last entry", len(b)-p)
	}
	return s, nil
}
