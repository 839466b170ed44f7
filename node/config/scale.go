package config

import (
	"fmt"
	"math"
	"syscall"
)

// Scale holds the settings that bound what many partitions and clients
// cost a node.
type Scale struct {
	// FetchSessionCacheSlots is max.incremental.fetch.session.cache.slots
	// (1000): how many fetch sessions (KIP-227) the node keeps, for
	// followers and consumers alike; 0 keeps none (every Fetch is full).
	FetchSessionCacheSlots int32
	// LogMaxOpenFiles is sluice.log.max.open.files: how many segment
	// files the node's logs hold open at once (segment.Files). Files
	// open when appended to or read and the least recently used idle
	// ones close past it. 0 (the default) is half the process's
	// RLIMIT_NOFILE as the node starts (MaxOpenFiles), leaving the other
	// half to connections, Pebble and the rest; -1 is no budget (a
	// file stays open from its first use, one per segment in use).
	LogMaxOpenFiles int
}

// scaleKeys are Scale's keys.
func scaleKeys() []key {
	return []key{
		{"max.incremental.fetch.session.cache.slots", "1000", "fetch sessions (KIP-227) kept for followers and consumers; 0 keeps none", func(c *Config, v string) error {
			return parseInt32(&c.Scale.FetchSessionCacheSlots, v, 0, math.MaxInt32)
		}},
		{"sluice.log.max.open.files", "0", "segment files held open at once; idle ones close past it and reopen on use; 0: half of RLIMIT_NOFILE, -1: no budget", func(c *Config, v string) error {
			var n int32
			if err := parseInt32(&n, v, -1, math.MaxInt32); err != nil {
				return err
			}
			if n > 0 && n < minOpenFiles {
				return fmt.Errorf("%d is below %d: every partition being read or written at once needs its file open; raise it (or 0 for half of the descriptor limit)", n, minOpenFiles)
			}
			c.Scale.LogMaxOpenFiles = int(n)
			return nil
		}},
	}
}

// minOpenFiles is the smallest sluice.log.max.open.files taken.
const minOpenFiles = 16

// FetchSessionSlots is FetchSessionCacheSlots as kafka.Options takes it
// (negative: none).
func (s Scale) FetchSessionSlots() int {
	if s.FetchSessionCacheSlots == 0 {
		return -1
	}
	return int(s.FetchSessionCacheSlots)
}

// MaxOpenFiles is LogMaxOpenFiles as segment.NewFiles takes it: the
// setting, half of RLIMIT_NOFILE for 0 (at least minOpenFiles; none when
// the limit cannot be read or is unlimited), and 0 (no budget) for -1.
func (s Scale) MaxOpenFiles() int {
	switch {
	case s.LogMaxOpenFiles > 0:
		return s.LogMaxOpenFiles
	case s.LogMaxOpenFiles < 0:
		return 0
	}
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == math.MaxUint64 || rl.Cur/2 > math.MaxInt32 {
		return 0
	}
	return max(int(rl.Cur/2), minOpenFiles)
}
