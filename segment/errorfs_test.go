package segment

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// Error injection on the segment files (issue 2: "a failed write or fsync
// surfaces as an error and never leaves a half-visible batch"). The log runs
// on an errorfs wrapper of an in-memory FS; the index runs on the FS
// underneath, so that only segment I/O fails. After the failure the log must
// refuse every write until reopened, and the reopened log (on the FS
// underneath) must hold exactly the acknowledged batches.

const errDir = "/data/topic-0"

// opKind is an errorfs predicate on the kind of operation.
type opKind errorfs.OpKind

func (k opKind) Evaluate(op errorfs.Op) bool { return op.Kind == errorfs.OpKind(k) }
func (k opKind) String() string              { return fmt.Sprintf("(OpKind %d)", int(k)) }

// segmentFault injects ErrInjected into every op of kind on the log's
// segment files while it is on.
func segmentFault(kind errorfs.OpKind) *errorfs.Toggle {
	return &errorfs.Toggle{Injector: errorfs.ErrInjected.If(
		errorfs.And(errorfs.PathMatch(errDir+"/*"+segSuffix), opKind(kind)))}
}

// readAll returns the concatenated bytes of every batch in l.
func readAll(t *testing.T, l *Log) []byte {
	t.Helper()
	var out []byte
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		c, err := l.Read(off, 1<<20, l.LogEndOffset(), nil)
		if err != nil {
			t.Fatalf("read %d: %v", off, err)
		}
		if _, _, err := ValidateBatches(c.Data, DefaultMaxBatchBytes); err != nil {
			t.Fatalf("read %d: %v", off, err)
		}
		out = append(out, c.Data...)
		off = c.Next
	}
	return out
}

// assertRefuses checks that every write path of a failed log fails with
// ErrLogFailed, even though the fault is gone.
func assertRefuses(t *testing.T, l *Log) {
	t.Helper()
	if _, err := l.Append(batchOf(9, "late", 2), 1); !errors.Is(err, ErrLogFailed) {
		t.Fatalf("append on a failed log: %v", err)
	}
	rb := batchOf(9, "late", 1)
	setBaseOffset(rb, l.LogEndOffset())
	setLeaderEpoch(rb, 1)
	if _, err := l.AppendReplicated(rb); !errors.Is(err, ErrLogFailed) {
		t.Fatalf("replicated append on a failed log: %v", err)
	}
	if err := l.Flush(); !errors.Is(err, ErrLogFailed) {
		t.Fatalf("flush on a failed log: %v", err)
	}
	if err := l.WaitFlushed(context.Background(), l.LogEndOffset()+1); err == nil {
		t.Fatal("WaitFlushed on a failed log succeeded")
	}
}

