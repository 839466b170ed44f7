package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AddOffsetsToTxn (key 25), versions 0-4; served when the Broker
// implements Transactions.
//
// Behavior:
//   - WRITE on the transactional id, else
//     TRANSACTIONAL_ID_AUTHORIZATION_FAILED; READ on the group, else
//     GROUP_AUTHORIZATION_FAILED (Kafka's order).
//   - The id's shard adds the group's partition of __consumer_offsets
//     to the transaction (node/txn add_partitions_to_txn.go); the
//     offsets themselves come with TxnOffsetCommit to the group
//     coordinator.
func handleAddOffsetsToTxn(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.AddOffsetsToTxnRequest)
	fail := func(code int16) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
		resp.ErrorCode = code
		return resp, nil
	}
	if !txnWriteAllowed(s, r, req.TransactionalID) {
		return fail(kerr.TransactionalIDAuthorizationFailed.Code)
	}
	if !s.allowed(r, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, req.Group) {
		return fail(kerr.GroupAuthorizationFailed.Code)
	}
	resp, err := coordinateTxn(ctx, s, r, req.TransactionalID, req)
	if err != nil {
		return fail(txnCode(err))
	}
	return resp, nil
}
