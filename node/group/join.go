package group

// JoinGroup, versions 0-9 (Kafka 4.1 serves 2-9), and the rebalance.
//
// Behavior:
//   - An empty group id is INVALID_GROUP_ID; a session timeout outside
//     group.min/max.session.timeout.ms is INVALID_SESSION_TIMEOUT;
//     protocols over MaxMemberMetadataBytes are INVALID_REQUEST.
//   - A new dynamic member of v4+ gets MEMBER_ID_REQUIRED and an id to
//     rejoin with (KIP-394); the id is pending until it rejoins or its
//     session timeout passes.
//   - A new static member (group.instance.id) whose instance is known
//     replaces the old member id (KIP-345); in a Stable group, when the
//     protocol the group would select does not change, without a
//     rebalance: the group is written and the member answered with the
//     current generation (the leader, v9+: the members and
//     SkipAssignment).
//   - The join phase ends when every member rejoined, or at the rebalance
//     timeout; members that did not rejoin are removed (static ones stay
//     until their session ends). The first rebalance of an empty group
//     waits group.initial.rebalance.delay.ms, again while new members keep
//     coming, up to the rebalance timeout.
//   - group.max.size is GROUP_MAX_SIZE_REACHED for a member the group
//     cannot take (Kafka's acceptJoiningMember); beyond Kafka, pending
//     member ids count too, so that a client cannot pile them up.
//
// Version notes: v0 has no rebalance timeout (the session timeout serves);
// v5+ carry group.instance.id; v7+ answer the protocol type; v9+
// SkipAssignment.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func ms(d time.Duration) int32 { return int32(d / time.Millisecond) }

func durMs(v int32) time.Duration { return time.Duration(v) * time.Millisecond }

func strp(s string) *string { return &s }

func (s *Shard) joinGroup(now time.Time, r Request, req *kmsg.JoinGroupRequest) {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Version = req.Version
	resp.Generation = -1
	resp.MemberID = req.MemberID
	fail := func(code int16) {
		resp.ErrorCode = code
		s.respond(r.ID, resp)
	}
	session := durMs(req.SessionTimeoutMillis)
	rebalance := durMs(req.RebalanceTimeoutMillis)
	if req.Version == 0 {
		rebalance = session
	}
	protos := make([]protocol, 0, len(req.Protocols))
	for _, p := range req.Protocols {
		protos = append(protos, protocol{name: p.Name, metadata: p.Metadata})
	}
	size := protocolBytes(protos)
	instance := ""
	if req.InstanceID != nil {
		instance = *req.InstanceID
	}
	switch {
	case !s.loaded:
		fail(codeLoading)
		return
	case req.Group == "":
		fail(codeInvalidGroupID)
		return
	case session < s.cfg.MinSessionTimeout || session > s.cfg.MaxSessionTimeout:
		fail(codeInvalidSession)
		return
	case size > MaxMemberMetadataBytes:
		fail(codeInvalidRequest)
		return
	}
	g := s.groups[req.Group]
	if g == nil {
		if req.MemberID != "" {
			fail(codeUnknownMember)
			return
		}
		g = newGroup(req.Group, now)
		s.groups[g.id] = g
	}
	if g.consumer != nil {
		if len(g.consumer.members) > 0 {
			// A classic member of a consumer group (mixed.go).
			s.cgClassicJoin(now, r, g, req, protos, session, rebalance)
			return
		}
		// An empty consumer group becomes a classic group, its offsets
		// kept (written as the group's first generation).
		tombs := consumerTombstones(g)
		g.consumer, g.protocolType, g.subscribed = nil, "", nil
		s.write(&op{kind: opGroup, g: g}, tombs)
	}
	defer func() {
		s.maybeDropEmpty(g)
		if s.groups[g.id] == g {
			s.touch(g)
		}
	}()
	sizeID := req.MemberID
	if id, ok := g.static[instance]; ok && instance != "" && sizeID == "" {
		sizeID = id // a static member's restart is not a new member
	}
	if !s.acceptJoiningMember(g, sizeID) || !s.fitsBudget(g, sizeID, size) {
		if m := g.members[sizeID]; m != nil {
			// Kafka removes a member it refuses, so that the join phase
			// can end without it.
			s.removeMember(g, m, codeMaxSize)
			s.afterRemoval(g, now)
		}
		fail(codeMaxSize)
		return
	}
	w := &waiter{id: r.ID, version: req.Version}
	nm := &member{
		instanceID: instance, clientID: r.ClientID, clientHost: r.ClientHost,
		session: session, rebalance: rebalance, protocols: protos,
	}
	if req.MemberID == "" {
		if !g.supportsProtocols(req.ProtocolType, protos) {
			fail(codeInconsistent)
			return
		}
		if instance != "" {
			if old, ok := g.static[instance]; ok {
				s.replaceStatic(now, g, g.members[old], nm, w)
				return
			}
			nm.id = s.newMemberID(instance)
		} else {
			nm.id = s.newMemberID(r.ClientID)
			if req.Version >= 4 {
				g.pending[nm.id] = now.Add(session)
				resp.MemberID = nm.id
				fail(codeMemberIDRequired)
				return
			}
		}
		s.addMember(now, g, nm, req.ProtocolType, w)
		return
	}
	// An existing member: Kafka's classicGroupJoinExistingMember.
	if !g.supportsProtocols(req.ProtocolType, protos) {
		fail(codeInconsistent)
		return
	}
	if _, ok := g.pending[req.MemberID]; ok && instance == "" {
		delete(g.pending, req.MemberID)
		nm.id = req.MemberID
		s.addMember(now, g, nm, req.ProtocolType, w)
		return
	}
	if code := g.validateMember(req.MemberID, req.InstanceID); code != 0 {
		fail(code)
		return
	}
	m := g.members[req.MemberID]
	m.clientID, m.clientHost = r.ClientID, r.ClientHost
	switch g.state {
	case statePreparing:
		s.updateMember(m, nm, w)
		s.maybeCompleteJoin(g, now)
	case stateCompleting:
		if m.sameProtocols(protos) {
			// A member that did not get its answer: the same again.
			m.deadline = now.Add(m.session)
			s.respond(w.id, s.joinResponse(g, m, w.version, false))
			return
		}
		s.updateMember(m, nm, w)
		s.prepareRebalance(g, now)
	case stateStable:
		if m.id != g.leader && m.sameProtocols(protos) {
			m.deadline = now.Add(m.session)
			s.respond(w.id, s.joinResponse(g, m, w.version, false))
			return
		}
		s.updateMember(m, nm, w)
		s.prepareRebalance(g, now)
	default:
		fail(codeUnknownMember)
	}
}

