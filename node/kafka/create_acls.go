package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/quorum"
)

// CreateAcls (key 30), versions 0-3; served when the Broker implements
// ACLAdmin.
//
// Behavior:
//   - needs ALTER on the cluster (authorizeAPI: every creation answers
//     CLUSTER_AUTHORIZATION_FAILED otherwise);
//   - without an authorizer (authorizer.class.name empty) every creation
//     answers SECURITY_DISABLED, as Kafka does;
//   - each binding is validated as Kafka's controller does
//     (quorum.ValidateACLBinding: INVALID_REQUEST for an ANY or MATCH
//     in a binding, an empty name, a principal without "Type:", a
//     CLUSTER resource not named kafka-cluster); a binding that exists
//     already succeeds without a change;
//   - the bindings go through the quorum and are answered once every
//     live broker has them in effect (ACLAdmin.CreateACLs).
//
// Version notes: v0 has no pattern type (LITERAL); v2+ is flexible.
func handleCreateACLs(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.CreateACLsRequest)
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	if !s.Authorizing() {
		for range req.Creations {
			rr := kmsg.NewCreateACLsResponseResult()
			rr.ErrorCode, rr.ErrorMessage = kerr.SecurityDisabled.Code, kmsg.StringPtr("No Authorizer is configured.")
			resp.Results = append(resp.Results, rr)
		}
		return resp, nil
	}
	bs := make([]quorum.ACLBinding, len(req.Creations))
	for i, c := range req.Creations {
		bs[i] = quorum.ACLBinding{ResourceType: c.ResourceType, ResourceName: c.ResourceName, PatternType: c.ResourcePatternType,
			Principal: c.Principal, Host: c.Host, Operation: c.Operation, Permission: c.PermissionType}
		if req.Version == 0 {
			bs[i].PatternType = kmsg.ACLResourcePatternTypeLiteral
		}
	}
	reply, err := s.broker.(ACLAdmin).CreateACLs(ctx, bs)
	if err != nil {
		return nil, fmt.Errorf("broker create ACLs: %w", err)
	}
	for i := range req.Creations {
		rr := kmsg.NewCreateACLsResponseResult()
		if i < len(reply.Results) {
			res := reply.Results[i]
			rr.ErrorCode = res.Code
			if res.Message != "" {
				rr.ErrorMessage = kmsg.StringPtr(res.Message)
			}
		} else {
			rr.ErrorCode = kerr.UnknownServerError.Code
		}
		resp.Results = append(resp.Results, rr)
	}
	return resp, nil
}

// ACLAdmin is the optional capability behind the ACL APIs.
type ACLAdmin interface {
	// CreateACLs creates bindings through the quorum; one result per
	// binding, in order. An error means no answer (the connection
	// closes); a failure of the quorum is each result's code.
	CreateACLs(ctx context.Context, bs []quorum.ACLBinding) (*quorum.CreateACLsReply, error)
	// DeleteACLs removes the bindings matching any filter through the
	// quorum; one result per filter, in order.
	DeleteACLs(ctx context.Context, fs []quorum.ACLFilter) (*quorum.DeleteACLsReply, error)
	// DescribeACLs returns the bindings matching f (the local
	// metadata image's).
	DescribeACLs(ctx context.Context, f quorum.ACLFilter) ([]quorum.ACLBinding, error)
}
