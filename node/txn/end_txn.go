package txn

// EndTxn (key 26), versions 0-5.
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
//   - v5 is transaction.version 2 (KIP-890 part 2): the Prepare record
//     carries the epoch bumped by one, the markers are written with it
//     (so a late batch of the ended transaction is fenced at the
//     partition), and the answer gives the client its producer id and new
//     epoch. With the epoch exhausted (32766), the markers carry 32767 and
//     the completion moves the producer to a new producer id at epoch 0
//     (NextProducerId), which the answer gives. An abort without a
//     transaction (Empty, CompleteCommit, CompleteAbort: the client's
//     produces all failed) is allowed and bumps the epoch (one
//     CompleteAbort record, no markers). A retry of the previous epoch's
//     EndTxn (its answer was lost) gets the current id and epoch.
//
// Version notes: before v2, PRODUCER_FENCED is INVALID_PRODUCER_EPOCH.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (s *Shard) endTxn(now time.Time, r Request, req *kmsg.EndTxnRequest) {
	answerWith := func(code int16, pid int64, epoch int16) {
		resp := req.ResponseKind().(*kmsg.EndTxnResponse)
		resp.ErrorCode = fencedFor(code, req.Version, 2)
		resp.ProducerID, resp.ProducerEpoch = -1, -1
		if code == 0 && req.Version >= 5 {
			resp.ProducerID, resp.ProducerEpoch = pid, epoch
		}
		s.respond(r.ID, resp)
	}
	answer := func(code int16) { answerWith(code, req.ProducerID, req.ProducerEpoch) }
	if req.TransactionalID == "" {
		answer(codeInvalidRequest)
		return
	}
	if code := s.ours(req.TransactionalID); code != 0 {
		answer(code)
		return
	}
	t := s.txns[req.TransactionalID]
	commit, tv2 := req.Commit, req.Version >= 5
	if tv2 && t != nil && t.epoch >= 0 && retryTV2(t, req) {
		// The answer to this EndTxn was lost; the transaction it ended
		// is complete (or being completed).
		switch {
		case t.busy() || t.state == PrepareCommit || t.state == PrepareAbort:
			answer(codeConcurrent)
		case commit == (t.state == CompleteCommit) && t.state != Empty:
			answerWith(0, t.pid, t.epoch)
		default:
			answer(codeInvalidState)
		}
		return
	}
	switch {
	case t == nil || t.epoch < 0 || t.pid != req.ProducerID:
		answer(codeInvalidMapping)
		return
	case t.epoch != req.ProducerEpoch:
		answer(codeFenced)
		return
	}
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
		lastEpoch := t.lastEpoch
		if tv2 {
			if exhausted(t.epoch) {
				pid, ok := s.takePID(r)
				if !ok {
					return // stepped again when ids arrive
				}
				next.rotating, next.nextPid = true, pid
			}
			next.tv2, next.epoch, lastEpoch = true, t.epoch+1, t.epoch
		}
		s.write(&op{t: t, next: next, lastEpoch: lastEpoch, done: func(code int16) {
			pid, epoch := next.pid, next.epoch
			if next.rotating {
				pid, epoch = next.nextPid, 0
			}
			answerWith(code, pid, epoch)
		}})
	case Empty, CompleteCommit, CompleteAbort:
		switch {
		case t.busy():
			answer(codeConcurrent)
		case tv2 && !commit:
			s.emptyAbort(now, r, t, answerWith)
		case !tv2 && commit == (t.state == CompleteCommit) && t.state != Empty:
			answer(0)
		default:
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

// retryTV2 reports whether req (EndTxn v5) is a retry of the EndTxn
// that moved t to its current epoch (or producer id, on a rotation).
func retryTV2(t *txn, req *kmsg.EndTxnRequest) bool {
	if t.state == Ongoing || t.state == Empty || !t.tv2 {
		return false
	}
	if t.pid == req.ProducerID {
		return t.epoch > 0 && req.ProducerEpoch == t.epoch-1 && (t.lastEpoch < 0 || t.lastEpoch == req.ProducerEpoch)
	}
	return t.lastPid == req.ProducerID && t.epoch == 0 && exhausted(req.ProducerEpoch)
}

// emptyAbort is transaction.version 2's abort without a transaction: the
// epoch is bumped (the producer id rotated when exhausted) in one
// CompleteAbort record.
func (s *Shard) emptyAbort(now time.Time, r Request, t *txn, answer func(int16, int64, int16)) {
	next := t.meta
	next.state, next.parts, next.updated, next.tv2 = CompleteAbort, nil, now, true
	lastEpoch := t.epoch
	if exhausted(t.epoch) {
		pid, ok := s.takePID(r)
		if !ok {
			return
		}
		next.lastPid, next.pid, next.epoch = t.pid, pid, 0
	} else {
		next.epoch++
	}
	s.write(&op{t: t, next: next, lastEpoch: lastEpoch, done: func(code int16) {
		answer(code, next.pid, next.epoch)
	}})
}
