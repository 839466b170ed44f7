package node

import (
	"errors"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-log/sluice/node/kafka"
	"github.com/sluice-log/sluice/quorum"
	"github.com/sluice-log/sluice/segment"
)

// replica is this node's copy of one partition: it owns the partition's
// *segment.Log and answers produce, fetch and offset requests for it. Today
// it only leads (replication is issue 5), so its high watermark is its log
// end offset. Methods are safe for concurrent use.
type replica struct {
	topic     string
	topicID   quorum.UUID
	partition int32
	log       *segment.Log

	mu          sync.Mutex // serialises appends with the producer checks
	leader      bool
	leaderEpoch int32
	isr         int
	minISR      int32
	producers   map[int64]*producerState
}

func newReplica(topic string, id quorum.UUID, partition int32, log *segment.Log) *replica {
	return &replica{topic: topic, topicID: id, partition: partition, log: log, producers: map[int64]*producerState{}}
}

// become applies the partition's state from the metadata image.
func (r *replica) become(p *quorum.Partition, self, minISR int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.leader = p.Leader == self
	r.leaderEpoch = p.LeaderEpoch
	r.isr = len(p.ISR)
	r.minISR = minISR
}

// epoch is the current leader epoch.
func (r *replica) epoch() int32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.leaderEpoch
}

// highWatermark is the log end offset: with replication factor 1 every
// appended record is in the whole ISR.
func (r *replica) highWatermark() int64 { return r.log.LogEndOffset() }

// checkEpoch applies KIP-320 to the epoch a client sent (-1: none).
func (r *replica) checkEpoch(current int32) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.leader {
		return kerr.NotLeaderForPartition
	}
	switch {
	case current < 0:
		return nil
	case current < r.leaderEpoch:
		return kerr.FencedLeaderEpoch
	case current > r.leaderEpoch:
		return kerr.UnknownLeaderEpoch
	}
	return nil
}

// produce appends records as leader; see kafka.Logs.Produce.
func (r *replica) produce(p kafka.ProducePartition) kafka.ProduceResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := kafka.ProduceResult{BaseOffset: -1, LogStartOffset: -1}
	if !r.leader {
		res.Err = kerr.NotLeaderForPartition
		return res
	}
	if p.Acks == -1 && int32(r.isr) < r.minISR {
		res.Err = kerr.NotEnoughReplicas
		return res
	}
	if p.Acks == -1 && r.isr > 1 {
		// Followers do not replicate yet (issue 5): acknowledging acks=all
		// with other ISR members would claim copies that do not exist.
		res.Err, res.ErrMessage = kerr.NotEnoughReplicas, "replication to followers is not implemented yet; acks=all is served for replication factor 1 only"
		return res
	}
	heads, ok := parseBatches(p.Records)
	var st *producerState
	var idem *batchHead
	if ok && heads[0].producerID >= 0 {
		if len(heads) > 1 {
			// Clients send one batch per partition; refusing the rest
			// keeps the duplicate check exact.
			res.Err, res.ErrMessage = kerr.InvalidRecord, "an idempotent produce carries one batch per partition"
			return res
		}
		idem = &heads[0]
		st = r.producers[idem.producerID]
		dup, isDup, err := st.check(*idem)
		if err != nil {
			res.Err = err
			return res
		}
		if isDup {
			res.BaseOffset, res.LogStartOffset = dup, r.log.LogStartOffset()
			return res
		}
	}
	info, err := r.log.Append(p.Records, r.leaderEpoch)
	if err != nil {
		res.Err, res.ErrMessage = appendError(err), err.Error()
		return res
	}
	if idem != nil {
		if st == nil {
			st = &producerState{epoch: idem.producerEpoch}
			r.producers[idem.producerID] = st
		}
		st.record(*idem, info.FirstOffset)
	}
	res.BaseOffset, res.LogStartOffset = info.FirstOffset, r.log.LogStartOffset()
	return res
}

// fetch reads committed batches; see kafka.Logs.Fetch.
func (r *replica) fetch(p kafka.FetchPartition) kafka.FetchResult {
	res := kafka.FetchResult{HighWatermark: -1, LogStartOffset: -1}
	if err := r.checkEpoch(p.CurrentLeaderEpoch); err != nil {
		res.Err = err
		return res
	}
	hw := r.highWatermark()
	c, err := r.log.Read(p.Offset, p.MaxBytes, hw, nil)
	if err != nil {
		res.Err = readError(err)
		return res
	}
	res.HighWatermark, res.LogStartOffset, res.Records = hw, c.LogStart, c.Data
	return res
}

// listOffset answers ListOffsets; see kafka.Logs.ListOffset.
func (r *replica) listOffset(p kafka.ListOffsetPartition) kafka.ListOffsetResult {
	res := kafka.ListOffsetResult{Offset: -1, Timestamp: -1, LeaderEpoch: -1}
	if err := r.checkEpoch(p.CurrentLeaderEpoch); err != nil {
		res.Err = err
		return res
	}
	r.mu.Lock()
	epoch := r.leaderEpoch
	r.mu.Unlock()
	switch p.Timestamp {
	case -2:
		res.Offset, res.LeaderEpoch = r.log.LogStartOffset(), epoch
	case -1:
		res.Offset, res.LeaderEpoch = r.highWatermark(), epoch
	case -3:
		// The offset of the largest timestamp needs a max-timestamp
		// lookup the segment index does not offer yet.
		res.Err = kerr.UnsupportedVersion
	default:
		if p.Timestamp < 0 {
			res.Err = kerr.InvalidRequest
			return res
		}
		off, ts, ok, err := r.log.OffsetForTimestamp(p.Timestamp)
		switch {
		case err != nil:
			res.Err = readError(err)
		case ok && off < r.highWatermark():
			res.Offset, res.Timestamp, res.LeaderEpoch = off, ts, epoch
		}
	}
	return res
}

// endOffsetForEpoch answers OffsetForLeaderEpoch.
func (r *replica) endOffsetForEpoch(p kafka.EpochPartition) kafka.EpochResult {
	if err := r.checkEpoch(p.CurrentLeaderEpoch); err != nil {
		return kafka.EpochResult{Err: err, LeaderEpoch: -1, EndOffset: -1}
	}
	e, off := r.log.EndOffsetForEpoch(p.LeaderEpoch)
	return kafka.EpochResult{LeaderEpoch: e, EndOffset: off}
}

// appendError maps a segment append error to its Kafka error.
func appendError(err error) error {
	switch {
	case errors.Is(err, segment.ErrCorruptBatch):
		return kerr.CorruptMessage
	case errors.Is(err, segment.ErrInvalidBatch):
		return kerr.CorruptMessage
	case errors.Is(err, segment.ErrBatchTooLarge):
		return kerr.MessageTooLarge
	case errors.Is(err, segment.ErrStaleEpoch):
		return kerr.FencedLeaderEpoch
	case errors.Is(err, segment.ErrClosed):
		return kerr.NotLeaderForPartition
	case errors.Is(err, segment.ErrLogFailed):
		return kerr.KafkaStorageError
	}
	return fmt.Errorf("%w: %v", kerr.KafkaStorageError, err)
}

// readError maps a segment read error to its Kafka error.
func readError(err error) error {
	switch {
	case errors.Is(err, segment.ErrOffsetOutOfRange):
		return kerr.OffsetOutOfRange
	case errors.Is(err, segment.ErrClosed):
		return kerr.NotLeaderForPartition
	case errors.Is(err, segment.ErrCorruptBatch):
		return kerr.CorruptMessage
	}
	return kerr.KafkaStorageError
}
