package txn

// AddPartitionsToTxn (key 24), versions 0-5, and AddOffsetsToTxn (key 25),
// versions 0-4.
//
// Behavior:
//   - v0-3 (clients): the partitions join the producer's transaction,
//     which starts (Ongoing, start time now) if none runs; answered when
//     the record is written. Partitions already in an ongoing transaction
//     are answered at once, without a write.
//   - v4+ (brokers, KIP-890 part 1): several transactions per request.
//     VerifyOnly asks whether the partitions are in the transaction
//     (TRANSACTION_ABORTABLE for those that are not); otherwise as v0-3.
//   - AddOffsetsToTxn adds the group's __consumer_offsets partition.
//   - Errors, in Kafka's order: an empty transactional id
//     INVALID_REQUEST; an unknown id or another producer id
//     INVALID_PRODUCER_ID_MAPPING; another epoch PRODUCER_FENCED; a write
//     in flight or PrepareCommit/PrepareAbort CONCURRENT_TRANSACTIONS.
//     Every partition of a transaction gets its transaction's error.
//
// Version notes: before v2, PRODUCER_FENCED is INVALID_PRODUCER_EPOCH.

import (
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/node/group"
)

// addCheck is Kafka's handleAddPartitionsToTransaction check before the
// transition: 0 means the partitions may be added.
func (s *Shard) addCheck(id string, pid int64, epoch int16) (*txn, int16) {
	if id == "" {
		return nil, codeInvalidRequest
	}
	if code := s.ours(id); code != 0 {
		return nil, code
	}
	t := s.txns[id]
	switch {
	case t == nil || t.epoch < 0 || t.pid != pid:
		return nil, codeInvalidMapping
	case t.epoch != epoch || epoch == math.MaxInt16:
		// 32767 is the fencing epoch, never given to a producer.
		return nil, codeFenced
	case t.busy() || t.state == PrepareCommit || t.state == PrepareAbort:
		return nil, codeConcurrent
	}
	return t, 0
}

// add adds parts to t's transaction; done answers when it is written.
func (s *Shard) add(now time.Time, t *txn, parts []TopicPartition, done func(int16)) {
	parts = union(parts, nil)
	if t.state == Ongoing {
		all := true
		for _, p := range parts {
			all = all && contains(t.parts, p)
		}
		if all {
			done(0)
			return
		}
	}
	next := t.meta
	if !t.state.idle() && t.state != Ongoing {
		done(codeInvalidState)
		return
	}
	if t.state.idle() {
		next.start, next.parts = now, nil
	}
	next.state, next.parts, next.updated = Ongoing, union(next.parts, parts), now
	s.write(&op{t: t, next: next, lastEpoch: t.lastEpoch, done: done})
}

func (s *Shard) addPartitions(now time.Time, r Request, req *kmsg.AddPartitionsToTxnRequest) {
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if req.Version < 4 {
		var parts []TopicPartition
		for _, rt := range req.Topics {
			for _, p := range rt.Partitions {
				parts = append(parts, TopicPartition{rt.Topic, p})
			}
		}
		answer := func(code int16) {
			code = fencedFor(code, req.Version, 2)
			for _, rt := range req.Topics {
				t := kmsg.NewAddPartitionsToTxnResponseTopic()
				t.Topic = rt.Topic
				for _, p := range rt.Partitions {
					rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p, code
					t.Partitions = append(t.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, t)
			}
			s.respond(r.ID, resp)
		}
		t, code := s.addCheck(req.TransactionalID, req.ProducerID, req.ProducerEpoch)
		if code != 0 {
			answer(code)
			return
		}
		s.add(now, t, parts, answer)
		return
	}
	// v4+: one answer when every transaction of the request has one.
	resp.Transactions = make([]kmsg.AddPartitionsToTxnResponseTransaction, len(req.Transactions))
	left := len(req.Transactions)
	finish := func() {
		if left--; left == 0 {
			s.respond(r.ID, resp)
		}
	}
	if left == 0 {
		s.respond(r.ID, resp)
		return
	}
	for i, rx := range req.Transactions {
		rt := &resp.Transactions[i]
		*rt = kmsg.NewAddPartitionsToTxnResponseTransaction()
		rt.TransactionalID = rx.TransactionalID
		var parts []TopicPartition
		for _, tp := range rx.Topics {
			for _, p := range tp.Partitions {
				parts = append(parts, TopicPartition{tp.Topic, p})
			}
		}
		answer := func(code func(TopicPartition) int16) {
			for _, tp := range rx.Topics {
				ot := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
				ot.Topic = tp.Topic
				for _, p := range tp.Partitions {
					op := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
					op.Partition, op.ErrorCode = p, code(TopicPartition{tp.Topic, p})
					ot.Partitions = append(ot.Partitions, op)
				}
				rt.Topics = append(rt.Topics, ot)
			}
			finish()
		}
		all := func(code int16) func(TopicPartition) int16 { return func(TopicPartition) int16 { return code } }
		t, code := s.verifyCheck(rx)
		switch {
		case code != 0:
			answer(all(code))
		case rx.VerifyOnly:
			answer(func(p TopicPartition) int16 {
				if contains(t.parts, p) {
					return 0
				}
				return codeAbortable
			})
		default:
			s.add(now, t, parts, func(code int16) { answer(all(code)) })
		}
	}
}

// verifyCheck is addCheck for one transaction of a v4+ request; a
// verification (Kafka's handleVerifyPartitionsInTransaction) does not
// look at writes in flight.
func (s *Shard) verifyCheck(rx kmsg.AddPartitionsToTxnRequestTransaction) (*txn, int16) {
	if !rx.VerifyOnly {
		return s.addCheck(rx.TransactionalID, rx.ProducerID, rx.ProducerEpoch)
	}
	if rx.TransactionalID == "" {
		return nil, codeInvalidRequest
	}
	if code := s.ours(rx.TransactionalID); code != 0 {
		return nil, code
	}
	t := s.txns[rx.TransactionalID]
	switch {
	case t == nil || t.epoch < 0 || t.pid != rx.ProducerID:
		return nil, codeInvalidMapping
	case t.epoch != rx.ProducerEpoch:
		return nil, codeFenced
	case t.state == PrepareCommit || t.state == PrepareAbort:
		return nil, codeConcurrent
	}
	return t, 0
}

func (s *Shard) addOffsets(now time.Time, r Request, req *kmsg.AddOffsetsToTxnRequest) {
	answer := func(code int16) {
		resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
		resp.ErrorCode = fencedFor(code, req.Version, 2)
		s.respond(r.ID, resp)
	}
	t, code := s.addCheck(req.TransactionalID, req.ProducerID, req.ProducerEpoch)
	if code != 0 {
		answer(code)
		return
	}
	p := TopicPartition{group.OffsetsTopic, group.Partition(req.Group, s.cfg.OffsetsPartitions)}
	s.add(now, t, []TopicPartition{p}, answer)
}
