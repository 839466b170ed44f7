package config

import (
	"fmt"
	"strconv"
	"time"

	"github.com/sluice-log/sluice/quorum"
)

// Failover holds the settings of how the controller fails partitions
// over (quorum.Policy).
type Failover struct {
	// ELRVersion (eligible.leader.replicas.version, default 1) turns on
	// KIP-966's eligible leader replicas: a replica that left the ISR
	// while it was below min.insync.replicas may lead when the ISR
	// empties, unless it restarted uncleanly since. Kafka finalizes it as
	// a feature (kafka-features.sh); here it is still a controller
	// setting (not yet one of quorum's feature records): set it alike on
	// every controller. 0 keeps the earlier rules (the ISR keeps its last
	// member, which after an unclean restart only an unclean election
	// brings back).
	ELRVersion int
	// RaftHeartbeatTimeout (controller.quorum.fetch.timeout.ms, default
	// 1000) is how long a controller goes without hearing from the
	// active one before it stands for election, and RaftElectionTimeout
	// (controller.quorum.election.timeout.ms, default 1000) how long a
	// candidate waits for the vote: hashicorp/raft's HeartbeatTimeout and
	// ElectionTimeout, which Kafka's two keys correspond to. Defaults are
	// raft's (Kafka's fetch timeout is 2000); together they bound what
	// the death of the active controller costs. The leader's lease is
	// half the heartbeat timeout, at most raft's 500 ms.
	RaftHeartbeatTimeout, RaftElectionTimeout time.Duration
}

// RaftLeaderLease is the raft LeaderLeaseTimeout that goes with the
// heartbeat timeout: half of it, at most raft's default 500 ms.
func (f Failover) RaftLeaderLease() time.Duration {
	return min(f.RaftHeartbeatTimeout/2, 500*time.Millisecond)
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
		{"controller.quorum.fetch.timeout.ms", "1000", "how long a controller hears nothing from the active controller before it stands for election (hashicorp/raft's HeartbeatTimeout; at least 20)", func(c *Config, v string) error {
			return parseMs(&c.Failover.RaftHeartbeatTimeout, v, 20)
		}},
		{"controller.quorum.election.timeout.ms", "1000", "how long a candidate controller waits for votes before it stands again (hashicorp/raft's ElectionTimeout; at least controller.quorum.fetch.timeout.ms)", func(c *Config, v string) error {
			return parseMs(&c.Failover.RaftElectionTimeout, v, 20)
		}},
	}
}

// validateFailover checks what no single failover key can (called from
// validateTxns, config.go being at its length limit).
func (c *Config) validateFailover() error {
	if f := c.Failover; f.RaftElectionTimeout < f.RaftHeartbeatTimeout {
		return fmt.Errorf("%w: controller.quorum.election.timeout.ms (%d) is below controller.quorum.fetch.timeout.ms (%d), which hashicorp/raft refuses: raise the election timeout or lower the fetch timeout",
			ErrInvalid, f.RaftElectionTimeout.Milliseconds(), f.RaftHeartbeatTimeout.Milliseconds())
	}
	return nil
}
