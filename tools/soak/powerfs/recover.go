package powerfs

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ErrNoJournal: Recover found no journal, so it cannot tell what was
// durable (the node did not run on powerfs).
var ErrNoJournal = errors.New("powerfs: no journal")

// Stats say what Recover threw away.
type Stats struct {
	Truncated     int   // files cut back to their synced length
	BytesDropped  int64 // bytes cut off
	Removed       int   // files whose creation was not durable
	RenamesUndone int
	// Events is how many journal lines were replayed: none means the
	// node wrote nothing through powerfs since the last recovery.
	Events int
}

// Files is how many files Recover cut or removed.
func (s Stats) Files() int { return s.Truncated + s.Removed }

// Add adds o to s.
func (s *Stats) Add(o Stats) {
	s.Truncated += o.Truncated
	s.BytesDropped += o.BytesDropped
	s.Removed += o.Removed
	s.RenamesUndone += o.RenamesUndone
	s.Events += o.Events
}

func (s Stats) String() string {
	return fmt.Sprintf("%d file(s) cut (%d bytes), %d removed, %d rename(s) undone (%d journal events)", s.Truncated, s.BytesDropped, s.Removed, s.RenamesUndone, s.Events)
}

// entry is what the journal says about one name.
type entry struct {
	synced  int64  // durable length; -1: unknown, keep the file whole
	durable bool   // the directory entry is durable
	from    string // a durable old name an undurable rename moved it from
}

// Cut is one file Recover is about to cut back or remove: the bytes
// [From, Size) of the file at Path are what the power loss drops.
type Cut struct {
	Path    string // where the bytes are now (after an undone rename: the old name)
	From    int64  // the durable length (0 for a removed file)
	Size    int64  // the file's length before the cut
	Removed bool   // its creation was not durable: the whole file goes
}

// Recover replays the journal at path over the real disk, cutting every
// file back to what was durable (see the package doc), then empties the
// journal: what is left is all durable. The node must not be running.
func Recover(path string) (Stats, error) { return RecoverWith(path, nil) }

// RecoverWith is Recover, calling before (when not nil) for each file just
// before its bytes are dropped, while they are still there to read: the
// soak reads the batches a power loss drops to learn which offsets it
// lost. An error from before stops the recovery (the journal is kept, so
// that a retry drops the same bytes).
func RecoverWith(path string, before func(Cut) error) (Stats, error) {
	var st Stats
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		// A node on powerfs creates its journal when it opens its FS, so
		// a missing one means the node never ran on it: a "power loss"
		// here would silently be a plain SIGKILL.
		return st, fmt.Errorf("%w: %s", ErrNoJournal, path)
	}
	if err != nil {
		return st, err
	}
	defer f.Close()
	files := map[string]*entry{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		fl := strings.Split(line, "\t")
		if err := replay(files, fl); err != nil {
			return st, fmt.Errorf("powerfs: %s line %d %q: %w", path, n, line, err)
		}
		st.Events++
	}
	if err := sc.Err(); err != nil {
		return st, err
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		e := files[name]
		target := name
		if !e.durable {
			if e.from == "" {
				if before != nil {
					if fi, err := os.Stat(name); err == nil && !fi.IsDir() {
						if err := before(Cut{Path: name, Size: fi.Size(), Removed: true}); err != nil {
							return st, err
						}
					}
				}
				if err := os.Remove(name); err == nil {
					st.Removed++
				} else if !errors.Is(err, fs.ErrNotExist) {
					return st, err
				}
				continue
			}
			if err := os.Rename(name, e.from); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return st, err
			}
			st.RenamesUndone++
			target = e.from
		}
		if e.synced < 0 {
			continue
		}
		fi, err := os.Stat(target)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return st, err
		}
		if fi.Size() > e.synced {
			if before != nil {
				if err := before(Cut{Path: target, From: e.synced, Size: fi.Size()}); err != nil {
					return st, err
				}
			}
			if err := os.Truncate(target, e.synced); err != nil {
				return st, err
			}
			st.Truncated++
			st.BytesDropped += fi.Size() - e.synced
		}
	}
	return st, os.Truncate(path, 0)
}

func replay(files map[string]*entry, fl []string) error {
	size := func(i int) (int64, error) {
		if len(fl) <= i {
			return 0, errors.New("missing size")
		}
		return strconv.ParseInt(fl[i], 10, 64)
	}
	if len(fl) < 2 {
		return errors.New("short line")
	}
	p := fl[1]
	switch fl[0] {
	case "C":
		files[p] = &entry{synced: 0}
	case "O", "S":
		n, err := size(2)
		if err != nil {
			return err
		}
		switch e := files[p]; {
		case e == nil:
			files[p] = &entry{synced: n, durable: true}
		case fl[0] == "S":
			e.synced = n
		}
		// A reopen of a file this run already knows (segment files
		// close when idle and reopen on use) proves nothing durable.
	case "R", "L":
		if len(fl) < 3 {
			return errors.New("missing new name")
		}
		e := files[p]
		if e == nil {
			e = &entry{synced: -1, durable: true}
		}
		moved := &entry{synced: e.synced, from: e.from}
		if fl[0] == "L" {
			moved = &entry{synced: e.synced} // a new name for the same bytes
		} else {
			if e.durable {
				moved.from = p
			}
			delete(files, p)
		}
		files[fl[2]] = moved
	case "D":
		for name, e := range files {
			if filepath.Dir(name) == p {
				e.durable, e.from = true, ""
			}
		}
	case "X":
		delete(files, p)
	case "XA":
		for name := range files {
			if name == p || strings.HasPrefix(name, p+string(filepath.Separator)) {
				delete(files, name)
			}
		}
	default:
		return fmt.Errorf("unknown event %q", fl[0])
	}
	return nil
}
