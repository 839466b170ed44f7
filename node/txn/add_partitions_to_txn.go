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
//     INVALID_PRODUCER_ID_MAPPING; another epoch PRODUCER_FENCED;
//     PrepareCommit/PrepareAbort with no markers in flight (their retry
//     or the completion record's is due) CONCURRENT_TRANSACTIONS. Every
//     partition of a transaction gets its transaction's error.
//   - Held, not refused: an add that arrives while the id's record or
//     its first round of markers is in flight waits (up to maxHeld per
//     id) and is checked again once the id is idle, the adds held
//     meanwhile folded into one write; those that wait for a
//     transaction's completion record are written in its Append, the
//     next transaction's Ongoing record after it. Kafka answers those
//     CONCURRENT_TRANSACTIONS and its clients retry after a backoff
//     (kgo: 20 ms); the answer they get after it is the one the held
//     request gets, only sooner: a held add never joins the transaction
//     in flight when it arrived, only a later one, as a retry would.
//     Markers that failed answer the held adds CONCURRENT_TRANSACTIONS,
//     so nothing waits on a leader that is away.
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
		return t, codeConcurrent // t: the caller may hold the request
	}
	return t, 0
}

// maxHeld bounds the adds held per id: a client retrying a timed-out
// add must not grow the queue without end.
const maxHeld = 16

// held is an add waiting for its id to be idle.
type held struct {
	id    string
	pid   int64
	epoch int16
	parts []TopicPartition
	done  func(int16)
}

// holds reports whether an add that addCheck refused with code may wait
// for t instead: its record or its first round of markers is in flight.
func holds(t *txn, code int16) bool {
	return code == codeConcurrent && t != nil && t.busy() && len(t.retry) == 0 && len(t.held) < maxHeld
}

// addOrHold is addCheck then add, or the request held until t is idle.
func (s *Shard) addOrHold(now time.Time, id string, pid int64, epoch int16, parts []TopicPartition, done func(int16)) {
	t, code := s.addCheck(id, pid, epoch)
	switch {
	case holds(t, code):
		t.held = append(t.held, held{id, pid, epoch, parts, done})
	case code != 0:
		done(code)
	default:
		s.add(now, t, parts, done)
	}
}

// release checks t's held adds again once t is idle: those that may
// proceed become one write (or one answer, if their partitions are all
// in the transaction), the others get their error.
func (s *Shard) release(now time.Time, t *txn) {
	if t.pending != nil || len(t.held) == 0 {
		return
	}
	hs := t.held
	t.held = nil
	var (
		parts []TopicPartition
		dones []func(int16)
		into  *txn
	)
	for _, h := range hs {
		x, code := s.addCheck(h.id, h.pid, h.epoch)
		if code != 0 {
			h.done(code)
			continue
		}
		into, parts, dones = x, union(parts, h.parts), append(dones, h.done)
	}
	if into == nil {
		return
	}
	s.add(now, into, parts, func(code int16) {
		for _, d := range dones {
			d(code)
		}
	})
}

// fold takes t's held adds that its completion (done, not yet written)
// lets start the next transaction, as release would once it is written,
// and returns their Ongoing record's op, to be written in the
// completion's Append (nil: none). The others stay held: release answers
// them when the completion is written.
func (s *Shard) fold(now time.Time, t *txn, done meta) *op {
	var (
		parts []TopicPartition
		dones []func(int16)
		keep  []held
	)
	for _, h := range t.held {
		// addCheck's answer once done is written: the id and producer
		// are t's, the state idle.
		if s.txns[h.id] != t || h.pid != done.pid || h.epoch != done.epoch || h.epoch == math.MaxInt16 {
			keep = append(keep, h)
			continue
		}
		parts, dones = union(parts, h.parts), append(dones, h.done)
	}
	if len(dones) == 0 {
		return nil
	}
	t.held = keep
	next := done
	next.state, next.start, next.parts, next.updated, next.tv2 = Ongoing, now, parts, now, false
	return &op{t: t, next: next, lastEpoch: t.lastEpoch, done: func(code int16) {
		for _, d := range dones {
			d(code)
		}
	}}
}

// refuseHeld answers t's held adds CONCURRENT_TRANSACTIONS (its markers
// failed: the client retries after its backoff, as Kafka's would).
func (s *Shard) refuseHeld(t *txn) {
	hs := t.held
	t.held = nil
	for _, h := range hs {
		h.done(codeConcurrent)
	}
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
		next.start, next.parts, next.tv2 = now, nil, false
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
		s.addOrHold(now, req.TransactionalID, req.ProducerID, req.ProducerEpoch, parts, answer)
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
		if !rx.VerifyOnly {
			s.addOrHold(now, rx.TransactionalID, rx.ProducerID, rx.ProducerEpoch, parts, func(code int16) { answer(all(code)) })
			continue
		}
		t, code := s.verifyCheck(rx)
		switch {
		case code != 0:
			answer(all(code))
		default:
			answer(func(p TopicPartition) int16 {
				if contains(t.parts, p) {
					return 0
				}
				return codeAbortable
			})
		}
	}
}

// verifyCheck is addCheck for a VerifyOnly transaction of a v4+
// request; a verification (Kafka's handleVerifyPartitionsInTransaction)
// does not look at writes in flight.
func (s *Shard) verifyCheck(rx kmsg.AddPartitionsToTxnRequestTransaction) (*txn, int16) {
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
	p := TopicPartition{group.OffsetsTopic, group.Partition(req.Group, s.cfg.OffsetsPartitions)}
	s.addOrHold(now, req.TransactionalID, req.ProducerID, req.ProducerEpoch, []TopicPartition{p}, answer)
}
