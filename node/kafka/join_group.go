package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// JoinGroup (key 11), versions 2-9 (Kafka 4 dropped 0-1, KIP-896); served
// when the Broker implements Groups.
//
// Behavior:
//   - An empty group id answers INVALID_GROUP_ID without asking anyone, as
//     Kafka's GroupCoordinatorService does.
//   - The rest goes to the group's shard (Groups.Coordinate), which answers
//     when the rebalance completes: the handler blocks its connection
//     meanwhile, as Kafka's muted channel does.
//   - A shard that cannot answer (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
//     ...) answers with generation -1 and the member id sent.
func handleJoinGroup(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.JoinGroupRequest)
	return coordinateGroup(ctx, s, r, req.Group, func(resp *kmsg.JoinGroupResponse, code int16) {
		resp.ErrorCode, resp.Generation, resp.MemberID = code, -1, req.MemberID
	})
}
