package quorum

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Voter management, after KIP-853 (Kafka's AddRaftVoter and
// RemoveRaftVoter), on hashicorp/raft's AddVoter and RemoveServer.
//
// Replacing a controller that lost its disk goes in three steps:
//
//  1. RemoveVoter(id): the lost voter leaves the Raft configuration, so
//     the quorum's majority is counted over the voters that remain and a
//     new node may take the lost one's id and address.
//  2. The replacement starts with an empty directory formatted without
//     initial controllers (`sluice init --no-initial-controllers`), so it
//     does not bootstrap a quorum of its own: it joins the running one as
//     a non-voter (Join) and replays the metadata log.
//  3. AddVoter(id, addr) on the leader, once that observer has caught up:
//     it becomes a voter.
//
// Why the order matters: a voter that lost its log and came back as the
// same voter would count towards majorities for entries it no longer
// holds, and vote as if it had never voted; with one more failure, a
// committed entry could be lost. So the leader refuses a Join from a node
// whose Raft state is empty while its id is still a voter
// (DUPLICATE_VOTER, naming the remove-controller command), and AddVoter
// only promotes a node already replaying the log as an observer.
//
// Sluice's voters carry no directory id in the Raft configuration (Kafka's
// voter key is id and directory id): AddVoter checks a directory id it is
// given against the one the observer reports (its meta.properties), and
// RemoveVoter, whose voter is usually gone, checks none.

// observerCatchUpPoll is how often AddVoter asks the observer for its log
// end while it waits for it to catch up.
const observerCatchUpPoll = 100 * time.Millisecond

// AddVoter promotes the observer (Raft non-voter) id to a voter of the
// quorum, once its log reaches the leader's log end as of the call
// (REQUEST_TIMED_OUT if it does not before ctx ends). addr, when not
// empty, must be the observer's controller address; dirID, when not
// zero, its directory id. Errors: VOTER_NOT_FOUND for a node that is
// not an observer (start it first), DUPLICATE_VOTER for a voter. Called
// on any node; a follower forwards it to the leader.
func (c *Controller) AddVoter(ctx context.Context, id int32, addr string, dirID UUID) error {
	req := &forwardRequest{Op: opAddVoter, ID: id, Addr: addr}
	if dirID != (UUID{}) {
		req.DirectoryID = dirID.String()
	}
	return c.changeMembership(ctx, req)
}

// RemoveVoter removes voter id from the quorum (VOTER_NOT_FOUND if it is
// none; INVALID_REQUEST for the last voter). The leader may remove
// itself: it steps down once the change commits. Called on any node; a
// follower forwards it.
func (c *Controller) RemoveVoter(ctx context.Context, id int32) error {
	return c.changeMembership(ctx, &forwardRequest{Op: opRemoveVoter, ID: id})
}

// AddNonvoter adds a node that replays the metadata log without voting
// (a broker). Called on any node; a follower forwards it.
func (c *Controller) AddNonvoter(ctx context.Context, id int32, addr string) error {
	return c.changeMembership(ctx, &forwardRequest{Op: opAddNonvoter, ID: id, Addr: addr, Fresh: c.fresh})
}

// Voters returns the ids of the voters in the latest Raft configuration
// this node knows, in id order.
func (c *Controller) Voters() ([]int32, error) {
	f := c.raft.GetConfiguration()
	if err := c.wait(c.ctx, f); err != nil {
		return nil, err
	}
	var ids []int32
	for _, s := range f.Configuration().Servers {
		if s.Suffrage == raft.Voter {
			if id, ok := parseServerID(s.ID); ok {
				ids = append(ids, id)
			}
		}
	}
	slices.Sort(ids)
	return ids, nil
}

func (c *Controller) changeMembership(ctx context.Context, req *forwardRequest) error {
	for {
		if c.ctx.Err() != nil {
			return ErrClosed
		}
		var err error
		forwarded := false
		if c.IsLeader() {
			err = c.changeMembershipLocal(ctx, req)
		} else if _, laddr := c.Leader(); laddr != "" && laddr != c.Addr() {
			r := *req
			err, forwarded = c.forward(ctx, laddr, &r, nil), true
		} else {
			err = kerrf(kerr.NotController, "no leader known")
		}
		// Only NOT_CONTROLLER, or a forward that surely did not arrive,
		// is worth another try: the leader's own answer (DUPLICATE_VOTER,
		// VOTER_NOT_FOUND, ...) is final.
		if err == nil || !errors.Is(err, kerr.NotController) && !(forwarded && retriableRemote(err)) {
			return err
		}
		if perr := c.pause(ctx); perr != nil {
			return fmt.Errorf("%w (last error: %v)", perr, err)
		}
	}
}

// changeMembershipLocal runs a membership change on the leader.
func (c *Controller) changeMembershipLocal(ctx context.Context, req *forwardRequest) error {
	if !c.IsLeader() {
		return kerrf(kerr.NotController, "node %d is not the active controller", c.cfg.NodeID)
	}
	cf := c.raft.GetConfiguration()
	if err := c.wait(ctx, cf); err != nil {
		return c.raftError(err, false)
	}
	conf := cf.Configuration()
	var cur *raft.Server
	voters := 0
	for i, s := range conf.Servers {
		if s.ID == serverID(req.ID) {
			cur = &conf.Servers[i]
		}
		if s.Suffrage == raft.Voter {
			voters++
		}
	}
	isVoter := cur != nil && cur.Suffrage == raft.Voter
	var f raft.IndexFuture
	switch req.Op {
	case opAddNonvoter:
		if req.Fresh && isVoter {
			return kerrf(kerr.DuplicateVoter, "node %d joins with an empty metadata log but is still a voter of the quorum (its disk was lost or wiped?): "+
				"remove the old voter first with `sluice cluster remove-controller --controller-id %d`, then start this node again", req.ID, req.ID)
		}
		f = c.raft.AddNonvoter(serverID(req.ID), raft.ServerAddress(req.Addr), 0, c.cfg.ApplyTimeout)
	case opRemoveVoter:
		switch {
		case !isVoter:
			return kerrf(kerr.VoterNotFound, "node %d is not a voter of the quorum (voters: %v)", req.ID, voterIDs(conf))
		case voters == 1:
			return kerrf(kerr.InvalidRequest, "node %d is the only voter: the quorum cannot lose it", req.ID)
		}
		f = c.raft.RemoveServer(serverID(req.ID), 0, c.cfg.ApplyTimeout)
	case opAddVoter:
		switch {
		case isVoter:
			return kerrf(kerr.DuplicateVoter, "node %d is already a voter of the quorum", req.ID)
		case cur == nil:
			return kerrf(kerr.VoterNotFound, "node %d is not an observer of the quorum: start it first (formatted with `sluice init --no-initial-controllers`) so that it joins and replays the metadata log", req.ID)
		case req.Addr != "" && raft.ServerAddress(req.Addr) != cur.Address:
			return kerrf(kerr.InvalidRequest, "node %d joined at controller address %s, not %s", req.ID, cur.Address, req.Addr)
		}
		if err := c.awaitCaughtUp(ctx, req, string(cur.Address)); err != nil {
			return err
		}
		f = c.raft.AddVoter(serverID(req.ID), cur.Address, 0, c.cfg.ApplyTimeout)
	default:
		return kerrf(kerr.InvalidRequest, "unknown membership change %q", req.Op)
	}
	if err := c.wait(ctx, f); err != nil {
		return c.raftError(err, false)
	}
	return nil
}

// awaitCaughtUp waits until the observer at addr reports a log end at
// least the leader's as of now (and the directory id asked for).
func (c *Controller) awaitCaughtUp(ctx context.Context, req *forwardRequest, addr string) error {
	target := c.raft.LastIndex()
	var last string
	for {
		rctx, cancel := context.WithTimeout(ctx, statusTimeout)
		var r memberReport
		err := c.forward(rctx, addr, &forwardRequest{Op: opStatus}, &r)
		cancel()
		switch {
		case err != nil:
			last = fmt.Sprintf("it did not answer: %v", err)
		case req.DirectoryID != "" && r.DirectoryID != req.DirectoryID:
			return kerrf(kerr.InvalidVoterKey, "node %d at %s has directory id %q, not %s", req.ID, addr, r.DirectoryID, req.DirectoryID)
		case r.LastIndex >= target:
			return nil
		default:
			last = fmt.Sprintf("its log ends at %d, the leader's at %d", r.LastIndex, target)
		}
		t := time.NewTimer(observerCatchUpPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return kerrf(kerr.RequestTimedOut, "node %d has not caught up with the metadata log (%s): check that it runs and reaches the controllers, then retry", req.ID, last)
		case <-c.ctx.Done():
			t.Stop()
			return ErrClosed
		case <-t.C:
		}
	}
}

func voterIDs(conf raft.Configuration) []int32 {
	var ids []int32
	for _, s := range conf.Servers {
		if id, ok := parseServerID(s.ID); ok && s.Suffrage == raft.Voter {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// parseServerID is the node id of a Raft server id (its decimal).
func parseServerID(id raft.ServerID) (int32, bool) {
	n, err := strconv.ParseInt(string(id), 10, 32)
	return int32(n), err == nil
}
