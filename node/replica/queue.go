package replica

import "sync"

// queue hands work from replicas to one sender goroutine (the alterer, a
// fetcher): the latest item of each replica, and a wake-up. put never
// blocks; its lock is a leaf, taken under Replica.mu.
type queue[T any] struct {
	mu struct {
		sync.Mutex
		items map[*Replica]T
	}
	// wake holds one wake-up for the sender when something was put.
	wake chan struct{}
}

func newQueue[T any]() *queue[T] {
	q := &queue[T]{wake: make(chan struct{}, 1)}
	q.mu.items = map[*Replica]T{}
	return q
}

// put queues r's item, replacing one not yet taken, and wakes the sender.
func (q *queue[T]) put(r *Replica, v T) {
	q.mu.Lock()
	q.mu.items[r] = v
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// take returns what was queued (nil when nothing) and empties the queue.
func (q *queue[T]) take() map[*Replica]T {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.mu.items) == 0 {
		return nil
	}
	items := q.mu.items
	q.mu.items = map[*Replica]T{}
	return items
}

// swap is take for a sender that recycles its maps: it hands the queue
// spare, an empty map the caller owns, and returns what was queued (the
// caller owns it from then on; hand it back emptied at the next swap). A
// take allocated a map per fetch round, and grew it to the partitions
// queued; swap allocates nothing once the two maps have grown.
func (q *queue[T]) swap(spare map[*Replica]T) map[*Replica]T {
	q.mu.Lock()
	defer q.mu.Unlock()
	items := q.mu.items
	q.mu.items = spare
	return items
}
