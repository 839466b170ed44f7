package node

import (
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-log/sluice/partition"
	"github.com/sluice-log/sluice/quorum"
	"github.com/sluice-log/sluice/segment"
)

// replica is this node's copy of one partition: its *segment.Log and the
// partition.Replica state machine that decides replication. The node does
// the state machine's I/O (see partition/doc.go): every event is stepped
// under mu and followed by process, which carries out the Ready — truncate
// the log, start fsyncs, queue the follower's fetch, hand answers to the
// fetch handlers waiting for them, complete produce requests, send ISR
// changes to the controller, publish the high watermark. Methods are safe
// for concurrent use.
type replica struct {
	n         *Node
	topic     string
	topicID   quorum.UUID
	partition int32
	log       *segment.Log

	// hw is the published high watermark: consumers read below it
	// without taking mu.
	hw atomic.Int64
	// cleanup is the log's compaction state (compaction.go).
	cleanup replicaCleanup

	// mu guards the state machine and what the node keeps beside it.
	mu struct {
		sync.Mutex
		part    *partition.Replica
		cfg     partition.Config
		brokers map[int32]int64 // the BrokerEpochs last stepped
		nextID  uint64
		waiters map[uint64]chan error            // produce requests by ReqID
		answers map[uint64]partition.FetchAnswer // follower fetch answers by ReqID
		// hwWaits are acks=all duplicates of batches not yet committed:
		// they complete when the HW passes their last offset.
		hwWaits   []hwWait
		flushing  bool          // a flush goroutine runs
		flushDone chan struct{} // closed when it ends
		flushWant int64         // the offset it must fsync below
		lastErr   string
		dead      bool // the log is closed or deleted: no more work
		// fenced is the state machine's Fenced as process last logged it.
		fenced bool
	}
}

type hwWait struct {
	last int64
	ch   chan error
}

func newReplica(n *Node, t *quorum.Topic, partitionID int32, log *segment.Log, cfg partition.Config, hw int64) (*replica, error) {
	leo := log.LogEndOffset()
	if hw > leo {
		// The log lost committed records: a power cut took its unflushed
		// tail (page-cache durability) or the disk lost data. Say so; the
		// replica catches up from the leader if another replica kept them.
		n.lostOnRecovery.Add(hw - leo)
		n.log.Warn("node: log ends below its checkpointed high watermark: committed records lost on this replica (unflushed at a power cut?)",
			"topic", t.Name, "partition", partitionID, "high_watermark", hw, "log_end", leo, "lost", hw-leo)
	}
	st := partition.LogState{LEO: leo, HW: min(max(hw, 0), leo), Flushed: min(log.FlushedOffset(), leo)}
	pr, err := partition.New(cfg, log, st)
	if err != nil {
		return nil, err
	}
	r := &replica{n: n, topic: t.Name, topicID: t.ID, partition: partitionID, log: log}
	r.mu.part, r.mu.cfg = pr, cfg
	r.mu.waiters, r.mu.answers = map[uint64]chan error{}, map[uint64]partition.FetchAnswer{}
	r.hw.Store(st.HW)
	return r, nil
}

// become steps the partition's state from the metadata image, the
// replica's config and the eligible brokers' epochs (a map the caller
// never changes afterwards).
func (r *replica) become(p *quorum.Partition, cfg partition.Config, brokers map[int32]int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.dead {
		return
	}
	if cfg != r.mu.cfg {
		if err := r.mu.part.SetConfig(cfg); err != nil {
			r.n.log.Error("node: replica config", "topic", r.topic, "partition", r.partition, "err", err)
		} else {
			r.mu.cfg = cfg
		}
	}
	if r.mu.brokers == nil || !maps.Equal(brokers, r.mu.brokers) {
		// Even an empty map: the state machine trusts the broker epochs
		// fetches carry until it has one.
		_ = r.mu.part.Step(partition.BrokerEpochs{Epochs: brokers})
		r.mu.brokers = brokers
	}
	m := partition.Become(r.n.cfg.NodeID, p.Leader, p.LeaderEpoch, p.PartitionEpoch, p.ISR, p.Replicas)
	if err := r.mu.part.Step(m); err != nil && !errors.Is(err, partition.ErrStaleEpoch) {
		r.n.log.Warn("node: metadata for replica", "topic", r.topic, "partition", r.partition, "err", err)
	}
	r.process()
}

// tick advances the replica's clock (produce deadlines, ISR lag, fetch
// retries).
func (r *replica) tick() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.dead {
		return
	}
	r.mu.part.Tick()
	r.process()
}

