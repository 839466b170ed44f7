package segment

import (
	"errors"
	"fmt"
	"github.com/cockroachdb/pebble/v2"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
)

const (
	snapSuffix = ".snapshot"
	// Temporary files of a snapshot being written: one kind per writer.
	rollTmpSuffix = ".tmp"
	ckptTmpSuffix = ".ckpt.tmp"
)

func snapshotName(off int64) string { return fmt.Sprintf("%020d%s", off, snapSuffix) }

// parseSnapshotName returns the offset of a snapshot file name.
func parseSnapshotName(name string) (int64, bool) {
	if len(name) != 20+len(snapSuffix) || !strings.HasSuffix(name, snapSuffix) {
		return 0, false
	}
	v, err := strconv.ParseInt(name[:20], 10, 64)
	return v, err == nil && v >= 0
}

// listSnapshots returns the offsets of the log's snapshot files, oldest
// first, and removes temporary files a crash left behind.
func (l *Log) listSnapshots() ([]int64, error) {
	names, err := l.fs.List(l.dir)
	if err != nil {
		return nil, err
	}
	var offs []int64
	for _, n := range names {
		if strings.HasSuffix(n, snapSuffix+rollTmpSuffix) || strings.HasSuffix(n, snapSuffix+ckptTmpSuffix) {
			if err := l.fs.Remove(l.fs.PathJoin(l.dir, n)); err != nil {
				return nil, err
			}
			continue
		}
		if off, ok := parseSnapshotName(n); ok {
			offs = append(offs, off)
		}
	}
	sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
	return offs, nil
}

// writeSnapshotLocked writes the producer state at the log end to
// <leo>.snapshot (see writeSnapshotFile) and registers it. Called with mu
// held. An error leaves the log working (the state is in memory; recovery
// falls back to an older snapshot or a scan).
func (l *Log) writeSnapshotLocked() error {
	off, data := l.encodeSnapshotLocked()
	if err := l.writeSnapshotFile(off, data, rollTmpSuffix); err != nil {
		return err
	}
	l.addSnapshotLocked(off)
	return nil
}

// encodeSnapshotLocked forgets the producers past producer.id.expiration.ms
// and encodes the state at the log end. Called with mu held.
func (l *Log) encodeSnapshotLocked() (int64, []byte) {
	l.pstate.expire(l.opts.Now().UnixMilli(), l.opts.ProducerIDExpiration.Milliseconds(), -1)
	return l.leo, l.pstate.encode(l.leo)
}

