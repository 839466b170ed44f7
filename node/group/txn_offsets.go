package group

// TxnOffsetCommit (versions 0-5) and the pending transactional offsets
// (Kafka's pendingTransactionalOffsets and openTransactions).
//
// Behavior:
//   - The group and member are checked as Kafka's
//     validateTransactionalOffsetCommit does: a group that does not exist
//     is created (Empty, no protocol type) for generation -1 and is
//     ILLEGAL_GENERATION otherwise; generation -1 without member id or
//     instance id (v0-2 carry none) commits whatever the group's state;
//     a member is checked (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID,
//     ILLEGAL_GENERATION; a KIP-848 member's stale or newer epoch is
//     ILLEGAL_GENERATION too), but, unlike OffsetCommit, not refused
//     REBALANCE_IN_PROGRESS.
//   - The offsets are written as one transactional Append with the
//     request's producer id and epoch; once Appended they are pending for
//     that producer, not committed: OffsetFetch does not show them, and
//     with require_stable (v7+) answers UNSTABLE_OFFSET_COMMIT for their
//     partitions. An append the log refuses (a fenced epoch: the log's
//     INVALID_PRODUCER_EPOCH) is answered with its error.
//   - CompleteTxn (the marker committed) or, while loading, ReplayMarker
//     (a control batch) ends the producer's transaction: on commit each
//     pending offset becomes the committed one unless a commit written
//     after it (in log order) is already there, as Kafka keeps the most
//     recent; on abort they are dropped. A CompleteTxn that finds the
//     producer's TxnOffsetCommit still in flight applies to it when it
//     lands.
//   - A tombstone (OffsetDelete, DeleteGroups, retention, deleted topics)
//     drops the pending offsets of its partition too; DeleteGroups and
//     OffsetDelete write tombstones for partitions with pending offsets;
//     retention keeps an offset with pending ones and a group with any.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnResult is how a producer's transaction ended, for a TxnOffsetCommit
// that was still in flight.
type txnResult int8

const (
	txnOpen txnResult = iota
	txnCommitted
	txnAborted
)

// lateTxn is a CompleteTxn made while loading.
type lateTxn struct {
	pid    int64
	commit bool
}

// pendingTxn is a group's pending transactional offsets of one producer.
type pendingTxn map[tp]offset

// validateTxnCommit is Kafka 4's validateTransactionalOffsetCommit; it may
// create a group.
func (s *Shard) validateTxnCommit(now time.Time, req *kmsg.TxnOffsetCommitRequest) (*group, int16) {
	if !s.loaded {
		return nil, codeLoading
	}
	if req.Group == "" {
		return nil, codeInvalidGroupID
	}
	g := s.groups[req.Group]
	if g == nil {
		if req.Generation >= 0 {
			return nil, codeIllegalGen
		}
		g = newGroup(req.Group, now)
		s.groups[g.id] = g
		return g, 0
	}
	if g.consumer != nil {
		return g, g.consumer.validateTxnCommit(req.MemberID, req.Generation)
	}
	if req.Generation < 0 && g.state == stateEmpty {
		return g, 0
	}
	if req.Generation >= 0 || req.MemberID != "" || req.InstanceID != nil {
		if code := g.validateMember(req.MemberID, req.InstanceID); code != 0 {
			return g, code
		}
		if req.Generation != g.generation {
			return g, codeIllegalGen
		}
	}
	return g, 0
}

// validateTxnCommit is ConsumerGroup.validateOffsetCommit for a
// transactional commit: STALE_MEMBER_EPOCH becomes ILLEGAL_GENERATION, and
// any version may commit.
func (c *cgroup) validateTxnCommit(memberID string, epoch int32) int16 {
	if epoch < 0 && len(c.members) == 0 {
		return 0
	}
	m := c.members[memberID]
	switch {
	case m == nil:
		return codeUnknownMember
	case m.classic != nil && epoch != m.epoch: // a classic member commits with its generation
		return codeIllegalGen
	case epoch > m.epoch:
		return codeFencedEpoch
	case epoch < m.epoch:
		return codeIllegalGen
	}
	return 0
}

