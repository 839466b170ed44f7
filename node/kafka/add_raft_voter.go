package kafka

import (
	"context"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/quorum"
)

// AddRaftVoter (key 80, KIP-853), versions 0-1; served when the Broker
// implements VoterAdmin.
//
// Behavior: makes an observer of the metadata quorum (a node that joined
// as a Raft non-voter: a replacement controller formatted with `sluice
// init --no-initial-controllers`) a voter, once its log has caught up
// with the leader's (REQUEST_TIMED_OUT if not within the request's
// timeout). The listener named CONTROLLER (else the first) must be the
// address the observer joined at; a non-zero VoterDirectoryID must be the
// observer's directory id (INVALID_VOTER_KEY). VOTER_NOT_FOUND for a node
// that is not an observer, DUPLICATE_VOTER for a voter. Any broker
// answers, through the active controller; the answer comes once the new
// configuration is committed (AckWhenCommitted is always honoured).
// Authorization: ALTER on the cluster.
func handleAddRaftVoter(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.AddRaftVoterRequest)
	resp := req.ResponseKind().(*kmsg.AddRaftVoterResponse)
	addr := ""
	for i, l := range req.Listeners {
		if i == 0 || l.Name == "CONTROLLER" {
			addr = net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port)))
		}
	}
	if req.TimeoutMillis > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(req.TimeoutMillis)*time.Millisecond)
		defer cancel()
	}
	if err := s.broker.(VoterAdmin).AddRaftVoter(ctx, req.VoterID, quorum.UUID(req.VoterDirectoryID), addr); err != nil {
		resp.ErrorCode = quorum.ErrorCode(err)
		resp.ErrorMessage = kmsg.StringPtr(err.Error())
	}
	return resp, nil
}

// VoterAdmin is the optional Broker capability behind AddRaftVoter and
// RemoveRaftVoter (quorum/voters.go). Errors wrap the kerr value the
// client gets.
type VoterAdmin interface {
	// AddRaftVoter promotes observer id (at controller address addr when
	// not empty, with directory id dirID when not zero) to a voter.
	AddRaftVoter(ctx context.Context, id int32, dirID quorum.UUID, addr string) error
	// RemoveRaftVoter removes voter id from the quorum.
	RemoveRaftVoter(ctx context.Context, id int32) error
}
