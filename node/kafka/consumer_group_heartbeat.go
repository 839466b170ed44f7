package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ConsumerGroupHeartbeat (key 68), versions 0-1 (v1: the client makes its
// member id and may subscribe by regular expression, KIP-1082 and
// KIP-848); served when the Broker implements Groups.
//
// Behavior: an empty group id answers INVALID_REQUEST, as Kafka does; the
// rest goes to the group's shard, which runs the KIP-848 protocol (see
// node/group). A shard that cannot answer gives its error with member
// epoch -1 (NOT_COORDINATOR sends the client back to FindCoordinator).
func handleConsumerGroupHeartbeat(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.ConsumerGroupHeartbeatRequest)
	fail := func(code int16, msg string) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		resp.ErrorCode, resp.MemberEpoch = code, -1
		if msg != "" {
			resp.ErrorMessage = &msg
		}
		return resp, nil
	}
	if req.Group == "" {
		return fail(kerr.InvalidRequest.Code, "GroupId can't be empty.")
	}
	if !s.allowed(r, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, req.Group) {
		return fail(kerr.GroupAuthorizationFailed.Code, "")
	}
	describable := topicCheck(s, r, kmsg.ACLOperationDescribe)
	for _, t := range req.SubscribedTopicNames {
		if !describable(t) {
			return fail(kerr.TopicAuthorizationFailed.Code, "not authorized to describe topic "+t)
		}
	}
	resp, err := coordinateOne(ctx, s, r, req.Group)
	if err != nil {
		return fail(groupCode(err), "")
	}
	return resp, nil
}
