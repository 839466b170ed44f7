package partition

import "fmt"

// ConfigDurability is the topic config key that picks the durability mode,
// named the Kafka way with a sluice. prefix because Kafka has no such key.
// Values: "page-cache" (default) and "sync".
const ConfigDurability = "sluice.durability"

// Durability says which offset of a replica counts towards the high
// watermark.
type Durability int

const (
	// PageCache is Kafka's default: a replica counts with the offset it has
	// appended (its fetch offset; the leader's log end offset). Replication
	// is the durability; flush.messages / flush.ms still apply.
	PageCache Durability = iota
	// Sync is sync-before-ack: every replica, the leader included, counts
	// only with what it has fsynced, so a correlated power loss of every
	// replica loses nothing acknowledged.
	Sync
)

// ParseDurability reads a sluice.durability value; "" is PageCache.
func ParseDurability(s string) (Durability, error) {
	switch s {
	case "", "page-cache":
		return PageCache, nil
	case "sync":
		return Sync, nil
	}
	return PageCache, fmt.Errorf("%w: %s=%q (want page-cache or sync)", ErrInvalidConfig, ConfigDurability, s)
}

func (d Durability) String() string {
	if d == Sync {
		return "sync"
	}
	return "page-cache"
}

// Config is one replica's static configuration, read by the node from the
// broker and topic configs and passed down typed.
type Config struct {
	// ID is this replica's broker id.
	ID int32
	// MinInsyncReplicas is min.insync.replicas (0 means 1).
	MinInsyncReplicas int
	// LagTicks is replica.lag.time.max.ms in ticks: a follower that has not
	// caught up with the leader's log end for longer is proposed for
	// removal from the ISR.
	LagTicks int64
	// Durability is sluice.durability.
	Durability Durability
	// FetchBackoffTicks is how long a follower waits before fetching again
	// after its fetch failed (replica.fetch.backoff.ms in ticks); 0 is 1.
	FetchBackoffTicks int64
}

// Validate reports a config the replica cannot run with.
func (c *Config) Validate() error {
	if c.ID < 0 {
		return fmt.Errorf("%w: broker id %d", ErrInvalidConfig, c.ID)
	}
	if c.MinInsyncReplicas < 0 {
		return fmt.Errorf("%w: min.insync.replicas %d", ErrInvalidConfig, c.MinInsyncReplicas)
	}
	if c.LagTicks <= 0 {
		return fmt.Errorf("%w: replica lag %d ticks must be positive", ErrInvalidConfig, c.LagTicks)
	}
	if c.FetchBackoffTicks < 0 {
		return fmt.Errorf("%w: fetch backoff %d ticks", ErrInvalidConfig, c.FetchBackoffTicks)
	}
	if c.Durability != PageCache && c.Durability != Sync {
		return fmt.Errorf("%w: durability %d", ErrInvalidConfig, c.Durability)
	}
	return nil
}

func (c *Config) minISR() int { return max(c.MinInsyncReplicas, 1) }
