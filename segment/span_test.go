package segment

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestReadSpanMatchesRead checks that ReadSpan finds the very batches Read
// returns, for every offset, several byte limits and upper bounds, and that
// AppendTo gives their bytes.
func TestReadSpanMatchesRead(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	l, _ := e.open(Options{SegmentBytes: 2048, IndexIntervalBytes: 128})
	for i := 0; i < 60; i++ {
		if _, err := l.Append(batchOf(int64(1000+i), fmt.Sprint(i), 1+i%4), 1); err != nil {
			t.Fatal(err)
		}
	}
	leo := l.LogEndOffset()
	for _, maxBytes := range []int{1, 100, 300, 1000, 1 << 20} {
		for _, upTo := range []int64{leo, leo / 2} {
			for off := int64(0); off <= leo; off++ {
				c, rerr := l.Read(off, maxBytes, upTo, nil)
				s, serr := l.ReadSpan(off, maxBytes, upTo)
				if (rerr == nil) != (serr == nil) {
					t.Fatalf("offset %d: Read error %v, ReadSpan error %v", off, rerr, serr)
				}
				got, err := s.AppendTo(nil)
				s.Release()
				s.Release() // twice is harmless
				if err != nil {
					t.Fatal(err)
				}
				if s.First != c.First || s.Next != c.Next || s.Segment != c.Segment || s.Position != c.Position || s.Size != c.Size || !bytes.Equal(got, c.Data) {
					t.Fatalf("offset %d max %d upTo %d: span %+v (%d bytes), read %+v", off, maxBytes, upTo, s.Chunk, len(got), c)
				}
			}
		}
	}
	if _, err := l.ReadSpan(leo+1, 100, leo); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("past the end: %v", err)
	}
}

// TestReadSpanOutlivesRetention checks that a span keeps its segment's file
// readable after retention removed the segment.
func TestReadSpanOutlivesRetention(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	l, _ := e.open(Options{SegmentBytes: 512, IndexIntervalBytes: 128})
	for i := 0; i < 20; i++ {
		if _, err := l.Append(batchOf(int64(1000+i), fmt.Sprint(i), 2), 1); err != nil {
			t.Fatal(err)
		}
	}
	c, err := l.Read(0, 1<<20, l.LogEndOffset(), nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := l.ReadSpan(0, 1<<20, l.LogEndOffset())
	if err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateFullyAndStartAt(l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	got, err := s.AppendTo(nil)
	s.Release()
	if err != nil || !bytes.Equal(got, c.Data) {
		t.Fatalf("after the segment went: %d bytes, %v", len(got), err)
	}
}

// TestReadSpanFd checks that a span of a log on disk has the segment file's
// descriptor, and one in memory none.
func TestReadSpanFd(t *testing.T) {
	dir := t.TempDir()
	idx, err := OpenIndex(vfs.Default, filepath.Join(dir, "index"), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	l, _, err := Open(vfs.Default, filepath.Join(dir, "t-0"), "t-0", idx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Append(batchOf(1, "a", 3), 1); err != nil {
		t.Fatal(err)
	}
	s, err := l.ReadSpan(0, 1<<20, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	fd := s.Fd()
	if fd == vfs.InvalidFd {
		t.Fatal("a span on disk has no descriptor")
	}
	b := make([]byte, s.Size)
	if n, err := syscall.Pread(int(fd), b, s.Position); err != nil || n != len(b) {
		t.Fatalf("pread: %d bytes, %v", n, err)
	}
	want, _ := s.AppendTo(nil)
	if !bytes.Equal(b, want) {
		t.Fatal("the descriptor reads other bytes")
	}
}

// TestReadSpanOutlivesClose checks that closing the log leaves a span's file
// open until the span is released: its descriptor must not be reused under
// a sendfile.
func TestReadSpanOutlivesClose(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	l, _ := e.open(Options{})
	if _, err := l.Append(batchOf(1, "a", 3), 1); err != nil {
		t.Fatal(err)
	}
	s, err := l.ReadSpan(0, 1<<20, 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if b, err := s.AppendTo(nil); err != nil || len(b) != s.Len() {
		t.Fatalf("after Close: %d bytes, %v", len(b), err)
	}
	seg := s.seg
	s.Release()
	if !seg.closeLate || seg.refs != 0 {
		t.Fatalf("after the release: closeLate %v, refs %d", seg.closeLate, seg.refs)
	}
}
