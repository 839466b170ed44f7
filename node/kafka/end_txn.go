package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// EndTxn (key 26), versions 0-4; served when the Broker implements
// Transactions.
//
// Behavior:
//   - WRITE on the transactional id, else
//     TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
//   - The id's shard commits or aborts the transaction (node/txn
//     end_txn.go); the answer comes once PrepareCommit or PrepareAbort is
//     written, the markers follow.
//
// Version notes: v5 (transaction.version 2, KIP-890 part 2: a new epoch
// per transaction) is not listed, so clients stay on their version 1
// path (node/txn's doc says why).
func handleEndTxn(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.EndTxnRequest)
	fail := func(code int16) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.EndTxnResponse)
		resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = code, -1, -1
		return resp, nil
	}
	if !txnWriteAllowed(s, r, req.TransactionalID) {
		return fail(kerr.TransactionalIDAuthorizationFailed.Code)
	}
	resp, err := coordinateTxn(ctx, s, r, req.TransactionalID, req)
	if err != nil {
		return fail(txnCode(err))
	}
	return resp, nil
}
