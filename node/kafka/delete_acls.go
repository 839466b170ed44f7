package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/quorum"
)

// DeleteAcls (key 31), versions 0-3; served when the Broker implements
// ACLAdmin.
//
// Behavior:
//   - needs ALTER on the cluster (authorizeAPI: every filter answers
//     CLUSTER_AUTHORIZATION_FAILED otherwise);
//   - without an authorizer: SECURITY_DISABLED for every filter;
//   - every binding matching a filter is removed through the quorum and
//     the answer waits until every live broker has the removal in
//     effect; each filter's result lists the bindings it removed (a
//     binding matched by two filters is listed under the first); a
//     filter with an UNKNOWN element answers INVALID_REQUEST and removes
//     nothing.
//
// Version notes: v0 has no pattern type (LITERAL); v2+ is flexible.
func handleDeleteACLs(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DeleteACLsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	if !s.Authorizing() {
		for range req.Filters {
			rr := kmsg.NewDeleteACLsResponseResult()
			rr.ErrorCode, rr.ErrorMessage = kerr.SecurityDisabled.Code, kmsg.StringPtr("No Authorizer is configured.")
			resp.Results = append(resp.Results, rr)
		}
		return resp, nil
	}
	fs := make([]quorum.ACLFilter, len(req.Filters))
	for i, f := range req.Filters {
		fs[i] = quorum.ACLFilter{ResourceType: f.ResourceType, ResourceName: f.ResourceName, PatternType: f.ResourcePatternType,
			Principal: f.Principal, Host: f.Host, Operation: f.Operation, Permission: f.PermissionType}
		if req.Version == 0 {
			fs[i].PatternType = kmsg.ACLResourcePatternTypeLiteral
		}
	}
	reply, err := s.broker.(ACLAdmin).DeleteACLs(ctx, fs)
	if err != nil {
		return nil, fmt.Errorf("broker delete ACLs: %w", err)
	}
	for i := range req.Filters {
		rr := kmsg.NewDeleteACLsResponseResult()
		if i >= len(reply.Results) {
			rr.ErrorCode = kerr.UnknownServerError.Code
			resp.Results = append(resp.Results, rr)
			continue
		}
		res := reply.Results[i]
		rr.ErrorCode = res.Code
		if res.Message != "" {
			rr.ErrorMessage = kmsg.StringPtr(res.Message)
		}
		for _, b := range res.Deleted {
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName, m.ResourcePatternType = b.ResourceType, b.ResourceName, b.PatternType
			m.Principal, m.Host, m.Operation, m.PermissionType = b.Principal, b.Host, b.Operation, b.Permission
			rr.MatchingACLs = append(rr.MatchingACLs, m)
		}
		resp.Results = append(resp.Results, rr)
	}
	return resp, nil
}
