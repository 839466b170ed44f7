package quorum

import (
	"sync/atomic"
	"time"
)

// RaftStats is a read-only view of the local Raft member, for metrics.
type RaftStats struct {
	// State is "Leader", "Follower", "Candidate" or "Shutdown".
	State string
	// Leader is the leader's node id, -1 when unknown.
	Leader int32
	// Term is the current term; LastIndex, CommitIndex and AppliedIndex
	// are Raft log indexes (AppliedIndex: applied to the local image).
	Term, LastIndex, CommitIndex, AppliedIndex uint64
	// Commits counts the commands this node committed as the active
	// controller, CommitTime their total time from proposal to commit.
	Commits    int64
	CommitTime time.Duration
	// RefusedConns counts the connections the controller port closed for
	// a malformed hello or another cluster's id (hello.go), a failed TLS
	// handshake or a certificate AuthorizePeer refused (mux.go).
	RefusedConns int64
}

// commitStats accumulates the commit latency of proposeLocal.
type commitStats struct {
	count atomic.Int64
	nanos atomic.Int64
}

func (s *commitStats) observe(d time.Duration) {
	s.count.Add(1)
	s.nanos.Add(int64(d))
}

// RaftStats returns the local Raft member's state. Safe to call at any time.
func (c *Controller) RaftStats() RaftStats {
	leader, _ := c.Leader()
	return RaftStats{
		State:        c.raft.State().String(),
		Leader:       leader,
		Term:         c.raft.CurrentTerm(),
		LastIndex:    c.raft.LastIndex(),
		CommitIndex:  c.raft.CommitIndex(),
		AppliedIndex: c.fsm.AppliedIndex(),
		Commits:      c.commits.count.Load(),
		CommitTime:   time.Duration(c.commits.nanos.Load()),
		RefusedConns: c.mux.refused.Load(),
	}
}
