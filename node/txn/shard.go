package txn

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/node/group"
)

// op is an Append in flight: the id's record (next) or tombstone, and
// what to do when it is Appended.
type op struct {
	t         *txn
	next      meta
	lastEpoch int16 // the lastEpoch that goes with next
	remove    bool  // a tombstone (expiry)
	// done answers the waiting client, with 0 or the append's error
	// code (nil: nobody waits).
	done func(code int16)
	// afterPrepare: next is PrepareCommit/PrepareAbort; markers follow.
	timedOut bool
	// then: a completion's held adds, the next transaction's Ongoing
	// record in the same Append (one acks=all write for both).
	then *op
}

func (s *Shard) respond(id uint64, body kmsg.Response) {
	s.ready.Responses = append(s.ready.Responses, Response{ID: id, Body: body})
}

// write queues the Append of o's record; t is busy until it is Appended.
func (s *Shard) write(o *op) {
	s.nextID++
	s.ops[s.nextID] = o
	o.t.pending = o
	s.touch(o.t)
	rec := tombstone(o.t.id)
	if !o.remove {
		rec = metaRecord(o.t.id, o.next)
	}
	recs := []Record{rec}
	if o.then != nil {
		recs = append(recs, metaRecord(o.t.id, o.then.next))
	}
	s.ready.Appends = append(s.ready.Appends, Append{ID: s.nextID, Records: recs})
}

func (s *Shard) loadDone(now time.Time) {
	if s.loaded {
		return
	}
	s.loaded = true
	s.anchor = now
	for _, id := range sortedIDs(s.txns) {
		s.touch(s.txns[id])
		if t := s.txns[id]; t.state == PrepareCommit || t.state == PrepareAbort {
			// Kafka's loadTransactionsForTxnTopicPartition: the markers of
			// a prepared transaction are sent again.
			s.sendMarkers(t, t.parts)
		}
	}
}

// ours reports whether id belongs to this shard; if not, or before the
// load, the code to answer.
func (s *Shard) ours(id string) int16 {
	if !s.loaded {
		return codeLoading
	}
	if Partition(id, s.cfg.StatePartitions) != s.partition {
		return codeNotCoordinator
	}
	return 0
}

func (s *Shard) step(now time.Time, r Request) {
	switch req := r.Body.(type) {
	case *kmsg.InitProducerIDRequest:
		s.initProducerID(now, r, req)
	case *kmsg.AddPartitionsToTxnRequest:
		s.addPartitions(now, r, req)
	case *kmsg.AddOffsetsToTxnRequest:
		s.addOffsets(now, r, req)
	case *kmsg.EndTxnRequest:
		s.endTxn(now, r, req)
	case *kmsg.DescribeTransactionsRequest:
		s.describe(r, req)
	default:
		panic(fmt.Sprintf("txn: Step got a %T: the driver must route only transaction requests here", r.Body))
	}
}

func (s *Shard) appended(now time.Time, id uint64, err error) {
	o := s.ops[id]
	if o == nil {
		panic(fmt.Sprintf("txn: Appended(%d) answers no Append in flight", id))
	}
	delete(s.ops, id)
	t := o.t
	t.pending = nil
	defer s.release(now, t) // after the answer: held adds come later
	s.touch(t)
	code := int16(0)
	if err != nil {
		code = group.AppendErrorCode(err)
	}
	if code != 0 {
		t.failedAt = now
		if t.epoch < 0 && !o.remove {
			// A new id whose first record failed: it never existed.
			delete(s.txns, t.id)
		}
		if (o.next.state == CompleteCommit || o.next.state == CompleteAbort) && (t.state == PrepareCommit || t.state == PrepareAbort) {
			// Markers are written; only the record is missing: write it
			// again after the backoff (as Kafka retries the append; if
			// the coordinator moved, the driver drops the shard).
			t.markersDone, t.retryAt = true, now.Add(s.cfg.RetryBackoff)
		}
		if o.done != nil {
			o.done(code)
		}
		if o.then != nil {
			o.then.done(code)
		}
		return
	}
	t.failedAt = time.Time{}
	if o.remove {
		delete(s.txns, t.id)
		return
	}
	t.meta, t.lastEpoch = o.next, o.lastEpoch
	switch t.state {
	case PrepareCommit, PrepareAbort:
		if o.timedOut {
			s.timedOut++
		}
		s.sendMarkers(t, t.parts)
	case CompleteCommit:
		s.committed++
	case CompleteAbort:
		s.aborted++
	}
	if o.done != nil {
		o.done(0)
	}
	if o.then != nil {
		t.meta, t.lastEpoch = o.then.next, o.then.lastEpoch
		o.then.done(0)
	}
}

// sendMarkers asks for t's markers on parts; with none left the
// transaction completes.
func (s *Shard) sendMarkers(t *txn, parts []TopicPartition) {
	if len(parts) == 0 {
		s.complete(t, t.updated)
		return
	}
	s.nextID++
	s.markers[s.nextID] = t
	t.markersID = s.nextID
	s.touch(t)
	t.pending = &op{t: t} // busy until the transaction completes
	s.ready.Markers = append(s.ready.Markers, Markers{ID: s.nextID, TransactionalID: t.id,
		ProducerID: t.pid, ProducerEpoch: t.epoch, Commit: t.state == PrepareCommit,
		Partitions: append([]TopicPartition(nil), parts...)})
}

func (s *Shard) markersWritten(now time.Time, id uint64, failed []TopicPartition) {
	t := s.markers[id]
	if t == nil {
		panic(fmt.Sprintf("txn: MarkersWritten(%d) answers no Markers in flight", id))
	}
	delete(s.markers, id)
	t.markersID = 0
	s.touch(t)
	var retry []TopicPartition
	for _, p := range failed {
		if contains(t.parts, p) && !contains(retry, p) {
			retry = union(retry, []TopicPartition{p})
		}
	}
	if len(retry) > 0 {
		t.retry, t.retryAt = retry, now.Add(s.cfg.RetryBackoff)
		s.refuseHeld(t)
		return
	}
	t.pending = nil
	s.complete(t, now)
}

// complete writes t's CompleteCommit or CompleteAbort record.
func (s *Shard) complete(t *txn, now time.Time) {
	next := t.meta
	next.state, next.parts, next.updated = CompleteCommit, nil, now
	if t.state == PrepareAbort {
		next.state = CompleteAbort
	}
	if next.rotating {
		// transaction.version 2 with the epoch exhausted: the markers
		// carried 32767, the producer goes on as nextPid.
		next.lastPid, next.pid, next.epoch, next.rotating, next.nextPid = t.pid, t.nextPid, 0, false, 0
	}
	t.markersDone, t.retryAt, t.retry = false, time.Time{}, nil
	s.write(&op{t: t, next: next, lastEpoch: t.lastEpoch, then: s.fold(now, t, next)})
}

func sortedIDs(m map[string]*txn) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sortStrings(ids)
	return ids
}
