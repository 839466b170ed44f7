package group

import (
	"fmt"
	"time"
)

// check panics if the shard broke an invariant; it runs only with the
// invariants build tag. what names the event.
func (s *Shard) check(what string) {
	if !invariantsOn {
		return
	}
	if err := s.checkInvariants(); err != nil {
		panic(fmt.Sprintf("group: invariant after %s (partition %d): %v", what, s.partition, err))
	}
}

// checkInvariants reports the first broken invariant of the shard.
func (s *Shard) checkInvariants() error {
	inHeap := map[timer]bool{}
	for _, t := range s.timers {
		inHeap[t] = true
	}
	inflight := map[*group]map[tp]int{}
	for id, o := range s.ops {
		if o.kind == opCommit || o.kind == opTxnCommit {
			for _, pc := range o.commits {
				if inflight[o.g] == nil {
					inflight[o.g] = map[tp]int{}
				}
				inflight[o.g][tp{pc.topic, pc.part}]++
			}
		}
		if o.kind == opAssignment && s.groups[o.g.id] == o.g && o.g.assigning == id && o.g.state != stateCompleting {
			return fmt.Errorf("group %q: an assignment in flight in state %s", o.g.id, o.g.state)
		}
	}
	for id := range s.parked {
		if s.ops[id] == nil {
			return fmt.Errorf("answers parked on Append %d, which is not in flight", id)
		}
	}
	for id, g := range s.groups {
		if err := g.checkInvariants(id, s.loaded); err != nil {
			return fmt.Errorf("group %q (%s, generation %d): %w", id, g.state, g.generation, err)
		}
		if d := g.due(); !d.IsZero() && (g.heapAt.IsZero() || g.heapAt.After(d) || !inHeap[timer{g.heapAt, id}]) {
			return fmt.Errorf("group %q due at %v has no timer at or before it (heap entry %v)", id, d, g.heapAt)
		}
		for pid, pt := range g.txns {
			if len(pt) == 0 || !s.txnGroups[pid][id] {
				return fmt.Errorf("group %q: producer %d's pending offsets (%d) are not indexed", id, pid, len(pt))
			}
		}
		for t, ps := range g.inflight {
			for p, n := range ps {
				if inflight[g][tp{t, p}] != n {
					return fmt.Errorf("group %q: %d commits in flight for %s/%d, counted %d", id, inflight[g][tp{t, p}], t, p, n)
				}
			}
		}
	}
	return nil
}

func (g *group) checkInvariants(id string, loaded bool) error {
	if g.consumer != nil {
		return g.consumer.checkInvariants(g)
	}
	switch {
	case g.id != id:
		return fmt.Errorf("filed under another id (%q)", g.id)
	case g.state == stateDead:
		return fmt.Errorf("dead but in the map")
	case len(g.members) > 0 && g.members[g.leader] == nil:
		return fmt.Errorf("leader %q is not a member", g.leader)
	case g.state == stateEmpty && len(g.members) > 0:
		return fmt.Errorf("empty with %d members", len(g.members))
	case g.state == statePreparing && g.joinDeadline.IsZero():
		return fmt.Errorf("a join phase without deadline")
	case g.state != stateCompleting && g.assigning != 0:
		return fmt.Errorf("an assignment in flight")
	}
	for inst, mid := range g.static {
		if m := g.members[mid]; m == nil || m.instanceID != inst {
			return fmt.Errorf("static %s → %s is not its member", inst, mid)
		}
	}
	for mid := range g.pendingSync {
		if g.members[mid] == nil {
			return fmt.Errorf("pending sync %s is not a member", mid)
		}
	}
	for mid, m := range g.members {
		switch {
		case m.id != mid:
			return fmt.Errorf("member %s filed as %s", m.id, mid)
		case m.instanceID != "" && g.static[m.instanceID] != mid:
			return fmt.Errorf("member %s of instance %s is not the instance's", mid, m.instanceID)
		case m.join != nil && g.state != statePreparing:
			return fmt.Errorf("member %s waits for its join", mid)
		case m.sync != nil && g.state != stateCompleting:
			return fmt.Errorf("member %s waits for its sync", mid)
		case loaded && m.deadline.Equal(time.Time{}):
			return fmt.Errorf("member %s has no session deadline", mid)
		}
	}
	return nil
}
