package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AddPartitionsToTxn (key 24), versions 0-5; served when the Broker
// implements Transactions.
//
// Behavior:
//   - v0-3 (clients): WRITE on the transactional id, else every
//     partition TRANSACTIONAL_ID_AUTHORIZATION_FAILED; partitions of
//     topics the client may not WRITE get TOPIC_AUTHORIZATION_FAILED,
//     partitions that do not exist UNKNOWN_TOPIC_OR_PARTITION, and when
//     any did, the others OPERATION_NOT_ATTEMPTED (nothing is added).
//     Otherwise the id's shard adds them (node/txn).
//   - v4+ (brokers, KIP-890 part 1: several transactions, VerifyOnly):
//     CLUSTER_ACTION on the cluster, else the top-level
//     CLUSTER_AUTHORIZATION_FAILED; each transaction as v0-3 without its
//     ACL checks; the transactions are split by shard and answered in
//     request order.
//   - The shard's errors (NOT_COORDINATOR, ...) answer every partition
//     of the transaction.
//
// Version notes: v2 brings PRODUCER_FENCED (before it,
// INVALID_PRODUCER_EPOCH; the shard translates).
func handleAddPartitionsToTxn(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.AddPartitionsToTxnRequest)
	if req.Version >= 4 {
		return addPartitionsBrokers(ctx, s, r, req)
	}
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	answerAll := func(code func(topic string) int16) *kmsg.AddPartitionsToTxnResponse {
		resp.Topics = resp.Topics[:0]
		for _, t := range req.Topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, code(t.Topic)
				if rp.ErrorCode == kerr.UnknownTopicOrPartition.Code && s.broker.(Transactions).PartitionExists(t.Topic, p) {
					rp.ErrorCode = kerr.OperationNotAttempted.Code
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	if !txnWriteAllowed(s, r, req.TransactionalID) {
		return answerAll(func(string) int16 { return kerr.TransactionalIDAuthorizationFailed.Code }), nil
	}
	denied := map[string]bool{}
	bad := false
	for _, t := range req.Topics {
		if !s.allowed(r, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic, t.Topic) {
			denied[t.Topic], bad = true, true
		}
	}
	if !bad {
		bad = hasUnknownPartitions(s, req.Topics, func(t *kmsg.AddPartitionsToTxnRequestTopic) (string, []int32) { return t.Topic, t.Partitions })
	}
	if bad {
		return answerAll(func(topic string) int16 {
			if denied[topic] {
				return kerr.TopicAuthorizationFailed.Code
			}
			return kerr.UnknownTopicOrPartition.Code // OPERATION_NOT_ATTEMPTED where it exists
		}), nil
	}
	out, err := coordinateTxn(ctx, s, r, req.TransactionalID, req)
	if err != nil {
		code := txnCode(err)
		return answerAll(func(string) int16 { return code }), nil
	}
	return out, nil
}

// hasUnknownPartitions says whether some partition of topics does not
// exist.
func hasUnknownPartitions[T any](s *Server, topics []T, parts func(*T) (string, []int32)) bool {
	tx := s.broker.(Transactions)
	for i := range topics {
		topic, ps := parts(&topics[i])
		for _, p := range ps {
			if !tx.PartitionExists(topic, p) {
				return true
			}
		}
	}
	return false
}

// addPartitionsBrokers answers the v4+ broker form.
func addPartitionsBrokers(ctx context.Context, s *Server, r *request, req *kmsg.AddPartitionsToTxnRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if !s.clusterAllowed(r, kmsg.ACLOperationClusterAction) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	tx := s.broker.(Transactions)
	answer := func(t *kmsg.AddPartitionsToTxnRequestTransaction, code func(topic string, p int32) int16) kmsg.AddPartitionsToTxnResponseTransaction {
		rt := kmsg.NewAddPartitionsToTxnResponseTransaction()
		rt.TransactionalID = t.TransactionalID
		for _, tp := range t.Topics {
			rtt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
			rtt.Topic = tp.Topic
			for _, p := range tp.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				rp.Partition, rp.ErrorCode = p, code(tp.Topic, p)
				rtt.Partitions = append(rtt.Partitions, rp)
			}
			rt.Topics = append(rt.Topics, rtt)
		}
		return rt
	}
	// Transactions naming unknown partitions are answered here; the
	// others go to their shards.
	var ids []string
	var at []int
	results := make([]kmsg.AddPartitionsToTxnResponseTransaction, len(req.Transactions))
	for i := range req.Transactions {
		t := &req.Transactions[i]
		if hasUnknownPartitions(s, t.Topics, func(tp *kmsg.AddPartitionsToTxnRequestTransactionTopic) (string, []int32) {
			return tp.Topic, tp.Partitions
		}) {
			results[i] = answer(t, func(topic string, p int32) int16 {
				if tx.PartitionExists(topic, p) {
					return kerr.OperationNotAttempted.Code
				}
				return kerr.UnknownTopicOrPartition.Code
			})
			continue
		}
		ids, at = append(ids, t.TransactionalID), append(at, i)
	}
	answers := coordinateTxns(ctx, s, r, ids, func(idx []int) kmsg.Request {
		part := *req
		part.Transactions = make([]kmsg.AddPartitionsToTxnRequestTransaction, len(idx))
		for j, i := range idx {
			part.Transactions[j] = req.Transactions[at[i]]
		}
		return &part
	})
	for j, i := range at {
		t := &req.Transactions[i]
		a := answers[j]
		if a.err == nil {
			if got, ok := findTxn(a.resp.(*kmsg.AddPartitionsToTxnResponse), t.TransactionalID); ok {
				results[i] = got
				continue
			}
		}
		code := txnCode(a.err)
		if a.err == nil {
			code = a.resp.(*kmsg.AddPartitionsToTxnResponse).ErrorCode
			if code == 0 {
				code = kerr.CoordinatorNotAvailable.Code
			}
		}
		results[i] = answer(t, func(string, int32) int16 { return code })
	}
	resp.Transactions = results
	return resp, nil
}

func findTxn(resp *kmsg.AddPartitionsToTxnResponse, id string) (kmsg.AddPartitionsToTxnResponseTransaction, bool) {
	for _, t := range resp.Transactions {
		if t.TransactionalID == id {
			return t, true
		}
	}
	return kmsg.AddPartitionsToTxnResponseTransaction{}, false
}
