package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DeleteGroups (key 42), versions 0-2; served when the Broker implements
// Groups.
//
// Behavior: an empty group id answers INVALID_GROUP_ID; the others are
// split by shard, each shard asked once for its groups, at the same time
// (it answers NON_EMPTY_GROUP for a group with members, GROUP_ID_NOT_FOUND
// for an unknown one, and writes the tombstones of the rest before
// answering), and the groups answered in request order; a group of a shard
// that cannot answer gets its error.
func handleDeleteGroups(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DeleteGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	var ids []string
	var at []int // index in req.Groups of each id
	for i, id := range req.Groups {
		if id != "" {
			ids = append(ids, id)
			at = append(at, i)
		}
	}
	answers := coordinateAuthorized(ctx, s, r, kmsg.ACLOperationDelete, ids, func(idx []int) kmsg.Request {
		sub := *req
		sub.Groups = make([]string, len(idx))
		for j, i := range idx {
			sub.Groups[j] = ids[i]
		}
		return &sub
	})
	byIndex := make(map[int]shardAnswer, len(at))
	for j, i := range at {
		byIndex[i] = answers[j]
	}
	for i, id := range req.Groups {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group = id
		a, ok := byIndex[i]
		switch {
		case !ok:
			rg.ErrorCode = kerr.InvalidGroupID.Code
		case a.err != nil:
			rg.ErrorCode = groupCode(a.err)
		default:
			if found, ok := findGroup(a.resp.(*kmsg.DeleteGroupsResponse).Groups, id,
				func(g kmsg.DeleteGroupsResponseGroup) string { return g.Group }); ok {
				rg = found
			} else {
				rg.ErrorCode = groupCode(nil)
			}
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}
