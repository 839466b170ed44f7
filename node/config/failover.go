package config

import (
	"fmt"
	"strconv"

	"github.com/sluice-log/sluice/quorum"
)

// Failover holds the settings of how the controller fails partitions
// over (quorum.Policy).
type Failover struct {
	// ELRVersion (eligible.leader.replicas.version, default 1) turns on
	// KIP-966's eligible leader replicas: a replica that left the ISR
	// while it was below min.insync.replicas may lead when the ISR
	// empties, unless it restarted uncleanly since. Kafka finalizes it as
	// a feature (kafka-features.sh); Sluice's quorum has no feature
	// records, so it is a controller setting: set it alike on every
	// controller. 0 keeps the earlier rules (the ISR keeps its last
	// member, which after an unclean restart only an unclean election
	// brings back).
	ELRVersion int
}

func failoverKeys() []key {
	return []key{
		{"eligible.leader.replicas.version", strconv.Itoa(quorum.ELRVersion), "KIP-966 eligible leader replicas: 1 elects a leader that holds every committed record when the ISR empties, 0 keeps the last ISR member offline instead; set it alike on every controller", func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > quorum.ELRVersion {
				return fmt.Errorf("%w: eligible.leader.replicas.version %q: use 0 (off) or 1 (eligible leader replicas, KIP-966)", ErrInvalid, v)
			}
			c.Failover.ELRVersion = n
			return nil
		}},
	}
}
