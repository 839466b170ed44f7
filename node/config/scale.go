package config

import "math"

// Scale holds the settings that bound what many partitions and clients
// cost a node.
type Scale struct {
	// FetchSessionCacheSlots is max.incremental.fetch.session.cache.slots
	// (1000): how many fetch sessions (KIP-227) the node keeps, for
	// followers and consumers alike; 0 keeps none (every Fetch is full).
	FetchSessionCacheSlots int32
}

// scaleKeys are Scale's keys.
func scaleKeys() []key {
	return []key{
		{"max.incremental.fetch.session.cache.slots", "1000", "fetch sessions (KIP-227) kept for followers and consumers; 0 keeps none", func(c *Config, v string) error {
			return parseInt32(&c.Scale.FetchSessionCacheSlots, v, 0, math.MaxInt32)
		}},
	}
}

// FetchSessionSlots is FetchSessionCacheSlots as kafka.Options takes it
// (negative: none).
func (s Scale) FetchSessionSlots() int {
	if s.FetchSessionCacheSlots == 0 {
		return -1
	}
	return int(s.FetchSessionCacheSlots)
}
