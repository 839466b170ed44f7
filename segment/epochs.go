package segment

import "sort"

// EpochEntry says that leader epoch Epoch began at StartOffset: the first
// batch written under that epoch.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// UndefinedEpoch and UndefinedOffset are Kafka's answers for an epoch the
// cache cannot place (OffsetForLeaderEpoch).
const (
	UndefinedEpoch  int32 = -1
	UndefinedOffset int64 = -1
)

// epochCache is the leader-epoch cache of one log: entries in increasing
// epoch and non-decreasing start offset. It is a plain value; Log guards it
// and persists every change (kindEpoch keys).
type epochCache struct {
	entries []EpochEntry
}

func (c *epochCache) latest() (EpochEntry, bool) {
	if len(c.entries) == 0 {
		return EpochEntry{}, false
	}
	return c.entries[len(c.entries)-1], true
}

// assign records that epoch begins at start if epoch is newer than the
// latest; it reports whether the cache changed.
func (c *epochCache) assign(epoch int32, start int64) bool {
	if epoch < 0 {
		return false
	}
	if last, ok := c.latest(); ok && epoch <= last.Epoch {
		return false
	}
	c.entries = append(c.entries, EpochEntry{Epoch: epoch, StartOffset: start})
	return true
}

// truncateFromEnd drops every entry that starts at or after end (log
// truncation to end) and returns the dropped epochs.
func (c *epochCache) truncateFromEnd(end int64) []int32 {
	i := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].StartOffset >= end })
	var dropped []int32
	for _, e := range c.entries[i:] {
		dropped = append(dropped, e.Epoch)
	}
	c.entries = c.entries[:i]
	return dropped
}

// truncateFromStart applies a new log start offset: entries wholly before it
// go, and the entry covering it now starts there (Kafka's truncateFromStart).
// It returns the dropped epochs and the entry that moved, if any.
func (c *epochCache) truncateFromStart(start int64) (dropped []int32, moved *EpochEntry) {
	// i: the first entry with StartOffset > start; entry i-1 covers start.
	i := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].StartOffset > start })
	if i == 0 {
		return nil, nil
	}
	for _, e := range c.entries[:i-1] {
		dropped = append(dropped, e.Epoch)
	}
	c.entries = c.entries[i-1:]
	if c.entries[0].StartOffset != start {
		c.entries[0].StartOffset = start
		e := c.entries[0]
		moved = &e
	}
	return dropped, moved
}

// endOffsetFor answers OffsetForLeaderEpoch exactly as Kafka's
// LeaderEpochFileCache.endOffsetFor does: the largest epoch <= requested and
// the offset where the next epoch starts (the log end for the latest epoch).
func (c *epochCache) endOffsetFor(requested int32, logEnd int64) (int32, int64) {
	if requested == UndefinedEpoch || len(c.entries) == 0 {
		return UndefinedEpoch, UndefinedOffset
	}
	last := c.entries[len(c.entries)-1]
	if requested == last.Epoch {
		return requested, logEnd
	}
	// higher: the first entry with a larger epoch.
	hi := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].Epoch > requested })
	if hi == len(c.entries) {
		return UndefinedEpoch, UndefinedOffset // requested is newer than anything here
	}
	if hi == 0 {
		return requested, c.entries[0].StartOffset // older than the first epoch we know
	}
	return c.entries[hi-1].Epoch, c.entries[hi].StartOffset
}

func (c *epochCache) clone() []EpochEntry { return append([]EpochEntry(nil), c.entries...) }

// epochFor returns the epoch of the entry covering offset (the latest entry
// starting at or before it), or UndefinedEpoch.
func (c *epochCache) epochFor(offset int64) int32 {
	i := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].StartOffset > offset }) - 1
	if i < 0 {
		return UndefinedEpoch
	}
	return c.entries[i].Epoch
}
