package config

import "fmt"

// RackAwareReplicaSelector is the replica.selector.class that lets a
// consumer fetch from a replica in its own rack (KIP-392).
const RackAwareReplicaSelector = "org.apache.kafka.common.replica.RackAwareReplicaSelector"

// leaderSelector is Kafka's default replica.selector.class: consumers
// read from the leader.
const leaderSelector = "org.apache.kafka.common.replica.LeaderSelector"

// Racks is the broker's failure domain and how consumers are pointed at
// replicas, Kafka's keys.
type Racks struct {
	// Rack (broker.rack, default none) is registered with the broker in
	// the quorum, answered in Metadata and DescribeCluster, and used to
	// spread a partition's replicas over racks when they are placed.
	Rack string
	// RackAwareFetch (replica.selector.class =
	// RackAwareReplicaSelector) makes a leader answer a consumer's
	// Fetch (v11+, with a rack id) with the preferred read replica: an
	// in-sync replica in the consumer's rack. Followers always serve
	// consumer fetches up to their high watermark.
	RackAwareFetch bool
}

func rackKeys() []key {
	return []key{
		{"broker.rack", "", "this broker's rack (failure domain): replicas of a partition are spread over racks, and consumers with client.rack read from their rack with replica.selector.class", func(c *Config, v string) error {
			c.Racks.Rack = v
			return nil
		}},
		{"replica.selector.class", "", "empty or " + leaderSelector + " (consumers read from the leader), or " + RackAwareReplicaSelector + " (a consumer with client.rack is sent to an in-sync replica in its rack, KIP-392)", func(c *Config, v string) error {
			switch v {
			case "", leaderSelector:
				c.Racks.RackAwareFetch = false
			case RackAwareReplicaSelector:
				c.Racks.RackAwareFetch = true
			default:
				return fmt.Errorf("%w: replica.selector.class %q: use %s or %s", ErrInvalid, v, RackAwareReplicaSelector, leaderSelector)
			}
			return nil
		}},
	}
}
