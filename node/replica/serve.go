package replica

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/node/kafka"
	"github.com/sluice-log/sluice/partition"
	"github.com/sluice-log/sluice/segment"
)

// defaultProduceTimeout bounds an acks=all wait when the request gave none.
const defaultProduceTimeout = 30 * time.Second

// canProduce says why this replica cannot take a produce now (nil: it can).
func (r *Replica) canProduce(acks int16) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.canProduceLocked(acks)
}

func (r *Replica) canProduceLocked(acks int16) error {
	if r.mu.dead {
		return kerr.NotLeaderForPartition
	}
	return r.mu.part.CheckProduce(acks)
}

// Produce appends records as leader; see kafka.Logs.Produce. The
// acknowledgement, when still due, comes on the result's Pending.
func (r *Replica) Produce(ctx context.Context, p kafka.ProducePartition) kafka.ProduceResult {
	res := kafka.ProduceResult{BaseOffset: -1, LogStartOffset: -1}
	// Leadership and min.insync.replicas are answered before the records
	// are looked at, as Kafka does; then the records are checked
	// (decompressed and walked: segment/validate.go) outside the lock,
	// because that is the costly part of an append and the partition's
	// other producers, fetchers and acks need not wait for it; then the
	// state is checked again under the lock, for the append.
	if err := r.canProduce(p.Acks); err != nil {
		res.Err = err
		return res
	}
	checked, err := r.log.Check(p.Records)
	if err != nil {
		res.Err, res.ErrMessage = kafkaError(err), err.Error()
		return res
	}
	// A transactional batch that would open a transaction here is first
	// verified with its coordinator (KIP-890 part 1, txn.go). Only the
	// first batch's header is read: a producer's batch comes alone.
	var guard uint64
	var first segment.BatchHeader
	if p.TransactionalID != "" {
		it := segment.NewBatchIter(p.Records)
		first, _, _ = it.Next()
		if guard, err = r.verify(ctx, p, first); err != nil {
			res.Err = err
			return res
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.checkGuard(first.ProducerID, guard); err != nil {
		res.Err = err
		return res
	}
	if err := r.canProduceLocked(p.Acks); err != nil {
		res.Err = err
		return res
	}
	// The log decides idempotent producers' batches (segment.Log.Append):
	// a duplicate writes nothing and answers the original's offsets.
	info, err := r.log.AppendChecked(checked, r.mu.part.LeaderEpoch())
	if err != nil {
		r.m.host.DiskError(err)
		res.Err, res.ErrMessage = kafkaError(err), err.Error()
		return res
	}
	if info.Duplicate {
		// With acks=all it answers once the original is committed, as
		// Kafka does.
		res.BaseOffset, res.LogStartOffset = info.FirstOffset, r.log.LogStartOffset()
		if p.Acks == partition.AcksAll && r.hw.Load() <= info.LastOffset {
			ch := make(chan error, 1)
			r.mu.hwWaits = append(r.mu.hwWaits, hwWait{last: info.LastOffset, ch: ch})
			res.Pending = ch
		}
		return res
	}
	res.BaseOffset, res.LogStartOffset = info.FirstOffset, r.log.LogStartOffset()
	res.Records = info.Records
	r.mu.nextID++
	id := r.mu.nextID
	var ch chan error
	if p.Acks != partition.AcksNone {
		ch = make(chan error, 1)
		r.mu.waiters[id] = ch
	}
	if err := r.step(partition.LocalAppend{ReqID: id, LastOffset: info.LastOffset, Acks: p.Acks, Deadline: r.deadline(ctx)}); err != nil {
		delete(r.mu.waiters, id)
		r.logErr("append", err)
		res.Err, res.BaseOffset = kerr.KafkaStorageError, -1
		return res
	}
	r.process()
	if ch != nil {
		res.Pending = ch
	}
	return res
}

// deadline is the tick at which a produce waiting under ctx times out.
// r.mu must be held.
func (r *Replica) deadline(ctx context.Context) int64 {
	d := defaultProduceTimeout
	if dl, ok := ctx.Deadline(); ok {
		d = time.Until(dl)
	}
	return r.m.now() + int64(d/TickInterval) + 1
}

// Fetch reads for a consumer (committed batches) or a follower (the
// leader's log, after the state machine accepted its fetch); see
// kafka.Logs.Fetch.
func (r *Replica) Fetch(p kafka.FetchPartition) kafka.FetchResult {
	if p.ReplicaID >= 0 {
		return r.replicaFetch(p)
	}
	res := kafka.FetchResult{HighWatermark: -1, LogStartOffset: -1}
	check := r.checkEpoch
	if p.AnyReplica {
		check = r.checkReadEpoch // a follower serves it too (KIP-392)
	}
	if err := check(p.CurrentLeaderEpoch); err != nil {
		res.Err = err
		return res
	}
	hw := r.hw.Load()
	start, _, lso := r.log.Bounds(hw)
	upTo := hw
	if p.ReadCommitted {
		upTo = lso
	}
	if p.Offset == upTo && p.Offset >= start {
		// Caught up: nothing to read (see replicaFetch).
		res.HighWatermark, res.LastStableOffset, res.LogStartOffset = hw, lso, start
		return res
	}
	if !p.ReadCommitted {
		res, _ = r.read(res, p.Offset, p.MaxBytes, hw, hw, lso)
		return res
	}
	res, next := r.read(res, p.Offset, p.MaxBytes, lso, hw, lso)
	if res.Err == nil && next > p.Offset {
		res.Aborted = r.aborted(p.Offset, next)
	}
	return res
}

// Redirect answers a consumer's fetch, as leader, by sending it to the
// preferred read replica to (KIP-392): no records, this leader's offsets.
// It answers the fetch's epoch error instead when there is one.
func (r *Replica) Redirect(p kafka.FetchPartition, to int32) kafka.FetchResult {
	res := kafka.FetchResult{HighWatermark: -1, LogStartOffset: -1}
	if err := r.checkEpoch(p.CurrentLeaderEpoch); err != nil {
		res.Err = err
		return res
	}
	hw := r.hw.Load()
	res.HighWatermark, res.LastStableOffset, res.LogStartOffset = hw, r.LastStable(hw), r.log.LogStartOffset()
	res.Redirect, res.PreferredReadReplica = true, to
	return res
}

// aborted lists the aborted transactions whose data overlaps [from, upTo)
// for a read_committed answer.
func (r *Replica) aborted(from, upTo int64) []kafka.AbortedTxn {
	txns := r.log.AbortedTxns(from, upTo, nil)
	if len(txns) == 0 {
		return nil
	}
	out := make([]kafka.AbortedTxn, len(txns))
	for i, t := range txns {
		out[i] = kafka.AbortedTxn{ProducerID: t.ProducerID, FirstOffset: t.FirstOffset}
	}
	return out
}

// spanMinBytes is the smallest read answered from the segment file (sent
// with sendfile by the connection) rather than copied: below it the copy
// is cheaper than the extra system calls.
const spanMinBytes = 16 << 10

// read answers a fetch with the whole batches from offset below upTo, at
// most maxBytes but at least one: left in the segment file when they are
// many bytes, copied otherwise. It also returns the offset after the last
// batch read (offset when none).
func (r *Replica) read(res kafka.FetchResult, offset int64, maxBytes int, upTo, hw, lso int64) (kafka.FetchResult, int64) {
	s, err := r.log.ReadSpan(offset, maxBytes, upTo)
	if err != nil {
		// Below the log start (retention): the follower or consumer
		// starts over at the log start this answer carries.
		res.Err, res.LogStartOffset = kafkaError(err), s.LogStart
		if errors.Is(err, segment.ErrCorruptBatch) {
			r.m.scrubSoon(r) // never handed out; the scrub finds where and repairs
		}
		return res, offset
	}
	res.HighWatermark, res.LastStableOffset, res.LogStartOffset = hw, lso, s.LogStart
	next := s.Next
	switch {
	case s.Size == 0:
		next = offset
	case s.Size >= spanMinBytes:
		res.File = s
	default:
		res.Records, err = s.AppendTo(make([]byte, 0, s.Size))
		s.Release()
		if err != nil {
			res.Err, res.Records = kafkaError(err), nil
		}
	}
	return res, next
}

// replicaFetch serves a follower's Fetch: the state machine decides (epoch
// fencing, whether the fetch may count — an assigned replica fetching with
// its registered broker epoch, so a Fetch below v15 (epoch -1) never does
// —, divergence, what the follower acknowledges, ISR expansion), the log
// is read outside the lock up to its end.
func (r *Replica) replicaFetch(p kafka.FetchPartition) kafka.FetchResult {
	res := kafka.FetchResult{HighWatermark: -1, LogStartOffset: -1}
	r.mu.Lock()
	if r.mu.dead {
		r.mu.Unlock()
		res.Err = kerr.NotLeaderForPartition
		return res
	}
	r.mu.nextID++
	id := r.mu.nextID
	_ = r.step(partition.FollowerFetch{
		ReqID: id, Replica: p.ReplicaID, BrokerEpoch: p.BrokerEpoch, FetchOffset: p.Offset,
		LastFetchedEpoch: p.LastFetchedEpoch, CurrentLeaderEpoch: p.CurrentLeaderEpoch,
	})
	r.process()
	a, ok := r.mu.answers[id]
	delete(r.mu.answers, id)
	r.mu.Unlock()
	switch {
	case !ok:
		res.Err = kerr.NotLeaderForPartition
		return res
	case a.Err != nil:
		res.Err, res.HighWatermark = a.Err, a.HW
		if a.Err == kerr.OffsetOutOfRange {
			res.LogStartOffset = r.log.LogStartOffset()
		}
		return res
	case a.Diverging != nil:
		res.HighWatermark, res.LastStableOffset, res.LogStartOffset = a.HW, r.LastStable(a.HW), r.log.LogStartOffset()
		res.Diverging = &kafka.EpochEnd{Epoch: a.Diverging.Epoch, EndOffset: a.Diverging.EndOffset}
		return res
	}
	maxBytes := p.MaxBytes
	throttled := r.leaderThrottled(p.ReplicaID)
	if throttled {
		// leader.replication.throttled.rate (throttle.go): past the
		// quota, no records for this follower now.
		avail, _ := r.m.leaderQuota.available(time.Now())
		if avail <= 0 {
			res.HighWatermark, res.LastStableOffset, res.LogStartOffset = a.HW, r.LastStable(a.HW), r.log.LogStartOffset()
			return res
		}
		maxBytes = min(maxBytes, avail)
	}
	// A follower at the log end (every idle partition of its session,
	// each poll) is answered from the log's bounds: one lock, no
	// segment read, no allocation (TestIdleFetchAllocatesNothing).
	start, leo, lso := r.log.Bounds(a.HW)
	if a.ReadFrom == leo {
		res.HighWatermark, res.LastStableOffset, res.LogStartOffset = a.HW, lso, start
		return res
	}
	res, _ = r.read(res, a.ReadFrom, maxBytes, math.MaxInt64, a.HW, lso)
	if throttled {
		n := len(res.Records)
		if res.File != nil {
			n = res.File.Len()
		}
		r.m.leaderQuota.record(n, time.Now())
	}
	return res
}

// fetchWanted says the state machine still waits for the answer to its
// fetch seq: else the fetcher drops that fetch from its session.
func (r *Replica) fetchWanted(seq uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.mu.dead && r.mu.part.ExpectsFetch(seq)
}

// fetched handles this follower's fetch response for req: append the
// records (only if the state machine still waits for this fetch), then
// step the response. When that started an fsync (sync durability: the next
// fetch waits for it), it returns a channel closed when the fsync is done,
// so the fetcher can send the next request with this partition in it.
func (r *Replica) fetched(req partition.FetchRequest, rp *kmsg.FetchResponseTopicPartition, fetchErr error) (flushing <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.dead || !r.mu.part.ExpectsFetch(req.Seq) {
		return nil
	}
	defer func() {
		if r.mu.flushing {
			flushing = r.mu.flushDone
		}
	}()
	m := partition.FetchResponse{Seq: req.Seq, HW: -1, LogStartOffset: -1}
	switch {
	case fetchErr != nil:
		m.Err = fetchErr
	case rp.ErrorCode != 0:
		m.Err = kerr.ErrorForCode(rp.ErrorCode)
		m.HW, m.LogStartOffset = rp.HighWatermark, rp.LogStartOffset
	case rp.DivergingEpoch.Epoch >= 0 || rp.DivergingEpoch.EndOffset >= 0:
		m.Diverging = &partition.EpochEndOffset{Epoch: rp.DivergingEpoch.Epoch, EndOffset: rp.DivergingEpoch.EndOffset}
		m.HW, m.LogStartOffset = rp.HighWatermark, rp.LogStartOffset
	default:
		m.HW, m.LogStartOffset = rp.HighWatermark, rp.LogStartOffset
		if len(rp.RecordBatches) > 0 {
			if _, err := r.log.AppendReplicated(rp.RecordBatches); err != nil {
				r.logErr("replicated append", err)
				m.Err = kerr.KafkaStorageError
			}
		}
	}
	m.LEO = r.log.LogEndOffset()
	if err := r.step(m); err != nil {
		r.logErr("fetch response", err)
	}
	r.process()
	return nil // the deferred check fills in the flush in progress
}

// ListOffset answers ListOffsets; see kafka.Logs.ListOffset.
func (r *Replica) ListOffset(p kafka.ListOffsetPartition) kafka.ListOffsetResult {
	res := kafka.ListOffsetResult{Offset: -1, Timestamp: -1, LeaderEpoch: -1}
	r.mu.Lock()
	err := r.mu.part.CheckLeaderEpoch(p.CurrentLeaderEpoch)
	epoch := r.mu.part.LeaderEpoch()
	r.mu.Unlock()
	if err != nil {
		res.Err = err
		return res
	}
	hw := r.hw.Load()
	if p.ReadCommitted {
		hw = r.LastStable(hw) // what read_committed consumers may read
	}
	switch p.Timestamp {
	case -2:
		res.Offset, res.LeaderEpoch = r.log.LogStartOffset(), epoch
	case -1:
		res.Offset, res.LeaderEpoch = hw, epoch
	case -3:
		// KIP-734: the record with the largest timestamp below the HW.
		off, ts, ok, err := r.log.MaxTimestamp(hw)
		switch {
		case err != nil:
			res.Err = kafkaError(err)
		case ok:
			res.Offset, res.Timestamp, res.LeaderEpoch = off, ts, r.log.EpochForOffset(off)
		}
	default:
		if p.Timestamp < 0 {
			res.Err = kerr.InvalidRequest
			return res
		}
		off, ts, ok, err := r.log.OffsetForTimestamp(p.Timestamp)
		switch {
		case err != nil:
			res.Err = kafkaError(err)
		case ok && off < hw:
			res.Offset, res.Timestamp, res.LeaderEpoch = off, ts, r.log.EpochForOffset(off)
		}
	}
	return res
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch from the state machine,
// which counts the current epoch from where this replica became leader.
func (r *Replica) EndOffsetForEpoch(p kafka.EpochPartition) kafka.EpochResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.mu.part.CheckLeaderEpoch(p.CurrentLeaderEpoch); err != nil {
		return kafka.EpochResult{Err: err, LeaderEpoch: -1, EndOffset: -1}
	}
	e, off := r.mu.part.EndOffsetForEpoch(p.LeaderEpoch)
	return kafka.EpochResult{LeaderEpoch: e, EndOffset: off}
}
