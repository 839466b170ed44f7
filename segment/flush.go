package segment

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// Flush fsyncs every byte appended so far (older segments first, then the
// directory when a segment was created) and advances FlushedOffset. Appends
// go on while it runs; they are covered by the next Flush. An fsync error
// fails the log (ErrLogFailed): after one, Linux may have dropped the dirty
// pages, so no later fsync could prove them durable.
func (l *Log) Flush() error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	return l.flushLocked()
}

// flushLocked is Flush with flushMu held.
func (l *Log) flushLocked() error {
	l.mu.Lock()
	if err := l.writable(); err != nil {
		l.mu.Unlock()
		return err
	}
	target := l.leo
	act := l.active()
	at := position{offset: l.leo, base: act.base, pos: act.size, firstTs: act.firstTs, maxTs: act.maxTs}
	records := l.unflushed
	flushed := l.flushed.Load()
	var todo []*segment
	var err error
	for _, s := range l.segs {
		if s.next > flushed || s == act {
			// A closed file may hold unwritten bytes (closing writes
			// nothing back): it is reopened to be fsynced.
			if err = l.pinLocked(s); err != nil {
				break
			}
			todo = append(todo, s)
		}
	}
	syncDir := l.dirDirty
	l.dirDirty = false
	l.mu.Unlock()

	start := l.opts.Now()
	for _, s := range todo {
		if err == nil {
			if e := s.file.SyncData(); e != nil {
				err = fmt.Errorf("fsync %s: %v", s.path, e)
			}
		}
		l.release(s)
	}
	if err == nil && syncDir {
		err = l.syncDir()
	}
	if err == nil && l.opts.OnFlush != nil {
		l.opts.OnFlush(l.opts.Now().Sub(start))
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.failed = fmt.Errorf("%w: %v", ErrLogFailed, err)
		return l.failed
	}
	if target > l.flushed.Load() {
		l.flushed.Store(target)
		l.flushPos = at
	}
	l.unflushed -= records
	if l.unflushed > 0 {
		l.unflushAt = l.opts.Now()
	}
	return nil
}

func (l *Log) syncDir() error {
	d, err := l.fs.OpenDir(l.dir)
	if err != nil {
		return fmt.Errorf("open dir %s: %v", l.dir, err)
	}
	if err := d.Sync(); err != nil {
		_ = d.Close()
		return fmt.Errorf("fsync dir %s: %v", l.dir, err)
	}
	return d.Close()
}

// MaybeFlush applies flush.ms: it flushes when the oldest unflushed append is
// at least FlushMs old at now. The node calls it from its scheduler.
func (l *Log) MaybeFlush(now time.Time) error {
	if l.opts.FlushMs <= 0 {
		return nil
	}
	l.mu.Lock()
	due := l.unflushed > 0 && now.Sub(l.unflushAt) >= l.opts.FlushMs
	l.mu.Unlock()
	if !due {
		return nil
	}
	return l.Flush()
}

// WaitFlushed returns once every offset below next is fsynced: the
// sync-before-ack mode. Concurrent waiters share fsyncs (group commit): the
// first waiter to find no fsync in flight runs one covering everything
// appended so far, and the others wait for it — and, if it did not cover
// them, run the next one. No goroutine is involved.
func (l *Log) WaitFlushed(ctx context.Context, next int64) error {
	for {
		if l.flushed.Load() >= next {
			return nil
		}
		l.syncMu.Lock()
		if l.flushed.Load() >= next {
			l.syncMu.Unlock()
			return nil
		}
		if ch := l.syncing; ch != nil {
			l.syncMu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		ch := make(chan struct{})
		l.syncing = ch
		l.syncMu.Unlock()

		// Let the appenders that the last fsync just released append
		// before this fsync picks its target: otherwise they miss it, and
		// the waiters settle into two cohorts that take turns, each fsync
		// covering half of them.
		runtime.Gosched()
		err := l.Flush()

		l.syncMu.Lock()
		l.syncing = nil
		close(ch)
		l.syncMu.Unlock()
		if err != nil {
			return err
		}
		if l.flushed.Load() < next {
			// Truncated below next while waiting: next will never be flushed.
			if l.LogEndOffset() < next {
				return fmt.Errorf("%w: offset %d was truncated while waiting for fsync", ErrOffsetOutOfRange, next-1)
			}
		}
	}
}

// Checkpoint flushes, then durably records the recovery point (the flushed
// offset) with the index entries before it, so that recovery after a crash
// scans only what came after. The node calls it periodically
// (log.flush.offset.checkpoint.interval.ms) and Close calls it. A log
// that did not change since its last Checkpoint, which covered its whole
// log, writes nothing: an idle log costs no fsyncs (a node with thousands
// of idle replicas checkpoints every one of them each minute).
func (l *Log) Checkpoint() error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	same := l.ckptOK && l.gen == l.ckptGen && !l.ckpt.clean && l.failed == nil &&
		l.ckpt.logStart == l.logStart && l.ckpt.recoveryPoint == l.leo && l.flushPos.offset == l.leo &&
		len(l.snaps) > 0 && l.snaps[len(l.snaps)-1] == l.leo
	l.mu.Unlock()
	if same {
		return nil
	}
	return l.checkpointLocked(false)
}

func (l *Log) checkpointLocked(clean bool) error {
	if err := l.flushLocked(); err != nil {
		return err
	}
	l.mu.Lock()
	err := l.checkpointMetaLocked(clean)
	if err != nil {
		l.mu.Unlock()
		return err
	}
	// The producer state at the log end: after a crash, recovery scans
	// only the batches after it (when the log still reaches it). The file
	// is written outside mu, so appends go on; flushMu keeps truncations
	// out until it is in place.
	off, data := l.encodeSnapshotLocked()
	l.mu.Unlock()
	if err := l.writeSnapshotFile(off, data, ckptTmpSuffix); err != nil {
		return err
	}
	l.mu.Lock()
	l.addSnapshotLocked(off)
	l.mu.Unlock()
	return nil
}

// checkpointMetaLocked records the recovery point durably. Called with mu
// and flushMu held.
func (l *Log) checkpointMetaLocked(clean bool) error {
	if err := l.commitPendingLocked(); err != nil {
		return err
	}
	m := l.ckpt
	m.logStart = l.logStart
	if at := l.flushPos; at.offset > m.recoveryPoint || clean {
		m.recoveryPoint, m.rpBase, m.rpPos, m.rpFirst, m.rpMaxTs = at.offset, at.base, at.pos, at.firstTs, at.maxTs
	}
	m.clean = clean
	if err := l.idx.db.Set(l.k.meta(), m.encode(), pebble.Sync); err != nil {
		l.failed = fmt.Errorf("%w: checkpoint: %v", ErrLogFailed, err)
		return l.failed
	}
	l.ckpt = m
	l.ckptGen, l.ckptOK = l.gen, true
	return nil
}
