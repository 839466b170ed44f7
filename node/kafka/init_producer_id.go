package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/quorum"
)

// InitProducerId (key 22), versions 0-5; served when the Broker implements
// ProducerIDs.
//
// Version notes: v4 answers a fenced producer PRODUCER_FENCED (below it
// INVALID_PRODUCER_EPOCH); v5 (KIP-890) only says that the client
// understands TRANSACTION_ABORTABLE, which InitProducerId never answers,
// so v5 is served as v4. Kafka 4.1's v6 (KIP-939's two-phase commit
// fields) is not served: the pinned kmsg (v1.15.1) decodes up to v5.
//
// For an idempotent producer (null transactional id): a new producer id
// with epoch 0, or (v3+, producer id given) the same id with its epoch
// bumped, through ProducerIDs.InitProducerID.
// Authorization (idempotent producers, KIP-679): IDEMPOTENT_WRITE on the
// cluster or WRITE on any topic, else CLUSTER_AUTHORIZATION_FAILED.
//
// With a transactional id, when the Broker implements Transactions: WRITE
// on the id, else TRANSACTIONAL_ID_AUTHORIZATION_FAILED; then the id's
// shard answers (node/txn init_producer_id.go: a new producer id, or the
// epoch bumped, fencing the previous incarnation). Without Transactions
// it answers TRANSACTIONAL_ID_AUTHORIZATION_FAILED, which clients report
// instead of retrying forever.
func handleInitProducerID(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		if _, ok := s.broker.(Transactions); !ok || !txnWriteAllowed(s, r, *req.TransactionalID) {
			resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			return resp, nil
		}
		out, err := coordinateTxn(ctx, s, r, *req.TransactionalID, req)
		if err != nil {
			resp.ErrorCode = txnCode(err)
			return resp, nil
		}
		return out, nil
	}
	if s.Authorizing() && !s.visible(r, kmsg.ACLOperationIdempotentWrite, kmsg.ACLResourceTypeCluster, clusterName) &&
		!s.allowedAny(r, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	id, epoch, err := s.broker.(ProducerIDs).InitProducerID(ctx, req.ProducerID, req.ProducerEpoch)
	resp.ErrorCode = quorum.ErrorCode(err)
	if err == nil {
		resp.ProducerID, resp.ProducerEpoch = id, epoch
	}
	return resp, nil
}