// writeSnapshotFile writes a snapshot atomically: a temporary file (named
// with tmp, so that a roll under mu and a checkpoint outside it never
// share one), fsynced, renamed into place, the directory fsynced. It runs
// with mu held (a roll) or with flushMu held (a checkpoint): never
// concurrently with a truncation, which could otherwise see a snapshot
// past its cut appear after it removed them.
func (l *Log) writeSnapshotFile(off int64, data []byte, tmp string) error {
	path := l.fs.PathJoin(l.dir, snapshotName(off))
	tmpPath := path + tmp
	err := func() error {
		f, err := l.fs.Create(tmpPath, vfs.WriteCategoryUnspecified)
		if err != nil {
			return err
		}
		if _, err := f.Write(data); err != nil {
			_ = f.Close()
			return err
		}
		if err := f.Sync(); err != nil {
			_ = f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		if err := l.fs.Rename(tmpPath, path); err != nil {
			return err
		}
		return l.syncDir()
	}()
	if err != nil {
		_ = l.fs.Remove(tmpPath)
		return fmt.Errorf("segment: producer-state snapshot %s: %w", path, err)
	}
	return nil
}

// addSnapshotLocked registers the snapshot file at off and prunes old ones.
// Called with mu held.
func (l *Log) addSnapshotLocked(off int64) {
	i := sort.Search(len(l.snaps), func(i int) bool { return l.snaps[i] >= off })
	if i == len(l.snaps) || l.snaps[i] != off {
		l.snaps = append(l.snaps[:i], append([]int64{off}, l.snaps[i:]...)...)
	}
	l.pruneSnapshotsLocked()
}

// snapshotsKept is how many of the newest snapshots are kept besides those
// at segment bases: a corrupt newest one falls back to the one before.
const snapshotsKept = 2

// pruneSnapshotsLocked deletes the snapshots no recovery needs: it keeps
// the newest snapshotsKept, and those at the base of a segment still in the
// log (written when it rolled). Snapshots below the first segment go with
// the segments they describe (retention). Called with mu held. A pruned
// snapshot that a crash brings back is harmless: it still describes the
// log below its offset (removals that must not come back, past a
// truncation point, are made durable by their callers).
func (l *Log) pruneSnapshotsLocked() {
	bases := map[int64]bool{}
	for _, s := range l.segs {
		bases[s.base] = true
	}
	kept := l.snaps[:0]
	for i, off := range l.snaps {
		if i >= len(l.snaps)-snapshotsKept || (bases[off] && off >= l.segs[0].base) {
			kept = append(kept, off)
			continue
		}
		_ = l.fs.Remove(l.fs.PathJoin(l.dir, snapshotName(off)))
	}
	l.snaps = kept
}

// removeSnapshotsAboveLocked deletes the snapshots past offset (all of
// them when offset is negative): they describe batches a truncation
// removes. The caller fsyncs the directory before any append reuses those
// offsets, so that no old snapshot comes back to describe new batches.
func (l *Log) removeSnapshotsAboveLocked(offset int64) error {
	kept := l.snaps[:0]
	var err error
	for _, off := range l.snaps {
		if offset >= 0 && off <= offset {
			kept = append(kept, off)
			continue
		}
		if e := l.fs.Remove(l.fs.PathJoin(l.dir, snapshotName(off))); e != nil && !errors.Is(e, os.ErrNotExist) && err == nil {
			err = e
		}
	}
	l.snaps = kept
	return err
}

// readSnapshot reads and decodes the snapshot at offset off.
func (l *Log) readSnapshot(off int64) (producerState, error) {
	f, err := l.fs.Open(l.fs.PathJoin(l.dir, snapshotName(off)))
	if err != nil {
		return producerState{}, err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return producerState{}, err
	}
	return decodeProducerState(data, off)
}

// ProducerRecovery says where a log's producer state came from: the
// snapshot loaded and the batches scanned after it.
type ProducerRecovery struct {
	Snapshot       int64 // offset of the snapshot loaded; -1: none, scanned from the log start
	BadSnapshots   int   // snapshots that did not decode and were removed
	BatchesScanned int   // batch headers read after the snapshot
	Err            error // a scan that failed (a damaged segment): the state lacks what follows
}

// rebuildProducersLocked sets the producer state from the newest snapshot
// that decodes and lies at or below both the log end and limit, then scans
// the batches from its offset to the log end (headers, and the one record
// of each control batch). Without one it scans from the log start.
// Corrupt snapshots are removed. The aborted-transaction index entries
// from the scan's start on are rewritten from what it finds (and those of
// markers past the log end dropped): Open passes the recovery point as
// limit, so that every entry recovery cannot trust is rebuilt. Called
// with mu held (or before the log is shared).
func (l *Log) rebuildProducersLocked(limit int64) ProducerRecovery {
	rec := ProducerRecovery{Snapshot: -1}
	st := newProducerState(l.logStart > 0)
	from := l.logStart
	for i := len(l.snaps) - 1; i >= 0; i-- {
		off := l.snaps[i]
		if off > l.leo || off > limit {
			continue
		}
		s, err := l.readSnapshot(off)
		if err != nil {
			rec.BadSnapshots++
			_ = l.fs.Remove(l.fs.PathJoin(l.dir, snapshotName(off)))
			l.snaps = append(l.snaps[:i], l.snaps[i+1:]...)
			continue
		}
		if off < l.logStart {
			// The batches in [off, log start) are gone: what the snapshot
			// says of a producer may be stale (its later batches went with
			// them), so every producer whose last batch lies below the log
			// start is forgotten, as Kafka's ProducerStateManager drops
			// them when the log start passes them, and the state is lossy
			// (a producer it does not know may go on at its sequence).
			s.lossy = true
			s.forgetBefore(l.logStart)
		}
		st, from, rec.Snapshot = s, off, off
		break
	}
	now := l.opts.Now().UnixMilli()
	next := int64(-1)
	wb := l.idx.db.NewBatch()
	defer wb.Close()
	wb.DeleteRange(l.k.abort(from), l.k.upper(kindAbort), nil)
	l.pstate = st
	rec.Err = l.walkHeadersLocked(from, l.leo, func(h BatchHeader, b []byte) {
		if next >= 0 && h.BaseOffset > next {
			// A damaged segment (shorter than its seal) hid batches.
			l.pstate.lossy = true
		}
		next = h.NextOffset()
		rec.BatchesScanned++
		l.trackBatchLocked(wb, h, b, now)
	})
	if rec.Err != nil {
		l.pstate.lossy = true
	}
	if err := wb.Commit(pebble.NoSync); err != nil && rec.Err == nil {
		rec.Err = fmt.Errorf("aborted-transaction index: %w", err)
	}
	return rec
}

// walkHeadersLocked calls fn with the header of every batch holding an
// offset in [from, to), clamped to the log, reading headers only, and the
// whole batch when it is a control batch (nil otherwise, or when it does
// not read). A segment that does not read (damage) is skipped and the
// walk goes on with the next; the first such error is returned. Called
// with mu held: no segment can go while it reads.
func (l *Log) walkHeadersLocked(from, to int64, fn func(BatchHeader, []byte)) error {
	from, to = max(from, l.logStart), min(to, l.leo)
	if from >= to || len(l.segs) == 0 {
		return nil
	}
	i := max(sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > from })-1, 0)
	pos := l.pendingPos(l.segs[i], from)
	if pos < 0 {
		var err error
		if err = l.openLocked(l.segs[i]); err != nil {
			return err
		}
		if pos, err = l.indexedPos(l.segs[i], from); err != nil {
			return err
		}
	}
	buf := make([]byte, headerReadSize)
	var first error
	for j, s := range l.segs[i:] {
		if j > 0 {
			pos = 0
		}
		if err := l.openLocked(s); err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		r := headerReader{f: s, end: s.size, buf: buf, maxBatch: l.opts.MaxBatchBytes}
		for pos < s.size {
			h, err := r.at(pos)
			if err != nil {
				if first == nil {
					first = err
				}
				break
			}
			if h.BaseOffset >= to {
				return first
			}
			if h.LastOffset() >= from {
				var b []byte
				if h.IsControl() {
					b = r.whole(pos, h)
				}
				fn(h, b)
			}
			pos += int64(h.Size())
		}
	}
	return first
}

// recoverProducers loads the producer state at open: snapshots past the
// recovered log end (a lost tail) are removed durably, then the state is
// rebuilt from the newest good snapshot at or below limit and the batches
// after it, and expired producers are forgotten.
func (l *Log) recoverProducers(limit int64) (ProducerRecovery, error) {
	snaps, err := l.listSnapshots()
	if err != nil {
		return ProducerRecovery{}, err
	}
	l.snaps = snaps
	if n := len(l.snaps); n > 0 && l.snaps[n-1] > l.leo {
		if err := l.removeSnapshotsAboveLocked(l.leo); err != nil {
			return ProducerRecovery{}, err
		}
		if err := l.syncDir(); err != nil {
			return ProducerRecovery{}, err
		}
	}
	rec := l.rebuildProducersLocked(limit)
	l.pstate.expire(l.opts.Now().UnixMilli(), l.opts.ProducerIDExpiration.Milliseconds(), -1)
	return rec, nil
}
