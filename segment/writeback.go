package segment

import (
	"sync"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Batched writeback (Options.WritebackBytes, the node's
// sluice.log.writeback.interval.bytes).
//
// Every WritebackBytes appended, Append marks the bytes appended so far as
// due: the active segment up to its last whole page, and the tail of a
// segment rolled since the last request. Something then asks the kernel to start writing
// the due ranges back (sync_file_range with SYNC_FILE_RANGE_WRITE on Linux,
// nothing elsewhere), so that the page cache drains steadily instead of in
// the bursts vm.dirty_background_* and dirty_expire_centisecs cause. That
// something is the Writeback runner when Options.Writeback is set (the
// node's one goroutine for all its logs), else Append itself once it has
// released the log's lock. Either way the call runs outside Log.mu: it can
// block while the device queue is full, and appends must not wait for it.
//
// It is a hint, not a durability point: nothing waits for the writes, the
// flushed offset does not move, and an error (a file system without the
// call) changes nothing but is reported through Options.OnWriteback. The
// request holds flushMu (TryLock: a Flush in progress writes everything
// back anyway, and the range stays due for the next request) so that Close
// and truncation never close a file under it.

// writebackAlign is the page size the ranges of the active segment end on:
// the partial page at its end is still being appended to, and a page under
// writeback can make the next write to it wait (stable pages), so it is
// left for the next request.
const writebackAlign = 4096

// writebackRange is one request: bytes [off, off+n) of seg.
type writebackRange struct {
	seg    *segment
	off, n int64
}

// markWritebackLocked accounts n appended bytes and reports whether a
// writeback request is due. Called with mu held.
func (l *Log) markWritebackLocked(n int) bool {
	if l.opts.WritebackBytes <= 0 {
		return false
	}
	l.wbAppended += int64(n)
	if l.wbAppended < l.opts.WritebackBytes {
		return false
	}
	l.wbAppended = 0
	act := l.active()
	act.wbDue = act.size
	return true
}

// Writeback asks the kernel to start writing back every range an append
// marked due, and returns how many bytes it asked for. It does not wait for
// the writes. It does nothing while a Flush, truncation or Close holds the
// log (they leave the ranges due). Safe for concurrent use.
func (l *Log) Writeback() (int64, error) {
	if !l.flushMu.TryLock() {
		return 0, nil
	}
	defer l.flushMu.Unlock()
	l.mu.Lock()
	if l.closed || l.failed != nil {
		l.mu.Unlock()
		return 0, nil
	}
	align := int64(writebackAlign)
	if l.opts.wbAlign > 0 {
		align = l.opts.wbAlign
	}
	var todo []writebackRange
	for i := len(l.segs) - 1; i >= 0; i-- {
		s := l.segs[i]
		end := min(s.wbDue, s.size)
		if s == l.active() && !s.sealed {
			end -= end % align // the page being appended to stays out
		}
		if end <= s.wbDone {
			if s != l.active() {
				break // older segments were requested before
			}
			continue
		}
		// A closed file's range is skipped: the request is a hint, and
		// reopening files for it would fight the descriptor budget.
		if !s.removed && s.file != nil {
			s.refs++
			todo = append(todo, writebackRange{seg: s, off: s.wbDone, n: end - s.wbDone})
		}
		s.wbDone = end
	}
	l.mu.Unlock()

	var total int64
	var err error
	for i := len(todo) - 1; i >= 0; i-- { // oldest first
		r := todo[i]
		if e := l.syncRange(r.seg.file, r.off, r.n); e != nil && err == nil {
			err = e
		} else if e == nil {
			total += r.n
		}
		l.release(r.seg)
	}
	if l.opts.OnWriteback != nil && (total > 0 || err != nil) {
		l.opts.OnWriteback(total, err)
	}
	return total, err
}

// syncRange is the kernel call, or the test's stand-in for it.
func (l *Log) syncRange(f vfs.File, off, n int64) error {
	if l.opts.syncRange != nil {
		return l.opts.syncRange(f, off, n)
	}
	return startWriteback(f, off, n)
}

// requestWriteback hands a due request to the runner, or runs it. Called
// after mu is released.
func (l *Log) requestWriteback() {
	w := l.opts.Writeback
	if w == nil {
		_, _ = l.Writeback() // errors go to OnWriteback
		return
	}
	if !l.wbQueued.CompareAndSwap(false, true) {
		return // queued already; the runner takes everything due
	}
	select {
	case w.queue <- l:
	default:
		// The runner is behind: the ranges stay due and the next request
		// takes them.
		l.wbQueued.Store(false)
	}
}

// Writeback is the goroutine that runs the writeback requests of many logs
// (Options.Writeback), so that no append waits for the kernel call. Create
// it with NewWriteback and Close it when the node stops; a log that asks
// after Close is ignored (its ranges stay due).
type Writeback struct {
	queue chan *Log // never closed: logs may still send after Close
	stop  chan struct{}
	wg    sync.WaitGroup
}

// writebackQueue bounds the logs waiting for the runner; a log that finds
// it full keeps its ranges due for its next request.
const writebackQueue = 1024

// NewWriteback starts a writeback runner.
func NewWriteback() *Writeback {
	w := &Writeback{queue: make(chan *Log, writebackQueue), stop: make(chan struct{})}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		for {
			select {
			case <-w.stop:
				return
			case l := <-w.queue:
				l.wbQueued.Store(false)
				_, _ = l.Writeback() // errors go to OnWriteback
			}
		}
	}()
	return w
}

// Close stops the runner and waits for the request it is running.
func (w *Writeback) Close() {
	close(w.stop)
	w.wg.Wait()
}
