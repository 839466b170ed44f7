package replica

import (
	"sync/atomic"

	"github.com/sluice-log/sluice/node/cleaner"
	"github.com/sluice-log/sluice/segment"
)

// Cleanup is a replica's side of log compaction (node/cleaner): its log's
// registration with the node's cleaner pool, told of every move of the
// high watermark (the cleaner cleans below it), and whether its topic's
// cleanup.policy keeps retention. The node applies its topic's policy at
// every reconciliation (Apply); the manager unregisters the log before it
// closes or deletes it.
type Cleanup struct {
	// h is the log's registration, set by the first Apply (nil with the
	// cleaner off); read on every high-watermark move, under Replica.mu.
	h atomic.Pointer[cleaner.Handle]
	// noDelete: cleanup.policy lacks delete, so retention does not apply.
	noDelete atomic.Bool
}

// Cleanup is r's compaction state.
func (r *Replica) Cleanup() *Cleanup { return &r.cleanup }

// Apply brings r's log in line with policy p: a compacted topic's leader
// refuses records without a key (segment.Log.SetKeysRequired), retention
// applies only with delete, and the log is registered with pool (nil: the
// cleaner is off) and given the policy. Call it before the replica's
// metadata is stepped, so a new leader of a compacted topic checks keys
// from its first produce.
func (c *Cleanup) Apply(pool *cleaner.Pool, r *Replica, p segment.CleanPolicy) {
	r.log.SetKeysRequired(p.Compact)
	c.noDelete.Store(!p.Delete)
	h := c.h.Load()
	if h == nil && pool != nil {
		if h = pool.Register(cleaner.Target{Topic: r.topic, Partition: r.partition, Log: r.log, UpTo: r.HighWatermark}); h == nil {
			return // the pool is closing
		}
		c.h.Store(h)
	}
	h.SetPolicy(p)
}

// moved tells the cleaner that the high watermark moved.
func (c *Cleanup) moved() { c.h.Load().Moved() }

// remove unregisters the log from the cleaner and waits for a Clean of it
// to stop: called before the log is closed or deleted.
func (c *Cleanup) remove() {
	if h := c.h.Swap(nil); h != nil {
		h.Remove()
	}
}

// Retains says whether retention.ms and retention.bytes apply.
func (c *Cleanup) Retains() bool { return !c.noDelete.Load() }

// Stat is the cleaner's view of the log (its dirty ratio); false when it
// is not registered.
func (c *Cleanup) Stat() (cleaner.LogStat, bool) { return c.h.Load().Stat() }
