package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Heartbeat (key 12), versions 0-4; served when the Broker implements
// Groups.
//
// Behavior: an empty group id answers INVALID_GROUP_ID; the rest goes to
// the group's shard (REBALANCE_IN_PROGRESS tells a member to rejoin).
func handleHeartbeat(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.HeartbeatRequest)
	return coordinateGroup(ctx, s, r, req.Group, func(resp *kmsg.HeartbeatResponse, code int16) { resp.ErrorCode = code })
}
