package replica

import (
	"container/heap"
	"sync"
	"time"

	"github.com/sluice-log/sluice/partition"
)

// The replicas' clock. Time reaches a replica's state machine only through
// partition.Replica.TickTo, in ticks of TickInterval counted from the
// Manager's start. Before a replica steps an event it brings its machine's
// clock up to date (Replica.step), so that events are stamped with the tick
// they happen at; after process it tells the scheduler the tick at which
// its machine next has something due (NextDue: a produce deadline, a
// follower's lag reaching replica.lag.time.max.ms, a retry). One goroutine
// sleeps until the earliest such tick and wakes the replicas due then. A
// replica with nothing due is in no heap and costs no work, however many
// there are; an idle leader's followers move its lag deadline with every
// fetch, so it is woken only if one stops fetching.

// scheduler is a min-heap of replicas by the tick they are due at. Its
// mutex is a leaf, taken under Replica.mu (schedule) and by the clock
// loop with no other lock held.
type scheduler struct {
	mu   sync.Mutex
	heap dueHeap
	// kick wakes the clock loop when a replica became the earliest.
	kick chan struct{}
}

// dueHeap implements heap.Interface over Replica.sched, which the
// scheduler's mutex guards.
type dueHeap []*Replica

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].sched.due < h[j].sched.due }
func (h dueHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].sched.idx, h[j].sched.idx = i, j
}
func (h *dueHeap) Push(x any) {
	r := x.(*Replica)
	r.sched.idx = len(*h)
	*h = append(*h, r)
}
func (h *dueHeap) Pop() any {
	old := *h
	r := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	r.sched.idx = -1
	return r
}

// set puts r in the heap at tick due, or takes it out (due 0).
func (s *scheduler) set(r *Replica, due int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case due == 0:
		if r.sched.idx >= 0 {
			heap.Remove(&s.heap, r.sched.idx)
		}
		return
	case r.sched.idx >= 0:
		r.sched.due = due
		heap.Fix(&s.heap, r.sched.idx)
	default:
		r.sched.due = due
		heap.Push(&s.heap, r)
	}
	if r.sched.idx == 0 {
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
}

// popDue appends to out and takes out of the heap the replicas due at or
// before tick now; it returns the tick the earliest left is due at (ok
// false: none).
func (s *scheduler) popDue(now int64, out []*Replica) (_ []*Replica, next int64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.heap) > 0 && s.heap[0].sched.due <= now {
		out = append(out, heap.Pop(&s.heap).(*Replica))
	}
	if len(s.heap) == 0 {
		return out, 0, false
	}
	return out, s.heap[0].sched.due, true
}

// scheduled is the number of replicas with something due.
func (s *scheduler) scheduled() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.heap)
}

// now is the replicas' clock: ticks since the Manager started.
func (m *Manager) now() int64 { return m.clock() }

// clockLoop wakes each replica at the tick its state machine is next due.
func (m *Manager) clockLoop() {
	defer m.wg.Done()
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	var due []*Replica
	for {
		var next int64
		var ok bool
		due, next, ok = m.sched.popDue(m.now(), due[:0])
		for i, r := range due {
			r.wake()
			due[i] = nil
		}
		if len(due) > 0 {
			continue // waking took time: look again
		}
		wait := time.Hour
		if ok {
			// Tick next begins at start + next*TickInterval.
			wait = time.Until(m.start.Add(time.Duration(next) * TickInterval))
		}
		t.Reset(max(wait, 0))
		select {
		case <-m.stop:
			return
		case <-m.sched.kick:
		case <-t.C:
		}
	}
}

// schedule tells the scheduler when the state machine next has something
// due; a dead replica has nothing. r.mu must be held (process calls it).
func (r *Replica) schedule() {
	due, ok := r.mu.part.NextDue()
	if !ok || r.mu.dead {
		due = 0
	}
	if due == r.mu.due {
		return
	}
	if held := r.mu.due; held != 0 && due > held && due-held <= held-r.mu.part.Now() {
		// Later, but by less than the time left: keep the earlier entry.
		// An idle leader's followers move its lag deadline on by a fetch
		// interval with every fetch; updating the heap for each took the
		// scheduler's lock for every partition of every replica fetch.
		// This way the entry moves about twice per lag period, before it
		// fires; if it does fire early, wake finds nothing and moves it.
		return
	}
	r.mu.due = due
	r.m.sched.set(r, due)
}

// wake is the clock loop's call on a replica that fell due (it is out of
// the heap): bring the state machine's clock up to date and do what that
// decided.
func (r *Replica) wake() {
	r.m.wakeups.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mu.due = 0 // no longer in the heap
	if r.mu.dead {
		return
	}
	r.mu.part.TickTo(r.m.now())
	r.process()
}

// step brings the state machine's clock up to date and steps msg into it,
// so that the event is stamped with the tick it happens at. r.mu must be
// held; process follows.
func (r *Replica) step(msg partition.Msg) error {
	r.mu.part.TickTo(r.m.now())
	return r.mu.part.Step(msg)
}
