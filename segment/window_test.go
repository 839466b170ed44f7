package segment

import (
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestUnflushedWindow: the unflushed tail grows with appends, across
// segment rolls, dates from the first unflushed append, and drops to zero
// after a flush; OnFlush hears of every flush.
func TestUnflushedWindow(t *testing.T) {
	clock := time.Unix(1000, 0)
	var flushes int
	e := newEnv(t, vfs.NewMem())
	l, _ := e.open(Options{SegmentBytes: 512, Now: func() time.Time { return clock }, OnFlush: func(time.Duration) { flushes++ }})
	if u := l.Unflushed(); u.Bytes != 0 || !u.Since.IsZero() || u.Offset != 0 {
		t.Fatalf("empty log: %+v", u)
	}
	first := clock
	var written int64
	for i := 0; i < 20; i++ {
		b := batchOf(int64(i), fmt.Sprint(i), 2)
		written += int64(len(b))
		if _, err := l.Append(b, 0); err != nil {
			t.Fatal(err)
		}
		clock = clock.Add(time.Second)
	}
	if len(l.Segments()) < 2 {
		t.Fatalf("want the appends to roll segments, have %v", l.Segments())
	}
	u := l.Unflushed()
	if u.Bytes != written || !u.Since.Equal(first) || u.Offset != 0 {
		t.Fatalf("after appends: %+v, want %d bytes since %v", u, written, first)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if u := l.Unflushed(); u.Bytes != 0 || !u.Since.IsZero() || u.Offset != 40 {
		t.Fatalf("after flush: %+v", u)
	}
	if flushes != 1 {
		t.Fatalf("OnFlush called %d times, want 1", flushes)
	}
	b := batchOf(99, "late", 1)
	if _, err := l.Append(b, 0); err != nil {
		t.Fatal(err)
	}
	if u := l.Unflushed(); u.Bytes != int64(len(b)) || !u.Since.Equal(clock) {
		t.Fatalf("after one more append: %+v, want %d bytes since %v", u, len(b), clock)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}
