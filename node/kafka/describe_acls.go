package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/quorum"
)

// DescribeAcls (key 29), versions 0-3; served when the Broker implements
// ACLAdmin.
//
// Behavior:
//   - needs DESCRIBE on the cluster (authorizeAPI: CLUSTER_AUTHORIZATION_FAILED);
//   - without an authorizer: SECURITY_DISABLED;
//   - answers the bindings matching the filter (Kafka's
//     AclBindingFilter: ANY, MATCH, null strings) from the local
//     metadata image, grouped by resource pattern; a filter with an
//     UNKNOWN element answers INVALID_REQUEST.
//
// Version notes: v0 has no pattern type (LITERAL); v2+ is flexible.
func handleDescribeACLs(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DescribeACLsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	if !s.Authorizing() {
		resp.ErrorCode, resp.ErrorMessage = kerr.SecurityDisabled.Code, kmsg.StringPtr("No Authorizer is configured.")
		return resp, nil
	}
	f := quorum.ACLFilter{ResourceType: req.ResourceType, ResourceName: req.ResourceName, PatternType: req.ResourcePatternType,
		Principal: req.Principal, Host: req.Host, Operation: req.Operation, Permission: req.PermissionType}
	if req.Version == 0 {
		f.PatternType = kmsg.ACLResourcePatternTypeLiteral
	}
	if unknownInFilter(&f) {
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr("Filter contains UNKNOWN elements")
		return resp, nil
	}
	bs, err := s.broker.(ACLAdmin).DescribeACLs(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("broker describe ACLs: %w", err)
	}
	type pattern struct {
		rt   kmsg.ACLResourceType
		name string
		pt   kmsg.ACLResourcePatternType
	}
	at := map[pattern]int{}
	for _, b := range bs {
		p := pattern{b.ResourceType, b.ResourceName, b.PatternType}
		i, ok := at[p]
		if !ok {
			i = len(resp.Resources)
			at[p] = i
			rr := kmsg.NewDescribeACLsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ResourcePatternType = p.rt, p.name, p.pt
			resp.Resources = append(resp.Resources, rr)
		}
		a := kmsg.NewDescribeACLsResponseResourceACL()
		a.Principal, a.Host, a.Operation, a.PermissionType = b.Principal, b.Host, b.Operation, b.Permission
		resp.Resources[i].ACLs = append(resp.Resources[i].ACLs, a)
	}
	return resp, nil
}

// unknownInFilter reports whether a filter has an UNKNOWN element.
func unknownInFilter(f *quorum.ACLFilter) bool {
	return f.ResourceType == kmsg.ACLResourceTypeUnknown || f.PatternType == kmsg.ACLResourcePatternTypeUnknown ||
		f.Operation == kmsg.ACLOperationUnknown || f.Permission == kmsg.ACLPermissionTypeUnknown
}
