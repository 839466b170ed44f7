package replica

import (
	"math"
	"testing"
	"time"
)

// TestQuota: a throttle starts with one second's worth, is drained by
// what is recorded (below zero by a batch), refills at its rate up to one
// second's worth, says how long until bytes may move, and is off at
// Unthrottled.
func TestQuota(t *testing.T) {
	q := newQuota()
	t0 := time.Unix(1000, 0)
	if n, _ := q.available(t0); n != math.MaxInt {
		t.Fatalf("off: %d available", n)
	}
	q.record(1<<30, t0) // ignored while off
	q.set(1000, t0)
	if n, _ := q.available(t0); n != 1000 {
		t.Fatalf("fresh throttle: %d available, want 1000", n)
	}
	q.record(1500, t0)
	n, wait := q.available(t0)
	if n != 0 || wait != 501*time.Millisecond {
		t.Fatalf("overdrawn by 500: %d available, wait %v, want 0 and 501ms", n, wait)
	}
	if n, _ := q.available(t0.Add(750 * time.Millisecond)); n != 250 {
		t.Fatalf("after 750ms: %d, want 250", n)
	}
	if n, _ := q.available(t0.Add(time.Hour)); n != 1000 {
		t.Fatalf("after idling: %d, want the cap 1000", n)
	}
	q.set(100, t0.Add(time.Hour))
	if n, _ := q.available(t0.Add(time.Hour)); n != 100 {
		t.Fatalf("lowered rate: %d, want 100", n)
	}
	q.set(Unthrottled, t0.Add(time.Hour))
	if n, _ := q.available(t0.Add(time.Hour)); n != math.MaxInt {
		t.Fatalf("turned off: %d", n)
	}
}
