package powerfs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Flag is the hidden `sluice node` flag naming the journal; with it the
// node runs on New(vfs.Default, path).
const Flag = "sluice-power-journal"

// journal is the append-only event log.
type journal struct {
	mu sync.Mutex
	f  *os.File
	// err is the first write error; once set every operation fails, so
	// the node stops instead of running with an incomplete journal.
	err error
}

func (j *journal) add(fields ...string) error {
	line := strings.Join(fields, "\t") + "\n"
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return j.err
	}
	if _, err := j.f.WriteString(line); err != nil {
		j.err = fmt.Errorf("powerfs: journal: %w", err)
	}
	return j.err
}

// FS is the journaling filesystem; see the package doc.
type FS struct {
	vfs.FS
	j *journal
}

// New wraps fs, appending to the journal at path (created if missing).
func New(fs vfs.FS, path string) (*FS, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("powerfs: %w", err)
	}
	return &FS{FS: fs, j: &journal{f: f}}, nil
}

// Close closes the journal.
func (fs *FS) Close() error { return fs.j.f.Close() }

func abs(name string) string {
	if a, err := filepath.Abs(name); err == nil {
		return a
	}
	return name
}

// Create implements vfs.FS.
func (fs *FS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, c)
	if err != nil {
		return nil, err
	}
	if err := fs.j.add("C", abs(name)); err != nil {
		f.Close()
		return nil, err
	}
	return &file{File: f, name: abs(name), j: fs.j}, nil
}

// OpenReadWrite implements vfs.FS.
func (fs *FS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	_, statErr := fs.FS.Stat(name)
	f, err := fs.FS.OpenReadWrite(name, c, opts...)
	if err != nil {
		return nil, err
	}
	return fs.opened(f, name, statErr != nil)
}

func (fs *FS) opened(f vfs.File, name string, created bool) (vfs.File, error) {
	var err error
	if created {
		err = fs.j.add("C", abs(name))
	} else {
		var st vfs.FileInfo
		if st, err = f.Stat(); err == nil {
			err = fs.j.add("O", abs(name), fmt.Sprint(st.Size()))
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return &file{File: f, name: abs(name), j: fs.j}, nil
}

// Open implements vfs.FS: a segment file the node reopened to read may be
// fsynced through it (segment.Files closes idle files), so its syncs are
// journaled. Opening it for reading says nothing of what is durable.
func (fs *FS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.Open(name, opts...)
	if err != nil {
		return nil, err
	}
	return &file{File: f, name: abs(name), j: fs.j}, nil
}

// ReuseForWrite implements vfs.FS: a rename, then writes in place.
func (fs *FS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, c)
	if err != nil {
		return nil, err
	}
	if err := fs.j.add("R", abs(oldname), abs(newname)); err != nil {
		f.Close()
		return nil, err
	}
	return &file{File: f, name: abs(newname), j: fs.j}, nil
}

// OpenDir implements vfs.FS: a Sync of the directory is journaled.
func (fs *FS) OpenDir(name string) (vfs.File, error) {
	f, err := fs.FS.OpenDir(name)
	if err != nil {
		return nil, err
	}
	return &file{File: f, name: abs(name), j: fs.j, dir: true}, nil
}

// Rename implements vfs.FS.
func (fs *FS) Rename(oldname, newname string) error {
	if err := fs.FS.Rename(oldname, newname); err != nil {
		return err
	}
	return fs.j.add("R", abs(oldname), abs(newname))
}

// Link implements vfs.FS: the new name is a fresh, not yet durable entry.
func (fs *FS) Link(oldname, newname string) error {
	if err := fs.FS.Link(oldname, newname); err != nil {
		return err
	}
	st, err := fs.FS.Stat(newname)
	if err != nil {
		return err
	}
	return fs.j.add("L", abs(oldname), abs(newname), fmt.Sprint(st.Size()))
}

// Remove implements vfs.FS.
func (fs *FS) Remove(name string) error {
	if err := fs.FS.Remove(name); err != nil {
		return err
	}
	return fs.j.add("X", abs(name))
}

// RemoveAll implements vfs.FS.
func (fs *FS) RemoveAll(name string) error {
	if err := fs.FS.RemoveAll(name); err != nil {
		return err
	}
	return fs.j.add("XA", abs(name))
}

// Unwrap implements vfs.FS.
func (fs *FS) Unwrap() vfs.FS { return fs.FS }

// file journals its syncs.
type file struct {
	vfs.File
	name string
	j    *journal
	dir  bool
}

func (f *file) synced(sync func() error) error {
	if f.dir {
		if err := sync(); err != nil {
			return err
		}
		return f.j.add("D", f.name)
	}
	st, err := f.File.Stat()
	if err != nil {
		return err
	}
	if err := sync(); err != nil {
		return err
	}
	return f.j.add("S", f.name, fmt.Sprint(st.Size()))
}

func (f *file) Sync() error     { return f.synced(f.File.Sync) }
func (f *file) SyncData() error { return f.synced(f.File.SyncData) }

// SyncTo counts as durable only when it fell back to a full sync.
func (f *file) SyncTo(length int64) (bool, error) {
	full, err := f.File.SyncTo(length)
	if err != nil || !full {
		return full, err
	}
	return true, f.j.add("S", f.name, fmt.Sprint(length))
}
