package node

import (
	"strconv"
	"strings"

	"github.com/sluice-log/sluice/node/config"
	"github.com/sluice-log/sluice/quorum"
)

// quorumPolicy is the controller's planning policy from the node's config:
// the broker defaults of unclean.leader.election.enable and
// min.insync.replicas, and eligible.leader.replicas.version (KIP-966).
func quorumPolicy(cfg *config.Config) quorum.Policy {
	return quorum.Policy{
		UncleanLeaderElectionEnable:   cfg.UncleanLeaderElectionEnable,
		EligibleLeaderReplicasVersion: cfg.Failover.ELRVersion,
		MinInsyncReplicas:             int(cfg.MinInsyncReplicas),
	}
}

// markerEpoch is the broker epoch a clean-shutdown marker names: the
// epoch of the run that wrote it, which RegisterBroker sends as
// PreviousBrokerEpoch so that the controller counts the shutdown as clean
// only for the registration it knows (KIP-966). A marker without one
// (written before epochs were) gives 0: the controller then takes the
// marker's presence alone.
func markerEpoch(b []byte) int64 {
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}
