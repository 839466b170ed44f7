package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// LeaveGroup (key 13), versions 0-5 (v3+: several members at once,
// KIP-345); served when the Broker implements Groups.
//
// Behavior: an empty group id answers INVALID_GROUP_ID; the rest goes to
// the group's shard. A shard that cannot answer gives its error at the top
// level and no member results.
func handleLeaveGroup(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.LeaveGroupRequest)
	fail := func(code int16) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
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
