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
}

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
	return dup, false, nil
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
	e := s.producers[h.ProducerID]
	if e == nil {
		e = &producerEntry{epoch: h.ProducerEpoch}
		s.producers[h.ProducerID] = e
	}
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
}

// forgetBefore forgets the producers whose last batch ends below off.
func (s *producerState) forgetBefore(off int64) {
	for pid, e := range s.producers {
		if n := len(e.batches); n == 0 || e.batches[n-1].lastOffset < off {
			delete(s.producers, pid)
		}
	}
}

// expire forgets the producers whose latest batch was written ttlMs or
// more before nowMs (producer.id.expiration.ms); only pid when pid >= 0. A
// non-positive ttlMs expires nothing.
func (s *producerState) expire(nowMs, ttlMs, pid int64) {
	if ttlMs <= 0 {
		return
	}
	gone := func(e *producerEntry) bool { return nowMs-e.lastTs >= ttlMs }
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
	snapVersion    = 1
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
	b := make([]byte, snapHeaderSize, snapHeaderSize+len(ids)*(19+producerWindow*24))
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
		b = append(b, byte(len(e.batches)))
		for _, pb := range e.batches {
			b = be.AppendUint32(b, uint32(pb.firstSeq))
			b = be.AppendUint32(b, uint32(pb.lastSeq))
			b = be.AppendUint64(b, uint64(pb.firstOffset))
			b = be.AppendUint64(b, uint64(pb.lastOffset))
		}
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
	if b[4] != snapVersion {
		return bad("version %d", b[4])
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
		if len(b)-p < 19 {
			return bad("truncated producer entry")
		}
		id := int64(be.Uint64(b[p:]))
		e := &producerEntry{epoch: int16(be.Uint16(b[p+8:])), lastTs: int64(be.Uint64(b[p+10:]))}
		k := int(b[p+18])
		p += 19
		if k > producerWindow || len(b)-p < k*24 {
			return bad("producer %d: %d batches", id, k)
		}
		for range k {
			e.batches = append(e.batches, producerBatch{firstSeq: int32(be.Uint32(b[p:])), lastSeq: int32(be.Uint32(b[p+4:])),
				firstOffset: int64(be.Uint64(b[p+8:])), lastOffset: int64(be.Uint64(b[p+16:]))})
			p += 24
		}
		s.producers[id] = e
	}
	if p != len(b) {
		return bad("%d bytes after the last entry", len(b)-p)
	}
	return s, nil
}
