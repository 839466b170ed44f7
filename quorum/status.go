package quorum

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/twmb/franz-go/pkg/kerr"
)

// What DescribeQuorum can know, and how exactly.
//
// hashicorp/raft keeps each follower's match index private to the leader's
// replication goroutines, so the leader does not read it: it asks every
// member of the Raft configuration, over the forwarding protocol (op
// "status"), for the member's own report: the index of the last entry in
// its log, and how long ago it last heard from the leader. So:
//
//   - LastIndex (Kafka's LogEndOffset) is exact: the member's own last log
//     index at the moment it answered, during the describe.
//   - CommitIndex (HighWatermark) and Term (LeaderEpoch) are the leader's,
//     exact.
//   - LastContact (LastFetchTimestamp) is approximate: the leader's clock
//     minus the time the member says has passed since the leader's last
//     AppendEntries or heartbeat reached it (Raft pushes where Kafka's
//     followers fetch; the leader's own entry is the time of the describe).
//   - LastCaughtUp (LastCaughtUpTimestamp) is approximate: the LastContact
//     of the latest describe on this leader that found the member's log at
//     least as long as the leader's; zero (unknown) until one did. It is
//     remembered only by the current leader.
//
// A member that does not answer within statusTimeout has LastIndex -1 and
// zero times: it is down or unreachable.

// statusTimeout bounds the wait for one member's report.
const statusTimeout = 2 * time.Second

// QuorumStatus describes the metadata quorum as its leader sees it.
type QuorumStatus struct {
	LeaderID int32 `json:"leader_id"`
	// Term is the Raft term: the leader epoch of the metadata log.
	Term uint64 `json:"term"`
	// CommitIndex is the leader's commit index: the high watermark.
	CommitIndex uint64 `json:"commit_index"`
	// Voters and Observers (non-voters), in id order.
	Voters    []MemberStatus `json:"voters"`
	Observers []MemberStatus `json:"observers"`
}

// MemberStatus is one member of the Raft configuration; see the comment at
// the top of status.go for how exact each field is.
type MemberStatus struct {
	ID   int32  `json:"id"`
	Addr string `json:"addr"`
	// LastIndex is the index of the last entry of the member's log, -1
	// when the member did not answer.
	LastIndex int64 `json:"last_index"`
	// LastContact and LastCaughtUp are zero when unknown.
	LastContact  time.Time `json:"last_contact"`
	LastCaughtUp time.Time `json:"last_caught_up"`
}

// memberReport is what one member says about itself (op "status").
type memberReport struct {
	LastIndex uint64 `json:"last_index"`
	Term      uint64 `json:"term"`
	// SinceContactMS is how long ago the leader last reached this member,
	// in milliseconds; 0 on the leader; -1 if never.
	SinceContactMS int64 `json:"since_contact_ms"`
	// DirectoryID is the member's Config.DirectoryID ("" when unset).
	DirectoryID string `json:"directory_id,omitempty"`
}

const (
	opStatus         = "status"
	opDescribeQuorum = "describe_quorum"
)

// caughtUp remembers, on the leader, when each member was last seen caught
// up (by DescribeQuorum). Its mutex is a leaf.
type caughtUp struct {
	mu   sync.Mutex
	term uint64
	at   map[int32]time.Time
}

// DescribeQuorum reports the quorum as the active controller sees it. On a
// follower it asks the leader over the forwarding protocol, and retries on
// leader changes until ctx ends.
func (c *Controller) DescribeQuorum(ctx context.Context) (QuorumStatus, error) {
	for {
		if c.ctx.Err() != nil {
			return QuorumStatus{}, ErrClosed
		}
		var st QuorumStatus
		var err error
		if c.IsLeader() {
			st, err = c.describeLocal(ctx)
		} else if _, laddr := c.Leader(); laddr != "" && laddr != c.Addr() {
			err = c.forward(ctx, laddr, &forwardRequest{Op: opDescribeQuorum}, &st)
		} else {
			err = kerrf(kerr.NotController, "no leader known")
		}
		if err == nil || !errors.Is(err, kerr.NotController) && !retriableRemote(err) {
			return st, err
		}
		if perr := c.pause(ctx); perr != nil {
			return QuorumStatus{}, fmt.Errorf("%w (last error: %v)", perr, err)
		}
	}
}

// report is this member's memberReport.
func (c *Controller) report() memberReport {
	r := memberReport{LastIndex: c.raft.LastIndex(), Term: c.raft.CurrentTerm(), SinceContactMS: -1}
	if c.cfg.DirectoryID != (UUID{}) {
		r.DirectoryID = c.cfg.DirectoryID.String()
	}
	if c.IsLeader() {
		r.SinceContactMS = 0
	} else if lc := c.raft.LastContact(); !lc.IsZero() {
		r.SinceContactMS = time.Since(lc).Milliseconds()
	}
	return r
}

// describeLocal builds the QuorumStatus on the leader.
func (c *Controller) describeLocal(ctx context.Context) (QuorumStatus, error) {
	if !c.IsLeader() {
		return QuorumStatus{}, kerrf(kerr.NotController, "node %d is not the active controller", c.cfg.NodeID)
	}
	f := c.raft.GetConfiguration()
	if err := c.wait(ctx, f); err != nil {
		return QuorumStatus{}, c.raftError(err, false)
	}
	self := c.report()
	st := QuorumStatus{LeaderID: c.cfg.NodeID, Term: self.Term, CommitIndex: c.raft.CommitIndex()}
	servers := f.Configuration().Servers
	members := make([]MemberStatus, len(servers))
	now := time.Now()
	var wg sync.WaitGroup
	for i, s := range servers {
		id, err := strconv.Atoi(string(s.ID))
		if err != nil {
			return QuorumStatus{}, fmt.Errorf("quorum: raft server id %q is not a node id", s.ID)
		}
		members[i] = MemberStatus{ID: int32(id), Addr: string(s.Address), LastIndex: -1}
		if int32(id) == c.cfg.NodeID {
			members[i].LastIndex, members[i].LastContact = int64(self.LastIndex), now
			continue
		}
		wg.Add(1)
		go func(m *MemberStatus) {
			defer wg.Done()
			rctx, cancel := context.WithTimeout(ctx, statusTimeout)
			defer cancel()
			var r memberReport
			if err := c.forward(rctx, m.Addr, &forwardRequest{Op: opStatus}, &r); err != nil {
				return
			}
			m.LastIndex = int64(r.LastIndex)
			if r.SinceContactMS >= 0 {
				m.LastContact = now.Add(-time.Duration(r.SinceContactMS) * time.Millisecond)
			}
		}(&members[i])
	}
	wg.Wait()
	c.caught.mu.Lock()
	if c.caught.term != st.Term || c.caught.at == nil {
		c.caught.term, c.caught.at = st.Term, map[int32]time.Time{}
	}
	for i := range members {
		m := &members[i]
		if m.LastIndex >= int64(self.LastIndex) && !m.LastContact.IsZero() {
			c.caught.at[m.ID] = m.LastContact
		}
		m.LastCaughtUp = c.caught.at[m.ID]
	}
	c.caught.mu.Unlock()
	for i, s := range servers {
		if s.Suffrage == raft.Voter {
			st.Voters = append(st.Voters, members[i])
		} else {
			st.Observers = append(st.Observers, members[i])
		}
	}
	byID := func(a, b MemberStatus) int { return int(a.ID) - int(b.ID) }
	slices.SortFunc(st.Voters, byID)
	slices.SortFunc(st.Observers, byID)
	return st, nil
}
