package group

// DescribeGroups (versions 0-6), DeleteGroups (0-2), ListGroups (0-5, the
// shard's part), TopicsDeleted and Stats.
//
// Behavior:
//   - DescribeGroups shows members with client id and host; their
//     metadata and assignment only when the group is Stable (as Kafka);
//     an unknown group is state Dead, or from v6 GROUP_ID_NOT_FOUND.
//   - DeleteGroups: NON_EMPTY_GROUP unless Empty; else tombstones for
//     every offset and the group, answered when Appended.
//   - ListGroups filters by state (Kafka's names, any case) and type
//     ("classic" or "consumer", consumer groups with their own states).

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	ks := make([]K, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func (s *Shard) describeGroups(r Request, req *kmsg.DescribeGroupsRequest) {
	resp := kmsg.NewPtrDescribeGroupsResponse()
	resp.Version = req.Version
	for _, id := range req.Groups {
		rg := kmsg.NewDescribeGroupsResponseGroup()
		rg.Group = id
		g := s.groups[id]
		switch {
		case !s.loaded:
			rg.ErrorCode = codeLoading
		case id == "":
			rg.ErrorCode = codeInvalidGroupID
		case g == nil:
			rg.State = stateDead.String()
			if req.Version >= 6 {
				rg.ErrorCode = codeGroupNotFound
				rg.ErrorMessage = strp("Group " + id + " not found.")
			}
		case g.consumer != nil:
			s.describeConsumer(g, &rg)
		default:
			rg.State = g.state.String()
			rg.ProtocolType = g.protocolType
			stable := g.state == stateStable
			if stable {
				rg.Protocol = g.protocol
			}
			for _, m := range g.sortedMembers() {
				rm := kmsg.NewDescribeGroupsResponseGroupMember()
				rm.MemberID, rm.ClientID, rm.ClientHost = m.id, m.clientID, m.clientHost
				if m.instanceID != "" {
					rm.InstanceID = strp(m.instanceID)
				}
				rm.ProtocolMetadata, rm.MemberAssignment = []byte{}, []byte{}
				if stable {
					rm.ProtocolMetadata = m.metadata(g.protocol)
					if m.assignment != nil {
						rm.MemberAssignment = m.assignment
					}
				}
				rg.Members = append(rg.Members, rm)
			}
		}
		resp.Groups = append(resp.Groups, rg)
	}
	s.respond(r.ID, resp)
}

func (s *Shard) deleteGroups(now time.Time, r Request, req *kmsg.DeleteGroupsRequest) {
	resp := kmsg.NewPtrDeleteGroupsResponse()
	resp.Version = req.Version
	o := &op{kind: opDeleteGroups, w: waiter{id: r.ID, version: req.Version}, deleteGroups: resp}
	var recs []Record
	for _, id := range req.Groups {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group = id
		g := s.groups[id]
		switch {
		case !s.loaded:
			rg.ErrorCode = codeLoading
		case id == "":
			rg.ErrorCode = codeInvalidGroupID
		case g == nil:
			rg.ErrorCode = codeGroupNotFound
		case g.state != stateEmpty:
			rg.ErrorCode = codeNotEmpty
		default:
			recs = append(recs, s.deleteGroup(g, o)...)
			o.deleteIdx = append(o.deleteIdx, len(resp.Groups))
		}
		resp.Groups = append(resp.Groups, rg)
	}
	if len(recs) == 0 {
		s.respond(r.ID, resp)
		return
	}
	s.write(o, recs)
}

// deleteGroup forgets an Empty group for the write o and returns its
// tombstones: every offset (and every partition with a commit in flight,
// whose record comes before these, and every partition with pending
// transactional offsets, as Kafka's deleteAllOffsets), then the group.
func (s *Shard) deleteGroup(g *group, o *op) []Record {
	parts := map[string]map[int32]bool{}
	for _, m := range []map[string]map[int32]int{g.inflight, countOffsets(g.offsets), g.pendingParts()} {
		for t, ps := range m {
			for p := range ps {
				if parts[t] == nil {
					parts[t] = map[int32]bool{}
				}
				parts[t][p] = true
			}
		}
	}
	var recs []Record
	for _, t := range sortedKeys(parts) {
		for _, p := range sortedKeys(parts[t]) {
			recs = append(recs, g.tombstone(t, p, o))
		}
	}
	clear(g.pending)
	g.transition(stateDead, g.stateTime)
	delete(s.groups, g.id)
	o.removedGroups = append(o.removedGroups, g)
	return append(recs, groupTombstones(g)...)
}

// groupTombstones delete g's group record(s), of its type.
func groupTombstones(g *group) []Record {
	if g.consumer != nil {
		return consumerTombstones(g)
	}
	return []Record{groupTombstone(g.id)}
}

func countOffsets(m map[string]map[int32]offset) map[string]map[int32]int {
	out := map[string]map[int32]int{}
	for t, ps := range m {
		out[t] = map[int32]int{}
		for p := range ps {
			out[t][p] = 1
		}
	}
	return out
}

func (s *Shard) listGroups(states, types []string) []kmsg.ListGroupsResponseGroup {
	match := func(filter []string, v string) bool {
		return len(filter) == 0 || slices.ContainsFunc(filter, func(f string) bool { return strings.EqualFold(f, v) })
	}
	var out []kmsg.ListGroupsResponseGroup
	for _, id := range sortedKeys(s.groups) {
		g := s.groups[id]
		typ, state := "classic", g.state.String()
		if g.consumer != nil {
			typ, state = "consumer", g.consumer.stateName()
		}
		if !match(types, typ) || !match(states, state) {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = id, g.protocolType, state, typ
		out = append(out, lg)
	}
	return out
}

func (s *Shard) topicsDeleted(now time.Time, topics []string) {
	o := &op{kind: opExpire}
	var recs []Record
	for _, id := range sortedKeys(s.groups) {
		g := s.groups[id]
		for _, t := range topics {
			parts := sortedKeys(g.offsets[t])
			for _, more := range []map[int32]int{g.inflight[t], g.pendingParts()[t]} {
				for _, p := range sortedKeys(more) {
					if _, ok := g.offsets[t][p]; !ok && !slices.Contains(parts, p) {
						parts = append(parts, p)
					}
				}
			}
			for _, p := range parts {
				recs = append(recs, g.tombstone(t, p, o))
			}
		}
		s.maybeDropEmpty(g)
		s.retentionCandidate(g, now)
	}
	if len(recs) > 0 {
		s.write(o, recs)
	}
}

func (s *Shard) stats() Stats {
	st := Stats{Groups: map[string]int{}, Offsets: map[string]map[string]map[int32]int64{}, Expired: s.expired,
		Commits: s.commits, Rebalances: s.rebalances}
	for _, n := range stateNames {
		st.Groups[n] = 0
	}
	st.ConsumerGroups = map[string]int{}
	for _, n := range ConsumerGroupStates {
		st.ConsumerGroups[n] = 0
	}
	for id, g := range s.groups {
		if g.consumer != nil {
			st.ConsumerGroups[g.consumer.stateName()]++
			st.Members += len(g.consumer.members)
		} else {
			st.Groups[g.state.String()]++
		}
		st.Members += len(g.members)
		if len(g.offsets) == 0 {
			continue
		}
		ts := map[string]map[int32]int64{}
		for t, ps := range g.offsets {
			m := map[int32]int64{}
			for p, o := range ps {
				m[p] = o.offset
			}
			ts[t] = m
		}
		st.Offsets[id] = ts
	}
	return st
}
