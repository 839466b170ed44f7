package group

// ConsumerGroupHeartbeat (versions 0-1): the KIP-848 consumer protocol,
// as Kafka 4.1's GroupMetadataManager serves it.
//
// Behavior:
//   - Join: member epoch 0. v0: the coordinator makes the member id; v1:
//     the client brings it (KIP-1082). The first request must name the
//     subscription (topic names, or from v1 a RE2 regular expression) and
//     a rebalance timeout, and own nothing. A new member, or a changed
//     subscription or server assignor, bumps the group epoch.
//   - Heartbeat: member epoch > 0. A member answering with its previous
//     epoch is accepted if it owns nothing beyond its assignment (its
//     last answer was lost); any other epoch is FENCED_MEMBER_EPOCH.
//   - The target assignment is computed (uniform or range) when the group
//     epoch is ahead of the assignment epoch; each member then reconciles
//     toward its target: partitions to give up first (UNREVOKED: epoch
//     kept until the member's heartbeat shows it released them), then new
//     partitions as their previous owners release them (UNRELEASED: the
//     new epoch, part of the target). A member that does not revoke within
//     its rebalance timeout is removed.
//   - Leave: epoch -1 removes the member; -2 (static) keeps its
//     assignment for the session timeout, so a restart with the same
//     group.instance.id takes it over without a rebalance. A second live
//     member with the same instance id is UNRELEASED_INSTANCE_ID.
//   - A group id is a classic or a consumer group: an empty classic group
//     becomes a consumer group (its offsets kept); a Stable classic group
//     with members is upgraded online, and classic members join a
//     consumer group (mixed groups): mixed.go.
//   - Every change is written as Kafka's records (records848.go) and the
//     heartbeat answered when they are Appended; a failed write is
//     answered with the mapped error and the whole group written again.

