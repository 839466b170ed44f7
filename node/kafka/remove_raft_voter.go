package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/quorum"
)

// RemoveRaftVoter (key 81, KIP-853), version 0; served when the Broker
// implements VoterAdmin.
//
// Behavior: removes a voter from the metadata quorum (a controller lost
// with its disk, before its replacement joins; quorum/voters.go), answered
// once the new configuration is committed. VOTER_NOT_FOUND for a node that
// is not a voter; INVALID_REQUEST for the last voter. The active
// controller may remove itself: it steps down. Sluice's voters carry no
// directory id, so VoterDirectoryID is not checked (the voter is usually
// gone). Any broker answers, through the active controller.
// Authorization: ALTER on the cluster.
func handleRemoveRaftVoter(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.RemoveRaftVoterRequest)
	resp := req.ResponseKind().(*kmsg.RemoveRaftVoterResponse)
	if err := s.broker.(VoterAdmin).RemoveRaftVoter(ctx, req.VoterID); err != nil {
		resp.ErrorCode = quorum.ErrorCode(err)
		resp.ErrorMessage = kmsg.StringPtr(err.Error())
	}
	return resp, nil
}
