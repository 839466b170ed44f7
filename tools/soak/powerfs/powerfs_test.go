package powerfs

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

func setup(t *testing.T) (*FS, string, string) {
	t.Helper()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	j := filepath.Join(dir, "journal")
	fs, err := New(vfs.Default, j)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	return fs, data, j
}

func write(t *testing.T, f vfs.File, s string) {
	t.Helper()
	if _, err := f.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
}

func syncDir(t *testing.T, fs *FS, dir string) {
	t.Helper()
	d, err := fs.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	d.Close()
}

func content(t *testing.T, path string) (string, bool) {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b), true
}

func TestRecoverDropsWhatWasNotSynced(t *testing.T) {
	fs, data, j := setup(t)
	seg := filepath.Join(data, "seg")
	f, err := fs.Create(seg, vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	write(t, f, "durable|")
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	syncDir(t, fs, data)
	write(t, f, "page-cache-only")
	f.Close()

	// A durable file renamed without a directory sync comes back.
	old := filepath.Join(data, "old")
	h, _ := fs.Create(old, vfs.WriteCategoryUnspecified)
	write(t, h, "kept")
	h.Sync()
	h.Close()
	syncDir(t, fs, data)
	moved := filepath.Join(data, "new")
	if err := fs.Rename(old, moved); err != nil {
		t.Fatal(err)
	}

	// Created and synced, but its directory entry never made durable.
	orphan := filepath.Join(data, "orphan")
	g, _ := fs.Create(orphan, vfs.WriteCategoryUnspecified)
	write(t, g, "x")
	g.Sync()
	g.Close()

	// The unsynced bytes are on disk after a "SIGKILL" (page cache).
	if s, _ := content(t, seg); s != "durable|page-cache-only" {
		t.Fatalf("before recovery %q", s)
	}
	st, err := Recover(j)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := content(t, seg); s != "durable|" {
		t.Errorf("after recovery %q, want the synced prefix", s)
	}
	if _, ok := content(t, orphan); ok {
		t.Error("a file whose creation was never durable survived")
	}
	if s, ok := content(t, old); !ok || s != "kept" {
		t.Errorf("undurable rename not undone: old %q %v", s, ok)
	}
	if _, ok := content(t, moved); ok {
		t.Error("undurable rename target survived")
	}
	if st.Truncated != 1 || st.BytesDropped != int64(len("page-cache-only")) || st.Removed != 1 || st.RenamesUndone != 1 || st.Events == 0 {
		t.Errorf("stats %+v", st)
	}
	if b, _ := os.ReadFile(j); len(b) != 0 {
		t.Errorf("journal not emptied: %q", b)
	}
	// A second recovery finds nothing more to drop.
	if st, err := Recover(j); err != nil || st != (Stats{}) {
		t.Errorf("second recovery %+v %v", st, err)
	}
}

func TestRecoverKeepsDurableRenameAndReopenedFiles(t *testing.T) {
	fs, data, j := setup(t)
	tmp, cur := filepath.Join(data, "CURRENT.tmp"), filepath.Join(data, "CURRENT")
	f, _ := fs.Create(tmp, vfs.WriteCategoryUnspecified)
	write(t, f, "MANIFEST-1")
	f.Sync()
	f.Close()
	if err := fs.Rename(tmp, cur); err != nil {
		t.Fatal(err)
	}
	syncDir(t, fs, data)
	if _, err := Recover(j); err != nil {
		t.Fatal(err)
	}
	if s, _ := content(t, cur); s != "MANIFEST-1" {
		t.Errorf("durable rename lost: %q", s)
	}
	// Reopened for writing after recovery: its size then is durable,
	// appends are not until synced.
	g, err := fs.OpenReadWrite(cur, vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.WriteAt([]byte("+more"), 10); err != nil {
		t.Fatal(err)
	}
	g.Close()
	if _, err := Recover(j); err != nil {
		t.Fatal(err)
	}
	if s, _ := content(t, cur); s != "MANIFEST-1" {
		t.Errorf("unsynced append survived: %q", s)
	}
}

func TestJournalFormat(t *testing.T) {
	fs, data, j := setup(t)
	p := filepath.Join(data, "a")
	f, _ := fs.Create(p, vfs.WriteCategoryUnspecified)
	write(t, f, "abc")
	f.Sync()
	f.Close()
	fs.Remove(p)
	b, _ := os.ReadFile(j)
	want := "C\t" + p + "\nS\t" + p + "\t3\nX\t" + p + "\n"
	if !bytes.Equal(b, []byte(want)) {
		t.Errorf("journal %q, want %q", b, want)
	}
}

// A missing journal is an error, not "nothing to drop": the node never ran
// on powerfs, and a power loss would silently be a plain kill.
func TestRecoverWithoutJournalFails(t *testing.T) {
	st, err := Recover(filepath.Join(t.TempDir(), "no-such-journal"))
	if !errors.Is(err, ErrNoJournal) {
		t.Fatalf("Recover without a journal: %+v, %v; want ErrNoJournal", st, err)
	}
}

// RecoverWith shows each doomed file to its hook while the bytes it drops
// are still there: the soak reads them to learn which offsets a power loss
// lost.
func TestRecoverWithShowsWhatItDrops(t *testing.T) {
	fs, data, j := setup(t)
	seg := filepath.Join(data, "seg")
	f, _ := fs.Create(seg, vfs.WriteCategoryUnspecified)
	write(t, f, "durable|")
	f.Sync()
	syncDir(t, fs, data)
	write(t, f, "tail")
	f.Close()
	orphan := filepath.Join(data, "orphan")
	g, _ := fs.Create(orphan, vfs.WriteCategoryUnspecified)
	write(t, g, "whole")
	g.Close()

	seen := map[string]string{}
	var cuts []Cut
	_, err := RecoverWith(j, func(c Cut) error {
		b, err := os.ReadFile(c.Path)
		if err != nil {
			return err
		}
		seen[filepath.Base(c.Path)] = string(b[c.From:c.Size])
		cuts = append(cuts, c)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen["seg"] != "tail" || seen["orphan"] != "whole" || len(seen) != 2 {
		t.Errorf("the hook saw %q, want seg's unsynced tail and the whole orphan", seen)
	}
	for _, c := range cuts {
		if c.Removed != (filepath.Base(c.Path) == "orphan") {
			t.Errorf("cut %+v: Removed wrong", c)
		}
	}
	if s, _ := content(t, seg); s != "durable|" {
		t.Errorf("after recovery %q", s)
	}

	// A hook error stops the recovery and keeps the journal for a retry.
	h, _ := fs.OpenReadWrite(seg, vfs.WriteCategoryUnspecified)
	h.WriteAt([]byte("again"), 8)
	h.Close()
	boom := errors.New("boom")
	if _, err := RecoverWith(j, func(Cut) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("hook error: got %v", err)
	}
	if s, _ := content(t, seg); s != "durable|again" {
		t.Errorf("after a failed recovery %q, want the file untouched", s)
	}
	if st, err := Recover(j); err != nil || st.BytesDropped != int64(len("again")) {
		t.Errorf("retry: %+v %v", st, err)
	}
}

// TestReopenProvesNothing: a segment file closed while idle and reopened
// (segment.Files) keeps only what an fsync covered, through either
// handle; an fsync through a read-only reopen counts.
func TestReopenProvesNothing(t *testing.T) {
	fs, data, j := setup(t)
	a, b := filepath.Join(data, "a.log"), filepath.Join(data, "b.log")
	for _, p := range []string{a, b} {
		f, err := fs.Create(p, vfs.WriteCategoryUnspecified)
		if err != nil {
			t.Fatal(err)
		}
		write(t, f, "synced.")
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		write(t, f, "unsynced")
		f.Close()
	}
	syncDir(t, fs, data)
	ra, err := fs.OpenReadWrite(a, vfs.WriteCategoryUnspecified) // journals "O a 15"
	if err != nil {
		t.Fatal(err)
	}
	ra.Close()
	rb, err := fs.Open(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := rb.Sync(); err != nil {
		t.Fatal(err)
	}
	rb.Close()
	if _, err := Recover(j); err != nil {
		t.Fatal(err)
	}
	if got, _ := content(t, a); got != "synced." {
		t.Errorf("a after the reopen: %q, want only the synced %q", got, "synced.")
	}
	if got, _ := content(t, b); got != "synced.unsynced" {
		t.Errorf("b, fsynced through a read-only reopen: %q, want it whole", got)
	}
}
