package node

import (
	"math"
	"strconv"
	"time"

	"github.com/sluice-log/sluice/node/cleaner"
	"github.com/sluice-log/sluice/node/config"
	"github.com/sluice-log/sluice/node/replica"
	"github.com/sluice-log/sluice/quorum"
	"github.com/sluice-log/sluice/segment"
)

// The node's side of log compaction (issue 16): each replica's log
// follows its topic's cleanup.policy and compaction configs, read from the
// metadata image at every reconciliation, so that an altered policy
// applies at once on every replica. A compacted topic's leader refuses
// records without a key (segment.Log.SetKeysRequired; INVALID_RECORD, as
// Kafka). Every replica's log is registered with the node's cleaner pool
// (node/cleaner; nil when log.cleaner.enable=false), which cleans it up
// to the replica's high watermark; the replica tells the pool when that
// moves. Retention (retention.ms, retention.bytes) applies only with
// delete in the policy.

// newCleaner starts the node's cleaner pool from the log.cleaner.* keys;
// nil when log.cleaner.enable is false.
func newCleaner(n *Node) *cleaner.Pool {
	cfg := n.cfg
	if !cfg.LogCleanerEnable {
		return nil
	}
	return cleaner.New(cleaner.Config{
		Threads: int(cfg.LogCleanerThreads), DedupeBufferBytes: cfg.LogCleanerDedupeBufferSize,
		IOBytesPerSecond: cfg.LogCleanerIoMaxBytesPerSecond, Backoff: cfg.LogCleanerBackoff, Logger: n.log,
		OnError: func(_ string, _ int32, err error) { n.checkDiskError(err) },
	})
}

// topicCleanup is a topic's cleanup.policy: its override, else the
// broker's log.cleanup.policy.
func topicCleanup(cfg *config.Config, overrides map[string]string) config.CleanupPolicy {
	if v, ok := overrides["cleanup.policy"]; ok {
		if p, err := config.ParseCleanupPolicy(v); err == nil {
			return p
		}
	}
	return cfg.LogCleanupPolicy
}

// cleanPolicy is a topic's compaction settings: its overrides, else the
// broker's log.cleaner.* defaults.
func cleanPolicy(cfg *config.Config, overrides map[string]string) segment.CleanPolicy {
	cp := topicCleanup(cfg, overrides)
	p := segment.CleanPolicy{
		Compact: cp.Compact, Delete: cp.Delete, MinCleanableDirtyRatio: cfg.LogCleanerMinCleanableRatio,
		MinCompactionLag: cfg.LogCleanerMinCompactionLag, MaxCompactionLag: cfg.LogCleanerMaxCompactionLag,
		DeleteRetention: cfg.LogCleanerDeleteRetention,
	}
	if v, ok := overrides["min.cleanable.dirty.ratio"]; ok {
		if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 && f <= 1 {
			p.MinCleanableDirtyRatio = f
		}
	}
	// ms reads a millisecond override; past what a Duration holds
	// (Long.MAX_VALUE) it is huge.
	ms := func(k string, dst *time.Duration, huge time.Duration) {
		v, ok := overrides[k]
		if !ok {
			return
		}
		n, err := strconv.ParseInt(v, 10, 64)
		switch {
		case err != nil || n < 0:
		case n > math.MaxInt64/int64(time.Millisecond):
			*dst = huge
		default:
			*dst = time.Duration(n) * time.Millisecond
		}
	}
	ms("min.compaction.lag.ms", &p.MinCompactionLag, math.MaxInt64)
	ms("max.compaction.lag.ms", &p.MaxCompactionLag, 0) // 0: never forces a clean
	ms("delete.retention.ms", &p.DeleteRetention, math.MaxInt64)
	return p
}

// applyCleanup brings r's log in line with its topic's cleanup settings
// and registers it with the cleaner (replica.Cleanup.Apply). Called by
// reconcile (under reconcileMu) before the replica's metadata is stepped.
func (n *Node) applyCleanup(r *replica.Replica, t *quorum.Topic) {
	r.Cleanup().Apply(n.cleaner, r, cleanPolicy(n.cfg, t.Configs))
}
