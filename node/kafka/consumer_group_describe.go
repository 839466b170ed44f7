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
	for i, id := range req.Groups {
		rg := kmsg.NewConsumerGroupDescribeResponseGroup()
		rg.Group = id
		rg.AuthorizedOperations = -2147483648
		a := answers[i]
		if a.err != nil {
			rg.ErrorCode = groupCode(a.err)
		} else if found, ok := findGroup(a.resp.(*kmsg.ConsumerGroupDescribeResponse).Groups, id,
			func(g kmsg.ConsumerGroupDescribeResponseGroup) string { return g.Group }); ok {
			rg = found
		} else {
			rg.ErrorCode = groupCode(nil)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}
