package segment

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// wbCall is one writeback request a test saw: segment base and range.
type wbCall struct{ base, off, n int64 }

// wbRecorder stands in for sync_file_range. It checks that the log's lock
// is free during the call (inline: TryLock succeeds, so appends would not
// wait; with a runner, where appends run concurrently, Lock would deadlock
// otherwise) and names the segment the file belongs to.
type wbRecorder struct {
	t      *testing.T
	log    *Log // set once the log is open
	runner bool
	mu     sync.Mutex
	calls  []wbCall
	seen   chan struct{}
}

func newWBRecorder(t *testing.T) *wbRecorder {
	return &wbRecorder{t: t, seen: make(chan struct{}, 1000)}
}

func (r *wbRecorder) syncRange(f vfs.File, off, n int64) error {
	l := r.log
	if r.runner {
		l.mu.Lock()
	} else if !l.mu.TryLock() {
		r.t.Error("writeback called with the log's lock held")
		return nil
	}
	base := int64(-1)
	for _, s := range l.segs {
		if s.file == f {
			base = s.base
		}
	}
	l.mu.Unlock()
	r.mu.Lock()
	r.calls = append(r.calls, wbCall{base, off, n})
	r.mu.Unlock()
	r.seen <- struct{}{}
	return nil
}

func (r *wbRecorder) take() []wbCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.calls
	r.calls = nil
	return c
}

// segSizes are the sizes of the log's segments by base.
func segSizes(l *Log) map[int64]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := map[int64]int64{}
	for _, s := range l.segs {
		m[s.base] = s.size
	}
	return m
}

