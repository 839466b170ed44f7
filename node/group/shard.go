package group

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// opKind is what an Append in flight was written for.
type opKind int8

const (
	opGroup         opKind = iota // group metadata nobody waits on
	opAssignment                  // the leader's SyncGroup assignment
	opStaticJoin                  // a static member replaced in a stable group
	opCommit                      // an OffsetCommit
	opDeleteGroups                // a DeleteGroups
	opDeleteOffsets               // an OffsetDelete
	opExpire                      // retention's tombstones
	opConsumer                    // a consumer group's records
	opTxnCommit                   // a TxnOffsetCommit
)

// op is an Append in flight and what to do when it is Appended.
type op struct {
	kind opKind
	g    *group
	w    waiter // the request that waits (not for opGroup, opExpire)

	gen int32 // opAssignment: the generation assigned

	// opStaticJoin: the replacement, to undo on failure, and the leader
	// before it.
	instance, oldID, newID, oldLeader string
	undo                              *member

	// opCommit: the response, and the commits to apply on success.
	commit  *kmsg.OffsetCommitResponse
	commits []pendingCommit

	// opDeleteGroups, opDeleteOffsets: the responses to complete.
	deleteGroups  *kmsg.DeleteGroupsResponse
	deleteIdx     []int // the response's groups this Append is for
	deleteOffsets *kmsg.OffsetDeleteResponse

	// What tombstones removed, put back if they fail to be written.
	removed       []removedOffset
	removedGroups []*group

	// opConsumer: the answer (if cgWaits) and the members the write
	// removed (see consumerAppended).
	cgResp    kmsg.Response
	cgWaits   bool
	cgRemoved []string

	// order is the Append's place in the log's order (see offset.order).
	order int64

	// opTxnCommit: the answer, the producer, and how its transaction
	// ended if it did while the Append was in flight.
	txnResp *kmsg.TxnOffsetCommitResponse
	pid     int64
	result  txnResult
}

type removedOffset struct {
	g     *group
	topic string
	part  int32
	o     offset
}

// pendingCommit is one partition of an OffsetCommit whose record is being
// written: ti/pi index the response.
type pendingCommit struct {
	topic  string
	part   int32
	o      offset
	ti, pi int
	seq    uint64 // the partition's tombstone count when it was issued
}

func (s *Shard) respond(id uint64, body kmsg.Response) {
	s.ready.Responses = append(s.ready.Responses, Response{ID: id, Body: body})
}

// write queues an Append of records for o.
func (s *Shard) write(o *op, recs []Record) { s.writeAppend(o, Append{Records: recs}) }

// writeAppend queues a (its ID set here) for o.
func (s *Shard) writeAppend(o *op, a Append) {
	s.nextAppend++
	s.nextOrder++
	o.order = s.nextOrder
	s.ops[s.nextAppend] = o
	a.ID = s.nextAppend
	s.ready.Appends = append(s.ready.Appends, a)
}

func (s *Shard) loadDone(now time.Time) {
	if s.loaded {
		return
	}
	s.loaded = true
	s.idSeed = uint64(now.UnixNano())
	s.retentionAnchor = now
	for _, l := range s.lateTxns {
		s.completeTxn(now, l.pid, l.commit)
	}
	s.lateTxns = nil
	for _, g := range s.groups {
		if g.consumer != nil {
			s.consumerLoaded(g, now)
			continue
		}
		// Kafka's onLoaded: every member's session starts now.
		for _, m := range g.members {
			m.deadline = now.Add(m.session)
		}
		g.computeSubscribed()
		if s.cfg.MaxSize > 0 && len(g.members) > s.cfg.MaxSize {
			// group.max.size was lowered: the members rejoin, the last
			// ones over the bound are refused (Kafka's onLoaded).
			s.prepareRebalance(g, now)
		}
		s.touch(g)
		s.retentionCandidate(g, now)
	}
}

// newMemberID is prefix-UUID, as Kafka makes them (the client id, or the
// group.instance.id of a static member).
func (s *Shard) newMemberID(prefix string) string {
	s.idSeq++
	a, b := s.idSeed, s.idSeq
	return fmt.Sprintf("%s-%08x-%04x-%04x-%04x-%012x", prefix,
		a>>32, (a>>16)&0xffff, a&0xffff, (b>>48)&0xffff, b&0xffffffffffff)
}

