package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeTransactions (key 65), version 0; served when the Broker
// implements Transactions.
//
// Behavior:
//   - Ids the client may not DESCRIBE get
//     TRANSACTIONAL_ID_AUTHORIZATION_FAILED; the others are split by
//     shard and answered in request order (node/txn admin.go: state,
//     timeout, start, producer, partitions; an unknown id
//     TRANSACTIONAL_ID_NOT_FOUND). A shard's error (NOT_COORDINATOR,
//     COORDINATOR_LOAD_IN_PROGRESS, ...) answers its ids.
//   - Partitions of topics the client may not DESCRIBE are left out, as
//     Kafka does.
func handleDescribeTransactions(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DescribeTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	missing := func(id string, code int16) kmsg.DescribeTransactionsResponseTransactionState {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID, st.ErrorCode, st.StartTimestamp, st.ProducerID, st.ProducerEpoch = id, code, -1, -1, -1
		return st
	}
	var ids []string
	var at []int
	out := make([]kmsg.DescribeTransactionsResponseTransactionState, len(req.TransactionalIDs))
	for i, id := range req.TransactionalIDs {
		if !s.allowed(r, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTransactionalId, id) {
			out[i] = missing(id, kerr.TransactionalIDAuthorizationFailed.Code)
			continue
		}
		ids, at = append(ids, id), append(at, i)
	}
	answers := coordinateTxns(ctx, s, r, ids, func(idx []int) kmsg.Request {
		part := *req
		part.TransactionalIDs = make([]string, len(idx))
		for j, i := range idx {
			part.TransactionalIDs[j] = ids[i]
		}
		return &part
	})
	merged := mergeGroups(ids, answers,
		func(resp kmsg.Response) []kmsg.DescribeTransactionsResponseTransactionState {
			return resp.(*kmsg.DescribeTransactionsResponse).TransactionStates
		},
		func(st kmsg.DescribeTransactionsResponseTransactionState) string { return st.TransactionalID }, missing)
	visible := topicCheck(s, r, kmsg.ACLOperationDescribe)
	for j, i := range at {
		st := merged[j]
		topics := st.Topics[:0]
		for _, t := range st.Topics {
			if visible(t.Topic) {
				topics = append(topics, t)
			}
		}
		st.Topics = topics
		out[i] = st
	}
	resp.TransactionStates = out
	return resp, nil
}
