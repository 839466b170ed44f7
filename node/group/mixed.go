package group

// Online migration between the classic protocol and KIP-848
// (group.consumer.migration.policy), and classic members inside a
// consumer group (mixed groups), as Kafka 4's GroupMetadataManager has
// them.
//
// Behavior:
//   - Upgrade: a ConsumerGroupHeartbeat joining a Stable classic group of
//     protocol type "consumer" with members converts it (Kafka's
//     convertToConsumerGroup) when the policy is bidirectional or
//     upgrade: every classic member becomes a member of the consumer
//     group at the group's generation as member epoch, subscribed to the
//     topics of its subscription, owning its classic assignment (also its
//     target); the group epoch and assignment epoch are the generation.
//     Written as the classic group's tombstone and the consumer group's
//     records; the joining member then bumps the epoch as any new member.
//     A classic group in the middle of a rebalance is answered
//     COORDINATOR_NOT_AVAILABLE (retriable: the client tries again) until
//     it is Stable, so that no member's assignment is unknown; a policy
//     that forbids the upgrade, another protocol type or
//     group.consumer.max.size is GROUP_ID_NOT_FOUND with a message.
//   - Classic members of a consumer group are served from the consumer
//     group's state (Kafka's classicGroupJoinToConsumerGroup and the
//     sync, heartbeat and leave counterparts). JoinGroup: a new member
//     (v4+: MEMBER_ID_REQUIRED first) or a changed subscription bumps the
//     group epoch; the partitions the member's subscription does not
//     claim as owned (an eager client claims none) count as released; it
//     reconciles toward its target like any member and is answered at
//     once with its member epoch as generation, no leader (every client
//     then acts as a follower) and its first protocol. SyncGroup (same
//     generation) gets what the member owns, in the consumer protocol's
//     assignment encoding. Heartbeat (same generation) is
//     REBALANCE_IN_PROGRESS while the member is behind the group epoch,
//     must revoke, or could take partitions released since, so that the
//     client rejoins. LeaveGroup and an ended session remove the member.
//     OffsetCommit from a classic member checks its generation against
//     its epoch (ILLEGAL_GENERATION).
//   - Downgrade: when the last member using the consumer protocol leaves
//     and classic members remain, and the policy is bidirectional or
//     downgrade, the group becomes a classic group again (Kafka's
//     convertToClassicGroup): generation = the assignment epoch, each member
//     with its protocols, session and current assignment; written as the
//     consumer group's tombstones and the classic group record; then it
//     rebalances, so every member rejoins through the classic protocol.

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The values of group.consumer.migration.policy (Kafka's
// ConsumerGroupMigrationPolicy).
const (
	MigrationBidirectional = "bidirectional"
	MigrationUpgrade       = "upgrade"
	MigrationDowngrade     = "downgrade"
	MigrationDisabled      = "disabled"
)

// MigrationPolicies are the values of group.consumer.migration.policy.
var MigrationPolicies = []string{MigrationBidirectional, MigrationUpgrade, MigrationDowngrade, MigrationDisabled}

func (c Config) policy() string {
	if c.MigrationPolicy == "" {
		return MigrationBidirectional
	}
	return strings.ToLower(c.MigrationPolicy)
}

func (c Config) upgradeEnabled() bool {
	p := c.policy()
	return p == MigrationBidirectional || p == MigrationUpgrade
}

func (c Config) downgradeEnabled() bool {
	p := c.policy()
	return p == MigrationBidirectional || p == MigrationDowngrade
}

// classicMeta is what a classic member of a consumer group keeps beyond a
// consumer member (Kafka's ClassicMemberMetadata).
type classicMeta struct {
	session   time.Duration
	protocols []protocol
}

// decodeSubscription reads the consumer protocol's subscription: the
// topics, and the partitions it owns (v1+; none before).
func decodeSubscription(b []byte) (topics []string, owned map[string][]int32, ok bool) {
	topics, owned, _, ok = decodeSubscriptionRack(b)
	return topics, owned, ok
}

// decodeSubscriptionRack is decodeSubscription with the member's rack
// (v3+; "" before).
func decodeSubscriptionRack(b []byte) (topics []string, owned map[string][]int32, rack string, ok bool) {
	var meta kmsg.ConsumerMemberMetadata
	if err := meta.ReadFrom(b); err != nil {
		if len(b) < 2 {
			return nil, nil, "", false
		}
		// A newer version: its version-0 prefix (topics, user data).
		meta = kmsg.ConsumerMemberMetadata{}
		if err := meta.ReadFrom(append([]byte{0, 0}, b[2:]...)); err != nil {
			return nil, nil, "", false
		}
	}
	if meta.Rack != nil {
		rack = *meta.Rack
	}
	owned = map[string][]int32{}
	for _, o := range meta.OwnedPartitions {
		owned[o.Topic] = append(owned[o.Topic], o.Partitions...)
	}
	topics = slices.Clone(meta.Topics)
	slices.Sort(topics)
	return slices.Compact(topics), owned, rack, true
}

// byName is partitions by topic name as partitions by topic id (topics
// the shard does not know are left out).
func (s *Shard) byName(m map[string][]int32) tps {
	out := tps{}
	for t, ps := range m {
		info, ok := s.topics[t]
		if !ok {
			continue
		}
		for _, p := range ps {
			if p >= 0 && p < info.Partitions {
				out[info.ID] = append(out[info.ID], p)
			}
		}
	}
	for id := range out {
		slices.Sort(out[id])
		out[id] = slices.Compact(out[id])
	}
	return out
}

// decodeAssignment reads a classic member's assignment (the consumer
// protocol's encoding); empty is none.
func (s *Shard) decodeAssignment(b []byte) (tps, bool) {
	if len(b) == 0 {
		return tps{}, true
	}
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(b); err != nil {
		return nil, false
	}
	m := map[string][]int32{}
	for _, t := range a.Topics {
		m[t.Topic] = append(m[t.Topic], t.Partitions...)
	}
	return s.byName(m), true
}

// encodeAssignment is m in the consumer protocol's assignment encoding
// (version 0), by topic name.
func (s *Shard) encodeAssignment(m tps) []byte {
	a := kmsg.NewConsumerMemberAssignment()
	a.Version = 0
	for _, id := range sortedIDs(m) {
		if name, ok := s.topicNames[id]; ok {
			t := kmsg.NewConsumerMemberAssignmentTopic()
			t.Topic, t.Partitions = name, slices.Clone(m[id])
			a.Topics = append(a.Topics, t)
		}
	}
	return a.AppendTo(nil)
}

func intersectTPs(a, b tps) tps {
	out := tps{}
	for id, ps := range a {
		for _, p := range ps {
			if hasTP(b, id, p) {
				out[id] = append(out[id], p)
			}
		}
	}
	return out
}

// upgrade converts the classic group g, which has members, into a
// consumer group (Kafka's convertToConsumerGroup), adding its records to
// w; code != 0 refuses it with msg.
func (s *Shard) upgrade(now time.Time, g *group, w *cgWrite) (code int16, msg string) {
	switch {
	case !s.cfg.upgradeEnabled():
		return codeGroupNotFound, "Cannot upgrade classic group " + g.id + " to a consumer group: group.consumer.migration.policy is " +
			s.cfg.policy() + " (bidirectional or upgrade allow it)."
	case g.protocolType != "consumer":
		return codeGroupNotFound, "Cannot upgrade classic group " + g.id + " to a consumer group: its protocol type is " +
			strconv.Quote(g.protocolType) + ", not \"consumer\"."
	case s.cfg.ConsumerMaxSize > 0 && len(g.members) >= s.cfg.ConsumerMaxSize:
		return codeGroupNotFound, "Cannot upgrade classic group " + g.id + " to a consumer group: its " + strconv.Itoa(len(g.members)) +
			" members would reach group.consumer.max.size " + strconv.Itoa(s.cfg.ConsumerMaxSize) + "."
	case g.state != stateStable || g.assigning != 0 || len(g.pendingSync) > 0:
		return codeNotAvailable, "Classic group " + g.id + " is rebalancing: its upgrade to the consumer protocol waits until it is Stable; retry."
	}
	c := &cgroup{id: g.id, epoch: g.generation, assignmentEpoch: g.generation, members: map[string]*cmember{},
		static: map[string]string{}, target: map[string]tps{}, assignorUsed: g.protocol}
	for _, m := range g.sortedMembers() {
		topics, _, rack, ok := decodeSubscriptionRack(m.metadata(g.protocol))
		assigned, ok2 := s.decodeAssignment(m.assignment)
		if !ok || !ok2 {
			return codeGroupNotFound, "Cannot upgrade classic group " + g.id + " to a consumer group: the subscription or assignment of member " +
				m.id + " does not decode as the consumer protocol's."
		}
		cm := &cmember{id: m.id, instanceID: m.instanceID, rackID: rack, clientID: m.clientID, clientHost: m.clientHost,
			topicNames: topics, rebalance: m.rebalance, epoch: g.generation, prevEpoch: g.generation, state: mStable,
			assigned: assigned, revoking: tps{}, deadline: m.deadline,
			classic: &classicMeta{session: m.session, protocols: slices.Clone(m.protocols)}}
		c.members[m.id] = cm
		c.target[m.id] = cloneTPs(assigned)
	}
	for _, m := range g.members {
		if m.join != nil {
			s.respondJoinError(m.join, m.id, codeRebalancing)
		}
		if m.sync != nil {
			s.respondSyncError(m.sync, codeRebalancing)
		}
	}
	c.repair()
	w.add(groupTombstone(g.id))
	g.members, g.static, g.pending, g.pendingSync = map[string]*member{}, map[string]string{}, map[string]time.Time{}, map[string]bool{}
	g.protocol, g.leader, g.generation, g.joinDeadline, g.syncDeadline = "", "", 0, time.Time{}, time.Time{}
	g.consumer, g.protocolType = c, "consumer"
	s.cgSubscriptionsChanged(g)
	w.add(cgRecords(c)...)
	return 0, ""
}

// maybeDowngrade converts a consumer group whose members all use the
// classic protocol back into a classic group that rebalances (Kafka's
// convertToClassicGroup), adding the records to w.
func (s *Shard) maybeDowngrade(now time.Time, g *group, w *cgWrite) {
	c := g.consumer
	if c == nil || len(c.members) == 0 || !s.cfg.downgradeEnabled() {
		return
	}
	for _, m := range c.members {
		if m.classic == nil {
			return
		}
	}
	for _, m := range c.sortedMembers() {
		w.add(cgMemberTombstones(c, m.id)...)
	}
	w.add(consumerTombstones(g)...)
	g.consumer = nil
	// The generation is the assignment epoch, which members that caught
	// up hold: their heartbeat finds the rebalance, not another
	// generation (the leave that got here bumped the group epoch only).
	g.protocolType, g.generation = "consumer", c.assignmentEpoch
	for _, cm := range c.sortedMembers() {
		owns := cloneTPs(cm.assigned)
		for id, ps := range cm.revoking {
			owns[id] = append(owns[id], ps...)
			slices.Sort(owns[id])
		}
		m := &member{id: cm.id, instanceID: cm.instanceID, clientID: cm.clientID, clientHost: cm.clientHost,
			session: cm.classic.session, rebalance: cm.rebalance, protocols: cm.classic.protocols,
			assignment: s.encodeAssignment(owns), deadline: cm.deadline}
		g.members[m.id] = m
		if m.instanceID != "" {
			g.static[m.instanceID] = m.id
		}
	}
	g.leader = g.sortedMembers()[0].id
	g.protocol = g.selectProtocol()
	g.computeSubscribed()
	g.transition(stateStable, now)
	w.add(groupRecord(g))
	s.prepareRebalance(g, now)
}

// classicMember is the classic member of consumer group c that a request
// names (by instance id when it has one), or the code that refuses it.
func classicMember(c *cgroup, memberID string, instanceID *string) (*cmember, int16) {
	if instanceID != nil && *instanceID != "" {
		id, ok := c.static[*instanceID]
		switch {
		case !ok:
			return nil, codeUnknownMember
		case memberID != "" && id != memberID:
			return nil, codeFenced
		}
		memberID = id
	}
	m := c.members[memberID]
	if m == nil || m.classic == nil {
		return nil, codeUnknownMember
	}
	return m, 0
}

// cgClassicJoin is a JoinGroup to a consumer group with members (Kafka's
// classicGroupJoinToConsumerGroup).
func (s *Shard) cgClassicJoin(now time.Time, r Request, g *group, req *kmsg.JoinGroupRequest, protos []protocol, session, rebalance time.Duration) {
	c := g.consumer
	wt := &waiter{id: r.ID, version: req.Version}
	if req.ProtocolType != "consumer" || len(protos) == 0 {
		s.respondJoinError(wt, req.MemberID, codeInconsistent)
		return
	}
	topics, owned, rack, ok := decodeSubscriptionRack(protos[0].metadata)
	if !ok {
		s.respondJoinError(wt, req.MemberID, codeInconsistent)
		return
	}
	defer s.touch(g)
	w := &cgWrite{g: g}
	instance := ""
	if req.InstanceID != nil {
		instance = *req.InstanceID
	}
	id := req.MemberID
	var m *cmember
	replaced := false
	switch oldID, known := c.static[instance]; {
	case id == "" && instance != "" && known:
		// A static member's restart (KIP-345): the new id takes the old
		// one's place, epoch and partitions.
		old := c.members[oldID]
		id = s.newMemberID(instance)
		c.removeMember(oldID)
		w.add(cgMemberTombstones(c, oldID)...)
		w.removed = append(w.removed, oldID)
		nm := *old
		nm.id = id
		if nm.epoch < 0 {
			nm.epoch = nm.prevEpoch
		}
		if nm.classic == nil {
			nm.classic = &classicMeta{}
		}
		m, replaced = &nm, true
		c.members[id], c.static[instance] = m, id
		if t, ok := c.target[oldID]; ok {
			c.target[id] = t
			delete(c.target, oldID)
			w.add(cgTargetMemberRecord(c, id))
		}
		w.add(cgCurrentRecord(c, m))
	case id == "":
		id = s.newMemberID(r.ClientID)
		if req.Version >= 4 && instance == "" {
			s.respondJoinError(wt, id, codeMemberIDRequired)
			return
		}
	}
	bump := false
	if m == nil {
		m = c.members[id]
		switch {
		case m != nil && m.classic == nil:
			s.respondJoinError(wt, id, codeUnknownMember) // a member of the consumer protocol
			return
		case instance != "" && c.static[instance] != "" && c.static[instance] != id,
			m != nil && m.instanceID != instance:
			s.respondJoinError(wt, id, codeFenced)
			return
		case m == nil && s.cfg.ConsumerMaxSize > 0 && len(c.members) >= s.cfg.ConsumerMaxSize,
			m == nil && c.bytes()+protocolBytes(protos) > s.groupBudget:
			s.respondJoinError(wt, id, codeMaxSize)
			return
		case m == nil:
			m = c.member(id)
			m.classic = &classicMeta{}
			if instance != "" {
				m.instanceID, c.static[instance] = instance, id
			}
			bump = true
		}
	}
	changed := bump || replaced
	set := func(dst *string, v string) {
		if *dst != v {
			*dst, changed = v, true
		}
	}
	set(&m.clientID, r.ClientID)
	set(&m.clientHost, r.ClientHost)
	if m.rackID != rack {
		m.rackID, changed, bump = rack, true, true
	}
	if !slices.Equal(m.topicNames, topics) {
		m.topicNames, changed, bump = topics, true, true
	}
	if m.rebalance != rebalance || m.classic.session != session {
		m.rebalance, m.classic.session, changed = rebalance, session, true
	}
	if !slices.EqualFunc(m.classic.protocols, protos, func(a, b protocol) bool {
		return a.name == b.name && string(a.metadata) == string(b.metadata)
	}) {
		m.classic.protocols, changed = protos, true
	}
	if changed {
		w.add(cgMemberRecord(c, m))
	}
	m.deadline = now.Add(session)
	if bump {
		c.epoch++
		s.cgSubscriptionsChanged(g)
		w.add(cgMetadataRecord(c))
	}
	if c.assignmentEpoch < c.epoch {
		s.cgAssign(g, w)
	}
	// What the member does not claim it has released: an eager client
	// revoked everything before it joined.
	ownedIDs := s.byName(owned)
	beforeAssigned, beforeRevoking := cloneTPs(m.assigned), cloneTPs(m.revoking)
	m.assigned, m.revoking = intersectTPs(m.assigned, ownedIDs), intersectTPs(m.revoking, ownedIDs)
	if len(sortedIDs(m.revoking)) == 0 && m.state == mUnrevoked {
		m.state = mStable
	}
	moved := !equalTPs(beforeAssigned, m.assigned) || !equalTPs(beforeRevoking, m.revoking)
	if s.cgReconcile(c, m, ownedIDs, now) || moved {
		w.add(cgCurrentRecord(c, m))
	}
	g.transition(stateStable, g.stateTime)
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Version, resp.Generation, resp.MemberID = req.Version, m.epoch, m.id
	resp.ProtocolType, resp.Protocol = strp("consumer"), strp(protos[0].name)
	s.flushCG(w, wt, resp)
}

// cgClassicSync is a SyncGroup of a classic member of a consumer group:
// its current assignment.
func (s *Shard) cgClassicSync(now time.Time, r Request, g *group, req *kmsg.SyncGroupRequest) {
	wt := &waiter{id: r.ID, version: req.Version}
	m, code := classicMember(g.consumer, req.MemberID, req.InstanceID)
	switch {
	case code != 0:
	case req.Generation != m.epoch:
		code = codeIllegalGen
	case req.ProtocolType != nil && *req.ProtocolType != "consumer",
		req.Protocol != nil && !slices.ContainsFunc(m.classic.protocols, func(p protocol) bool { return p.name == *req.Protocol }):
		code = codeInconsistent
	}
	if code != 0 {
		s.respondSyncError(wt, code)
		return
	}
	m.deadline = now.Add(m.classic.session)
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.Version = req.Version
	resp.ProtocolType = strp("consumer")
	resp.Protocol = req.Protocol
	if resp.Protocol == nil && len(m.classic.protocols) > 0 {
		resp.Protocol = strp(m.classic.protocols[0].name)
	}
	resp.MemberAssignment = s.encodeAssignment(m.assigned)
	s.flushCG(&cgWrite{g: g}, wt, resp)
	s.touch(g)
}

// cgClassicHeartbeat is a Heartbeat of a classic member of a consumer
// group: REBALANCE_IN_PROGRESS when it should rejoin.
func (s *Shard) cgClassicHeartbeat(now time.Time, r Request, g *group, req *kmsg.HeartbeatRequest) {
	c := g.consumer
	resp := kmsg.NewPtrHeartbeatResponse()
	resp.Version = req.Version
	m, code := classicMember(c, req.MemberID, req.InstanceID)
	switch {
	case code != 0:
	case req.Generation != m.epoch:
		code = codeIllegalGen
	default:
		m.deadline = now.Add(m.classic.session)
		if m.epoch != c.epoch || m.state == mUnrevoked || (m.state == mUnreleased && s.cgCanTake(c, m)) {
			code = codeRebalancing
		}
		s.touch(g)
	}
	resp.ErrorCode = code
	s.flushCG(&cgWrite{g: g}, &waiter{id: r.ID, version: req.Version}, resp)
}

// cgCanTake: some partition of m's target is now free for it.
func (s *Shard) cgCanTake(c *cgroup, m *cmember) bool {
	owners := c.owners(m.id)
	for id, ps := range c.target[m.id] {
		for _, p := range ps {
			if !hasTP(m.assigned, id, p) && !owners[tpID{id, p}] {
				return true
			}
		}
	}
	return false
}

// cgClassicLeave is a LeaveGroup of classic members of a consumer group.
func (s *Shard) cgClassicLeave(now time.Time, r Request, g *group, req *kmsg.LeaveGroupRequest) {
	resp := kmsg.NewPtrLeaveGroupResponse()
	resp.Version = req.Version
	w := &cgWrite{g: g}
	leave := func(memberID string, instanceID *string) int16 {
		m, code := classicMember(g.consumer, memberID, instanceID)
		if code == 0 {
			s.cgRemove(now, g, m, w)
		}
		return code
	}
	if req.Version < 3 {
		resp.ErrorCode = leave(req.MemberID, nil)
	}
	for _, lm := range req.Members {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID = lm.MemberID, lm.InstanceID
		rm.ErrorCode = leave(lm.MemberID, lm.InstanceID)
		resp.Members = append(resp.Members, rm)
	}
	s.maybeDowngrade(now, g, w)
	s.flushCG(w, &waiter{id: r.ID, version: req.Version}, resp)
	s.touch(g)
}

// withError is resp (an answer a consumer group write waited for) with
// the write's error code.
func withError(resp kmsg.Response, code int16) kmsg.Response {
	switch r := resp.(type) {
	case *kmsg.ConsumerGroupHeartbeatResponse:
		return cgError(r.Version, code, "")
	case *kmsg.JoinGroupResponse:
		r.ErrorCode, r.Generation, r.Protocol, r.ProtocolType = code, -1, nil, nil
	case *kmsg.SyncGroupResponse:
		r.ErrorCode, r.MemberAssignment = code, []byte{}
	case *kmsg.HeartbeatResponse:
		r.ErrorCode = code
	case *kmsg.LeaveGroupResponse:
		r.ErrorCode = code
	}
	return resp
}
