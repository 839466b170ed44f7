package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// SyncGroup (key 14), versions 0-5; served when the Broker implements
// Groups.
//
// Behavior: an empty group id answers INVALID_GROUP_ID; the rest goes to
// the group's shard, which answers a follower once the leader's
// assignment is written. A shard that cannot answer gives its error and
// no assignment.
func handleSyncGroup(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.SyncGroupRequest)
	return coordinateGroup(ctx, s, r, req.Group, func(resp *kmsg.SyncGroupResponse, code int16) { resp.ErrorCode = code })
}
