package segment

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// filesEnv opens n logs sharing one budget of max open files, each
// with small segments so that every log has several.
func filesEnv(t *testing.T, fs vfs.FS, n, max int) (*Files, []*Log, Options) {
	t.Helper()
	idx, err := OpenIndex(fs, "/data/index", 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = idx.Close() })
	files := NewFiles(max)
	opts := Options{SegmentBytes: 400, IndexIntervalBytes: 128, RetentionBytes: -1, RetentionMs: -1, Files: files}
	logs := make([]*Log, n)
	for i := range logs {
		name := fmt.Sprintf("t-%d", i)
		if logs[i], _, err = Open(fs, "/data/"+name, name, idx, opts); err != nil {
			t.Fatal(err)
		}
	}
	return files, logs, opts
}

// valueAt is the first record's value of the first batch in b.
func valueAt(b []byte) []byte {
	if len(b) < BatchHeaderSize {
		return nil
	}
	return []byte(firstValue(b))
}

// TestFilesBudget: 60 logs of several segments each under a budget of 8
// open files. Every append and read is done by one goroutine, so the
// budget holds exactly after each (the sweep never finds a busy log);
// every record reads back from files that were closed and reopened, by
// Read and by ReadSpan; a log closed and opened again opens no file
// until used; retention removes segments whose files are closed.
func TestFilesBudget(t *testing.T) {
	const logs, max, batches = 60, 8, 12
	files, ls, opts := filesEnv(t, vfs.NewMem(), logs, max)
	for b := range batches {
		for i, l := range ls {
			if _, err := l.Append(batchOf(int64(1000+b), fmt.Sprintf("%d-%d", i, b), 2), 1); err != nil {
				t.Fatal(err)
			}
			if st := files.Stats(); st.Open > max {
				t.Fatalf("after append %d of log %d: %d files open, budget %d", b, i, st.Open, max)
			}
		}
	}
	if n := len(ls[0].Segments()); n < 3 {
		t.Fatalf("log 0 has %d segments, want several", n)
	}
	read := func(l *Log, i int, span bool) {
		t.Helper()
		for off := int64(0); off < l.LogEndOffset(); {
			var data []byte
			var next int64
			if span {
				s, err := l.ReadSpan(off, 1, l.LogEndOffset())
				if err != nil {
					t.Fatal(err)
				}
				data, err = s.AppendTo(nil)
				s.Release()
				if err != nil {
					t.Fatal(err)
				}
				next = s.Next
			} else {
				c, err := l.Read(off, 1, l.LogEndOffset(), nil)
				if err != nil {
					t.Fatal(err)
				}
				data, next = c.Data, c.Next
			}
			if want := fmt.Sprintf("%d-%d/0", i, off/2); !bytes.Equal(valueAt(data), []byte(want)) {
				t.Fatalf("log %d offset %d (span %v): read %q, want %q", i, off, span, valueAt(data), want)
			}
			off = next
			if st := files.Stats(); st.Open > max {
				t.Fatalf("reading log %d at %d: %d files open, budget %d", i, off, st.Open, max)
			}
		}
	}
	for i, l := range ls {
		read(l, i, i%2 == 0)
	}
	st := files.Stats()
	if st.Evicted == 0 || st.Opened <= int64(logs) {
		t.Fatalf("stats %+v: want files closed by the budget and reopened", st)
	}

	// A span keeps its file open however many others are opened.
	s, err := ls[0].ReadSpan(0, 1, ls[0].LogEndOffset())
	if err != nil || s.Size == 0 {
		t.Fatalf("span: %v, size %d", err, s.Size)
	}
	for i, l := range ls[1:] {
		read(l, i+1, false)
	}
	if data, err := s.AppendTo(nil); err != nil || string(valueAt(data)) != "0-0/0" {
		t.Fatalf("span after %d other files opened: %q, %v", logs, valueAt(data), err)
	}
	s.Release()

	// Retention removes segments, open or not, and their files go.
	l := ls[1]
	segs := l.Segments()
	if err := l.AdvanceLogStart(segs[2]); err != nil {
		t.Fatal(err)
	}
	if _, err := l.EnforceRetention(l.opts.Now(), l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	names, _ := l.fs.List(l.dir)
	for _, n := range names {
		if b, ok := parseSegmentName(n); ok && b < segs[2] {
			t.Fatalf("segment file %s below the log start %d is still there: %v", n, segs[2], names)
		}
	}
	// Closed cleanly and opened again, a log opens no file until used.
	for _, l := range ls {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if st := files.Stats(); st.Open != 0 {
		t.Fatalf("%d files open with every log closed", st.Open)
	}
	l2, rep, err := Open(l.fs, l.dir, l.name, l.idx, opts)
	if err != nil || !rep.Clean {
		t.Fatalf("reopen: %v, %+v", err, rep)
	}
	defer l2.Close()
	if st := files.Stats(); st.Open != 0 {
		t.Fatalf("a cleanly closed log opened %d files", st.Open)
	}
	c, err := l2.Read(segs[2], 1, l2.LogEndOffset(), nil)
	if want := fmt.Sprintf("1-%d/0", segs[2]/2); err != nil || string(valueAt(c.Data)) != want {
		t.Fatalf("read after reopen: %q, %v; want %q", valueAt(c.Data), err, want)
	}
	if _, err := l2.Append(batchOf(2000, "after", 1), 1); err != nil {
		t.Fatal(err)
	}
	if st := files.Stats(); st.Open != 2 {
		t.Fatalf("after a read and an append: %d files open, want 2", st.Open)
	}
}

// TestFilesBudgetConcurrent: appenders, readers and flushes on 24 logs
// under a budget of 4, at once (run it with -race). Every record reads
// back, and once all is idle the files open are within the budget plus
// the few a busy log kept from the sweep.
func TestFilesBudgetConcurrent(t *testing.T) {
	const logs, max, rounds = 24, 4, 40
	files, ls, _ := filesEnv(t, vfs.NewMem(), logs, max)
	var wg sync.WaitGroup
	errs := make(chan error, 2*logs)
	for i, l := range ls {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for r := range rounds {
				if _, err := l.Append(batchOf(int64(r), fmt.Sprintf("%d-%d", i, r), 1), 1); err != nil {
					errs <- err
					return
				}
				if r%8 == 0 {
					if err := l.Flush(); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
		go func() {
			defer wg.Done()
			for off := int64(0); off < rounds; {
				c, err := l.Read(off, 1, l.LogEndOffset(), nil)
				if err != nil {
					errs <- err
					return
				}
				if c.Size == 0 {
					continue // the appender is behind
				}
				if want := fmt.Sprintf("%d-%d/0", i, off); string(valueAt(c.Data)) != want {
					errs <- fmt.Errorf("log %d offset %d: %q, want %q", i, off, valueAt(c.Data), want)
					return
				}
				off = c.Next
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	files.sweep(nil, nil)
	if st := files.Stats(); st.Open > max || st.Evicted == 0 {
		t.Fatalf("idle: %+v, want at most %d open and files closed by the budget", st, max)
	}
	for _, l := range ls {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if st := files.Stats(); st.Open != 0 {
		t.Fatalf("%d files open with every log closed", st.Open)
	}
}
