package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeCluster (key 60), versions 0-1.
//
// The cluster id, the active controller and the live brokers, from the
// same Broker.Metadata answer as Metadata with no topics. endpoint_type
// (v1) 1 (brokers) is answered; 2 (controllers) answers
// UNSUPPORTED_ENDPOINT_TYPE, as a broker does. Authorized operations stay
// at INT32_MIN (no ACLs).
func handleDescribeCluster(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.EndpointType = req.EndpointType
	if req.Version >= 1 && req.EndpointType != 1 {
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		return resp, nil
	}
	md, err := s.broker.Metadata(ctx, MetadataQuery{Listener: r.listener})
	if err != nil {
		return nil, fmt.Errorf("broker metadata: %w", err)
	}
	resp.ClusterID, resp.ControllerID = md.ClusterID, md.ControllerID
	for _, b := range md.Brokers {
		rb := kmsg.NewDescribeClusterResponseBroker()
		rb.NodeID, rb.Host, rb.Port = b.NodeID, b.Host, b.Port
		if b.Rack != "" {
			rb.Rack = kmsg.StringPtr(b.Rack)
		}
		resp.Brokers = append(resp.Brokers, rb)
	}
	return resp, nil
}