// acceptJoiningMember is Kafka's rule for group.max.size, plus a bound on
// pending member ids.
func (s *Shard) acceptJoiningMember(g *group, memberID string) bool {
	max := s.cfg.MaxSize
	if max <= 0 {
		return true
	}
	m := g.members[memberID]
	if m == nil && memberID == "" && len(g.pending) >= max {
		return false
	}
	switch g.state {
	case statePreparing:
		if m != nil && m.join != nil {
			return true
		}
		n := 0
		for _, m := range g.members {
			if m.join != nil {
				n++
			}
		}
		return n < max
	case stateCompleting, stateStable:
		return m != nil || len(g.members) < max
	}
	return true
}

// fitsBudget: the group's protocols stay within the shard's budget
// (MaxGroupMetadataBytes) with memberID's replaced by size bytes.
func (s *Shard) fitsBudget(g *group, memberID string, size int) bool {
	total := g.metadataBytes() + size
	if m := g.members[memberID]; m != nil {
		total -= protocolBytes(m.protocols)
	}
	return total <= s.groupBudget
}

// updateMember takes a known member's rejoin (Kafka's updateMember); a
// JoinGroup it still had waiting is superseded and answered
// REBALANCE_IN_PROGRESS (Kafka drops it unanswered).
func (s *Shard) updateMember(m, nm *member, w *waiter) {
	if m.join != nil {
		s.respondJoinError(m.join, m.id, codeRebalancing)
	}
	m.protocols, m.session, m.rebalance = nm.protocols, nm.session, nm.rebalance
	m.join = w
}

func (s *Shard) respondJoinError(w *waiter, memberID string, code int16) {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Version = w.version
	resp.Generation = -1
	resp.MemberID = memberID
	resp.ErrorCode = code
	s.respond(w.id, resp)
}

// addMember is Kafka's addMemberThenRebalanceOrCompleteJoin.
func (s *Shard) addMember(now time.Time, g *group, m *member, protocolType string, w *waiter) {
	if len(g.members) == 0 {
		g.protocolType = protocolType
	}
	if g.leader == "" {
		g.leader = m.id
	}
	m.join = w
	m.deadline = now.Add(m.session)
	g.members[m.id] = m
	if m.instanceID != "" {
		g.static[m.instanceID] = m.id
	}
	if g.state == statePreparing && g.prevState == stateEmpty {
		g.newMemberAdded = true // the initial delay may be extended
	}
	s.maybePrepareRebalanceOrCompleteJoin(g, now)
}