// TestWritebackEveryNBytes: with WritebackBytes N, nothing is requested
// until N bytes are appended; then exactly the bytes appended since the
// last request, contiguous per segment, including the tail of segments
// rolled in between; the call never holds the log's lock.
func TestWritebackEveryNBytes(t *testing.T) {
	for _, segBytes := range []int64{1 << 20, 300} {
		t.Run(fmt.Sprint("segment.bytes=", segBytes), func(t *testing.T) {
			const n = 1000
			rec := newWBRecorder(t)
			var hookBytes int64
			e := newEnv(t, vfs.NewMem())
			l, _ := e.open(Options{SegmentBytes: segBytes, WritebackBytes: n, syncRange: rec.syncRange, Now: batchClock, wbAlign: 1,
				OnWriteback: func(b int64, err error) {
					if err != nil {
						t.Error(err)
					}
					hookBytes += b
				}})
			rec.log = l
			requested := map[int64]int64{} // per segment: requested up to
			var sinceLast, total int64
			for i := 0; i < 60; i++ {
				b := batchOf(int64(i), fmt.Sprint("r", i), 3)
				if _, err := l.Append(b, 0); err != nil {
					t.Fatal(err)
				}
				total += int64(len(b))
				sinceLast += int64(len(b))
				calls := rec.take()
				if sinceLast < n {
					if len(calls) != 0 {
						t.Fatalf("append %d: %d bytes since the last request, below %d, but requested %v", i, sinceLast, n, calls)
					}
					continue
				}
				sinceLast = 0
				if len(calls) == 0 {
					t.Fatalf("append %d: %d bytes appended, no writeback", i, n)
				}
				for _, c := range calls {
					if c.base < 0 || c.off != requested[c.base] || c.n <= 0 {
						t.Fatalf("append %d: request %+v does not continue segment %d at %d", i, c, c.base, requested[c.base])
					}
					requested[c.base] = c.off + c.n
				}
				// Everything appended so far is requested.
				for base, size := range segSizes(l) {
					if requested[base] != size {
						t.Fatalf("append %d: segment %d has %d bytes, %d requested (calls %v)", i, base, size, requested[base], calls)
					}
				}
			}
			var sum int64
			for _, v := range requested {
				sum += v
			}
			if sum == 0 || sum > total || hookBytes != sum {
				t.Fatalf("requested %d of %d bytes, OnWriteback heard of %d", sum, total, hookBytes)
			}
			if segs := len(segSizes(l)); (segBytes == 300) != (segs > 2) {
				t.Fatalf("segment.bytes %d: %d segments", segBytes, segs)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestWritebackWholePages: the active segment's ranges end on a page
// boundary (the partial page being appended to waits for the next
// request); a rolled segment's tail goes whole.
func TestWritebackWholePages(t *testing.T) {
	rec := newWBRecorder(t)
	e := newEnv(t, vfs.NewMem())
	l, _ := e.open(Options{WritebackBytes: 5000, SegmentBytes: 20000, syncRange: rec.syncRange, Now: batchClock})
	rec.log = l
	requested := map[int64]int64{}
	for i := 0; i < 200; i++ {
		b := batchOf(int64(i), "page", 40)
		if _, err := l.Append(b, 0); err != nil {
			t.Fatal(err)
		}
		for _, c := range rec.take() {
			if c.off != requested[c.base] {
				t.Fatalf("request %+v does not continue at %d", c, requested[c.base])
			}
			requested[c.base] = c.off + c.n
			sizes := segSizes(l)
			active := slices.Max(l.Segments())
			if c.base == active && requested[c.base]%writebackAlign != 0 {
				t.Fatalf("active segment requested up to %d, not a page boundary", requested[c.base])
			}
			if c.base != active && requested[c.base] != sizes[c.base] {
				t.Fatalf("rolled segment %d requested up to %d of %d", c.base, requested[c.base], sizes[c.base])
			}
		}
	}
	if len(requested) < 3 {
		t.Fatalf("want requests over several segments, got %v", requested)
	}
}

// TestWritebackOffByDefault: without WritebackBytes nothing is requested.
func TestWritebackOffByDefault(t *testing.T) {
	rec := newWBRecorder(t)
	e := newEnv(t, vfs.NewMem())
	l, _ := e.open(Options{syncRange: rec.syncRange})
	rec.log = l
	for i := 0; i < 100; i++ {
		if _, err := l.Append(batchOf(int64(i), "x", 10), 0); err != nil {
			t.Fatal(err)
		}
	}
	if c := rec.take(); len(c) != 0 {
		t.Fatalf("writeback off, but requested %v", c)
	}
	if n, err := l.Writeback(); n != 0 || err != nil {
		t.Fatalf("Writeback with nothing due: %d, %v", n, err)
	}
}

// TestWritebackRunner: with a Writeback runner the requests run on its
// goroutine and still cover everything appended before the last one.
func TestWritebackRunner(t *testing.T) {
	rec := newWBRecorder(t)
	rec.runner = true
	w := NewWriteback()
	e := newEnv(t, vfs.NewMem())
	l, _ := e.open(Options{WritebackBytes: 512, Writeback: w, syncRange: rec.syncRange, Now: batchClock, wbAlign: 1})
	rec.log = l
	var total int64
	for i := 0; i < 50; i++ {
		b := batchOf(int64(i), "y", 5)
		if _, err := l.Append(b, 0); err != nil {
			t.Fatal(err)
		}
		total += int64(len(b))
	}
	// The last request was due at the last append that crossed 512 bytes:
	// wait for it to cover everything up to there.
	due := segSizes(l)[0] - l.wbAppendedNow()
	var got int64
	deadline := time.After(10 * time.Second)
	for got < due {
		select {
		case <-rec.seen:
			for _, c := range rec.take() {
				if c.off != got {
					t.Fatalf("request %+v does not continue at %d", c, got)
				}
				got += c.n
			}
		case <-deadline:
			t.Fatalf("runner requested %d bytes, want %d", got, due)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if got > total {
		t.Fatalf("requested %d bytes of %d", got, total)
	}
}

// batchClock is a clock near batchOf's timestamps, so that segment.ms
// does not roll segments.
func batchClock() time.Time { return time.UnixMilli(100) }

func (l *Log) wbAppendedNow() int64 { l.mu.Lock(); defer l.mu.Unlock(); return l.wbAppended }

// TestWritebackRealFile: the real call on real files: no error, and the
// bytes requested are the bytes appended (every append crosses N here)
// but the partial page at the end.
func TestWritebackRealFile(t *testing.T) {
	dir := t.TempDir()
	f, err := vfs.Default.Create(filepath.Join(dir, "plain"), vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(make([]byte, 64<<10), 0); err != nil {
		t.Fatal(err)
	}
	if err := startWriteback(f, 0, 64<<10); err != nil {
		t.Fatalf("sync_file_range on %s: %v", dir, err)
	}
	_ = f.Close()

	idx, err := OpenIndex(vfs.Default, filepath.Join(dir, "index"), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	var mu sync.Mutex
	var bytes int64
	var errs []error
	l, _, err := Open(vfs.Default, filepath.Join(dir, "t-0"), "t-0", idx, Options{WritebackBytes: 1, SegmentBytes: 8 << 10,
		OnWriteback: func(b int64, err error) {
			mu.Lock()
			defer mu.Unlock()
			bytes += b
			if err != nil {
				errs = append(errs, err)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for i := 0; i < 200; i++ {
		b := batchOf(int64(i), "real", 20)
		if _, err := l.Append(b, 0); err != nil {
			t.Fatal(err)
		}
		total += int64(len(b))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(errs) > 0 {
		t.Fatalf("writeback errors: %v", errs)
	}
	// All but the active segment's partial last page.
	if bytes > total || bytes <= total-writebackAlign {
		t.Fatalf("requested %d bytes, appended %d", bytes, total)
	}
	if _, err := os.Stat(filepath.Join(dir, "t-0")); err != nil {
		t.Fatal(err)
	}
}