import (
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// memberState is Kafka's MemberState (the record's int8).
type memberState int8

const (
	mStable     memberState = 0 // owns its target
	mUnrevoked  memberState = 1 // must release partitions first
	mUnreleased memberState = 2 // waits for partitions others still own
)

var zeroTime time.Time

// cmember is one member of a consumer group.
type cmember struct {
	id, instanceID, rackID, clientID, clientHost string

	topicNames []string // sorted
	regex      string
	assignor   string
	rebalance  time.Duration

	epoch, prevEpoch int32 // -2: left as a static member
	state            memberState
	assigned         tps // what it owns (and may fetch)
	revoking         tps // what it must release

	deadline       time.Time // session expiry
	revokeDeadline time.Time // while revoking: removed then

	classic *classicMeta // a member using the classic protocol (mixed.go); nil: the consumer protocol
}

// cgroup is the KIP-848 part of a group.
type cgroup struct {
	id              string
	epoch           int32
	assignmentEpoch int32
	metadataHash    int64
	members         map[string]*cmember
	static          map[string]string // instance id → member id
	target          map[string]tps
	assignorUsed    string
}

func (g *group) makeConsumer() {
	g.consumer = &cgroup{id: g.id, members: map[string]*cmember{}, static: map[string]string{}, target: map[string]tps{}}
	g.protocolType, g.protocol, g.leader, g.generation = "consumer", "", "", 0
	g.subscribed = map[string]bool{}
}

// dropConsumer forgets the consumer part of an empty consumer group (its
// offsets stay).
func (s *Shard) dropConsumer(g *group) {
	g.consumer, g.protocolType, g.subscribed = nil, "", nil
	s.maybeDropEmpty(g)
}

func (c *cgroup) member(id string) *cmember {
	m := c.members[id]
	if m == nil {
		m = &cmember{id: id, assigned: tps{}, revoking: tps{}}
		c.members[id] = m
	}
	return m
}

func (c *cgroup) removeMember(id string) {
	if m := c.members[id]; m != nil && m.instanceID != "" && c.static[m.instanceID] == id {
		delete(c.static, m.instanceID)
	}
	delete(c.members, id)
}

func (c *cgroup) indexStatic() {
	clear(c.static)
	for _, m := range c.members {
		if m.instanceID != "" {
			c.static[m.instanceID] = m.id
		}
	}
}

func (c *cgroup) sortedMembers() []*cmember {
	ms := make([]*cmember, 0, len(c.members))
	for _, id := range sortedKeys(c.members) {
		ms = append(ms, c.members[id])
	}
	return ms
}

// stateName is Kafka's ConsumerGroupState.
func (c *cgroup) stateName() string {
	switch {
	case len(c.members) == 0:
		return "Empty"
	case c.assignmentEpoch < c.epoch:
		return "Assigning"
	}
	for _, m := range c.members {
		if m.epoch != c.assignmentEpoch || m.state != mStable {
			return "Reconciling"
		}
	}
	return "Stable"
}

// cgWrite is the write of a consumer group's records.
type cgWrite struct {
	g       *group
	recs    []Record
	removed []string // member ids whose tombstones are in recs
}

func (w *cgWrite) add(r ...Record) { w.recs = append(w.recs, r...) }

// flush queues w's records (if any) for the waiter wt (nil: nobody waits)
// answered with resp; it answers at once when nothing is to be written.
func (s *Shard) flushCG(w *cgWrite, wt *waiter, resp kmsg.Response) {
	if len(w.recs) == 0 {
		if wt == nil {
			return
		}
		if _, inFlight := s.ops[s.nextAppend]; inFlight {
			if s.parked == nil {
				s.parked = map[uint64][]parkedAnswer{}
			}
			s.parked[s.nextAppend] = append(s.parked[s.nextAppend], parkedAnswer{wt.id, resp})
			return
		}
		s.respond(wt.id, resp)
		return
	}
	o := &op{kind: opConsumer, g: w.g, cgResp: resp, cgRemoved: w.removed}
	if wt != nil {
		o.w = *wt
		o.cgWaits = true
	}
	s.write(o, w.recs)
}

// consumerAppended answers a consumer group write; a failed one is
// answered with the mapped error and the group is written whole again
// (records are upserts by key), with the tombstones of members it
// removed, so that the log catches up with memory.
func (s *Shard) consumerAppended(o *op, code int16) {
	if code != 0 && s.groups[o.g.id] == o.g && o.g.consumer != nil {
		w := &cgWrite{g: o.g}
		for _, id := range o.cgRemoved {
			if o.g.consumer.members[id] == nil {
				w.add(cgMemberTombstones(o.g.consumer, id)...)
				w.removed = append(w.removed, id)
			}
		}
		w.add(cgRecords(o.g.consumer)...)
		s.flushCG(w, nil, nil)
	}
	if !o.cgWaits {
		return
	}
	if code != 0 {
		o.cgResp = withError(o.cgResp, code)
	}
	s.respond(o.w.id, o.cgResp)
}

func cgError(version int16, code int16, msg string) *kmsg.ConsumerGroupHeartbeatResponse {
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.Version, resp.ErrorCode, resp.MemberEpoch = version, code, -1
	if msg != "" {
		resp.ErrorMessage = strp(msg)
	}
	return resp
}

// validateHeartbeat is Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid.
func validateHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest) string {
	switch {
	case req.Group == "":
		return "GroupId can't be empty."
	case req.InstanceID != nil && *req.InstanceID == "":
		return "InstanceId can't be empty."
	case req.RackID != nil && *req.RackID == "":
		return "RackId can't be empty."
	case req.Version >= 1 && req.MemberID == "":
		return "MemberId can't be empty."
	case req.Version == 0 && req.MemberEpoch != 0 && req.MemberID == "":
		return "MemberId can't be empty."
	case req.MemberEpoch < -2:
		return "MemberEpoch is invalid."
	case req.MemberEpoch == -2 && req.InstanceID == nil:
		return "InstanceId can't be null."
	case req.MemberEpoch == 0 && req.RebalanceTimeoutMillis == -1:
		return "RebalanceTimeoutMs must be provided in first request."
	case req.MemberEpoch == 0 && len(req.Topics) > 0:
		return "TopicPartitions must be empty when (re-)joining."
	case req.MemberEpoch == 0 && req.SubscribedTopicNames == nil && req.SubscribedTopicRegex == nil:
		return "SubscribedTopicNames or SubscribedTopicRegex must be set in first request."
	case req.ServerAssignor != nil && *req.ServerAssignor == "":
		return "ServerAssignor can't be empty."
	}
	return ""
}

