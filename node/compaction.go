package node

import (
	"github.com/sluice-log/sluice/node/config"
	"github.com/sluice-log/sluice/quorum"
)

// The node's side of log compaction (issue 16): each replica's log
// follows its topic's cleanup.policy, read from the metadata image at
// every reconciliation, so that an altered policy applies at once on every
// replica. A compacted topic's leader refuses records without a key
// (segment.Log.SetKeysRequired; INVALID_RECORD, as Kafka).

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

// applyCleanup brings r's log in line with its topic's cleanup settings.
// Called by reconcile before the replica's metadata is stepped, so a
// replica that becomes leader of a compacted topic checks keys from its
// first produce.
func (n *Node) applyCleanup(r *replica, t *quorum.Topic) {
	p := topicCleanup(n.cfg, t.Configs)
	r.log.SetKeysRequired(p.Compact)
}
