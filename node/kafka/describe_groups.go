package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeGroups (key 15), versions 0-6; served when the Broker implements
// Groups.
//
// Behavior: the groups are split by shard, each shard asked once for its
// groups, at the same time, and the groups answered in request order; a
// group of a shard that cannot answer gets its error (NOT_COORDINATOR from
// a broker that does not coordinate it). A group id given twice is
// described twice, as Kafka does. An unknown group is the shard's to
// answer (state Dead, v6+: GROUP_ID_NOT_FOUND).
func handleDescribeGroups(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DescribeGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	answers := coordinateAuthorized(ctx, s, r, kmsg.ACLOperationDescribe, req.Groups, func(idx []int) kmsg.Request {
		sub := *req
		sub.Groups = make([]string, len(idx))
		for j, i := range idx {
			sub.Groups[j] = req.Groups[i]
		}
		return &sub
	})
	resp.Groups = mergeGroups(req.Groups, answers,
		func(a kmsg.Response) []kmsg.DescribeGroupsResponseGroup {
			return a.(*kmsg.DescribeGroupsResponse).Groups
		},
		func(g kmsg.DescribeGroupsResponseGroup) string { return g.Group },
		func(id string, code int16) kmsg.DescribeGroupsResponseGroup {
			rg := kmsg.NewDescribeGroupsResponseGroup()
			rg.Group, rg.ErrorCode, rg.AuthorizedOperations = id, code, -2147483648
			return rg
		})
	return resp, nil
}