func (s *Shard) txnOffsetCommit(now time.Time, r Request, req *kmsg.TxnOffsetCommitRequest) {
	resp := kmsg.NewPtrTxnOffsetCommitResponse()
	resp.Version = req.Version
	g, code := s.validateTxnCommit(now, req)
	o := &op{kind: opTxnCommit, g: g, w: waiter{id: r.ID, version: req.Version}, txnResp: resp, pid: req.ProducerID}
	var recs []Record
	for ti, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for pi, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode = code
			if code == 0 {
				epoch := p.LeaderEpoch
				if req.Version < 2 {
					epoch = -1
				}
				rp.ErrorCode, recs = s.stageCommit(g, o, recs, t.Topic, ti, p.Partition, pi, p.Offset, epoch, p.Metadata, now)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if len(recs) == 0 {
		if g != nil {
			s.maybeDropEmpty(g)
		}
		s.respond(r.ID, resp)
		return
	}
	s.writeAppend(o, Append{Records: recs, Transactional: true, ProducerID: req.ProducerID, ProducerEpoch: req.ProducerEpoch})
}

// txnCommitAppended makes a TxnOffsetCommit that is now in the log pending
// (or, if its transaction ended meanwhile, applies the end), or answers
// its failure.
func (s *Shard) txnCommitAppended(now time.Time, o *op, code int16) {
	g := o.g
	for _, pc := range o.commits {
		o.txnResp.Topics[pc.ti].Partitions[pc.pi].ErrorCode = code
		if code == 0 {
			if m := g.tombs[tp{pc.topic, pc.part}]; m == nil || m.seq == pc.seq {
				pc.o.order = o.order
				switch o.result {
				case txnOpen:
					s.addPending(g, o.pid, tp{pc.topic, pc.part}, pc.o)
				case txnCommitted:
					s.materialize(g, tp{pc.topic, pc.part}, pc.o)
				}
			}
		}
		g.addInflight(pc.topic, pc.part, -1)
	}
	if s.groups[g.id] == g {
		if code == 0 {
			s.retentionCandidate(g, now)
		}
		s.maybeDropEmpty(g)
	}
	s.respond(o.w.id, o.txnResp)
}

// addPending notes o as the pending offset of (g, k) in pid's transaction.
func (s *Shard) addPending(g *group, pid int64, k tp, o offset) {
	if g.txns == nil {
		g.txns = map[int64]pendingTxn{}
	}
	pt := g.txns[pid]
	if pt == nil {
		pt = pendingTxn{}
		g.txns[pid] = pt
	}
	pt[k] = o
	if s.txnGroups == nil {
		s.txnGroups = map[int64]map[string]bool{}
	}
	gs := s.txnGroups[pid]
	if gs == nil {
		gs = map[string]bool{}
		s.txnGroups[pid] = gs
	}
	gs[g.id] = true
}

// materialize makes o the committed offset of (g, k) unless the one there
// was written after it.
func (s *Shard) materialize(g *group, k tp, o offset) {
	if cur, ok := g.offsets[k.topic][k.part]; ok && cur.order > o.order {
		return
	}
	g.setOffset(k.topic, k.part, o)
	s.commits++
}

// completeTxn ends pid's transaction on this shard: its pending offsets
// are committed or dropped, and its TxnOffsetCommits in flight take the
// result when they land.
func (s *Shard) completeTxn(now time.Time, pid int64, commit bool) {
	res := txnAborted
	if commit {
		res = txnCommitted
	}
	for _, o := range s.ops {
		if o.kind == opTxnCommit && o.pid == pid && o.result == txnOpen {
			o.result = res
		}
	}
	for _, id := range sortedKeys(s.txnGroups[pid]) {
		g := s.groups[id]
		if g == nil {
			continue
		}
		pt := g.txns[pid]
		delete(g.txns, pid)
		if commit {
			for k, o := range pt {
				s.materialize(g, k, o)
			}
		}
		s.retentionCandidate(g, now)
		s.maybeDropEmpty(g)
	}
	delete(s.txnGroups, pid)
}

// hasPending says whether (topic, p) of g has pending transactional
// offsets.
func (g *group) hasPending(topic string, p int32) bool {
	for _, pt := range g.txns {
		if _, ok := pt[tp{topic, p}]; ok {
			return true
		}
	}
	return false
}

// dropPending forgets the pending offsets of (topic, p) of every
// producer (a tombstone for the partition).
func (g *group) dropPending(topic string, p int32) {
	for pid, pt := range g.txns {
		delete(pt, tp{topic, p})
		if len(pt) == 0 {
			delete(g.txns, pid)
		}
	}
}

// pendingParts are the partitions of g with pending offsets.
func (g *group) pendingParts() map[string]map[int32]int {
	out := map[string]map[int32]int{}
	for _, pt := range g.txns {
		for k := range pt {
			if out[k.topic] == nil {
				out[k.topic] = map[int32]int{}
			}
			out[k.topic][k.part] = 1
		}
	}
	return out
}
