package segment

import (
	"crypto/rand"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestUnwrittenRealFile: on OS files, Unwritten sees the pages appends
// dirtied (asked right after a write, before the kernel's writeback comes
// round), never more than the unflushed bytes, across segment rolls and
// past the bound on segments asked about; after a flush it is 0, and an
// append after the flush counts at most its own bytes.
func TestUnwrittenRealFile(t *testing.T) {
	dir := t.TempDir()
	idx, err := OpenIndex(vfs.Default, filepath.Join(dir, "index"), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = idx.Close() })
	l, _, err := Open(vfs.Default, filepath.Join(dir, "t-0"), "t-0", idx, Options{SegmentBytes: 16 << 10, RetentionBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if n, err := l.Unwritten(); errors.Is(err, ErrUnwrittenUnsupported) {
		t.Skipf("this kernel cannot tell (cachestat(2) needs Linux 6.5): %v", err)
	} else if err != nil || n != 0 {
		t.Fatalf("empty log: Unwritten = %d, %v", n, err)
	}

	value := func(n int) []byte {
		v := make([]byte, n)
		_, _ = rand.Read(v)
		return v
	}
	// Enough 4 KiB batches for more than unwrittenSegments segments of
	// 16 KiB; the kernel may write any of them back at any time, so each
	// answer is only bounded, and one right after its write must see it.
	sawDirty := false
	for i := 0; i < 4*(unwrittenSegments+4); i++ {
		if _, err := l.Append(BuildBatch(int64(i), value(4000)), 0); err != nil {
			t.Fatal(err)
		}
		n, err := l.Unwritten()
		if errors.Is(err, ErrUnwrittenUnsupported) {
			t.Skipf("this kernel cannot tell: %v", err)
		}
		if err != nil {
			t.Fatal(err)
		}
		if u := l.Unflushed().Bytes; n < 0 || n > u {
			t.Fatalf("after append %d: Unwritten = %d, unflushed bytes %d", i, n, u)
		}
		sawDirty = sawDirty || n > 0
	}
	if !sawDirty {
		t.Fatal("Unwritten never saw the pages just written")
	}
	if segs := len(l.Segments()); segs <= unwrittenSegments {
		t.Fatalf("%d segments: the bound on segments asked about was not reached", segs)
	}

	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if n, err := l.Unwritten(); err != nil || n != 0 {
		t.Fatalf("after flush: Unwritten = %d, %v, want 0", n, err)
	}
	b := BuildBatch(99, value(100))
	if _, err := l.Append(b, 0); err != nil {
		t.Fatal(err)
	}
	if n, err := l.Unwritten(); err != nil || n > int64(len(b)) {
		t.Fatalf("after one %d-byte append past the flush: Unwritten = %d, %v", len(b), n, err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if n, err := l.Unwritten(); err != nil || n != 0 {
		t.Fatalf("after the second flush: Unwritten = %d, %v, want 0", n, err)
	}
}

// TestUnwrittenMemFS: files without a descriptor cannot be asked about.
func TestUnwrittenMemFS(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	l, _ := e.open(Options{})
	defer l.Close()
	if _, err := l.Append(batchOf(1, "a", 1), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Unwritten(); !errors.Is(err, ErrUnwrittenUnsupported) {
		t.Fatalf("Unwritten on a MemFS log: %v, want ErrUnwrittenUnsupported", err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Unwritten(); !errors.Is(err, ErrUnwrittenUnsupported) {
		t.Fatalf("Unwritten on a flushed MemFS log: %v, want ErrUnwrittenUnsupported", err)
	}
}

// TestUnwrittenConcurrent: Unwritten runs beside appends that roll
// segments, flushes and Close (run it with -race): it never fails with
// anything but ErrClosed, never answers more than was appended, and the
// files it holds are closed only after it lets them go.
func TestUnwrittenConcurrent(t *testing.T) {
	dir := t.TempDir()
	idx, err := OpenIndex(vfs.Default, filepath.Join(dir, "index"), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = idx.Close() })
	l, _, err := Open(vfs.Default, filepath.Join(dir, "t-0"), "t-0", idx, Options{SegmentBytes: 8 << 10, RetentionBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Unwritten(); errors.Is(err, ErrUnwrittenUnsupported) {
		t.Skipf("this kernel cannot tell: %v", err)
	}
	const appends = 300
	var appended atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		v := make([]byte, 1000)
		for i := 0; i < appends; i++ {
			b := BuildBatch(int64(i), v)
			appended.Add(int64(len(b))) // before: Unwritten may see it before Append returns
			if _, err := l.Append(b, 0); err != nil {
				t.Error(err)
				return
			}
			if i%50 == 49 {
				if err := l.Flush(); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	check := func() bool {
		n, err := l.Unwritten()
		if errors.Is(err, ErrClosed) {
			return false
		}
		if err != nil || n < 0 || n > appended.Load() {
			t.Errorf("Unwritten = %d, %v with %d bytes appended", n, err, appended.Load())
			return false
		}
		return true
	}
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
			check()
		}
	}
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		for check() {
		}
	}()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	<-closed
}
