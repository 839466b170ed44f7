package segment

import (
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// renameFS counts renames: a producer-state snapshot is renamed into
// place by every Checkpoint that writes one.
type renameFS struct {
	vfs.FS
	renames int
}

func (fs *renameFS) Rename(oldname, newname string) error {
	fs.renames++
	return fs.FS.Rename(oldname, newname)
}

// TestCheckpointOfIdleLog: a Checkpoint of a log that did not change since
// the last one, which covered it all, writes nothing (a node checkpoints
// every replica's log each minute, and thousands may be idle); an append
// or a truncation makes the next one write again, and the log reopens
// clean of surprises after idle checkpoints and a crash.
func TestCheckpointOfIdleLog(t *testing.T) {
	mem := vfs.NewCrashableMem()
	fs := &renameFS{FS: mem}
	e := newEnv(t, fs)
	l, _ := e.open(Options{})
	checkpoint := func(what string, wantWrite bool) {
		t.Helper()
		before := fs.renames
		if err := l.Checkpoint(); err != nil {
			t.Fatal(err)
		}
		if wrote := fs.renames > before; wrote != wantWrite {
			t.Fatalf("%s: checkpoint wrote a snapshot %v, want %v", what, wrote, wantWrite)
		}
	}
	for i := range 3 {
		if _, err := l.Append(batchOf(int64(i), "a", 2), 1); err != nil {
			t.Fatal(err)
		}
	}
	checkpoint("after appends", true)
	checkpoint("idle", false)
	checkpoint("still idle", false)
	if _, err := l.Append(batchOf(9, "b", 1), 1); err != nil {
		t.Fatal(err)
	}
	checkpoint("after another append", true)
	checkpoint("idle again", false)
	if err := l.TruncateTo(2); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(batchOf(10, "c", 5), 2); err != nil {
		t.Fatal(err)
	}
	checkpoint("after a truncation and appends", true)
	checkpoint("idle after the truncation", false)

	// A crash now: the recovery point the skipped checkpoints would have
	// written is the one on disk.
	crashed := mem.CrashClone(vfs.CrashCloneCfg{})
	e2 := newEnv(t, crashed)
	l2, rep := e2.open(Options{})
	defer l2.Close()
	if rep.LogEndOffset != 7 || rep.Clean {
		t.Fatalf("after a crash: %+v, want a log end of 7 (not clean)", rep)
	}
	if rep.ScannedFrom != 7 {
		t.Fatalf("after a crash recovery scanned from %d, want 7: the idle checkpoints' recovery point", rep.ScannedFrom)
	}
}
