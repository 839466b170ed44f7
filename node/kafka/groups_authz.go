package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The group APIs' authorization (Kafka's KafkaApis table) beyond the
// dispatch hook (authorizeAPI: JoinGroup, SyncGroup, Heartbeat,
// LeaveGroup, OffsetCommit need READ on the group, OffsetDelete DELETE):
//
//   - FindCoordinator for a group: DESCRIBE on the group.
//   - OffsetCommit: READ on each topic (TOPIC_AUTHORIZATION_FAILED per
//     partition; the rest commit). OffsetDelete: READ on each topic.
//   - OffsetFetch: DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED);
//     topics the client may not DESCRIBE are left out of an all-topics
//     answer and answered TOPIC_AUTHORIZATION_FAILED when named.
//   - DescribeGroups, ConsumerGroupDescribe: DESCRIBE on each group;
//     DeleteGroups: DELETE on each group.
//   - ListGroups: DESCRIBE on the cluster lists every group, else only
//     the groups the client may DESCRIBE.
//   - ConsumerGroupHeartbeat: READ on the group, DESCRIBE on every topic
//     it subscribes to by name (TOPIC_AUTHORIZATION_FAILED).
//
// Without an Authorizer every check passes.

// coordinateAuthorized is coordinateMany for the groups r may do op on;
// the others answer GROUP_AUTHORIZATION_FAILED without reaching a shard.
func coordinateAuthorized(ctx context.Context, s *Server, r *request, op kmsg.ACLOperation, groups []string, build func(idx []int) kmsg.Request) []shardAnswer {
	if !s.Authorizing() {
		return coordinateMany(ctx, s, r, groups, build)
	}
	out := make([]shardAnswer, len(groups))
	var ok []string
	var at []int // index in groups of each of ok
	for i, id := range groups {
		if s.allowed(r, op, kmsg.ACLResourceTypeGroup, id) {
			ok, at = append(ok, id), append(at, i)
		} else {
			out[i].err = kerr.GroupAuthorizationFailed
		}
	}
	answers := coordinateMany(ctx, s, r, ok, func(idx []int) kmsg.Request {
		orig := make([]int, len(idx))
		for j, i := range idx {
			orig[j] = at[i]
		}
		return build(orig)
	})
	for j, i := range at {
		out[i] = answers[j]
	}
	return out
}

// topicCheck answers, once per topic, whether r may do op on it.
func topicCheck(s *Server, r *request, op kmsg.ACLOperation) func(topic string) bool {
	if !s.Authorizing() {
		return func(string) bool { return true }
	}
	seen := map[string]bool{}
	return func(topic string) bool {
		ok, done := seen[topic]
		if !done {
			ok = s.allowed(r, op, kmsg.ACLResourceTypeTopic, topic)
			seen[topic] = ok
		}
		return ok
	}
}

// authorizeOffsetTopics applies DESCRIBE on topics to an OffsetFetch
// answer's topics (v1-7: OffsetFetchResponseTopic, v8+:
// OffsetFetchResponseGroupTopic): an all-topics answer (named false) loses
// the topics r may not describe; a named topic's partitions answer
// TOPIC_AUTHORIZATION_FAILED (deny marks them).
func authorizeOffsetTopics[T any](s *Server, r *request, topics []T, named bool, name func(*T) string, deny func(*T)) []T {
	if !s.Authorizing() {
		return topics
	}
	out := topics[:0]
	for i := range topics {
		t := &topics[i]
		ok := named && s.allowed(r, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, name(t)) ||
			!named && s.visible(r, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, name(t))
		switch {
		case ok:
		case !named:
			continue
		default:
			deny(t)
		}
		out = append(out, *t)
	}
	return out
}

// visibleGroups is ListGroups' filter: all of groups with DESCRIBE on
// the cluster, else those r may DESCRIBE.
func visibleGroups(s *Server, r *request, groups []kmsg.ListGroupsResponseGroup) []kmsg.ListGroupsResponseGroup {
	if !s.Authorizing() || s.visible(r, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeCluster, clusterName) {
		return groups
	}
	out := groups[:0]
	for _, g := range groups {
		if s.visible(r, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeGroup, g.Group) {
			out = append(out, g)
		}
	}
	return out
}