func (s *Shard) consumerHeartbeat(now time.Time, r Request, req *kmsg.ConsumerGroupHeartbeatRequest) {
	wt := &waiter{id: r.ID, version: req.Version}
	fail := func(code int16, msg string) { s.respond(r.ID, cgError(req.Version, code, msg)) }
	if !s.loaded {
		fail(codeLoading, "")
		return
	}
	if msg := validateHeartbeat(req); msg != "" {
		fail(codeInvalidRequest, msg)
		return
	}
	if subscriptionBytes(req) > MaxMemberMetadataBytes {
		fail(codeInvalidRequest, "The subscription is over "+strconv.Itoa(MaxMemberMetadataBytes)+" bytes.")
		return
	}
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != "" {
		if _, err := regexp.Compile(*req.SubscribedTopicRegex); err != nil {
			fail(codeInvalidRegex, "SubscribedTopicRegex "+*req.SubscribedTopicRegex+" is not a valid regular expression: "+err.Error())
			return
		}
	}
	if req.ServerAssignor != nil && !slices.Contains(s.cfg.ConsumerAssignors, *req.ServerAssignor) {
		fail(codeUnsupportedAssignor, "ServerAssignor "+*req.ServerAssignor+" is not supported.")
		return
	}
	g := s.groups[req.Group]
	switch {
	case (g == nil || g.consumer == nil) && req.MemberEpoch != 0:
		fail(codeUnknownMember, "")
		return
	case g != nil && g.consumer == nil && len(g.members) == 0 && (len(g.pending) > 0 || g.state != stateEmpty):
		fail(codeNotAvailable, "Classic group "+req.Group+" is rebalancing: its upgrade to the consumer protocol waits until it is Stable; retry.")
		return
	case g == nil:
		g = newGroup(req.Group, now)
		s.groups[g.id] = g
		g.makeConsumer()
	}
	w := &cgWrite{g: g}
	if g.consumer == nil && len(g.members) > 0 { // the online upgrade (mixed.go)
		if code, msg := s.upgrade(now, g, w); code != 0 {
			fail(code, msg)
			return
		}
	}
	if g.consumer == nil { // an empty classic group becomes a consumer group, its offsets kept
		if g.generation > 0 || g.protocolType != "" {
			w.add(groupTombstone(g.id))
		}
		g.makeConsumer()
	}
	switch {
	case req.MemberEpoch < 0:
		s.cgLeave(now, g, req, w, wt)
	default:
		s.cgHeartbeat(now, g, r, req, w, wt)
	}
	s.touch(g)
}

func (s *Shard) cgLeave(now time.Time, g *group, req *kmsg.ConsumerGroupHeartbeatRequest, w *cgWrite, wt *waiter) {
	c := g.consumer
	m := c.members[req.MemberID]
	if m == nil {
		s.respond(wt.id, cgError(req.Version, codeUnknownMember, ""))
		return
	}
	if req.InstanceID != nil && c.static[*req.InstanceID] != m.id {
		s.respond(wt.id, cgError(req.Version, codeFenced, ""))
		return
	}
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.Version, resp.MemberID, resp.MemberEpoch = req.Version, strp(m.id), req.MemberEpoch
	if req.MemberEpoch == -2 {
		// A static member leaving for a restart: it keeps its place
		// and partitions until its session ends.
		m.prevEpoch, m.epoch = m.epoch, -2
		m.deadline = now.Add(s.cfg.ConsumerSessionTimeout)
		w.add(cgCurrentRecord(c, m))
	} else {
		s.cgRemove(now, g, m, w)
		s.maybeDowngrade(now, g, w)
	}
	s.flushCG(w, wt, resp)
}

// cgRemove removes m and bumps the group epoch.
func (s *Shard) cgRemove(now time.Time, g *group, m *cmember, w *cgWrite) {
	c := g.consumer
	c.removeMember(m.id)
	delete(c.target, m.id)
	w.add(cgMemberTombstones(c, m.id)...)
	w.removed = append(w.removed, m.id)
	c.epoch++
	s.cgSubscriptionsChanged(g)
	w.add(cgMetadataRecord(c))
	if len(c.members) == 0 {
		g.transition(stateEmpty, now)
		s.retentionCandidate(g, now)
	}
}

