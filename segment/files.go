package segment

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Files is a node's budget of open segment files (the node's
// sluice.log.max.open.files), shared by its logs: a log opens a
// segment's file when it first appends to it or reads it, and when more
// files than the budget are open, the least recently used idle ones are
// closed (a CLOCK sweep, so that a hit costs no shared lock: it sets a
// flag under the log's own mutex). A segment in use (a reader, a flush,
// a span on its way to a socket: Log's references) is never closed; a
// closed one reopens on its next use. So the budget is a soft bound: it
// can be passed by the files in use at once, and the sweep brings the
// count back as they are released.
//
// Closing a file loses nothing: its unwritten bytes stay in the page
// cache and a later fsync through a new descriptor writes them back
// (fsync is per inode; Linux reports a writeback error that no
// descriptor has seen yet to the next fsync of any descriptor). The
// in-memory vfs keeps its synced state per file too, so the crash tests
// hold with any budget.
//
// Lock order: Log.mu before Files.mu. The sweep holds Files.mu and only
// tries the victim's Log.mu (TryLock), skipping a log that is busy, so it
// never waits on a log while holding the ring.
type Files struct {
	max int
	mu  struct {
		sync.Mutex
		ring []*segment // the open files; a segment knows its slot
		hand int        // the CLOCK hand: next slot the sweep looks at
	}
	open   atomic.Int64 // files open now (len(ring))
	opens  atomic.Int64 // files opened, ever
	closes atomic.Int64 // files the sweep closed, ever
}

// NewFiles returns a budget of max open segment files; max <= 0 means
// no budget (files still open lazily, and stay open).
func NewFiles(max int) *Files { return &Files{max: max} }

// FilesStats is what a Files reports: its budget, the segment files
// open now, and counts since it was made.
type FilesStats struct {
	Max     int   // the budget (0: none)
	Open    int64 // segment files open now
	Opened  int64 // files opened, first opens and reopens
	Evicted int64 // idle files closed to stay within the budget
}

// Stats reports the budget and its counts. Safe for concurrent use.
func (f *Files) Stats() FilesStats {
	if f == nil {
		return FilesStats{}
	}
	return FilesStats{Max: max(f.max, 0), Open: f.open.Load(), Opened: f.opens.Load(), Evicted: f.closes.Load()}
}

// add puts s, whose file was just opened, in the ring. Log.mu of s's
// log is held.
func (f *Files) add(s *segment) {
	s.used, s.ringed = true, true
	f.opens.Add(1)
	f.mu.Lock()
	s.slot = len(f.mu.ring)
	f.mu.ring = append(f.mu.ring, s)
	f.open.Store(int64(len(f.mu.ring)))
	f.mu.Unlock()
}

// remove takes s out of the ring (its file is being closed by its log).
// Log.mu of s's log is held.
func (f *Files) remove(s *segment) {
	f.mu.Lock()
	f.removeLocked(s)
	f.mu.Unlock()
}

func (f *Files) removeLocked(s *segment) {
	i := s.slot
	if i < 0 || i >= len(f.mu.ring) || f.mu.ring[i] != s {
		panic(fmt.Sprintf("segment: file of %s not in the open-file ring at %d", s.path, i))
	}
	last := len(f.mu.ring) - 1
	f.mu.ring[i] = f.mu.ring[last]
	f.mu.ring[i].slot = i
	f.mu.ring[last] = nil
	f.mu.ring = f.mu.ring[:last]
	s.slot, s.ringed = -1, false
	if f.mu.hand > len(f.mu.ring) {
		f.mu.hand = 0
	}
	f.open.Store(int64(len(f.mu.ring)))
}

// over says whether more files are open than the budget.
func (f *Files) over() bool { return f != nil && f.max > 0 && f.open.Load() > int64(f.max) }