// process carries out the state machine's decisions until it has none.
// r.mu must be held; called after every Step and Tick.
func (r *replica) process() {
	signal := false
	for r.mu.part.HasReady() {
		rd := r.mu.part.Ready()
		if t := rd.Truncate; t != nil {
			if err := r.truncate(*t); err != nil {
				// The log failed; every later event tries again.
				r.logErr("truncate", err)
				break
			}
		}
		if rd.Flush > 0 {
			r.startFlush(rd.Flush)
		}
		if f := rd.Fetch; f != nil {
			r.n.fetcher(f.Leader).enqueue(r, *f)
		}
		for _, a := range rd.FetchAnswers {
			r.mu.answers[a.ReqID] = a
		}
		for _, c := range rd.Completed {
			if ch, ok := r.mu.waiters[c.ReqID]; ok {
				ch <- c.Err
				delete(r.mu.waiters, c.ReqID)
			}
		}
		if p := rd.AlterPartition; p != nil {
			r.n.alterer.submit(r, p)
		}
		if rd.HWChanged {
			r.hw.Store(rd.HW)
			r.cleanup.moved()
			signal = true
		}
		r.mu.part.Advance(rd)
	}
	if len(r.mu.hwWaits) > 0 {
		r.completeHWWaits()
	}
	if f := r.mu.part.Fenced(); f != r.mu.fenced {
		r.mu.fenced = f
		if f {
			r.n.log.Error("node: partition leader fenced: the controller refused its ISR change as from a stale leader; it acknowledges nothing until the metadata catches up",
				"topic", r.topic, "partition", r.partition, "leader_epoch", r.mu.part.LeaderEpoch())
		} else {
			r.n.log.Info("node: partition no longer fenced", "topic", r.topic, "partition", r.partition, "leader_epoch", r.mu.part.LeaderEpoch())
		}
	}
	if signal {
		r.n.signal()
	}
}

// completeHWWaits answers the duplicate acks=all batches the HW passed, and
// fails them all once this replica no longer leads. r.mu must be held.
func (r *replica) completeHWWaits() {
	hw, leads := r.hw.Load(), r.mu.part.CheckProduce(partition.AcksLeader) == nil
	kept := r.mu.hwWaits[:0]
	for _, w := range r.mu.hwWaits {
		switch {
		case !leads:
			w.ch <- kerr.NotLeaderForPartition
		case hw > w.last:
			w.ch <- nil
		default:
			kept = append(kept, w)
		}
	}
	r.mu.hwWaits = kept
}

// truncate applies a follower's truncation to the log (which rolls its
// idempotent-producer state back with it). r.mu must be held.
func (r *replica) truncate(t partition.Truncation) error {
	var err error
	if t.Fully {
		err = r.log.TruncateFullyAndStartAt(t.Offset)
	} else {
		err = r.log.TruncateTo(t.Offset)
	}
	if err != nil {
		return err
	}
	// A flush asked for before the cut must not wait for offsets that are
	// gone (startFlush only raises flushWant).
	r.mu.flushWant = min(r.mu.flushWant, r.log.LogEndOffset())
	if t.BelowHW >= 0 {
		// Committed records are gone: only an unclean election does this.
		r.n.log.Warn("node: truncated below the high watermark: committed records lost (unclean leader election)",
			"topic", r.topic, "partition", r.partition, "hw", t.BelowHW, "to", t.Offset, "from", t.From)
	} else {
		r.n.log.Info("node: truncated diverging log tail", "topic", r.topic, "partition", r.partition, "to", t.Offset, "from", t.From)
	}
	return nil
}

// startFlush makes sure a goroutine fsyncs the log below off and steps
// LocalFlush (sync durability). One runs per replica at a time; asks made
// while it runs raise its target (group commit does the rest). r.mu must
// be held.
func (r *replica) startFlush(off int64) {
	r.mu.flushWant = max(r.mu.flushWant, off)
	if r.mu.flushing {
		return
	}
	r.mu.flushing = true
	r.mu.flushDone = make(chan struct{})
	go r.flushLoop()
}

