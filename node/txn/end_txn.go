package txn

// EndTxn (key 26), versions 0-5 (Kafka 4.1's; v5's epoch bump per
// transaction, KIP-890 part 2, is not done: the answer carries the
// producer's unchanged id and epoch).
//
// Behavior:
//   - Ongoing: PrepareCommit or PrepareAbort is written and, once it is,
//     the client is answered and the markers go to every partition of the
//     transaction (Ready's Markers). When all are written, CompleteCommit
//     or CompleteAbort is written; failed partitions are retried after
//     RetryBackoff, as often as it takes.
//   - A retry of a finished transaction's EndTxn with the same result is
//     answered at once; of one being finished, CONCURRENT_TRANSACTIONS;
//     the other result, or EndTxn without a transaction (Empty),
//     INVALID_TXN_STATE.
//   - An unknown id or another producer id is INVALID_PRODUCER_ID_MAPPING;
//     another epoch PRODUCER_FENCED; a write in flight
//     CONCURRENT_TRANSACTIONS.
//
// Version notes: before v2, PRODUCER_FENCED is INVALID_PRODUCER_EPOCH.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (s *Shard) endTxn(now time.Time, r Request, req *kmsg.EndTxnRequest) {
	answer := func(code int16) {
		resp := req.ResponseKind().(*kmsg.EndTxnResponse)
		resp.ErrorCode = fencedFor(code, req.Version, 2)
		resp.ProducerID, resp.ProducerEpoch = -1, -1
		if code == 0 && req.Version >= 5 {
			resp.ProducerID, resp.ProducerEpoch = req.ProducerID, req.ProducerEpoch
		}
		s.respond(r.ID, resp)
	}
	if req.TransactionalID == "" {
		answer(codeInvalidRequest)
		return
	}
	if code := s.ours(req.TransactionalID); code != 0 {
		answer(code)
		return
	}
	t := s.txns[req.TransactionalID]
	switch {
	case t == nil || t.epoch < 0 || t.pid != req.ProducerID:
		answer(codeInvalidMapping)
		return
	case t.epoch != req.ProducerEpoch:
		answer(codeFenced)
		return
	}
	commit := req.Commit
	switch t.state {
	case Ongoing:
		if t.busy() {
			answer(codeConcurrent)
			return
		}
		next := t.meta
		next.state, next.updated = PrepareAbort, now
		if commit {
			next.state = PrepareCommit
		}
		s.write(&op{t: t, next: next, lastEpoch: t.lastEpoch, done: answer})
	case CompleteCommit, CompleteAbort:
		if t.busy() {
			answer(codeConcurrent)
		} else if commit == (t.state == CompleteCommit) {
			answer(0)
		} else {
			answer(codeInvalidState)
		}
	case PrepareCommit, PrepareAbort:
		if commit == (t.state == PrepareCommit) {
			answer(codeConcurrent)
		} else {
			answer(codeInvalidState)
		}
	default:
		if t.busy() {
			answer(codeConcurrent)
			return
		}
		answer(codeInvalidState)
	}
}
