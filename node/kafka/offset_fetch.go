package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetFetch (key 9), versions 1-9 (Kafka 4 dropped 0, KIP-896; v10's
// topic ids came with Kafka 4.2); served when the Broker implements
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
	answers := coordinateAuthorized(ctx, s, r, kmsg.ACLOperationDescribe, ids, func(idx []int) kmsg.Request {
		sub := *req
		sub.Groups = make([]kmsg.OffsetFetchRequestGroup, len(idx))
		for j, i := range idx {
			sub.Groups[j] = req.Groups[i]
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
