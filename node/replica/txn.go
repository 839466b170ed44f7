package replica

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-log/sluice/node/kafka"
	"github.com/sluice-log/sluice/partition"
	"github.com/sluice-log/sluice/segment"
)

// Transactions on a replica (issue 18). The log keeps the transactional
// state (segment/txn.go: open transactions, markers, the aborted index);
// the replica adds what needs the replication state or the network: the
// last stable offset (the high watermark is the replica's), markers
// written as leader with acks=all, and KIP-890 part 1's verification
// guard.
//
// The verification guard (Kafka's VerificationGuard): a transactional
// batch that would open a transaction on the partition is verified with
// the transaction coordinator before it is appended, without the lock (a
// network round trip). Before asking, the replica records a fresh guard
// for the producer; a marker written for the producer meanwhile removes
// it. After the answer, the append goes ahead only if the guard is still
// the one recorded (or the producer's transaction is by now open):
// otherwise the transaction the coordinator vouched for may have ended
// while the batch was in flight, and appending it would open one that no
// coordinator will end (a hanging transaction): INVALID_TXN_STATE.
//
// Transaction version 2 (Produce v12+, ProducePartition.AddToTxn): the
// coordinator adds the partition instead of verifying it, and the epoch,
// bumped at every transaction's end and carried by its markers, fences a
// batch that arrives after its transaction ended: no guard. An open
// transaction of the producer at an older epoch is the previous one,
// whose marker is not written here yet: the batch asks the coordinator,
// which answers once that marker is written.

// verify runs KIP-890 part 1 for a transactional batch of producer h
// that would open a transaction: a guard, the coordinator's answer, the
// guard checked. It returns the guard to check under the lock, or the
// error for the produce. r.mu must not be held.
func (r *Replica) verify(ctx context.Context, p kafka.ProducePartition, h segment.BatchHeader) (uint64, error) {
	v := r.m.txnVerifier
	if v == nil || p.TransactionalID == "" || !h.IsTransactional() {
		return 0, nil
	}
	r.mu.Lock()
	if _, epoch, ok := r.log.OngoingTxn(h.ProducerID); ok && epoch == h.ProducerEpoch {
		r.mu.Unlock()
		return 0, nil // already open: the log checks the rest
	}
	if p.AddToTxn {
		// KIP-890 part 2: the coordinator adds the partition, holding
		// the add until the previous transaction's markers (at the
		// bumped epoch) are written everywhere, this partition
		// included. No guard: should the transaction end before the
		// batch is appended, its marker carries a newer epoch than the
		// batch's and the log refuses the batch (INVALID_PRODUCER_EPOCH).
		r.mu.Unlock()
		return 0, kafka.VerifyError(v.VerifyTxn(ctx, p.TransactionalID, h.ProducerID, h.ProducerEpoch, p.Topic, p.Partition, true))
	}
	if r.mu.verifying == nil {
		r.mu.verifying = map[int64]uint64{}
	}
	r.mu.nextID++
	guard := r.mu.nextID
	r.mu.verifying[h.ProducerID] = guard
	r.mu.Unlock()
	if err := kafka.VerifyError(v.VerifyTxn(ctx, p.TransactionalID, h.ProducerID, h.ProducerEpoch, p.Topic, p.Partition, false)); err != nil {
		r.mu.Lock()
		if r.mu.verifying[h.ProducerID] == guard {
			delete(r.mu.verifying, h.ProducerID)
		}
		r.mu.Unlock()
		return 0, err
	}
	return guard, nil
}

// checkGuard is verify's second half, under the lock before the append:
// the guard must still be the producer's, unless its transaction opened
// meanwhile (another of its batches). It consumes the guard. r.mu must be
// held.
func (r *Replica) checkGuard(producerID int64, guard uint64) error {
	if guard == 0 {
		return nil
	}
	ok := r.mu.verifying[producerID] == guard
	if ok {
		delete(r.mu.verifying, producerID)
	}
	if _, _, open := r.log.OngoingTxn(producerID); !ok && !open {
		return kerr.InvalidTxnState
	}
	return nil
}

// WriteMarker appends a transaction marker as leader, with acks=all; see
// kafka.TxnMarkers. The marker ends the producer's open transaction
// here (the log checks the producer and coordinator epochs) and clears
// its verification guard. The acknowledgement comes on the result's
// Pending once the high watermark passed the marker.
func (r *Replica) WriteMarker(ctx context.Context, m kafka.TxnMarker) kafka.ProduceResult {
	res := kafka.ProduceResult{BaseOffset: -1, LogStartOffset: -1}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.canProduceLocked(partition.AcksAll); err != nil {
		res.Err = err
		return res
	}
	off, err := r.log.AppendMarker(segment.Marker{ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch, Commit: m.Commit,
		CoordinatorEpoch: m.CoordinatorEpoch, Timestamp: time.Now().UnixMilli()}, r.mu.part.LeaderEpoch())
	if err != nil {
		r.m.host.DiskError(err)
		res.Err, res.ErrMessage = kafkaError(err), err.Error()
		return res
	}
	delete(r.mu.verifying, m.ProducerID)
	res.BaseOffset, res.LogStartOffset = off, r.log.LogStartOffset()
	r.mu.nextID++
	id := r.mu.nextID
	ch := make(chan error, 1)
	r.mu.waiters[id] = ch
	if err := r.step(partition.LocalAppend{ReqID: id, LastOffset: off, Acks: partition.AcksAll, Deadline: r.deadline(ctx)}); err != nil {
		delete(r.mu.waiters, id)
		r.logErr("append", err)
		res.Err, res.BaseOffset = kerr.KafkaStorageError, -1
		return res
	}
	r.process()
	res.Pending = ch
	return res
}

// LastStable is the last stable offset for a high watermark hw: hw, or
// the first offset of the oldest transaction open or ended by a marker
// not yet below hw, when that is lower (segment.Log.LastStableOffset).
func (r *Replica) LastStable(hw int64) int64 {
	return r.log.LastStableOffset(hw)
}

// DescribeProducers answers DescribeProducers as leader; see
// kafka.ProducerStates.
func (r *Replica) DescribeProducers() ([]kafka.ProducerState, error) {
	if err := r.canProduce(partition.AcksLeader); err != nil {
		return nil, kerr.NotLeaderForPartition
	}
	infos := r.log.Producers(nil)
	out := make([]kafka.ProducerState, len(infos))
	for i, p := range infos {
		out[i] = kafka.ProducerState{ProducerID: p.ProducerID, ProducerEpoch: p.Epoch, LastSequence: p.LastSequence,
			LastTimestamp: p.LastTimestamp, CoordinatorEpoch: p.CoordinatorEpoch, CurrentTxnStartOffset: p.CurrentTxnStartOffset}
	}
	return out, nil
}

// OpenTxnSince is when the oldest open transaction on the partition
// began, by its first batch's timestamp (the producer's clock), and its
// first offset; ok is false when none is open (or its batch cannot be
// read). One batch header is read: for metrics, at scrape time.
func (r *Replica) OpenTxnSince() (since time.Time, first int64, ok bool) {
	first, ok = r.log.FirstUnstableOffset()
	if !ok {
		return time.Time{}, -1, false
	}
	c, err := r.log.Read(first, 1, first+1, nil)
	if err != nil || c.Size == 0 {
		return time.Time{}, first, false
	}
	it := segment.NewBatchIter(c.Data)
	h, _, hok := it.Next()
	if !hok {
		return time.Time{}, first, false
	}
	return time.UnixMilli(h.BaseTimestamp), first, true
}