func (s *Shard) cgHeartbeat(now time.Time, g *group, r Request, req *kmsg.ConsumerGroupHeartbeatRequest, w *cgWrite, wt *waiter) {
	c := g.consumer
	var m *cmember
	joining := req.MemberEpoch == 0
	bump := false
	if joining {
		var code int16
		var msg string
		if m, bump, code, msg = s.cgJoin(now, g, req, w); code != 0 {
			s.respond(wt.id, cgError(req.Version, code, msg))
			return
		}
	} else {
		m = c.members[req.MemberID]
		switch {
		case m == nil || m.classic != nil:
			s.respond(wt.id, cgError(req.Version, codeUnknownMember, ""))
			return
		case req.InstanceID != nil && c.static[*req.InstanceID] != m.id:
			s.respond(wt.id, cgError(req.Version, codeFenced, ""))
			return
		case req.MemberEpoch > m.epoch:
			s.respond(wt.id, cgError(req.Version, codeFencedEpoch, "The consumer group member has a greater member epoch than expected."))
			return
		case req.MemberEpoch < m.epoch && (req.MemberEpoch != m.prevEpoch || !s.subset(req.Topics, m.assigned)):
			s.respond(wt.id, cgError(req.Version, codeFencedEpoch, "The consumer group member has a smaller member epoch than expected."))
			return
		}
	}
	m.deadline = now.Add(s.cfg.ConsumerSessionTimeout)
	if s.cgUpdateMember(m, r, req) {
		bump = true
		w.add(cgMemberRecord(c, m))
	}
	if bump {
		c.epoch++
		s.cgSubscriptionsChanged(g)
		w.add(cgMetadataRecord(c))
	}
	if c.assignmentEpoch < c.epoch {
		s.cgAssign(g, w)
	}
	before := cloneTPs(m.assigned)
	beforeEpoch := m.epoch
	var owned tps
	if req.Topics != nil {
		owned = s.ownedFrom(req.Topics)
	}
	if s.cgReconcile(c, m, owned, now) {
		w.add(cgCurrentRecord(c, m))
	}
	g.transition(stateStable, g.stateTime)
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.Version, resp.MemberID, resp.MemberEpoch = req.Version, strp(m.id), m.epoch
	resp.HeartbeatIntervalMillis = ms(s.cfg.ConsumerHeartbeatInterval)
	if joining || beforeEpoch != m.epoch || req.MemberEpoch != m.epoch || !equalTPs(before, m.assigned) || (owned != nil && !equalTPs(owned, m.assigned)) {
		a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
		for _, id := range sortedIDs(m.assigned) {
			t := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
			t.TopicID, t.Partitions = id, slices.Clone(m.assigned[id])
			a.Topics = append(a.Topics, t)
		}
		resp.Assignment = &a
	}
	s.flushCG(w, wt, resp)
}

// cgJoin finds or makes the member of a request with epoch 0; bump
// reports a new member.
func (s *Shard) cgJoin(now time.Time, g *group, req *kmsg.ConsumerGroupHeartbeatRequest, w *cgWrite) (m *cmember, bump bool, code int16, msg string) {
	c := g.consumer
	id := req.MemberID
	if req.Version == 0 && id == "" {
		id = s.newMemberID("")[1:]
	}
	if req.InstanceID != nil {
		if oldID, ok := c.static[*req.InstanceID]; ok && oldID != id {
			old := c.members[oldID]
			if old.epoch != -2 && old.classic == nil {
				return nil, false, codeUnreleasedInstance, "Static member " + oldID + " with instance id " + *req.InstanceID + " is not released yet."
			}
			// The restart of a static member: the new id takes the old
			// one's place, epoch and partitions, without a rebalance.
			c.removeMember(oldID)
			w.add(cgMemberTombstones(c, oldID)...)
			w.removed = append(w.removed, oldID)
			nm := *old
			nm.id, nm.classic = id, nil // a classic static member restarted on the consumer protocol
			if old.epoch == -2 {
				nm.epoch = old.prevEpoch
			}
			c.members[id] = &nm
			c.static[nm.instanceID] = id
			if t, ok := c.target[oldID]; ok {
				c.target[id] = t
				delete(c.target, oldID)
				w.add(cgTargetMemberRecord(c, id))
			}
			w.add(cgMemberRecord(c, &nm), cgCurrentRecord(c, &nm))
			return &nm, false, 0, ""
		}
	}
	if m = c.members[id]; m != nil && m.classic != nil {
		return nil, false, codeUnknownMember, "Member " + id + " of group " + g.id + " uses the classic protocol."
	}
	if m != nil {
		// A member rejoining with epoch 0 lost what it owned.
		m.assigned, m.revoking, m.state, m.prevEpoch, m.epoch = tps{}, tps{}, mStable, 0, 0
		return m, false, 0, ""
	}
	if s.cfg.ConsumerMaxSize > 0 && len(c.members) >= s.cfg.ConsumerMaxSize {
		return nil, false, codeMaxSize, "The consumer group has reached its maximum capacity of " + strconv.Itoa(s.cfg.ConsumerMaxSize) + " members."
	}
	if c.bytes()+subscriptionBytes(req) > s.groupBudget {
		// As for classic groups: thousands of joins cannot exhaust the
		// coordinator's memory even when group.consumer.max.size is
		// unbounded (Kafka's default).
		return nil, false, codeMaxSize, "The consumer group's members are over " + strconv.Itoa(s.groupBudget) + " bytes."
	}
	m = c.member(id)
	if req.InstanceID != nil {
		m.instanceID = *req.InstanceID
		c.static[m.instanceID] = id
	}
	return m, true, 0, ""
}

