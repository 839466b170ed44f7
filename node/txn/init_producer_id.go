package txn

// InitProducerId (key 22) with a transactional id, versions 0-5.
//
// Behavior:
//   - An empty transactional id is INVALID_REQUEST; a timeout outside
//     (0, transaction.max.timeout.ms] INVALID_TRANSACTION_TIMEOUT.
//   - A new id gets a new producer id (from the driver's block: Ready's
//     NeedProducerIDs while none is left) and epoch 0.
//   - A known id gets its epoch bumped, which fences the previous
//     incarnation; with the epoch exhausted (32766), a new producer id and
//     epoch 0. An ongoing transaction is aborted first, with the epoch
//     bumped: the caller gets CONCURRENT_TRANSACTIONS once PrepareAbort is
//     written, and retries.
//   - KIP-360 (v3+): a producer that passes its producer id and epoch
//     keeps its id if they are current (or the previous id with an
//     exhausted epoch); a retry of the last bump gets the same answer;
//     anything else is PRODUCER_FENCED.
//   - Any write in flight, or PrepareCommit/PrepareAbort:
//     CONCURRENT_TRANSACTIONS.
//
// Version notes: before v4, PRODUCER_FENCED is INVALID_PRODUCER_EPOCH.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/node/group"
)

func (s *Shard) initProducerID(now time.Time, r Request, req *kmsg.InitProducerIDRequest) {
	if req.TransactionalID == nil {
		panic("txn: InitProducerId without a transactional id: the driver serves idempotent producers")
	}
	answer := func(code int16, pid int64, epoch int16) {
		resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
		resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = fencedFor(code, req.Version, 4), -1, -1
		if code == 0 {
			resp.ProducerID, resp.ProducerEpoch = pid, epoch
		}
		s.respond(r.ID, resp)
	}
	id := *req.TransactionalID
	timeout := time.Duration(req.TransactionTimeoutMillis) * time.Millisecond
	if id == "" {
		answer(codeInvalidRequest, 0, 0)
		return
	}
	if req.TransactionTimeoutMillis <= 0 || timeout > s.cfg.MaxTimeout {
		answer(codeInvalidTimeout, 0, 0)
		return
	}
	if code := s.ours(id); code != 0 {
		answer(code, 0, 0)
		return
	}
	expPid, expEpoch := int64(-1), int16(-1)
	if req.Version >= 3 {
		expPid, expEpoch = req.ProducerID, req.ProducerEpoch
	}
	expected := expPid >= 0
	t := s.txns[id]
	if t == nil {
		// Kafka creates the id whatever producer id the request names:
		// a producer moving to a new transactional id passes its old one.
		pid, ok := s.takePID(r)
		if !ok {
			return
		}
		t = &txn{id: id, meta: meta{pid: pid, epoch: -1, lastPid: -1, timeout: timeout}, lastEpoch: -1}
		s.txns[id] = t
	}
	if t.busy() || t.state == PrepareCommit || t.state == PrepareAbort {
		answer(codeConcurrent, 0, 0)
		return
	}
	if expected && !(t.epoch < 0 || expPid == t.pid || expPid == t.lastPid && exhausted(expEpoch)) {
		answer(codeFenced, 0, 0)
		return
	}
	if t.state == Ongoing {
		s.fenceAbort(t, now, func(code int16) {
			if code == 0 {
				code = codeConcurrent
			}
			answer(code, 0, 0)
		}, false)
		return
	}
	next := t.meta
	next.timeout, next.state, next.parts, next.start, next.updated = timeout, Empty, nil, time.Time{}, now
	lastEpoch := t.lastEpoch
	switch {
	case exhausted(t.epoch) && (!expected || expEpoch == t.epoch):
		// Kafka's prepareProducerIdRotation: a new producer id.
		pid, ok := s.takePID(r)
		if !ok {
			return
		}
		next.lastPid, next.pid, next.epoch = t.pid, pid, 0
		lastEpoch = -1
		if expected {
			lastEpoch = t.epoch
		}
	case !expected:
		next.epoch, lastEpoch = t.epoch+1, -1
	case t.epoch < 0 || expEpoch == t.epoch:
		next.epoch, lastEpoch = t.epoch+1, t.epoch
	case expEpoch == t.lastEpoch && expEpoch >= 0:
		// A retry of the last bump, whose answer was lost: the same
		// epoch again (written again, as Kafka does).
	default:
		answer(codeFenced, 0, 0)
		return
	}
	s.write(&op{t: t, next: next, lastEpoch: lastEpoch, done: func(code int16) {
		answer(code, next.pid, next.epoch)
	}})
}

// takePID takes a producer id from the block; with none left r waits for
// the driver's ProducerIDs (false).
func (s *Shard) takePID(r Request) (int64, bool) {
	if s.pidNext < s.pidEnd {
		s.pidNext++
		return s.pidNext - 1, true
	}
	s.waitPID = append(s.waitPID, r)
	if !s.asked {
		s.asked, s.ready.NeedProducerIDs = true, true
	}
	return 0, false
}

func (s *Shard) producerIDs(now time.Time, first, n int64) {
	s.asked = false
	if n > 0 && first >= 0 {
		s.pidNext, s.pidEnd = first, first+n
	}
	waiting := s.waitPID
	s.waitPID = nil
	for _, r := range waiting {
		s.step(now, r)
	}
}

func (s *Shard) producerIDsFailed(err error) {
	s.asked = false
	code := group.AppendErrorCode(err)
	waiting := s.waitPID
	s.waitPID = nil
	for _, r := range waiting {
		switch req := r.Body.(type) {
		case *kmsg.InitProducerIDRequest:
			resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
			resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = code, -1, -1
			s.respond(r.ID, resp)
		case *kmsg.EndTxnRequest: // a transaction.version 2 rotation
			resp := req.ResponseKind().(*kmsg.EndTxnResponse)
			resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = code, -1, -1
			s.respond(r.ID, resp)
		}
	}
}
