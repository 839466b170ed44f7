package segment

import (
	"errors"
	"os"
	"sort"

	"github.com/cockroachdb/pebble/v2"
)

// Transactions in the log cleaner, as Kafka's LogCleaner does them
// (CleanedTransactionMetadata): the caller's bound is clamped to the first
// unstable offset, so no open transaction is ever cleaned; an aborted
// transaction's data batches lose their records (a producer's last batch
// stays, empty) and count for nothing in the offset map; a marker goes
// only when the pass read no data batch of its transaction (its data is
// gone: removed by an earlier pass, or never in this log) and its delete
// horizon has passed, as a tombstone's does: the first clean that finds
// it so stamps the horizon (now + delete.retention.ms) into the batch.
// The aborted-transaction index entry of an abort marker that went is
// removed after the swap.
//
// A producer-state snapshot taken inside a transaction whose marker went
// would, loaded later (recovery, truncation), open a transaction that no
// batch after it ends. So before a pass that removes markers swaps, the
// snapshots at or below the last marker it removes are deleted, durably:
// a rebuild then starts from a snapshot taken after that marker, or from
// the log start, and finds neither the transaction's data nor its marker.

// loadAborted reads the aborted transactions whose data may lie below end.
func (c *cleaner) loadAborted(end int64) {
	c.aborted = map[int64][]AbortedTxn{}
	c.txnSeen = map[int64]bool{}
	for _, a := range c.l.AbortedTxns(c.l.LogStartOffset(), end, nil) {
		c.aborted[a.ProducerID] = append(c.aborted[a.ProducerID], a)
	}
	for _, as := range c.aborted {
		sort.Slice(as, func(i, j int) bool { return as[i].FirstOffset < as[j].FirstOffset })
	}
}

// abortedBatch says whether the transactional data batch h belongs to an
// aborted transaction: one of its producer's that began at or before it
// and ended after it.
func (c *cleaner) abortedBatch(h BatchHeader) bool {
	if !h.IsTransactional() || h.IsControl() || h.ProducerID < 0 {
		return false
	}
	as := c.aborted[h.ProducerID]
	i := sort.Search(len(as), func(i int) bool { return as[i].FirstOffset > h.BaseOffset }) - 1
	return i >= 0 && h.LastOffset() < as[i].LastOffset
}

// decideMarker decides the control batch h (bytes b) whose delete
// horizon is hz (noTimestamp: none yet): drop when it may go (never when
// keep: the batch stays for idempotence or as the log's last); else stamp,
// when not noTimestamp, is the horizon it gets (KIP-534: a marker whose
// transaction has no data left is stamped at its first such clean and
// goes once the horizon has passed, as a tombstone does).
func (c *cleaner) decideMarker(h BatchHeader, b []byte, hz int64, keep bool) (drop bool, stamp int64) {
	seen := c.txnSeen[h.ProducerID]
	delete(c.txnSeen, h.ProducerID)
	ctl, ok := parseControl(b)
	switch {
	case ok && seen:
		return false, noTimestamp
	case hz == noTimestamp:
		return false, c.newHorizon()
	case c.o.Now.UnixMilli() < hz || keep:
		return false, noTimestamp
	}
	if ok && !ctl.commit {
		c.goneAborts = append(c.goneAborts, h.BaseOffset)
	}
	c.goneMarker = max(c.goneMarker, h.BaseOffset)
	return true, noTimestamp
}

// dropStaleSnapshots deletes, durably, the snapshots at or below the last
// marker this pass removes (see above). An error fails the pass before
// its swap.
func (c *cleaner) dropStaleSnapshots() error {
	if c.goneMarker < 0 {
		return nil
	}
	l := c.l
	l.mu.Lock()
	defer l.mu.Unlock()
	kept := l.snaps[:0]
	var err error
	for _, off := range l.snaps {
		if off > c.goneMarker {
			kept = append(kept, off)
			continue
		}
		if e := l.fs.Remove(l.fs.PathJoin(l.dir, snapshotName(off))); e != nil && !errors.Is(e, os.ErrNotExist) && err == nil {
			err = e
		}
	}
	l.snaps = kept
	if err != nil {
		return err
	}
	return l.syncDir()
}

// forgetGoneAborts removes the index entries of the abort markers a
// swapped pass removed, synced (one write per such pass). Best effort: an
// entry whose marker and data are gone filters nothing.
func (c *cleaner) forgetGoneAborts() {
	if len(c.goneAborts) == 0 {
		return
	}
	wb := c.l.idx.db.NewBatch()
	defer wb.Close()
	for _, off := range c.goneAborts {
		wb.Delete(c.l.k.abort(off), nil)
	}
	_ = wb.Commit(pebble.Sync)
}
