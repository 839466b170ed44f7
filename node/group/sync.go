package group

// SyncGroup (versions 0-5), Heartbeat (0-4) and LeaveGroup (0-5), and the
// removal of members.
//
// Behavior:
//   - Every request is checked as Kafka checks it: an unknown group or
//     member is UNKNOWN_MEMBER_ID, a group.instance.id now held by another
//     member id FENCED_INSTANCE_ID, another generation ILLEGAL_GENERATION,
//     a SyncGroup (v5+) naming another protocol type or protocol
//     INCONSISTENT_GROUP_PROTOCOL.
//   - SyncGroup during the join phase is REBALANCE_IN_PROGRESS; in
//     CompletingRebalance followers wait for the leader, whose assignment
//     is written (the group metadata record) and, once Appended, makes the
//     group Stable and answers everyone. A failed write answers the
//     waiting members with the mapped error and rebalances. In Stable a
//     SyncGroup gets the member's assignment at once. Members that have
//     not sent SyncGroup when the rebalance timeout passes after the join
//     phase are removed and the group rebalances (Kafka's pending sync).
//   - Heartbeat in PreparingRebalance is REBALANCE_IN_PROGRESS (the member
//     must rejoin); in Empty UNKNOWN_MEMBER_ID.
//   - LeaveGroup v3+ names members by member id or group.instance.id and
//     answers each; v0-2 one member id, answered at the top.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (s *Shard) respondSyncError(w *waiter, code int16) {
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.Version = w.version
	resp.ErrorCode = code
	s.respond(w.id, resp)
}

func (s *Shard) syncResponse(g *group, m *member, version int16) *kmsg.SyncGroupResponse {
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.Version = version
	resp.ProtocolType = strp(g.protocolType)
	resp.Protocol = strp(g.protocol)
	resp.MemberAssignment = m.assignment
	if resp.MemberAssignment == nil {
		resp.MemberAssignment = []byte{}
	}
	return resp
}

func (s *Shard) syncGroup(now time.Time, r Request, req *kmsg.SyncGroupRequest) {
	w := &waiter{id: r.ID, version: req.Version}
	g := s.groups[req.Group]
	code := int16(0)
	switch {
	case !s.loaded:
		code = codeLoading
	case req.Group == "":
		code = codeInvalidGroupID
	case g == nil:
		code = codeUnknownMember
	case g.consumer != nil:
		s.cgClassicSync(now, r, g, req)
		return
	default:
		code = g.validateMember(req.MemberID, req.InstanceID)
	}
	if code == 0 {
		switch {
		case req.Generation != g.generation:
			code = codeIllegalGen
		case req.ProtocolType != nil && *req.ProtocolType != g.protocolType,
			req.Protocol != nil && *req.Protocol != g.protocol:
			code = codeInconsistent
		case g.state == stateEmpty:
			code = codeUnknownMember
		case g.state == statePreparing:
			code = codeRebalancing
		}
	}
	if code == 0 {
		for _, a := range req.GroupAssignment {
			if len(a.MemberAssignment) > MaxMemberMetadataBytes {
				code = codeInvalidRequest
			}
		}
	}
	if code != 0 {
		s.respondSyncError(w, code)
		return
	}
	m := g.members[req.MemberID]
	m.deadline = now.Add(m.session)
	delete(g.pendingSync, m.id)
	defer s.touch(g)
	if g.state == stateStable {
		s.respond(w.id, s.syncResponse(g, m, w.version))
		return
	}
	// CompletingRebalance.
	if m.sync != nil {
		s.respondSyncError(m.sync, codeRebalancing)
	}
	m.sync = w
	if m.id != g.leader || g.assigning != 0 {
		return
	}
	assign := map[string][]byte{}
	for _, a := range req.GroupAssignment {
		if _, ok := g.members[a.MemberID]; ok {
			assign[a.MemberID] = a.MemberAssignment
		}
	}
	for _, o := range g.members {
		o.assignment = assign[o.id] // members the leader left out get none
	}
	o := &op{kind: opAssignment, g: g, gen: g.generation}
	s.write(o, []Record{groupRecord(g)})
	g.assigning = s.nextAppend
}

// assignmentAppended completes the leader's SyncGroup (Kafka's
// storeGroup callback).
func (s *Shard) assignmentAppended(now time.Time, id uint64, o *op, code int16) {
	g := o.g
	if s.groups[g.id] != g || g.assigning != id || g.state != stateCompleting || g.generation != o.gen {
		return // the group moved on; whoever waited was answered then
	}
	g.assigning = 0
	if code != 0 {
		for _, m := range g.sortedMembers() {
			m.assignment = nil
			if m.sync != nil {
				s.respondSyncError(m.sync, code)
				m.sync = nil
			}
		}
		s.prepareRebalance(g, now)
		s.touch(g)
		return
	}
	g.transition(stateStable, now)
	s.retentionCandidate(g, now)
	for _, m := range g.sortedMembers() {
		if m.sync != nil {
			s.respond(m.sync.id, s.syncResponse(g, m, m.sync.version))
			m.sync = nil
			m.deadline = now.Add(m.session)
		}
	}
	s.touch(g)
}

