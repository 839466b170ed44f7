package bench

import (
	"testing"
	"time"
)

func TestPacer(t *testing.T) {
	start := time.Unix(1000, 0)
	p := newPacer(1, 1024, start) // 1 MB/s of 1 KiB: 1024 records/s
	if n := p.allowance(start.Add(500*time.Millisecond), 1<<20); n != 512 {
		t.Fatalf("after 0.5 s: %d records allowed, want 512", n)
	}
	p.sent = 512
	if n := p.allowance(start.Add(500*time.Millisecond), 1<<20); n != 0 {
		t.Fatalf("nothing more is due yet, got %d", n)
	}
	if n := p.allowance(start.Add(10*time.Second), 100); n != 100 {
		t.Fatalf("the burst caps a catch-up: %d", n)
	}
	if n := newPacer(0, 100, start).allowance(start, 256); n != 256 {
		t.Fatalf("unpaced allows the whole burst, got %d", n)
	}
}

func TestValuePoolStampsAndReuses(t *testing.T) {
	p := newValuePool(100)
	now := time.Unix(1700000000, 123456789)
	v := p.get(now)
	if len(v) != 100 {
		t.Fatalf("value of %d bytes, want 100", len(v))
	}
	got, ok := stamp(v)
	if !ok || !got.Equal(now) {
		t.Fatalf("stamp = %v %v, want %v", got, ok, now)
	}
	if _, ok := stamp([]byte{1, 2}); ok {
		t.Fatal("a value shorter than the stamp has none")
	}
	if n := testing.AllocsPerRun(1000, func() { p.put(p.get(now)) }); n > 0 {
		t.Fatalf("get/put allocates %v times per record", n)
	}
}