// sweep closes idle files until the budget holds or every file was
// looked at twice (the rest are in use). held is the log whose mu the
// caller holds (nil: none) and keep a segment of it that must stay
// open. A victim's file is taken under its log's mu (so that no reader
// can pin it meanwhile) and closed after the ring is released.
func (f *Files) sweep(held *Log, keep *segment) {
	if !f.over() {
		return
	}
	var victims []vfs.File
	f.mu.Lock()
	for looked := 0; len(f.mu.ring) > f.max && looked < 2*len(f.mu.ring); looked++ {
		if f.mu.hand >= len(f.mu.ring) {
			f.mu.hand = 0
		}
		s := f.mu.ring[f.mu.hand]
		l := s.owner
		if l != held && !l.mu.TryLock() {
			f.mu.hand++
			continue
		}
		switch {
		case s == keep || s.refs > 0:
			f.mu.hand++
		case s.used:
			s.used = false
			f.mu.hand++
		default:
			// The slot gets the ring's last segment: the hand stays.
			victims = append(victims, s.file)
			s.file = nil
			f.removeLocked(s)
		}
		if l != held {
			l.mu.Unlock()
		}
	}
	f.mu.Unlock()
	f.closes.Add(int64(len(victims)))
	for _, v := range victims {
		_ = v.Close()
	}
}

// openLocked makes sure seg's file is open, opening it by its name when
// it is not (read-write for the active segment, which takes appends;
// read-only otherwise), and marks it used. l.mu is held, or l is not
// shared yet. It never opens a removed or replaced segment's file: its
// name may now belong to other bytes.
func (l *Log) openLocked(s *segment) error {
	if s.file != nil {
		s.used = true
		return nil
	}
	if s.removed || s.replaced.Load() {
		return fmt.Errorf("segment: %s was removed or replaced while closed", s.path)
	}
	var f vfs.File
	var err error
	if !s.sealed && len(l.segs) > 0 && l.active() == s {
		f, err = l.fs.OpenReadWrite(s.path, vfs.WriteCategoryUnspecified)
	} else {
		f, err = l.fs.Open(s.path)
	}
	if err != nil {
		return fmt.Errorf("segment: reopen %s: %w", s.path, err)
	}
	l.setFileLocked(s, f)
	return nil
}

// setFileLocked makes f, just opened or created, s's file, counted
// against the node's budget (which may close other idle files). l.mu is
// held, or l is not shared yet.
func (l *Log) setFileLocked(s *segment, f vfs.File) {
	s.file, s.owner, s.used = f, l, true
	if fs := l.opts.Files; fs != nil && l.shared {
		fs.add(s)
		fs.sweep(l, s)
	}
}

// pinLocked takes a reference on s with its file open: until the
// matching release, s.file is open and does not change. l.mu is held.
func (l *Log) pinLocked(s *segment) error {
	if err := l.openLocked(s); err != nil {
		return err
	}
	s.refs++
	return nil
}

// takeFileLocked takes s's file away for its caller to close (nil when
// it is closed), out of the node's budget. l.mu is held.
func (l *Log) takeFileLocked(s *segment) vfs.File {
	f := s.file
	if f == nil {
		return nil
	}
	if fs := l.opts.Files; fs != nil && s.ringed {
		fs.remove(s)
	}
	s.file = nil
	return f
}

// shareFilesLocked counts the files that opening the log left open
// against the node's budget; from now on every open is counted. l.mu is
// held.
func (l *Log) shareFilesLocked() {
	l.shared = true
	fs := l.opts.Files
	if fs == nil {
		return
	}
	for _, s := range l.segs {
		if s.file != nil && !s.ringed {
			s.owner = l
			fs.add(s)
		}
	}
	fs.sweep(l, nil)
}

// closeSegFileLocked closes s's file now, if open. l.mu is held.
func (l *Log) closeSegFileLocked(s *segment) {
	if f := l.takeFileLocked(s); f != nil {
		_ = f.Close()
	}
}
