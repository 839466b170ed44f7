package node

import (
	"errors"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-log/sluice/quorum"
	"github.com/sluice-log/sluice/segment"
)

// A failed log directory, as Kafka's LogDirFailureChannel handles one: the
// first I/O error of a log (a write or fsync that failed, ENOSPC or EIO,
// which fails the segment.Log for good) takes the node's log directory
// offline. A node has one (log.dirs), so every replica on it stops: each
// is killed (no more appends, fetches or truncations on the failed disk;
// waiting produce requests get KAFKA_STORAGE_ERROR), Produce, Fetch,
// ListOffsets and OffsetForLeaderEpoch on them answer KAFKA_STORAGE_ERROR,
// the reconciler opens nothing more, and the maintenance loop writes no
// more checkpoints. The controller is told (quorum.LogDirOffline, retried
// until it commits): it moves the broker's leaderships to in-sync replicas
// and takes it out of every ISR, and elects it nowhere until it registers
// again. The node logs the failure at ERROR with the path, exports
// kafka_log_logmanager_offlinelogdirectorycount and answers /readyz with
// 503. Recovery is a restart once the disk has room (or is replaced): the
// logs recover from their checkpoints, the broker registers with a new
// epoch and its replicas catch up as followers before rejoining the ISRs.

// logDirRetry is the pause between attempts to report the failed directory
// to the controller while it cannot be reached.
const logDirRetry = 250 * time.Millisecond

// isDiskError reports whether err says the log directory failed rather
// than the request: a failed log, or an I/O error of the disk itself.
func isDiskError(err error) bool {
	return errors.Is(err, segment.ErrLogFailed) || errors.Is(err, syscall.ENOSPC) ||
		errors.Is(err, syscall.EIO) || errors.Is(err, syscall.EROFS) || errors.Is(err, syscall.EDQUOT)
}

// checkDiskError takes the log directory offline when err is a disk error
// and reports whether it was. It never blocks: callers may hold a
// replica's mu.
func (n *Node) checkDiskError(err error) bool {
	if err == nil || !isDiskError(err) {
		return false
	}
	n.offline.Lock()
	defer n.offline.Unlock()
	if n.offline.err == nil {
		n.offline.err = err
		close(n.dirFailed)
	}
	return true
}

// logDirOffline returns the error that took the log directory offline, or
// nil while it is online.
func (n *Node) logDirOffline() error {
	n.offline.Lock()
	defer n.offline.Unlock()
	return n.offline.err
}

// logDirLoop waits for the log directory to fail, then takes its replicas
// offline and tells the controller.
func (n *Node) logDirLoop() {
	defer n.wg.Done()
	select {
	case <-n.stop:
		return
	case <-n.dirFailed:
	}
	cause := n.logDirOffline()
	n.log.Error("node: log dir offline: its replicas serve nothing (KAFKA_STORAGE_ERROR) and leadership moves to in-sync replicas on other brokers; free space or fix the disk, then restart the node",
		"dir", n.dir, "err", cause, "broker", n.cfg.NodeID, "epoch", n.epoch.Load())
	n.reconcileMu.Lock() // no reconciliation opens or steps a replica meanwhile
	n.rm.TakeOffline()
	n.reconcileMu.Unlock()
	n.signal() // long polls answer now
	cmd := &quorum.LogDirOffline{ID: n.cfg.NodeID, Epoch: n.epoch.Load(), Dir: n.dir}
	for {
		start := time.Now()
		_, err := n.proposeRetrying(n.ctx, cmd)
		if err == nil {
			n.log.Info("node: the controller took this broker's replicas out of the ISRs", "dir", n.dir, "took", time.Since(start))
			return
		}
		var ke *kerr.Error
		if errors.As(err, &ke) {
			// STALE_BROKER_EPOCH and the like: this registration is gone,
			// and with it every leadership it held.
			n.log.Warn("node: the controller refused the offline log dir report", "dir", n.dir, "err", err)
			return
		}
		t := time.NewTimer(logDirRetry)
		select {
		case <-n.stop:
			t.Stop()
			return
		case <-t.C:
		}
	}
}
