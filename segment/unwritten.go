package segment

import (
	"errors"
	"fmt"
)

// ErrUnwrittenUnsupported: Unwritten cannot ask the kernel about the log's
// page cache, because the kernel has no cachestat(2) (Linux before 6.5, or
// a sandbox that refuses it), the system is not Linux, or the log's files
// have no descriptor (an in-memory vfs).
var ErrUnwrittenUnsupported = errors.New("segment: the page cache's writeback state is unknown here (cachestat(2) needs Linux 6.5 and OS files)")

// unwrittenSegments bounds the segments Unwritten asks the kernel about:
// the newest ones past the flushed position. Older unfsynced segments (only
// with small segment.bytes and rare fsyncs) are counted whole, as if none of
// their pages were written back, so that the bound can only overstate.
const unwrittenSegments = 8

// unwrittenRange is one question: the pages of seg over [off, end).
type unwrittenRange struct {
	seg      *segment
	off, end int64
}

// Unwritten returns how many bytes of the log past the flushed position
// are still only in the page cache: dirty, or under writeback and not yet
// on the device: an estimate of what a power cut would take now,
// where Unflushed is what an fsync has not yet guaranteed (the kernel
// writes back on its own long before the next fsync). It counts whole
// pages, capped at each segment's bytes past the flushed position, and asks
// the kernel once per segment past it (the newest unwrittenSegments; older
// ones count whole). It never holds the log's lock during the system call.
// A log whose bytes are all fsynced returns 0 without a system call.
//
// It estimates the loss, it does not bound it: recovery cuts at the first
// missing byte, so a page written back ahead of an older dirty one saves
// nothing after it (the kernel writes an append-only file back mostly in
// file order), and a file's size is durable only at the file system's
// journal commit (ext4: every 5 s), which can lag its data pages.
//
// ErrUnwrittenUnsupported when the kernel or the file system cannot tell.
func (l *Log) Unwritten() (int64, error) {
	if cachestatUnsupported.Load() {
		return 0, ErrUnwrittenUnsupported
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return 0, ErrClosed
	}
	if l.noFd {
		l.mu.Unlock()
		return 0, ErrUnwrittenUnsupported // even with nothing to ask: the answer is never known
	}
	var todo []unwrittenRange
	var whole int64 // bytes of unfsynced segments past the bound
	if l.flushed.Load() < l.leo {
		for i := len(l.segs) - 1; i >= 0; i-- {
			s := l.segs[i]
			if s.base < l.flushPos.base {
				break
			}
			off := int64(0)
			if s.base == l.flushPos.base {
				off = min(l.flushPos.pos, s.size)
			}
			switch {
			case s.removed || off >= s.size:
			case s.file == nil:
				// Closed by the descriptor budget: counted whole, as
				// the bound only overstates.
				whole += s.size - off
			case len(todo) < unwrittenSegments:
				s.refs++
				todo = append(todo, unwrittenRange{seg: s, off: off, end: s.size})
			default:
				whole += s.size - off
			}
		}
	}
	l.mu.Unlock()

	total := whole
	var err error
	for _, r := range todo {
		if err == nil {
			var n int64
			if n, err = pagesNotWritten(r.seg.file, r.off, r.end); err == nil {
				total += n
			} else if !errors.Is(err, ErrUnwrittenUnsupported) {
				err = fmt.Errorf("segment: cachestat %s: %w", r.seg.path, err)
			}
		}
		l.release(r.seg)
	}
	if err != nil {
		return 0, err
	}
	return total, nil
}
