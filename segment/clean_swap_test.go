package segment

import (
	"context"
	"maps"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// TestSwapFsyncHoldsNoLogLock holds a Clean's swap inside its synced
// Pebble commit (the index's WAL fsync blocks until released): an append
// completes meanwhile (Log.mu is not held across the fsync), a read that
// needs an old segment's index waits for the install and then answers
// right, and the log reads back the same key view after.
func TestSwapFsyncHoldsNoLogLock(t *testing.T) {
	var armed atomic.Bool
	blocked, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	fs := errorfs.Wrap(vfs.NewMem(), errorfs.InjectorFunc(func(op errorfs.Op) error {
		sync := op.Kind == errorfs.OpFileSync || op.Kind == errorfs.OpFileSyncData || op.Kind == errorfs.OpFileSyncTo
		if sync && armed.Load() && strings.HasPrefix(op.Path, "/data/index/") && strings.HasSuffix(op.Path, ".log") {
			once.Do(func() { close(blocked); <-release })
		}
		return nil
	}))
	e := newEnv(t, fs)
	l, _ := e.open(Options{SegmentBytes: 1024, IndexIntervalBytes: 64, Now: testNow})
	defer l.Close()
	rng := rand.New(rand.NewPCG(7, 8))
	w := written{}
	appendKVs(t, l, rng, w, 80, 20, 1000, 1)
	hw := l.LogEndOffset()
	want := latestWritten(w, hw)
	segs := l.Segments()
	if len(segs) < 4 {
		t.Fatalf("segments %v", segs)
	}
	off := segs[1] - 2 // late in the first segment: its read needs the index

	armed.Store(true)
	cleaned := make(chan error, 1)
	go func() {
		_, err := l.Clean(context.Background(), CleanOptions{Policy: compactPolicy(), UpTo: hw, Now: time.UnixMilli(1e6)})
		cleaned <- err
	}()
	deadline := time.After(60 * time.Second)
	select {
	case <-blocked:
	case err := <-cleaned:
		t.Fatalf("the Clean ended (%v) without a synced index commit", err)
	case <-deadline:
		t.Fatal("no synced index commit within 60 s")
	}
	// The swap is inside its fsync now.
	appended := make(chan error, 1)
	go func() {
		_, err := l.Append(buildKVBatch(9000, codecNone, []kv{{key: "late", value: "v"}}), 1)
		appended <- err
	}()
	read := make(chan Chunk, 1)
	go func() {
		c, err := l.Read(off, 1<<20, hw, nil)
		if err != nil {
			t.Errorf("read at %d during the swap: %v", off, err)
		}
		read <- c
	}()
	select {
	case err := <-appended:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		close(release)
		t.Fatal("an append waited for the swap's fsync")
	}
	close(release)
	if err := <-cleaned; err != nil {
		t.Fatal(err)
	}
	c := <-read
	it := NewBatchIter(c.Data)
	n := 0
	for h, b, ok := it.Next(); ok; h, b, ok = it.Next() {
		if err := eachRecord(b, h, func(r record) bool {
			n++
			if got := w[r.offset]; got.key != string(r.key) {
				t.Errorf("read during the swap: offset %d key %q, written %q", r.offset, r.key, got.key)
			}
			return true
		}); err != nil {
			t.Fatal(err)
		}
	}
	if n == 0 || c.Next <= off {
		t.Fatalf("read during the swap at %d: %d records, next %d", off, n, c.Next)
	}
	if got := readCheck(t, l, w, hw); !maps.Equal(got, want) {
		t.Fatalf("after the swap:\n got %v\nwant %v", got, want)
	}
}
