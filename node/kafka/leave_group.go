package kafka

import (
	"context"

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
	return coordinateGroup(ctx, s, r, req.Group, func(resp *kmsg.LeaveGroupResponse, code int16) { resp.ErrorCode = code })
}