func (s *Shard) maybePrepareRebalanceOrCompleteJoin(g *group, now time.Time) {
	switch g.state {
	case stateEmpty, stateStable, stateCompleting:
		s.prepareRebalance(g, now)
	default:
		s.maybeCompleteJoin(g, now)
	}
}

// prepareRebalance is Kafka's: SyncGroups waiting get
// REBALANCE_IN_PROGRESS; an empty group's first join phase waits the
// initial delay; otherwise the phase ends now if everyone has joined, or
// at the rebalance timeout.
func (s *Shard) prepareRebalance(g *group, now time.Time) {
	if g.state == stateCompleting {
		for _, m := range g.sortedMembers() {
			m.assignment = nil
			if m.sync != nil {
				s.respondSyncError(m.sync, codeRebalancing)
				m.sync = nil
			}
		}
	}
	g.pendingSync = map[string]bool{}
	g.syncDeadline = time.Time{}
	g.assigning = 0
	initial := g.state == stateEmpty
	g.transition(statePreparing, now)
	if initial {
		g.initialDelay = true
		g.delay = s.cfg.InitialRebalanceDelay
		g.remaining = max(g.rebalanceTimeout()-g.delay, 0)
		g.joinDeadline = now.Add(g.delay)
		g.newMemberAdded = false
		return
	}
	g.initialDelay = false
	if g.allJoined() {
		s.completeJoin(g, now)
		return
	}
	g.joinDeadline = now.Add(g.rebalanceTimeout())
}

// maybeCompleteJoin ends the join phase when every member has joined,
// except during the initial delay (Kafka's maybeCompleteJoinPhase).
func (s *Shard) maybeCompleteJoin(g *group, now time.Time) {
	if g.state == statePreparing && g.allJoined() && g.prevState != stateEmpty {
		s.completeJoin(g, now)
	}
}

// joinDeadlinePassed: the initial delay ran out (extend it while new
// members came, up to the rebalance timeout) or the rebalance timeout did.
func (s *Shard) joinDeadlinePassed(g *group, now time.Time) {
	if g.initialDelay && g.newMemberAdded && g.remaining > 0 {
		g.newMemberAdded = false
		delay := min(s.cfg.InitialRebalanceDelay, g.remaining)
		g.remaining = max(g.remaining-g.delay, 0)
		g.delay = delay
		g.joinDeadline = now.Add(delay)
		return
	}
	s.completeJoin(g, now)
}

// completeJoin is Kafka's completeClassicGroupJoin.
func (s *Shard) completeJoin(g *group, now time.Time) {
	for _, m := range g.sortedMembers() {
		if m.join == nil && !m.static() {
			s.removeMember(g, m, codeUnknownMember)
		}
	}
	g.initialDelay, g.newMemberAdded = false, false
	if len(g.members) > 0 && !g.electJoinedLeader() {
		// Only static members that did not rejoin are left: wait for
		// their sessions to end (Kafka postpones the same way).
		g.joinDeadline = now.Add(g.rebalanceTimeout())
		return
	}
	g.joinDeadline = time.Time{}
	g.generation++
	s.rebalances++
	if len(g.members) == 0 {
		g.protocol, g.leader = "", ""
		g.computeSubscribed() // no members: subscribed to nothing, as Kafka's Empty group
		g.transition(stateEmpty, now)
		s.write(&op{kind: opGroup, g: g}, []Record{groupRecord(g)})
		s.retentionCandidate(g, now)
		return
	}
	g.protocol = g.selectProtocol()
	g.computeSubscribed()
	g.transition(stateCompleting, now)
	for _, m := range g.sortedMembers() {
		if m.join != nil {
			w := m.join
			m.join = nil
			s.respond(w.id, s.joinResponse(g, m, w.version, false))
		}
		m.deadline = now.Add(m.session)
		g.pendingSync[m.id] = true
	}
	g.syncDeadline = now.Add(g.rebalanceTimeout())
}

