package segment

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2/vfs"
)

func (l *Log) debugString() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := fmt.Sprintf("start %d leo %d:", l.logStart, l.leo)
	for _, g := range l.segs {
		s += fmt.Sprintf(" [base %d size %d next %d sealed %v]", g.base, g.size, g.next, g.sealed)
	}
	return s
}

// checkIndex verifies that every offset index entry (committed or pending)
// names a batch that starts at that offset in a live segment.
func (l *Log) checkIndex() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	check := func(off, pos int64, where string) error {
		i := -1
		for j, s := range l.segs {
			if s.base <= off {
				i = j
			}
		}
		if i < 0 {
			return fmt.Errorf("%s entry %d->%d below every segment", where, off, pos)
		}
		s := l.segs[i]
		if off >= s.next {
			return fmt.Errorf("%s entry %d->%d past segment %d's end %d", where, off, pos, s.base, s.next)
		}
		var hdr [BatchHeaderSize]byte
		if err := l.openLocked(s); err != nil {
			return err
		}
		if _, err := readFull(s.file, hdr[:], pos); err != nil {
			return err
		}
		if got := baseOffsetAt(hdr[:]); got != off || pos >= s.size {
			return fmt.Errorf("%s entry %d->%d in segment %d (size %d) finds batch %d", where, off, pos, s.base, s.size, got)
		}
		return nil
	}
	for _, e := range l.pending {
		if err := check(e.offset, e.pos, "pending"); err != nil {
			return err
		}
	}
	return l.idx.scan(l.k.kind(kindOffset), l.k.upper(kindOffset), func(k, v []byte) error {
		return check(decodeU64(k[len(k)-8:]), decodeUvarint(v), "committed")
	})
}

// fileForTest opens s's file (no budget in the tests that use it: it
// stays open).
func (l *Log) fileForTest(s *segment) vfs.File {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.openLocked(s); err != nil {
		panic(err)
	}
	return s.file
}