func (s *Shard) step(now time.Time, r Request) {
	switch req := r.Body.(type) {
	case *kmsg.JoinGroupRequest:
		s.joinGroup(now, r, req)
	case *kmsg.SyncGroupRequest:
		s.syncGroup(now, r, req)
	case *kmsg.HeartbeatRequest:
		s.heartbeat(now, r, req)
	case *kmsg.LeaveGroupRequest:
		s.leaveGroup(now, r, req)
	case *kmsg.OffsetCommitRequest:
		s.offsetCommit(now, r, req)
	case *kmsg.TxnOffsetCommitRequest:
		s.txnOffsetCommit(now, r, req)
	case *kmsg.OffsetFetchRequest:
		s.offsetFetch(r, req)
	case *kmsg.DescribeGroupsRequest:
		s.describeGroups(r, req)
	case *kmsg.DeleteGroupsRequest:
		s.deleteGroups(now, r, req)
	case *kmsg.OffsetDeleteRequest:
		s.offsetDelete(now, r, req)
	case *kmsg.ConsumerGroupHeartbeatRequest:
		s.consumerHeartbeat(now, r, req)
	case *kmsg.ConsumerGroupDescribeRequest:
		s.consumerDescribe(r, req)
	default:
		panic(fmt.Sprintf("group: Step got a %T: the driver must route only group requests here", r.Body))
	}
}

func (s *Shard) appended(now time.Time, id uint64, err error) {
	o := s.ops[id]
	if o == nil {
		panic(fmt.Sprintf("group: Appended(%d) answers no Append in flight", id))
	}
	delete(s.ops, id)
	code := int16(0)
	if err != nil {
		code = AppendErrorCode(err)
	}
	defer s.releaseParked(id, code)
	switch o.kind {
	case opExpire:
		if code != 0 {
			s.restore(now, o)
		}
	case opGroup:
		// Nobody waits. On failure the memory is ahead of the log until
		// the group's next record (each is the whole group) or a new
		// coordinator, which loads what the log has, as in Kafka.
	case opAssignment:
		s.assignmentAppended(now, id, o, code)
	case opStaticJoin:
		s.staticJoinAppended(now, o, code)
	case opCommit:
		s.commitAppended(now, o, code)
	case opTxnCommit:
		s.txnCommitAppended(now, o, code)
	case opConsumer:
		s.consumerAppended(o, code)
	case opDeleteGroups:
		if code != 0 {
			s.restore(now, o)
		}
		for _, i := range o.deleteIdx {
			o.deleteGroups.Groups[i].ErrorCode = code
		}
		s.respond(o.w.id, o.deleteGroups)
	case opDeleteOffsets:
		if code != 0 {
			o.deleteOffsets.ErrorCode = code
			s.restore(now, o)
		}
		s.respond(o.w.id, o.deleteOffsets)
	}
}

// fireGroup runs g's deadlines that passed at now.
func (s *Shard) fireGroup(g *group, now time.Time) {
	if g.consumer != nil {
		s.fireConsumer(g, now)
		return
	}
	expired := false
	for id, t := range g.pending {
		if !t.After(now) {
			delete(g.pending, id)
			expired = true
		}
	}
	if expired && g.state == statePreparing {
		s.maybeCompleteJoin(g, now)
	}
	for _, m := range g.sortedMembers() {
		if m.join == nil && m.sync == nil && !m.deadline.After(now) && g.members[m.id] == m {
			s.removeMember(g, m, codeUnknownMember)
			s.afterRemoval(g, now)
		}
	}
	if g.state == statePreparing && !g.joinDeadline.After(now) {
		s.joinDeadlinePassed(g, now)
	}
	if len(g.pendingSync) > 0 && (g.state == stateCompleting || g.state == stateStable) && !g.syncDeadline.After(now) {
		// Kafka's pending sync timeout: members that did not send
		// SyncGroup within the rebalance timeout after the join phase
		// are removed, and the group rebalances.
		for _, m := range g.sortedMembers() {
			if g.pendingSync[m.id] {
				s.removeMember(g, m, codeUnknownMember)
			}
		}
		g.pendingSync = map[string]bool{}
		s.prepareRebalance(g, now)
	}
	s.maybeDropEmpty(g)
}

// maybeDropEmpty forgets a group that holds nothing at all: no members, no
// pending member ids, no offsets, no writes in flight, never a generation
// (one created by a failed join or a fetch), no pending transactional
// offsets.
func (s *Shard) maybeDropEmpty(g *group) {
	if g.consumer == nil && g.state == stateEmpty && g.generation == 0 && len(g.members) == 0 && len(g.pending) == 0 &&
		len(g.offsets) == 0 && len(g.inflight) == 0 && len(g.txns) == 0 && g.protocolType == "" {
		delete(s.groups, g.id)
	}
}
