package group

// OffsetCommit (versions 0-9), OffsetFetch (0-9) and OffsetDelete (0),
// and the expiry of offsets.
//
// Behavior:
//   - A commit with generation -1 and no member id is a client without
//     membership: taken when the group has no members (it creates the
//     group, Empty, without a protocol type, if there is none). A member's
//     commit is checked as Kafka checks it (UNKNOWN_MEMBER_ID,
//     FENCED_INSTANCE_ID, ILLEGAL_GENERATION; REBALANCE_IN_PROGRESS in
//     CompletingRebalance; in PreparingRebalance a member of the current
//     generation may still commit). Any other commit to a group that does
//     not exist is ILLEGAL_GENERATION (v9+: GROUP_ID_NOT_FOUND).
//   - Metadata over offset.metadata.max.bytes is OFFSET_METADATA_TOO_LARGE
//     for that partition only. The others are written (OffsetCommitValue
//     v3) and answered when Appended: on success they are committed, on
//     failure answered with the mapped error and forgotten.
//   - OffsetFetch answers -1 (no leader epoch, empty metadata) for a
//     partition without a commit and every committed partition when the
//     topics are null; v8+ name several groups. With require_stable
//     (v7+) a partition with pending transactional offsets answers
//     UNSTABLE_OFFSET_COMMIT (txn_offsets.go).
//   - OffsetDelete: GROUP_ID_NOT_FOUND for no group; NON_EMPTY_GROUP for a
//     non-empty group of another protocol type than consumer;
//     GROUP_SUBSCRIBED_TO_TOPIC for a topic a member subscribes to (from
//     the consumer protocol's subscriptions); tombstones for the rest.
//   - Expiry (KIP-211, Kafka 4's rules) every
//     offsets.retention.check.interval.ms from the load: offsets of an
//     Empty group expire offsets.retention.minutes after it became empty;
//     of a group without protocol type, that long after their commit; of
//     a Stable consumer group, those of topics no member subscribes to,
//     that long after their commit. An Empty group left without offsets
//     is deleted.
//
// Version notes: OffsetCommit v2-4's retention time and v1's timestamp are
// ignored (as Kafka 4 does); v10's and OffsetFetch v10's topic ids are
// the driver's to translate into names.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// validateCommit is Kafka 4's OffsetMetadataManager.validateOffsetCommit
// with ClassicGroup.validateOffsetCommit; it may create a group.
func (s *Shard) validateCommit(now time.Time, req *kmsg.OffsetCommitRequest) (*group, int16) {
	if !s.loaded {
		return nil, codeLoading
	}
	if req.Group == "" {
		return nil, codeInvalidGroupID
	}
	g := s.groups[req.Group]
	if g == nil {
		if req.Generation >= 0 || req.MemberID != "" {
			if req.Version >= 9 {
				return nil, codeGroupNotFound
			}
			return nil, codeIllegalGen
		}
		g = newGroup(req.Group, now)
		s.groups[g.id] = g
		return g, 0
	}
	if g.consumer != nil {
		return g, g.consumer.validateOffsetCommit(req.MemberID, req.Generation, req.Version)
	}
	if req.Generation < 0 && g.state == stateEmpty {
		return g, 0
	}
	if code := g.validateMember(req.MemberID, req.InstanceID); code != 0 {
		return g, code
	}
	if req.Generation != g.generation {
		return g, codeIllegalGen
	}
	if g.state == stateCompleting {
		return g, codeRebalancing
	}
	return g, 0
}

