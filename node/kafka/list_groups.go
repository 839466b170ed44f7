package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListGroups (key 16), versions 0-5 (v4: states filter, KIP-518; v5: types
// filter, KIP-848); served when the Broker implements Groups.
//
// Behavior: lists the groups of the shards this broker coordinates (an
// admin client asks every broker and merges), filtered by state and type
// (case-insensitive; empty: all). A shard still loading answers
// COORDINATOR_LOAD_IN_PROGRESS for the whole request, as Kafka does.
func handleListGroups(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.ListGroupsRequest)
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	groups, err := s.broker.(Groups).ListGroups(ctx, req.StatesFilter, req.TypesFilter)
	if err != nil {
		resp.ErrorCode = groupCode(err)
		return resp, nil
	}
	resp.Groups = visibleGroups(s, r, groups)
	return resp, nil
}