func (s *Shard) heartbeat(now time.Time, r Request, req *kmsg.HeartbeatRequest) {
	if g, code := s.memberGroup(req.Group); code == 0 && g.consumer != nil {
		s.cgClassicHeartbeat(now, r, g, req)
		return
	}
	resp := kmsg.NewPtrHeartbeatResponse()
	resp.Version = req.Version
	defer s.respond(r.ID, resp)
	g, code := s.memberGroup(req.Group)
	if code != 0 {
		resp.ErrorCode = code
		return
	}
	if code := g.validateMember(req.MemberID, req.InstanceID); code != 0 {
		resp.ErrorCode = code
		return
	}
	if req.Generation != g.generation {
		resp.ErrorCode = codeIllegalGen
		return
	}
	m := g.members[req.MemberID]
	switch g.state {
	case stateEmpty:
		resp.ErrorCode = codeUnknownMember
		return
	case statePreparing:
		resp.ErrorCode = codeRebalancing
	}
	m.deadline = now.Add(m.session)
}

func (s *Shard) leaveGroup(now time.Time, r Request, req *kmsg.LeaveGroupRequest) {
	if g, code := s.memberGroup(req.Group); code == 0 && g.consumer != nil {
		s.cgClassicLeave(now, r, g, req)
		return
	}
	resp := kmsg.NewPtrLeaveGroupResponse()
	resp.Version = req.Version
	defer s.respond(r.ID, resp)
	g, code := s.memberGroup(req.Group)
	if code != 0 {
		resp.ErrorCode = code
		return
	}
	defer s.touch(g)
	removed, pending := false, false
	if req.Version < 3 {
		resp.ErrorCode, removed, pending = s.leaveOne(g, req.MemberID, nil)
	}
	for _, lm := range req.Members {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID = lm.MemberID, lm.InstanceID
		var r, p bool
		rm.ErrorCode, r, p = s.leaveOne(g, lm.MemberID, lm.InstanceID)
		removed, pending = removed || r, pending || p
		resp.Members = append(resp.Members, rm)
	}
	switch {
	case removed:
		s.afterRemoval(g, now)
	case pending:
		// Kafka's removePendingMemberAndUpdateClassicGroup: no rebalance
		// for a member that never joined.
		s.maybeCompleteJoin(g, now)
	}
}

// leaveOne removes one member named by id or by instance id (an id of
// "" with an instance id means any id holding the instance): its code,
// and whether a member or a pending member id went.
func (s *Shard) leaveOne(g *group, memberID string, instanceID *string) (code int16, member, pending bool) {
	if instanceID == nil || *instanceID == "" {
		if _, ok := g.pending[memberID]; ok {
			delete(g.pending, memberID)
			return 0, false, true
		}
	}
	if instanceID != nil && *instanceID != "" {
		id, ok := g.static[*instanceID]
		if !ok {
			return codeUnknownMember, false, false
		}
		if memberID != "" && id != memberID {
			return codeFenced, false, false
		}
		memberID = id
	}
	m := g.members[memberID]
	if m == nil {
		return codeUnknownMember, false, false
	}
	s.removeMember(g, m, codeUnknownMember)
	return 0, true, false
}

// removeMember takes m out of g; what it had waiting gets code.
func (s *Shard) removeMember(g *group, m *member, code int16) {
	if m.join != nil {
		s.respondJoinError(m.join, m.id, code)
		m.join = nil
	}
	if m.sync != nil {
		s.respondSyncError(m.sync, code)
		m.sync = nil
	}
	delete(g.members, m.id)
	if m.instanceID != "" && g.static[m.instanceID] == m.id {
		delete(g.static, m.instanceID)
	}
	delete(g.pendingSync, m.id)
	if g.leader == m.id {
		g.leader = ""
		if ms := g.sortedMembers(); len(ms) > 0 {
			g.leader = ms[0].id
		}
	}
}

// afterRemoval: a stable or completing group rebalances; a group in its
// join phase may now have everyone (Kafka's
// maybePrepareRebalanceOrCompleteJoin after a removal).
func (s *Shard) afterRemoval(g *group, now time.Time) {
	switch g.state {
	case stateStable, stateCompleting:
		s.prepareRebalance(g, now)
	case statePreparing:
		s.maybeCompleteJoin(g, now)
	}
}

// memberGroup is the group a member's Heartbeat or LeaveGroup names, or
// the code that refuses it: COORDINATOR_LOAD_IN_PROGRESS while loading,
// INVALID_GROUP_ID for an empty id, UNKNOWN_MEMBER_ID for a group this
// shard does not know.
func (s *Shard) memberGroup(id string) (*group, int16) {
	switch g := s.groups[id]; {
	case !s.loaded:
		return nil, codeLoading
	case id == "":
		return nil, codeInvalidGroupID
	case g == nil:
		return nil, codeUnknownMember
	default:
		return g, 0
	}
}
