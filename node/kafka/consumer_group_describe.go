package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ConsumerGroupDescribe (key 69), versions 0-1 (v1: member type); served
// when the Broker implements Groups.
//
// Behavior: as DescribeGroups, the groups are split by shard, each shard
// asked once, and answered in request order; a group of a shard that
// cannot answer gets its error. An unknown group, or a classic one, is
// GROUP_ID_NOT_FOUND (the shard's answer).
func handleConsumerGroupDescribe(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.ConsumerGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	answers := coordinateAuthorized(ctx, s, r, kmsg.ACLOperationDescribe, req.Groups, func(idx []int) kmsg.Request {
		sub := *req
		sub.Groups = make([]string, len(idx))
		for j, i := range idx {
			sub.Groups[j] = req.Groups[i]
		}
		return &sub
	})
	resp.Groups = mergeGroups(req.Groups, answers,
		func(a kmsg.Response) []kmsg.ConsumerGroupDescribeResponseGroup {
			return a.(*kmsg.ConsumerGroupDescribeResponse).Groups
		},
		func(g kmsg.ConsumerGroupDescribeResponseGroup) string { return g.Group },
		func(id string, code int16) kmsg.ConsumerGroupDescribeResponseGroup {
			rg := kmsg.NewConsumerGroupDescribeResponseGroup()
			rg.Group, rg.ErrorCode, rg.AuthorizedOperations = id, code, -2147483648
			return rg
		})
	return resp, nil
}
