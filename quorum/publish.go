package quorum

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Publishing: a change that is in effect on the live brokers when the
// client hears of it.
//
// Propose returns once the entry is applied on the active controller. A
// hashicorp/raft follower learns that an entry is committed only from the
// leader's next AppendEntries: the one that carries the next entry, or
// the one sent every CommitTimeout (50-100 ms) when the log is idle.
// Until then the follower's image does not hold the change, and a client
// that asks that broker right after being answered (a script that creates
// a topic and describes it) is told the topic does not exist.
//
// Publish closes that gap in two steps:
//
//  1. Nudge: after a published command commits, the active controller
//     appends a Barrier (an empty entry; coalesced, at most one in
//     flight). Appending it sends every follower an AppendEntries at once,
//     which carries the new commit index, so followers apply the command
//     one round trip after it committed instead of up to 100 ms later.
//  2. Await: AwaitBrokers asks every live broker (registered, unfenced,
//     not shutting down) over the forwarding protocol (op
//     "await_applied") to answer once the change is in effect there:
//     Config.AwaitApplied, which the node makes "applied and reconciled"
//     (logs opened or deleted), or, by default, applied to the image.
//     The caller bounds the wait; a broker that does not answer in time
//     (paused, partitioned, about to be fenced) is named in the error, and
//     the change stays committed.
//
// Kafka's brokers apply metadata within milliseconds of the commit
// (they long-poll the metadata log); this is the same promise, checked
// rather than hoped for. Barriers cost one empty log entry per burst of
// published commands; commands that are not published (ISR changes,
// fencing) do not nudge.

const opAwaitApplied = "await_applied"

// Publish proposes cmd as Propose does and returns, with the reply, the
// Raft index at which its records applied (the index of the image it was
// planned on when it needed none), to be passed to AwaitBrokers. The
// active controller nudges the followers once the entry commits.
func (c *Controller) Publish(ctx context.Context, cmd Command) (any, uint64, error) {
	return c.propose(ctx, cmd, true)
}

// AwaitBrokers waits until this node and every live broker in its image
// have index in effect (see Config.AwaitApplied), or ctx ends. The error names
// the brokers that had not confirmed and wraps ErrNotPublished.
func (c *Controller) AwaitBrokers(ctx context.Context, index uint64) error {
	f := c.raft.GetConfiguration()
	if err := c.wait(ctx, f); err != nil {
		return fmt.Errorf("%w: %w", ErrNotPublished, c.raftError(err, false))
	}
	addrs := map[int32]string{}
	for _, s := range f.Configuration().Servers {
		if id, err := strconv.Atoi(string(s.ID)); err == nil {
			addrs[int32(id)] = string(s.Address)
		}
	}
	var live []int32
	c.View(func(im *Image) {
		for id, b := range im.Brokers {
			if b.Alive() {
				live = append(live, id)
			}
		}
	})
	if !slices.Contains(live, c.cfg.NodeID) {
		live = append(live, c.cfg.NodeID) // its caller answers from it
	}
	slices.Sort(live)
	errs := make([]error, len(live))
	var wg sync.WaitGroup
	for i, id := range live {
		addr, member := addrs[id]
		if id != c.cfg.NodeID && !member {
			continue // not in the quorum: it cannot hold any image
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if id == c.cfg.NodeID {
				errs[i] = c.awaitApplied(ctx, index)
				return
			}
			err := c.forward(ctx, addr, &forwardRequest{Op: opAwaitApplied, Index: index}, nil)
			if err != nil && ctx.Err() != nil {
				err = fmt.Errorf("no confirmation before the deadline (%w)", ctx.Err())
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	var lag []string
	for i, err := range errs {
		if err != nil {
			lag = append(lag, fmt.Sprintf("broker %d: %v", live[i], err))
		}
	}
	if len(lag) > 0 {
		return fmt.Errorf("%w: index %d: %s", ErrNotPublished, index, strings.Join(lag, "; "))
	}
	return nil
}

// awaitApplied waits until index is in effect on this node.
func (c *Controller) awaitApplied(ctx context.Context, index uint64) error {
	if c.cfg.AwaitApplied != nil {
		return c.cfg.AwaitApplied(ctx, index)
	}
	return c.fsm.WaitApplied(ctx, index)
}

// nudge asks the nudge loop for a Barrier; it never blocks.
func (c *Controller) nudge() {
	select {
	case c.nudges <- struct{}{}:
	default: // one is pending: it will carry this commit too
	}
}

// nudgeLoop appends a Barrier per nudge, one at a time: its AppendEntries
// tell the followers the commit index at once (see the top of this file).
func (c *Controller) nudgeLoop() {
	defer c.wg.Done()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-c.nudges:
			// Not the leader any more, or shut down: nothing to tell.
			_ = c.wait(c.ctx, c.raft.Barrier(c.cfg.ApplyTimeout))
		}
	}
}
