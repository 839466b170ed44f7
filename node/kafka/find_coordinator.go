package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FindCoordinator (key 10), versions 0-6 (v4: several keys at once,
// KIP-699); always served.
//
// Behavior:
//   - Groups (key type 0), when the Broker implements Groups: the broker
//     leading the group's partition of __consumer_offsets, at its endpoint
//     for the request's listener (Groups.FindGroupCoordinator; the first
//     ask creates the topic, and until its partition has a leader the
//     answer is COORDINATOR_NOT_AVAILABLE, which clients retry). An empty
//     key is placed like any other, as Kafka does: the group APIs then
//     answer it INVALID_GROUP_ID. Without Groups the key is refused as
//     below with GROUP_AUTHORIZATION_FAILED.
//   - Transactional ids (type 1), when the Broker implements
//     Transactions: DESCRIBE on the id, else
//     TRANSACTIONAL_ID_AUTHORIZATION_FAILED; then the broker leading the
//     id's partition of __transaction_state
//     (Transactions.FindTxnCoordinator, created on first ask, like the
//     offsets topic). Without Transactions the id is refused with
//     TRANSACTIONAL_ID_AUTHORIZATION_FAILED, what a Kafka broker answers
//     when its ACLs deny the id and clients treat as final rather than
//     retrying. Any other type: INVALID_REQUEST.
//   - Errors carry node id -1, port -1 and, from v1, a message saying why.
//     v4+ answers each of its keys on its own.
//
// Version notes: the API is listed even without Groups because librdkafka
// enables features by the APIs a broker advertises and ties LZ4
// compression to FindCoordinator v0 (LZ4 predates any API version that
// would say so): without it, a librdkafka producer set to
// compression.type=lz4 sends its batches uncompressed, saying so only in a
// debug log. v5 and v6 add error codes (TRANSACTION_ABORTABLE, share
// groups' key type 2) that Sluice never answers.
func handleFindCoordinator(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	groups, serves := s.broker.(Groups)
	find := func(key string) (BrokerInfo, int16, string) {
		switch req.CoordinatorType {
		case 0:
			if !serves {
				return BrokerInfo{}, kerr.GroupAuthorizationFailed.Code, "this broker serves no consumer groups: assign partitions directly"
			}
			if !s.allowed(r, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeGroup, key) {
				return BrokerInfo{}, kerr.GroupAuthorizationFailed.Code, "not authorized to describe group " + key
			}
			b, err := groups.FindGroupCoordinator(ctx, r.listener, key)
			if err != nil {
				return BrokerInfo{}, groupCode(err), err.Error()
			}
			return b, 0, ""
		case 1:
			txns, ok := s.broker.(Transactions)
			if !ok {
				return BrokerInfo{}, kerr.TransactionalIDAuthorizationFailed.Code, "this broker serves no transactions"
			}
			if !s.allowed(r, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTransactionalId, key) {
				return BrokerInfo{}, kerr.TransactionalIDAuthorizationFailed.Code, "not authorized to describe transactional id " + key
			}
			b, err := txns.FindTxnCoordinator(ctx, r.listener, key)
			if err != nil {
				return BrokerInfo{}, txnCode(err), err.Error()
			}
			return b, 0, ""
		}
		return BrokerInfo{}, kerr.InvalidRequest.Code, "unknown coordinator type"
	}
	if req.Version < 4 {
		b, code, msg := find(req.CoordinatorKey)
		resp.ErrorCode = code
		if code != 0 {
			resp.NodeID, resp.Port = -1, -1
			if req.Version >= 1 {
				resp.ErrorMessage = kmsg.StringPtr(msg)
			}
			return resp, nil
		}
		resp.NodeID, resp.Host, resp.Port = b.NodeID, b.Host, b.Port
		return resp, nil
	}
	for _, key := range req.CoordinatorKeys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key = key
		b, code, msg := find(key)
		c.ErrorCode = code
		if code != 0 {
			c.NodeID, c.Port, c.ErrorMessage = -1, -1, kmsg.StringPtr(msg)
		} else {
			c.NodeID, c.Host, c.Port = b.NodeID, b.Host, b.Port
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	return resp, nil
}