func (s *Shard) offsetCommit(now time.Time, r Request, req *kmsg.OffsetCommitRequest) {
	resp := kmsg.NewPtrOffsetCommitResponse()
	resp.Version = req.Version
	g, code := s.validateCommit(now, req)
	o := &op{kind: opCommit, g: g, w: waiter{id: r.ID, version: req.Version}, commit: resp}
	var recs []Record
	for ti, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for pi, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode = code
			if code == 0 {
				epoch := p.LeaderEpoch
				if req.Version < 6 {
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
	s.write(o, recs)
}

// commitAppended applies a commit that is now in the log, or answers its
// failure.
func (s *Shard) commitAppended(now time.Time, o *op, code int16) {
	g := o.g
	live := s.groups[g.id] == g
	for _, pc := range o.commits {
		o.commit.Topics[pc.ti].Partitions[pc.pi].ErrorCode = code
		if code == 0 {
			pc.o.order = o.order
			g.landCommit(pc)
			s.commits++
		}
		g.addInflight(pc.topic, pc.part, -1) // after landCommit: it reads the tombstone mark
	}
	if live {
		if code == 0 {
			s.retentionCandidate(g, now)
		}
		s.maybeDropEmpty(g)
	}
	s.respond(o.w.id, o.commit)
}

func newFetchPartition(p int32) kmsg.OffsetFetchResponseGroupTopicPartition {
	rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = p, -1, -1, strp("")
	return rp
}

// fetchGroup answers one group of an OffsetFetch (topics nil: all); with
// stable, a partition with pending transactional offsets answers
// UNSTABLE_OFFSET_COMMIT (Kafka's require_stable).
func (s *Shard) fetchGroup(group string, topics []kmsg.OffsetFetchRequestGroupTopic, all, stable bool) kmsg.OffsetFetchResponseGroup {
	rg := kmsg.NewOffsetFetchResponseGroup()
	rg.Group = group
	switch {
	case !s.loaded:
		rg.ErrorCode = codeLoading
		return rg
	case group == "":
		rg.ErrorCode = codeInvalidGroupID
		return rg
	}
	g := s.groups[group]
	fill := func(rp *kmsg.OffsetFetchResponseGroupTopicPartition, topic string, o offset) {
		if stable && g.hasPending(topic, rp.Partition) {
			rp.ErrorCode = codeUnstable
			return
		}
		rp.Offset, rp.LeaderEpoch, rp.Metadata = o.offset, o.leaderEpoch, strp(o.metadata)
	}
	if all {
		if g == nil {
			return rg
		}
		for _, t := range sortedKeys(g.offsets) {
			rt := kmsg.NewOffsetFetchResponseGroupTopic()
			rt.Topic = t
			for _, p := range sortedKeys(g.offsets[t]) {
				rp := newFetchPartition(p)
				fill(&rp, t, g.offsets[t][p])
				rt.Partitions = append(rt.Partitions, rp)
			}
			rg.Topics = append(rg.Topics, rt)
		}
		return rg
	}
	for _, t := range topics {
		rt := kmsg.NewOffsetFetchResponseGroupTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := newFetchPartition(p)
			if g != nil {
				if o, ok := g.offsets[t.Topic][p]; ok {
					fill(&rp, t.Topic, o)
				} else if stable && g.hasPending(t.Topic, p) {
					rp.ErrorCode = codeUnstable
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		rg.Topics = append(rg.Topics, rt)
	}
	return rg
}

func (s *Shard) offsetFetch(r Request, req *kmsg.OffsetFetchRequest) {
	resp := kmsg.NewPtrOffsetFetchResponse()
	resp.Version = req.Version
	if req.Version >= 8 {
		for _, rg := range req.Groups {
			if g := s.groups[rg.Group]; req.Version >= 9 && s.loaded && g != nil && g.consumer != nil {
				if code := g.consumer.validateOffsetFetch(rg.MemberID, rg.MemberEpoch); code != 0 {
					f := kmsg.NewOffsetFetchResponseGroup()
					f.Group, f.ErrorCode = rg.Group, code
					resp.Groups = append(resp.Groups, f)
					continue
				}
			}
			resp.Groups = append(resp.Groups, s.fetchGroup(rg.Group, rg.Topics, rg.Topics == nil, req.RequireStable))
		}
		s.respond(r.ID, resp)
		return
	}
	var topics []kmsg.OffsetFetchRequestGroupTopic
	for _, t := range req.Topics {
		gt := kmsg.NewOffsetFetchRequestGroupTopic()
		gt.Topic, gt.Partitions = t.Topic, t.Partitions
		topics = append(topics, gt)
	}
	rg := s.fetchGroup(req.Group, topics, req.Topics == nil, req.Version >= 7 && req.RequireStable)
	resp.ErrorCode = rg.ErrorCode
	for _, gt := range rg.Topics {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = gt.Topic
		for _, gp := range gt.Partitions {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = gp.Partition, gp.Offset, gp.LeaderEpoch, gp.Metadata
			rp.ErrorCode = gp.ErrorCode
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if req.Version < 2 && rg.ErrorCode != 0 {
		// v0-1 have no top-level error: every partition carries it.
		for _, t := range req.Topics {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = p, -1, -1, rg.ErrorCode
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
	}
	s.respond(r.ID, resp)
}

func (s *Shard) offsetDelete(now time.Time, r Request, req *kmsg.OffsetDeleteRequest) {
	resp := kmsg.NewPtrOffsetDeleteResponse()
	resp.Version = req.Version
	g := s.groups[req.Group]
	switch {
	case !s.loaded:
		resp.ErrorCode = codeLoading
	case req.Group == "":
		resp.ErrorCode = codeInvalidGroupID
	case g == nil:
		resp.ErrorCode = codeGroupNotFound
	case g.state != stateEmpty && g.protocolType != "consumer":
		resp.ErrorCode = codeNotEmpty
	}
	if resp.ErrorCode != 0 {
		s.respond(r.ID, resp)
		return
	}
	o := &op{kind: opDeleteOffsets, g: g, w: waiter{id: r.ID, version: req.Version}, deleteOffsets: resp}
	var recs []Record
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		subscribed := g.subscribedTo(t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p.Partition
			if subscribed {
				rp.ErrorCode = codeSubscribed
			} else if _, ok := g.offsets[t.Topic][p.Partition]; ok || g.hasInflight(t.Topic, p.Partition) || g.hasPending(t.Topic, p.Partition) {
				recs = append(recs, g.tombstone(t.Topic, p.Partition, o))
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	s.maybeDropEmpty(g)
	if len(recs) == 0 {
		s.respond(r.ID, resp)
		return
	}
	s.write(o, recs)
}

func (g *group) setOffset(topic string, p int32, o offset) {
	ps := g.offsets[topic]
	if ps == nil {
		ps = map[int32]offset{}
		g.offsets[topic] = ps
	}
	ps[p] = o
}

func (g *group) deleteOffset(topic string, p int32) {
	if ps := g.offsets[topic]; ps != nil {
		delete(ps, p)
		if len(ps) == 0 {
			delete(g.offsets, topic)
		}
	}
}

// retentionCandidate notes the earliest check at which g may expire
// something: its earliest offset expiry, or the next check for an Empty
// group without offsets (a lower bound: a check that finds nothing changes
// nothing).
func (s *Shard) retentionCandidate(g *group, now time.Time) {
	if !s.loaded || s.cfg.RetentionCheckInterval <= 0 {
		return
	}
	var at time.Time
	if len(g.offsets) == 0 {
		if g.state != stateEmpty {
			return
		}
		at = now
	}
	for _, ps := range g.offsets {
		for _, o := range ps {
			if base, ok := g.expiryBase(o); ok {
				at = earliest(at, base.Add(s.cfg.OffsetsRetention))
			}
		}
	}
	if !at.IsZero() {
		s.retentionAt = earliest(s.retentionAt, s.checkAfter(at))
	}
}

// checkAfter is the first retention check at or after t.
func (s *Shard) checkAfter(t time.Time) time.Time {
	iv := s.cfg.RetentionCheckInterval
	first := s.retentionAnchor.Add(iv)
	if !t.After(first) {
		return first
	}
	n := (t.Sub(first) + iv - 1) / iv
	return first.Add(n * iv)
}

// expiryBase is Kafka 4's offsetExpirationCondition for a classic group:
// what an offset's age counts from, or false when none may expire.
func (g *group) expiryBase(o offset) (time.Time, bool) {
	switch {
	case g.protocolType == "":
		return time.UnixMilli(o.commitMs), true
	case g.state == stateEmpty && g.stateTime.IsZero():
		// A group record without currentStateTimestamp (before v2).
		return time.UnixMilli(o.commitMs), true
	case g.state == stateEmpty:
		return g.stateTime, true
	case g.protocolType == "consumer" && g.subscribed != nil && g.state == stateStable:
		return time.UnixMilli(o.commitMs), true
	}
	return time.Time{}, false
}

// checkRetention runs the retention check if one is due: tombstones for
// expired offsets and for Empty groups left without any.
func (s *Shard) checkRetention(now time.Time) {
	if s.retentionAt.IsZero() || now.Before(s.retentionAt) {
		return
	}
	s.retentionAt = time.Time{}
	ex := &op{kind: opExpire}
	var recs []Record
	var next time.Time
	for _, id := range sortedKeys(s.groups) {
		g := s.groups[id]
		for _, t := range sortedKeys(g.offsets) {
			if g.subscribedTo(t) && g.state != stateEmpty {
				continue
			}
			for _, p := range sortedKeys(g.offsets[t]) {
				o := g.offsets[t][p]
				base, ok := g.expiryBase(o)
				if !ok || g.hasInflight(t, p) || g.hasPending(t, p) {
					continue
				}
				if at := base.Add(s.cfg.OffsetsRetention); now.Before(at) {
					next = earliest(next, at)
					continue
				}
				recs = append(recs, g.tombstone(t, p, ex))
				s.expired++
			}
		}
		if g.state == stateEmpty && len(g.offsets) == 0 && len(g.inflight) == 0 && len(g.pending) == 0 && len(g.txns) == 0 {
			recs = append(recs, groupTombstones(g)...)
			ex.removedGroups = append(ex.removedGroups, g)
			delete(s.groups, g.id)
		}
	}
	if !next.IsZero() {
		s.retentionAt = s.checkAfter(next)
	}
	if len(recs) > 0 {
		s.write(ex, recs)
	}
}

// stageCommit checks one partition's offset of an OffsetCommit or a
// TxnOffsetCommit and, if its metadata fits, adds it to o's commits and
// its record to recs, counted in flight; the code is the partition's
// answer (0 or OFFSET_METADATA_TOO_LARGE).
func (s *Shard) stageCommit(g *group, o *op, recs []Record, topic string, ti int, part int32, pi int, off int64, epoch int32, metadata *string, now time.Time) (int16, []Record) {
	meta := ""
	if metadata != nil {
		meta = *metadata
	}
	if len(meta) > s.cfg.OffsetMetadataMaxBytes {
		return codeMetadataTooLarge, recs
	}
	pc := pendingCommit{topic: topic, part: part, ti: ti, pi: pi, seq: g.tombSeq(topic, part),
		o: offset{offset: off, leaderEpoch: epoch, metadata: meta, commitMs: now.UnixMilli()}}
	o.commits = append(o.commits, pc)
	g.addInflight(topic, part, 1)
	return 0, append(recs, offsetRecord(g.id, topic, part, pc.o))
}