// electJoinedLeader keeps the leader if it rejoined, else takes the first
// member that did (Kafka's maybeElectNewJoinedLeader).
func (g *group) electJoinedLeader() bool {
	if l := g.members[g.leader]; l != nil && l.join != nil {
		return true
	}
	for _, m := range g.sortedMembers() {
		if m.join != nil {
			g.leader = m.id
			return true
		}
	}
	return false
}

// joinResponse is the answer of the current generation for m; the leader
// gets the members' metadata (unless skip says its assignment stands, and
// then too from v9, with SkipAssignment).
func (s *Shard) joinResponse(g *group, m *member, version int16, skip bool) *kmsg.JoinGroupResponse {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Version = version
	resp.Generation = g.generation
	resp.ProtocolType = strp(g.protocolType)
	resp.Protocol = strp(g.protocol)
	resp.LeaderID = g.leader
	resp.MemberID = m.id
	if m.id == g.leader && (!skip || version >= 9) {
		resp.SkipAssignment = skip
		for _, o := range g.sortedMembers() {
			rm := kmsg.NewJoinGroupResponseMember()
			rm.MemberID = o.id
			if o.instanceID != "" {
				rm.InstanceID = strp(o.instanceID)
			}
			rm.ProtocolMetadata = o.metadata(g.protocol)
			resp.Members = append(resp.Members, rm)
		}
	}
	return resp
}

// replaceStatic is Kafka's updateStaticMemberThenRebalanceOrCompleteJoin:
// old's id is fenced and nm takes its place and its assignment.
func (s *Shard) replaceStatic(now time.Time, g *group, old, nm *member, w *waiter) {
	nm.id = s.newMemberID(nm.instanceID)
	if old.join != nil {
		s.respondJoinError(old.join, old.id, codeFenced)
		old.join = nil
	}
	if old.sync != nil {
		s.respondSyncError(old.sync, codeFenced)
		old.sync = nil
	}
	oldID, oldLeader := old.id, g.leader
	undo := *old // what a failed write puts back
	s.swapMember(g, oldID, nm.id)
	m := g.members[nm.id]
	m.clientID, m.clientHost = nm.clientID, nm.clientHost
	m.protocols, m.session, m.rebalance = nm.protocols, nm.session, nm.rebalance
	m.deadline = now.Add(m.session)
	switch g.state {
	case stateStable:
		if g.selectProtocol() == g.protocol {
			s.write(&op{kind: opStaticJoin, g: g, w: *w, instance: m.instanceID, oldID: oldID, newID: m.id,
				oldLeader: oldLeader, undo: &undo}, []Record{groupRecord(g)})
			return
		}
		m.join = w
		s.prepareRebalance(g, now)
	case stateCompleting:
		m.join = w
		s.prepareRebalance(g, now)
	default:
		m.join = w
		s.maybeCompleteJoin(g, now)
	}
}

// swapMember moves the member from id from to id to, keeping its place
// (leader, pending sync, static mapping).
func (s *Shard) swapMember(g *group, from, to string) {
	m := g.members[from]
	delete(g.members, from)
	m.id = to
	g.members[to] = m
	if m.instanceID != "" {
		g.static[m.instanceID] = to
	}
	if g.leader == from {
		g.leader = to
	}
	if g.pendingSync[from] {
		delete(g.pendingSync, from)
		g.pendingSync[to] = true
	}
}

func (s *Shard) staticJoinAppended(now time.Time, o *op, code int16) {
	g := o.g
	m := g.members[o.newID]
	if s.groups[g.id] != g || m == nil {
		s.respondJoinError(&o.w, o.newID, codeUnknownMember)
		return
	}
	if code != 0 {
		// Kafka reverts the replacement: the old id is the member again,
		// with its protocols and timeouts.
		if g.static[o.instance] == o.newID {
			s.swapMember(g, o.newID, o.oldID)
			m.clientID, m.clientHost = o.undo.clientID, o.undo.clientHost
			m.protocols, m.session, m.rebalance = o.undo.protocols, o.undo.session, o.undo.rebalance
			m.deadline = now.Add(m.session)
		}
		s.respondJoinError(&o.w, "", code)
		s.touch(g)
		return
	}
	m.deadline = now.Add(m.session)
	resp := s.joinResponse(g, m, o.w.version, m.id == g.leader)
	if o.w.version < 9 {
		// Without SkipAssignment a restarted leader must not assign: it
		// is told the leader is the member id it replaced, and so acts
		// as a follower (Kafka does the same).
		resp.LeaderID = o.oldLeader
	}
	s.respond(o.w.id, resp)
	s.touch(g)
}
