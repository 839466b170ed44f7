package kafka

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListTransactions (key 66), versions 0-1; served when the Broker
// implements Transactions.
//
// Behavior:
//   - The transactions of every __transaction_state partition this
//     broker leads, filtered by state, producer id and (v1, KIP-994) the
//     least time they have been running; states the filter names that
//     Kafka does not know are listed in UnknownStateFilters.
//   - Only the ids the client may DESCRIBE are listed, quietly, as
//     Kafka does.
//   - A partition still loading answers COORDINATOR_LOAD_IN_PROGRESS.
func handleListTransactions(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.ListTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	var minDuration time.Duration
	if req.Version >= 1 && req.DurationFilterMillis > 0 {
		minDuration = time.Duration(req.DurationFilterMillis) * time.Millisecond
	}
	txns, unknown, err := s.broker.(Transactions).ListTransactions(ctx, req.StateFilters, req.ProducerIDFilters, minDuration)
	if err != nil {
		resp.ErrorCode = txnCode(err)
		return resp, nil
	}
	resp.UnknownStateFilters = unknown
	for _, t := range txns {
		if s.visible(r, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTransactionalId, t.TransactionalID) {
			resp.TransactionStates = append(resp.TransactionStates, t)
		}
	}
	return resp, nil
}
