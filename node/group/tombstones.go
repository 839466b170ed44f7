package group

import "time"

// Tombstones and the commits they overtake. A commit is applied when its
// Append is Appended; a tombstone (OffsetDelete, DeleteGroups, retention,
// TopicsDeleted) removes from memory when it is issued. A commit still in
// flight when a tombstone for its partition is issued comes before the
// tombstone in the log, so it must not come back in memory when it lands:
// each partition with commits in flight counts the tombstones issued for
// it (tombMark.seq), each commit remembers the count it saw, and a commit
// that lands after a tombstone only updates what the tombstone's write
// would restore if it failed.

// tp is a topic partition.
type tp struct {
	topic string
	part  int32
}

// tombMark is the last tombstone issued for a partition with commits in
// flight.
type tombMark struct {
	seq uint64
	op  *op
}

// tombstone removes the offset of (topic, p) for the write ex, and its
// pending transactional offsets (which a failed write does not bring
// back), and returns its record.
func (g *group) tombstone(topic string, p int32, ex *op) Record {
	g.dropPending(topic, p)
	if old, ok := g.offsets[topic][p]; ok {
		ex.setRemoved(g, topic, p, old)
		g.deleteOffset(topic, p)
	}
	if g.hasInflight(topic, p) {
		k := tp{topic, p}
		m := g.tombs[k]
		if m == nil {
			m = &tombMark{}
			g.tombs[k] = m
		}
		m.seq++
		m.op = ex
	}
	return offsetTombstone(g.id, topic, p)
}

// tombSeq is the count of tombstones issued for (topic, p) while commits
// were in flight.
func (g *group) tombSeq(topic string, p int32) uint64 {
	if m := g.tombs[tp{topic, p}]; m != nil {
		return m.seq
	}
	return 0
}

// landCommit applies a commit that is in the log, unless a tombstone
// issued after it overtook it in memory.
func (g *group) landCommit(pc pendingCommit) {
	if m := g.tombs[tp{pc.topic, pc.part}]; m != nil && m.seq != pc.seq {
		m.op.setRemoved(g, pc.topic, pc.part, pc.o)
		return
	}
	g.setOffset(pc.topic, pc.part, pc.o)
}

// setRemoved notes what the log has at (g, topic, p) before o's tombstone.
func (o *op) setRemoved(g *group, topic string, p int32, off offset) {
	for i, r := range o.removed {
		if r.g == g && r.topic == topic && r.part == p {
			o.removed[i].o = off
			return
		}
	}
	o.removed = append(o.removed, removedOffset{g, topic, p, off})
}

// restore undoes the removals of a write of tombstones that failed, so
// that the memory keeps agreeing with the log: a group comes back if its
// id is still free; an offset comes back (into whichever group now has the
// id: the log holds both) unless a commit issued after the tombstone set
// it or is on its way.
func (s *Shard) restore(now time.Time, o *op) {
	for _, g := range o.removedGroups {
		if s.groups[g.id] == nil {
			g.state = stateEmpty
			g.heapAt = time.Time{} // its timer entry went with it
			s.groups[g.id] = g
			s.touch(g)
			s.retentionCandidate(g, now)
		}
	}
	for _, r := range o.removed {
		g := s.groups[r.g.id]
		if g == nil {
			g = newGroup(r.g.id, now)
			s.groups[g.id] = g
		}
		if g.hasInflight(r.topic, r.part) {
			continue
		}
		if _, ok := g.offsets[r.topic][r.part]; ok {
			continue
		}
		g.setOffset(r.topic, r.part, r.o)
		s.retentionCandidate(g, now)
	}
}
