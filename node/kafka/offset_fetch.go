package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetFetch (key 9), versions 1-10 (Kafka 4 dropped 0, KIP-896; v10,
// Kafka 4.2's, names topics by ID and is served when the Broker also
// implements TopicNames and TopicIDs); served when the Broker implements
// Groups.
//
// Behavior:
//   - v1-7 ask for one group: passed to its shard. A shard that cannot
//     answer gives its error at the top level (v2+) or, in v1, on every
//     partition asked for.
//   - v8+ ask for several groups (KIP-709): they are split by shard, each
//     shard asked once for its groups, at the same time, and the groups
//     answered in request order; a shard that cannot answer gives its
//     error to each of its groups.
//   - A null topic list asks for every committed offset of the group; a
//     partition without a committed offset answers offset -1 (the shard's).
//   - v10: the shards are asked by name; a topic ID that names no topic
//     answers UNKNOWN_TOPIC_ID for its partitions; of every committed
//     offset, those of topics that no longer exist (no ID) are left out.
func handleOffsetFetch(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.OffsetFetchRequest)
	if req.Version < 8 {
		var answer kmsg.Response
		err := error(kerr.GroupAuthorizationFailed)
		if s.allowed(r, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeGroup, req.Group) {
			answer, err = coordinateOne(ctx, s, r, req.Group)
		}
		if err == nil {
			a := answer.(*kmsg.OffsetFetchResponse)
			a.Topics = authorizeOffsetTopics(s, r, a.Topics, req.Topics != nil,
				func(t *kmsg.OffsetFetchResponseTopic) string { return t.Topic },
				func(t *kmsg.OffsetFetchResponseTopic) {
					for i := range t.Partitions {
						p := &t.Partitions[i]
						p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode = -1, -1, nil, kerr.TopicAuthorizationFailed.Code
					}
				})
			return a, nil
		}
		resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
		resp.ErrorCode = groupCode(err)
		if req.Version < 2 {
			for _, t := range req.Topics {
				rt := kmsg.NewOffsetFetchResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetFetchResponseTopicPartition()
					rp.Partition, rp.Offset, rp.ErrorCode = p, -1, resp.ErrorCode
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
		}
		return resp, nil
	}
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	ids := make([]string, len(req.Groups))
	for i, g := range req.Groups {
		ids[i] = g.Group
	}
	groups := req.Groups
	if req.Version >= 10 {
		groups = offsetFetchByName(s, req.Groups)
	}
	answers := coordinateAuthorized(ctx, s, r, kmsg.ACLOperationDescribe, ids, func(idx []int) kmsg.Request {
		sub := *req
		sub.Groups = make([]kmsg.OffsetFetchRequestGroup, len(idx))
		for j, i := range idx {
			sub.Groups[j] = groups[i]
		}
		return &sub
	})
	for i, id := range ids {
		rg := kmsg.NewOffsetFetchResponseGroup()
		rg.Group = id
		a := answers[i]
		if a.err != nil {
			rg.ErrorCode = groupCode(a.err)
		} else if found, ok := findGroup(a.resp.(*kmsg.OffsetFetchResponse).Groups, id,
			func(g kmsg.OffsetFetchResponseGroup) string { return g.Group }); ok {
			rg = found
			rg.Topics = authorizeOffsetTopics(s, r, rg.Topics, req.Groups[i].Topics != nil,
				func(t *kmsg.OffsetFetchResponseGroupTopic) string { return t.Topic },
				func(t *kmsg.OffsetFetchResponseGroupTopic) {
					for i := range t.Partitions {
						p := &t.Partitions[i]
						p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode = -1, -1, nil, kerr.TopicAuthorizationFailed.Code
					}
				})
			if req.Version >= 10 {
				rg.Topics = offsetFetchByID(s, req.Groups[i].Topics, rg.Topics)
			}
		} else {
			rg.ErrorCode = groupCode(nil)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}

// findGroup is the entry of group id in a shard's answer.
func findGroup[G any](groups []G, id string, name func(G) string) (G, bool) {
	for _, g := range groups {
		if name(g) == id {
			return g, true
		}
	}
	var zero G
	return zero, false
}

// offsetFetchByName is groups (v10: topics by ID) with the names filled
// in, the topics whose ID names none left out.
func offsetFetchByName(s *Server, groups []kmsg.OffsetFetchRequestGroup) []kmsg.OffsetFetchRequestGroup {
	tn := s.broker.(TopicNames)
	out := make([]kmsg.OffsetFetchRequestGroup, len(groups))
	for i, g := range groups {
		out[i] = g
		if g.Topics == nil {
			continue
		}
		out[i].Topics = make([]kmsg.OffsetFetchRequestGroupTopic, 0, len(g.Topics))
		for _, t := range g.Topics {
			if name, ok := tn.TopicName(t.TopicID); ok {
				t.Topic = name
				out[i].Topics = append(out[i].Topics, t)
			}
		}
	}
	return out
}

// offsetFetchByID is a shard's answer for one group (asked by name) in
// v10's form: the requested topics in request order with their IDs, an
// unknown ID's partitions UNKNOWN_TOPIC_ID; for every committed offset
// (asked nil), the topics that have an ID.
func offsetFetchByID(s *Server, asked []kmsg.OffsetFetchRequestGroupTopic, got []kmsg.OffsetFetchResponseGroupTopic) []kmsg.OffsetFetchResponseGroupTopic {
	var out []kmsg.OffsetFetchResponseGroupTopic
	if asked == nil {
		ids := s.broker.(TopicIDs)
		for _, t := range got {
			if id, ok := ids.TopicID(t.Topic); ok {
				t.TopicID = id
				out = append(out, t)
			}
		}
		return out
	}
	tn := s.broker.(TopicNames)
	for _, t := range asked {
		name, ok := tn.TopicName(t.TopicID)
		if ok {
			if rt, found := findGroup(got, name, func(g kmsg.OffsetFetchResponseGroupTopic) string { return g.Topic }); found {
				rt.TopicID = t.TopicID
				out = append(out, rt)
				continue
			}
		}
		rt := kmsg.NewOffsetFetchResponseGroupTopic()
		rt.Topic, rt.TopicID = name, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = p, -1, -1
			if !ok {
				rp.ErrorCode = kerr.UnknownTopicID.Code
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		out = append(out, rt)
	}
	return out
}
