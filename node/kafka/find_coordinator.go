package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FindCoordinator (key 10), versions 0-4; always served.
//
// Sluice has no group or transaction coordinator: consumers assign
// partitions themselves and producers are at most idempotent. The API is
// listed anyway because librdkafka enables features by the APIs a broker
// advertises and ties LZ4 compression to FindCoordinator v0 (LZ4 predates
// any API version that would say so): without it, a librdkafka producer
// set to compression.type=lz4 sends its batches uncompressed, saying so
// only in a debug log. Every key is refused as a Kafka broker refuses one
// its ACLs deny, which clients treat as final rather than retrying:
// GROUP_AUTHORIZATION_FAILED for a group (key type 0),
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED for a transactional id (type 1,
// what Produce answers a transactional request), INVALID_REQUEST for any
// other type; node id -1, and from v1 a message saying why. v4 (KIP-699)
// answers each of its keys the same way.
func handleFindCoordinator(_ context.Context, _ *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	code, msg := kerr.InvalidRequest.Code, "unknown coordinator type"
	switch req.CoordinatorType {
	case 0:
		code, msg = kerr.GroupAuthorizationFailed.Code, "Sluice serves no consumer groups: assign partitions directly"
	case 1:
		code, msg = kerr.TransactionalIDAuthorizationFailed.Code, "Sluice serves no transactions"
	}
	if req.Version < 4 {
		resp.ErrorCode, resp.NodeID, resp.Port = code, -1, -1
		if req.Version >= 1 {
			resp.ErrorMessage = kmsg.StringPtr(msg)
		}
		return resp, nil
	}
	for _, key := range req.CoordinatorKeys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key, c.NodeID, c.Port, c.ErrorCode, c.ErrorMessage = key, -1, -1, code, kmsg.StringPtr(msg)
		resp.Coordinators = append(resp.Coordinators, c)
	}
	return resp, nil
}
