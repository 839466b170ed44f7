package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
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
	fail := func(code int16) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
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
