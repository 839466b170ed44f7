package group

import (
	"container/heap"
	"time"
)

// The timers of a shard: one heap entry per group that has something due
// (a member's session, a KIP-394 member id, the join phase, the sync
// phase), at a time no later than the group's earliest deadline. A
// heartbeat only moves a deadline later, so it touches no heap: when an
// entry comes up early, the group is put back at its real deadline. The
// retention check is kept apart (Shard.retentionAt).

type timer struct {
	at    time.Time
	group string
}

type timerHeap []timer

func (h timerHeap) Len() int           { return len(h) }
func (h timerHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h timerHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *timerHeap) Push(x any)        { *h = append(*h, x.(timer)) }
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	*h = old[:len(old)-1]
	return t
}

// earliest keeps the earliest non-zero of d and t.
func earliest(d, t time.Time) time.Time {
	if t.IsZero() || (!d.IsZero() && !t.Before(d)) {
		return d
	}
	return t
}

// due is when the clock alone next changes g (zero: never). A member
// waiting for its JoinGroup or SyncGroup answer does not expire (Kafka
// keeps its heartbeat satisfied while it waits).
func (g *group) due() time.Time {
	if g.consumer != nil {
		return g.consumer.due()
	}
	var d time.Time
	for _, m := range g.members {
		if m.join == nil && m.sync == nil {
			d = earliest(d, m.deadline)
		}
	}
	for _, t := range g.pending {
		d = earliest(d, t)
	}
	if g.state == statePreparing {
		d = earliest(d, g.joinDeadline)
	}
	if len(g.pendingSync) > 0 && (g.state == stateCompleting || g.state == stateStable) {
		d = earliest(d, g.syncDeadline)
	}
	return d
}

// touch puts g in the heap at its due time if that is earlier than its
// entry there (called after every change to g).
func (s *Shard) touch(g *group) {
	d := g.due()
	if d.IsZero() || (!g.heapAt.IsZero() && !d.Before(g.heapAt)) {
		return
	}
	g.heapAt = d
	heap.Push(&s.timers, timer{at: d, group: g.id})
}

// settle drops or moves heap entries that come up before their group is
// due, so that the top is exact; it changes no group.
func (s *Shard) settle() {
	for len(s.timers) > 0 {
		t := s.timers[0]
		g := s.groups[t.group]
		if g == nil || !g.heapAt.Equal(t.at) {
			heap.Pop(&s.timers)
			continue
		}
		d := g.due()
		if d.Equal(t.at) {
			return
		}
		heap.Pop(&s.timers)
		g.heapAt = time.Time{}
		s.touch(g)
	}
}

// nextGroupDue is the earliest time a group is due (zero: none).
func (s *Shard) nextGroupDue() time.Time {
	s.settle()
	if len(s.timers) == 0 {
		return time.Time{}
	}
	return s.timers[0].at
}

// fireTimers runs what is due at now, group by group.
func (s *Shard) fireTimers(now time.Time) {
	for {
		s.settle()
		if len(s.timers) == 0 || s.timers[0].at.After(now) {
			return
		}
		t := heap.Pop(&s.timers).(timer)
		g := s.groups[t.group]
		g.heapAt = time.Time{}
		s.fireGroup(g, now)
		if s.groups[g.id] == g {
			s.touch(g)
		}
	}
}
