package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/quorum"
)

// UnregisterBroker (key 64), version 0; served when the Broker implements
// Unregisterer.
//
// Behavior: removes a broker's registration from the cluster metadata
// (Kafka's kafka-cluster.sh unregister), answered once the change is
// committed: BROKER_ID_NOT_REGISTERED for an unknown id; INVALID_REQUEST,
// with a message naming the partitions, while any partition still has a
// replica on the broker (Kafka leaves such replicas offline; Sluice
// refuses, quorum/unregister.go). A broker that starts again registers
// anew. Authorization: ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED).
func handleUnregisterBroker(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.UnregisterBrokerRequest)
	resp := req.ResponseKind().(*kmsg.UnregisterBrokerResponse)
	err := s.broker.(Unregisterer).UnregisterBroker(ctx, req.BrokerID)
	if err != nil {
		resp.ErrorCode = quorum.ErrorCode(err)
		resp.ErrorMessage = kmsg.StringPtr(err.Error())
	}
	return resp, nil
}

// Unregisterer is the optional Broker capability behind UnregisterBroker.
type Unregisterer interface {
	// UnregisterBroker removes broker id's registration; the error wraps
	// the kerr value the client gets.
	UnregisterBroker(ctx context.Context, id int32) error
}