// flushLoop is the flush goroutine: it holds r.mu except while it waits
// for the fsync.
func (r *replica) flushLoop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for !r.mu.dead && r.mu.flushWant > r.log.FlushedOffset() {
		want := r.mu.flushWant
		r.mu.Unlock()
		err := r.log.WaitFlushed(r.n.ctx, want)
		r.mu.Lock()
		if err != nil && errors.Is(err, segment.ErrOffsetOutOfRange) && !r.mu.dead {
			// A truncation cut the log below want while we waited: report
			// what is flushed and go on with what is left. Giving up here
			// left the replica never stepping LocalFlush again (a sync
			// follower fetches only after its fsync: stuck for good).
			r.mu.flushWant = min(r.mu.flushWant, r.log.LogEndOffset())
			_ = r.mu.part.Step(partition.LocalFlush{Flushed: r.log.FlushedOffset()})
			r.process()
			continue
		}
		if err != nil {
			if !r.mu.dead {
				r.logErr("flush", err)
			}
			break
		}
		if r.mu.dead {
			break
		}
		_ = r.mu.part.Step(partition.LocalFlush{Flushed: r.log.FlushedOffset()})
		r.process()
	}
	r.mu.flushing = false
	close(r.mu.flushDone)
}

// kill ends the replica's work before its log is closed or deleted:
// waiting produce requests fail with NOT_LEADER_OR_FOLLOWER.
func (r *replica) kill() { r.stop(kerr.NotLeaderForPartition) }

// stop ends the replica's work for good and answers every produce request
// waiting for acknowledgement with why.
func (r *replica) stop(why error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mu.dead = true
	for id, ch := range r.mu.waiters {
		ch <- why
		delete(r.mu.waiters, id)
	}
	for _, w := range r.mu.hwWaits {
		w.ch <- why
	}
	r.mu.hwWaits = nil
}

// epoch is the current leader epoch.
func (r *replica) epoch() int32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.part.LeaderEpoch()
}

// status is a snapshot of the replication state.
func (r *replica) status() partition.Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.part.Status()
}

// notServing says whether the replica leads (per its state machine) but
// acknowledges nothing: fenced.
func (r *replica) notServing() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.mu.dead && r.mu.part.Fenced()
}

// highWatermark is the published high watermark.
func (r *replica) highWatermark() int64 { return r.hw.Load() }

// checkEpoch applies KIP-320 to the epoch a client sent (-1: none).
func (r *replica) checkEpoch(current int32) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.part.CheckLeaderEpoch(current)
}

// logErr logs a replica error once until a different one happens. r.mu
// must be held.
func (r *replica) logErr(what string, err error) {
	r.n.checkDiskError(err)
	if s := what + err.Error(); s != r.mu.lastErr {
		r.mu.lastErr = s
		r.n.log.Error("node: replica "+what+" failed", "topic", r.topic, "partition", r.partition, "err", err)
	}
}

// appendError maps a segment append error to its Kafka error.
func appendError(err error) error {
	switch {
	case errors.Is(err, segment.ErrCorruptBatch):
		return kerr.CorruptMessage
	case errors.Is(err, segment.ErrInvalidBatch):
		return kerr.CorruptMessage
	case errors.Is(err, segment.ErrInvalidRecord):
		return kerr.InvalidRecord
	case errors.Is(err, segment.ErrInvalidTimestamp):
		return kerr.InvalidTimestamp
	case errors.Is(err, segment.ErrUnsupportedCompression):
		return kerr.UnsupportedCompressionType
	case errors.Is(err, segment.ErrTransactionalBatch):
		return kerr.TransactionalIDAuthorizationFailed
	case errors.Is(err, segment.ErrBatchTooLarge):
		return kerr.MessageTooLarge
	case errors.Is(err, segment.ErrStaleEpoch):
		return kerr.FencedLeaderEpoch
	case errors.Is(err, segment.ErrOutOfOrderSequence):
		return kerr.OutOfOrderSequenceNumber
	case errors.Is(err, segment.ErrInvalidProducerEpoch):
		return kerr.InvalidProducerEpoch
	case errors.Is(err, segment.ErrClosed):
		return kerr.NotLeaderForPartition
	case errors.Is(err, segment.ErrLogFailed):
		return kerr.KafkaStorageError
	}
	return fmt.Errorf("%w: %v", kerr.KafkaStorageError, err)
}

// readError maps a segment read error to its Kafka error.
func readError(err error) error {
	switch {
	case errors.Is(err, segment.ErrOffsetOutOfRange):
		return kerr.OffsetOutOfRange
	case errors.Is(err, segment.ErrClosed):
		return kerr.NotLeaderForPartition
	case errors.Is(err, segment.ErrCorruptBatch):
		return kerr.CorruptMessage
	}
	return kerr.KafkaStorageError
}
