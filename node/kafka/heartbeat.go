package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Heartbeat (key 12), versions 0-4; served when the Broker implements
// Groups.
//
// Behavior: an empty group id answers INVALID_GROUP_ID; the rest goes to
// the group's shard (REBALANCE_IN_PROGRESS tells a member to rejoin).
func handleHeartbeat(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.HeartbeatRequest)
	fail := func(code int16) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = code
		return resp, nil
	}
	if req.Group == "" {
		return fail(kerr.InvalidGroupID.Code)
	}
	resp, err := coordinateOne(ctx, s, r, req.Group)
	if err != nil {
		return fail(groupCode(err))
	}
	return resp, nil
}
