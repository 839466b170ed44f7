package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/quorum"
)

// InitProducerId (key 22), versions 0-4; served when the Broker implements
// ProducerIDs.
//
// For an idempotent producer (null transactional id): a new producer id
// with epoch 0, or (v3+, producer id given) the same id with its epoch
// bumped, through ProducerIDs.InitProducerID. Transactions are not served:
// a transactional id answers TRANSACTIONAL_ID_AUTHORIZATION_FAILED, which
// clients report instead of retrying forever.
// Authorization (idempotent producers, KIP-679): IDEMPOTENT_WRITE on the
// cluster or WRITE on any topic, else CLUSTER_AUTHORIZATION_FAILED.
func handleInitProducerID(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp, nil
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