// reopen closes l and opens the log again on fs with idx, returning its bytes.
func reopen(t *testing.T, l *Log, fs vfs.FS, idx *Index) []byte {
	t.Helper()
	_ = l.Close() // a failed log closes without its clean marker
	l2, rep, err := Open(fs, errDir, "topic-0", idx, Options{RetentionBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if rep.Clean {
		t.Fatal("a failed log reopened as cleanly closed")
	}
	got := readAll(t, l2)
	if _, err := l2.Append(batchOf(10, "again", 1), 2); err != nil {
		t.Fatalf("append after reopening: %v", err)
	}
	return got
}

func TestErrorfsWriteFails(t *testing.T) {
	mem := vfs.NewMem()
	idx, err := OpenIndex(mem, "/data/index", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	fault := segmentFault(errorfs.OpFileWriteAt)
	l, _, err := Open(errorfs.Wrap(mem, fault), errDir, "topic-0", idx, Options{RetentionBytes: -1, IndexIntervalBytes: 64})
	if err != nil {
		t.Fatal(err)
	}
	var acked []byte
	for i := 0; i < 5; i++ {
		b := batchOf(int64(i), fmt.Sprint(i), 3)
		if _, err := l.Append(b, 1); err != nil {
			t.Fatal(err)
		}
		acked = append(acked, b...)
	}
	leo := l.LogEndOffset()
	fault.On()
	_, err = l.Append(batchOf(5, "lost", 3), 1)
	if !errors.Is(err, ErrLogFailed) || !strings.Contains(err.Error(), "injected") {
		t.Fatalf("append with a failing write: %v", err)
	}
	fault.Off()
	if l.LogEndOffset() != leo {
		t.Fatalf("log end moved from %d to %d on a failed write", leo, l.LogEndOffset())
	}
	if got := readAll(t, l); !bytes.Equal(got, acked) {
		t.Fatalf("failed log reads %d bytes, %d acknowledged", len(got), len(acked))
	}
	assertRefuses(t, l)
	if got := reopen(t, l, mem, idx); !bytes.Equal(got, acked) {
		t.Fatalf("reopened log holds %d bytes, %d acknowledged", len(got), len(acked))
	}
}

// tornFS wraps an FS so that, while on, a write to a segment file writes
// only the first half of its bytes and then fails: a torn write, as when the
// disk fills midway. errorfs injects before an operation, so it cannot.
type tornFS struct {
	vfs.FS
	on *bool
}

type tornFile struct {
	vfs.File
	on *bool
}

func (fs tornFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, c)
	return tornFile{f, fs.on}, err
}

func (fs tornFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.OpenReadWrite(name, c, opts...)
	return tornFile{f, fs.on}, err
}

func (f tornFile) WriteAt(p []byte, off int64) (int, error) {
	if !*f.on {
		return f.File.WriteAt(p, off)
	}
	n, err := f.File.WriteAt(p[:len(p)/2], off)
	if err == nil {
		err = errors.New("torn write: no space left on device")
	}
	return n, err
}

func TestTornWriteIsCutOnReopen(t *testing.T) {
	mem := vfs.NewMem()
	idx, err := OpenIndex(mem, "/data/index", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	on := false
	l, _, err := Open(tornFS{mem, &on}, errDir, "topic-0", idx, Options{RetentionBytes: -1, IndexIntervalBytes: 64})
	if err != nil {
		t.Fatal(err)
	}
	var acked []byte
	for i := 0; i < 5; i++ {
		b := batchOf(int64(i), fmt.Sprint(i), 3)
		if _, err := l.Append(b, 1); err != nil {
			t.Fatal(err)
		}
		acked = append(acked, b...)
	}
	on = true
	// The torn write ends inside the batch. (Were two batches appended at
	// once and the tear fell after the first, recovery would rightly keep
	// that whole, unacknowledged batch.)
	if _, err := l.Append(batchOf(5, "lost", 3), 1); !errors.Is(err, ErrLogFailed) {
		t.Fatalf("append with a torn write: %v", err)
	}
	on = false
	if got := readAll(t, l); !bytes.Equal(got, acked) {
		t.Fatalf("failed log reads %d bytes, %d acknowledged", len(got), len(acked))
	}
	assertRefuses(t, l)
	if got := reopen(t, l, mem, idx); !bytes.Equal(got, acked) {
		t.Fatalf("reopened log holds %d bytes, %d acknowledged", len(got), len(acked))
	}
}

func TestErrorfsSyncFails(t *testing.T) {
	for _, mode := range []string{"group-commit", "flush.messages=1"} {
		t.Run(mode, func(t *testing.T) {
			mem := vfs.NewCrashableMem()
			idx, err := OpenIndex(mem, "/data/index", 0)
			if err != nil {
				t.Fatal(err)
			}
			fault := segmentFault(errorfs.OpFileSyncData)
			opts := Options{RetentionBytes: -1}
			if mode == "flush.messages=1" {
				opts.FlushMessages = 1
			}
			l, _, err := Open(errorfs.Wrap(mem, fault), errDir, "topic-0", idx, opts)
			if err != nil {
				t.Fatal(err)
			}
			// ack appends and waits until its batch is durable.
			ack := func(b []byte) error {
				info, err := l.Append(b, 1)
				if err == nil {
					err = l.WaitFlushed(context.Background(), info.LastOffset+1)
				}
				return err
			}
			var acked []byte
			for i := 0; i < 5; i++ {
				b := batchOf(int64(i), fmt.Sprint(i), 2)
				if err := ack(b); err != nil {
					t.Fatal(err)
				}
				acked = append(acked, b...)
			}
			fault.On()
			unacked := batchOf(5, "unacked", 2)
			if err := ack(unacked); !errors.Is(err, ErrLogFailed) {
				t.Fatalf("append with a failing fsync: %v", err)
			}
			fault.Off()
			if l.FlushedOffset() != 10 {
				t.Fatalf("flushed offset %d after a failed fsync, want 10", l.FlushedOffset())
			}
			// The unacknowledged batch was written whole: it may be read
			// (it is not committed, which is the partition's business), but
			// nothing partial is.
			got := readAll(t, l)
			if !bytes.Equal(got, acked) && !bytes.Equal(got, append(append([]byte(nil), acked...), unacked...)) {
				t.Fatalf("failed log reads %d bytes, %d acknowledged", len(got), len(acked))
			}
			assertRefuses(t, l)

			// Power cut now: only what was fsynced survives, and that is
			// exactly the acknowledged batches.
			crashed := mem.CrashClone(vfs.CrashCloneCfg{})
			_ = l.Close()
			_ = idx.Close()
			idx2, err := OpenIndex(crashed, "/data/index", 0)
			if err != nil {
				t.Fatal(err)
			}
			defer idx2.Close()
			l2, _, err := Open(crashed, errDir, "topic-0", idx2, Options{RetentionBytes: -1})
			if err != nil {
				t.Fatal(err)
			}
			if got := readAll(t, l2); !bytes.Equal(got, acked) {
				t.Fatalf("after a power cut the log holds %d bytes, %d acknowledged", len(got), len(acked))
			}
			if _, err := l2.Append(batchOf(10, "again", 1), 2); err != nil {
				t.Fatalf("append after reopening: %v", err)
			}
			if err := l2.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
