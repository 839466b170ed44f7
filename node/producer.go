package node

import (
	"encoding/binary"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
)

// producerWindow is how many recent batches per producer are remembered for
// duplicate detection (Kafka's 5, the most in-flight requests an idempotent
// producer may have).
const producerWindow = 5

// batchHead is the part of a RecordBatch v2 header that idempotence needs.
type batchHead struct {
	size            int
	baseOffset      int64
	lastOffsetDelta int32
	producerID      int64
	producerEpoch   int16
	baseSequence    int32
}

// parseBatches reads the headers of the batches in records. The segment log
// validates the bytes; this only needs the framing, and returns false when
// even that is broken (the append then fails with the real reason).
func parseBatches(records []byte) ([]batchHead, bool) {
	var out []batchHead
	be := binary.BigEndian
	for p := 0; p < len(records); {
		if len(records)-p < 61 {
			return nil, false
		}
		b := records[p:]
		n := int(int32(be.Uint32(b[8:]))) + 12
		if n < 61 || n > len(b) {
			return nil, false
		}
		out = append(out, batchHead{
			size:            n,
			baseOffset:      int64(be.Uint64(b[0:])),
			lastOffsetDelta: int32(be.Uint32(b[23:])),
			producerID:      int64(be.Uint64(b[43:])),
			producerEpoch:   int16(be.Uint16(b[51:])),
			baseSequence:    int32(be.Uint32(b[53:])),
		})
		p += n
	}
	return out, len(out) > 0
}

// seqBatch is one remembered batch of a producer.
type seqBatch struct {
	firstSeq, lastSeq int32
	firstOffset       int64
}

// producerState is what a partition leader remembers of one producer id.
type producerState struct {
	epoch  int16
	recent []seqBatch // oldest first, at most producerWindow
}

// nextSeq is the sequence after s (sequences wrap at MaxInt32 to 0).
func nextSeq(s int32) int32 {
	if s == math.MaxInt32 {
		return 0
	}
	return s + 1
}

func lastSeq(h batchHead) int32 {
	return int32((int64(h.baseSequence) + int64(h.lastOffsetDelta)) % (math.MaxInt32 + 1))
}

// check decides what to do with batch h of a producer whose state is st
// (nil if unknown): dup is the original first offset of a duplicate, err a
// Kafka error. It changes nothing.
func (st *producerState) check(h batchHead) (dup int64, isDup bool, err error) {
	if st == nil {
		return 0, false, nil
	}
	switch {
	case h.producerEpoch < st.epoch:
		return 0, false, kerr.InvalidProducerEpoch
	case h.producerEpoch > st.epoch:
		if h.baseSequence != 0 {
			return 0, false, kerr.OutOfOrderSequenceNumber
		}
		return 0, false, nil
	}
	for _, b := range st.recent {
		if b.firstSeq == h.baseSequence && b.lastSeq == lastSeq(h) {
			return b.firstOffset, true, nil
		}
	}
	if len(st.recent) > 0 && h.baseSequence != nextSeq(st.recent[len(st.recent)-1].lastSeq) {
		return 0, false, kerr.OutOfOrderSequenceNumber
	}
	return 0, false, nil
}

// record remembers that batch h was written at firstOffset.
func (st *producerState) record(h batchHead, firstOffset int64) {
	if h.producerEpoch != st.epoch {
		st.epoch = h.producerEpoch
		st.recent = st.recent[:0]
	}
	if len(st.recent) == producerWindow {
		st.recent = append(st.recent[:0], st.recent[1:]...)
	}
	st.recent = append(st.recent, seqBatch{firstSeq: h.baseSequence, lastSeq: lastSeq(h), firstOffset: firstOffset})
}

// trimFrom forgets the batches at or past end (a truncated log tail) and
// reports whether any remain.
func (st *producerState) trimFrom(end int64) bool {
	kept := st.recent[:0]
	for _, b := range st.recent {
		if b.firstOffset < end {
			kept = append(kept, b)
		}
	}
	st.recent = kept
	return len(kept) > 0
}