// cgUpdateMember takes the request's fields that are set; true if the
// member's record changed (a changed subscription or assignor bumps the
// group epoch through the caller's member record).
func (s *Shard) cgUpdateMember(m *cmember, r Request, req *kmsg.ConsumerGroupHeartbeatRequest) bool {
	changed := false
	set := func(dst *string, v string) {
		if *dst != v {
			*dst, changed = v, true
		}
	}
	if req.MemberEpoch == 0 {
		set(&m.clientID, r.ClientID)
		set(&m.clientHost, r.ClientHost)
	}
	if req.RackID != nil {
		set(&m.rackID, *req.RackID)
	}
	if req.RebalanceTimeoutMillis > 0 && durMs(req.RebalanceTimeoutMillis) != m.rebalance {
		m.rebalance, changed = durMs(req.RebalanceTimeoutMillis), true
	}
	if req.SubscribedTopicNames != nil {
		names := slices.Clone(req.SubscribedTopicNames)
		slices.Sort(names)
		names = slices.Compact(names)
		if !slices.Equal(names, m.topicNames) {
			m.topicNames, changed = names, true
		}
	}
	if req.SubscribedTopicRegex != nil {
		set(&m.regex, *req.SubscribedTopicRegex)
	}
	if req.ServerAssignor != nil {
		set(&m.assignor, *req.ServerAssignor)
	}
	return changed
}

// ownedFrom is the request's owned partitions, of topics it knows.
func (s *Shard) ownedFrom(ts []kmsg.ConsumerGroupHeartbeatRequestTopic) tps {
	out := tps{}
	for _, t := range ts {
		ps := slices.Clone(t.Partitions)
		slices.Sort(ps)
		out[t.TopicID] = slices.Compact(append(out[t.TopicID], ps...))
	}
	return out
}

func (s *Shard) subset(ts []kmsg.ConsumerGroupHeartbeatRequestTopic, of tps) bool {
	for id, ps := range s.ownedFrom(ts) {
		for _, p := range ps {
			if !hasTP(of, id, p) {
				return false
			}
		}
	}
	return true
}

// cgReconcile moves m toward its target (Kafka's CurrentAssignmentBuilder);
// owned is what its heartbeat says it owns (nil: not said). True if m
// changed.
func (s *Shard) cgReconcile(c *cgroup, m *cmember, owned tps, now time.Time) bool {
	if m.epoch < 0 {
		return false
	}
	target := c.target[m.id]
	changed := false
	if m.state == mUnrevoked {
		if owned == nil || intersects(owned, m.revoking) {
			return false
		}
		m.revoking, m.state, m.revokeDeadline, changed = tps{}, mStable, time.Time{}, true
	}
	if m.epoch == c.assignmentEpoch && m.state == mStable && equalTPs(m.assigned, target) {
		return changed
	}
	keep, revoke := splitTPs(m.assigned, target)
	if len(revoke) > 0 {
		m.assigned, m.revoking, m.state = keep, revoke, mUnrevoked
		m.revokeDeadline = now.Add(m.rebalance)
		return true
	}
	owners := c.owners(m.id)
	next := cloneTPs(keep)
	unreleased := false
	for _, id := range sortedIDs(target) {
		for _, p := range target[id] {
			if hasTP(keep, id, p) {
				continue
			}
			if owners[tpID{id, p}] {
				unreleased = true
				continue
			}
			next[id] = append(next[id], p)
		}
	}
	for id := range next {
		slices.Sort(next[id])
	}
	st := mStable
	if unreleased {
		st = mUnreleased
	}
	if m.epoch != c.assignmentEpoch {
		m.prevEpoch, m.epoch = m.epoch, c.assignmentEpoch
		changed = true
	}
	if !equalTPs(next, m.assigned) || st != m.state {
		changed = true
	}
	m.assigned, m.state = next, st
	return changed
}

type tpID struct {
	id [16]byte
	p  int32
}

// owners is every partition another member than skip owns or revokes.
func (c *cgroup) owners(skip string) map[tpID]bool {
	out := map[tpID]bool{}
	for _, m := range c.members {
		if m.id == skip {
			continue
		}
		for _, set := range []tps{m.assigned, m.revoking} {
			for id, ps := range set {
				for _, p := range ps {
					out[tpID{id, p}] = true
				}
			}
		}
	}
	return out
}

// fireConsumer expires members whose session ended and members that did
// not revoke within their rebalance timeout.
func (s *Shard) fireConsumer(g *group, now time.Time) {
	c := g.consumer
	w := &cgWrite{g: g}
	for _, m := range c.sortedMembers() {
		if !m.deadline.After(now) || (m.state == mUnrevoked && !m.revokeDeadline.After(now)) {
			s.cgRemove(now, g, m, w)
		}
	}
	s.maybeDowngrade(now, g, w)
	s.flushCG(w, nil, nil)
}

// consumerDue is the earliest deadline of g's consumer members.
func (c *cgroup) due() time.Time {
	var d time.Time
	for _, m := range c.members {
		d = earliest(d, m.deadline)
		if m.state == mUnrevoked {
			d = earliest(d, m.revokeDeadline)
		}
	}
	return d
}

// subscriptionBytes is what a heartbeat's subscription weighs (with its
// member id), against MaxMemberMetadataBytes and the group's budget.
func subscriptionBytes(req *kmsg.ConsumerGroupHeartbeatRequest) int {
	n := 64 + len(req.MemberID)
	for _, t := range req.SubscribedTopicNames {
		n += len(t)
	}
	if req.SubscribedTopicRegex != nil {
		n += len(*req.SubscribedTopicRegex)
	}
	return n
}

// bytes is what the group's members weigh (subscriptionBytes' measure).
func (c *cgroup) bytes() int {
	n := 0
	for _, m := range c.members {
		n += 64 + len(m.id) + len(m.regex)
		for _, t := range m.topicNames {
			n += len(t)
		}
	}
	return n
}

// consumerLoaded starts a loaded consumer group: every member's session
// starts now (a revocation in progress gets its rebalance timeout again).
func (s *Shard) consumerLoaded(g *group, now time.Time) {
	c := g.consumer
	c.repair()
	g.transition(stateEmpty, g.stateTime)
	if len(c.members) > 0 {
		g.transition(stateStable, g.stateTime)
	}
	for _, m := range c.members {
		m.deadline = now.Add(s.cfg.ConsumerSessionTimeout)
		if m.state == mUnrevoked {
			m.revokeDeadline = now.Add(m.rebalance)
		}
	}
	if s.topics != nil {
		s.cgSubscriptionsChanged(g)
	}
	s.touch(g)
	s.retentionCandidate(g, now)
}

// repair makes a loaded group keep the rules the coordinator relies on,
// whatever the log said (records this coordinator wrote keep them
// already; a log written by another, or damaged, may not): epochs in
// order, one owner per partition (the member first by id keeps it),
// revoking members in UNREVOKED, the static index from the members.
func (c *cgroup) repair() {
	c.epoch = max(c.epoch, c.assignmentEpoch)
	owned := map[tpID]bool{}
	for _, m := range c.sortedMembers() {
		m.epoch = min(m.epoch, c.assignmentEpoch)
		for _, set := range []tps{m.assigned, m.revoking} {
			for id, ps := range set {
				kept := ps[:0]
				for _, p := range ps {
					if !owned[tpID{id, p}] {
						owned[tpID{id, p}] = true
						kept = append(kept, p)
					}
				}
				set[id] = kept
			}
		}
		switch revoking := len(sortedIDs(m.revoking)) > 0; {
		case revoking:
			m.state = mUnrevoked
		case m.state == mUnrevoked || m.state < 0 || m.state > mUnreleased:
			m.state = mUnreleased
		}
	}
	c.indexStatic()
}

// parkedAnswer is an answer waiting for an Append (Shard.parked).
type parkedAnswer struct {
	id   uint64
	resp kmsg.Response
}

// releaseParked answers what waited for Append id: as it was, or, if the
// write failed, with its error (what the answer read may not be in the
// log).
func (s *Shard) releaseParked(id uint64, code int16) {
	ps, ok := s.parked[id]
	if !ok {
		return
	}
	delete(s.parked, id)
	for _, p := range ps {
		if code != 0 {
			p.resp = withError(p.resp, code)
		}
		s.respond(p.id, p.resp)
	}
}
