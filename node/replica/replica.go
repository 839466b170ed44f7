package replica

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

// Replica is this broker's copy of one partition: its *segment.Log and the
// partition.Replica state machine that decides replication. It does the
// state machine's I/O (see partition/doc.go): every event is stepped
// under mu and followed by process, which carries out the Ready — truncate
// the log, start fsyncs, queue the follower's fetch, hand answers to the
// fetch handlers waiting for them, complete produce requests, send ISR
// changes to the controller, publish the high watermark. Methods are safe
// for concurrent use.
type Replica struct {
	m         *Manager
	topic     string
	topicID   quorum.UUID
	partition int32
	log       *segment.Log

	// hw is the published high watermark: consumers read below it
	// without taking mu.
	hw atomic.Int64
	// cleanup is the log's compaction state (cleanup.go).
	cleanup Cleanup

	// mu guards the state machine and what the node keeps beside it.
	mu struct {
		sync.Mutex
		part    *partition.Replica
		cfg     partition.Config
		brokers map[int32]int64 // the BrokerEpochs last stepped
		nextID  uint64
		waiters map[uint64]chan error            // produce requests by ReqID
		answers map[uint64]partition.FetchAnswer // follower fetch answers by ReqID
		// verifying holds the KIP-890 verification guard of each
		// producer whose transactional batch is being verified (txn.go).
		verifying map[int64]uint64
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
		// due is the tick the scheduler holds the replica for, 0: none
		// (schedule, clock.go).
		due int64
	}

	// throttle is what the node last said about throttling the replica
	// (throttle.go); its lock is a leaf.
	throttle struct {
		sync.Mutex
		t Throttle
	}

	// sched is the replica's place in the Manager's scheduler, guarded
	// by its mutex (clock.go).
	sched struct {
		idx int   // in the heap, -1: not in it
		due int64 // the tick it is due at
	}
}

type hwWait struct {
	last int64
	ch   chan error
}

func newReplica(m *Manager, t *quorum.Topic, partitionID int32, log *segment.Log, cfg partition.Config, hw int64) (*Replica, error) {
	leo := log.LogEndOffset()
	if hw > leo {
		// The log lost committed records: a power cut took its unflushed
		// tail (page-cache durability) or the disk lost data. Say so; the
		// replica catches up from the leader if another replica kept them.
		m.lostOnRecovery.Add(hw - leo)
		m.log.Warn("node: log ends below its checkpointed high watermark: committed records lost on this replica (unflushed at a power cut?)",
			"topic", t.Name, "partition", partitionID, "high_watermark", hw, "log_end", leo, "lost", hw-leo)
	}
	st := partition.LogState{LEO: leo, HW: min(max(hw, 0), leo), Flushed: min(log.FlushedOffset(), leo)}
	pr, err := partition.New(cfg, log, st)
	if err != nil {
		return nil, err
	}
	r := &Replica{m: m, topic: t.Name, topicID: t.ID, partition: partitionID, log: log}
	r.mu.part, r.mu.cfg = pr, cfg
	r.mu.waiters, r.mu.answers = map[uint64]chan error{}, map[uint64]partition.FetchAnswer{}
	r.sched.idx = -1
	pr.TickTo(m.now()) // its clock is the Manager's from the start
	r.hw.Store(st.HW)
	return r, nil
}

// Become steps the partition's state from the metadata image, the
// replica's config and the eligible brokers' epochs (a map the caller
// never changes afterwards).
func (r *Replica) Become(p *quorum.Partition, cfg partition.Config, brokers map[int32]int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.dead {
		return
	}
	r.mu.part.TickTo(r.m.now())
	if cfg != r.mu.cfg {
		if err := r.mu.part.SetConfig(cfg); err != nil {
			r.m.log.Error("node: replica config", "topic", r.topic, "partition", r.partition, "err", err)
		} else {
			r.mu.cfg = cfg
		}
	}
	if r.mu.brokers == nil || !maps.Equal(brokers, r.mu.brokers) {
		// Even an empty map: the state machine trusts the broker epochs
		// fetches carry until it has one.
		_ = r.step(partition.BrokerEpochs{Epochs: brokers})
		r.mu.brokers = brokers
	}
	m := partition.Become(r.m.nodeID, p.Leader, p.LeaderEpoch, p.PartitionEpoch, p.ISR, p.Replicas)
	if err := r.step(m); err != nil && !errors.Is(err, partition.ErrStaleEpoch) {
		r.m.log.Warn("node: metadata for replica", "topic", r.topic, "partition", r.partition, "err", err)
	}
	r.process()
}

// process carries out the state machine's decisions until it has none,
// then schedules the replica's next wake-up. r.mu must be held; called
// after every Step and TickTo.
func (r *Replica) process() {
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
			r.m.fetcher(f.Leader).enqueue(r, *f)
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
			r.m.alterer.submit(r, p)
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
			r.m.log.Error("node: partition leader fenced: the controller refused its ISR change as from a stale leader; it acknowledges nothing until the metadata catches up",
				"topic", r.topic, "partition", r.partition, "leader_epoch", r.mu.part.LeaderEpoch())
		} else {
			r.m.log.Info("node: partition no longer fenced", "topic", r.topic, "partition", r.partition, "leader_epoch", r.mu.part.LeaderEpoch())
		}
	}
	r.schedule()
	if signal {
		r.m.host.Signal()
	}
}

// completeHWWaits answers the duplicate acks=all batches the HW passed, and
// fails them all once this replica no longer leads. r.mu must be held.
func (r *Replica) completeHWWaits() {
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
func (r *Replica) truncate(t partition.Truncation) error {
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
		r.m.log.Warn("node: truncated below the high watermark: committed records lost (unclean leader election)",
			"topic", r.topic, "partition", r.partition, "hw", t.BelowHW, "to", t.Offset, "from", t.From)
	} else {
		r.m.log.Info("node: truncated diverging log tail", "topic", r.topic, "partition", r.partition, "to", t.Offset, "from", t.From)
	}
	return nil
}

// startFlush makes sure a goroutine fsyncs the log below off and steps
// LocalFlush (sync durability). One runs per replica at a time; asks made
// while it runs raise its target (group commit does the rest). r.mu must
// be held.
func (r *Replica) startFlush(off int64) {
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
func (r *Replica) flushLoop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for !r.mu.dead && r.mu.flushWant > r.log.FlushedOffset() {
		want := r.mu.flushWant
		r.mu.Unlock()
		err := r.log.WaitFlushed(r.m.ctx, want)
		r.mu.Lock()
		if err != nil && errors.Is(err, segment.ErrOffsetOutOfRange) && !r.mu.dead {
			// A truncation cut the log below want while we waited: report
			// what is flushed and go on with what is left. Giving up here
			// left the replica never stepping LocalFlush again (a sync
			// follower fetches only after its fsync: stuck for good).
			r.mu.flushWant = min(r.mu.flushWant, r.log.LogEndOffset())
			_ = r.step(partition.LocalFlush{Flushed: r.log.FlushedOffset()})
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
		_ = r.step(partition.LocalFlush{Flushed: r.log.FlushedOffset()})
		r.process()
	}
	r.mu.flushing = false
	close(r.mu.flushDone)
}

// Kill ends the replica's work before its log is closed or deleted:
// waiting produce requests fail with NOT_LEADER_OR_FOLLOWER.
func (r *Replica) Kill() { r.stop(kerr.NotLeaderForPartition) }

// TakeOffline stops the replica for good, as Kill does, but answers the
// produce requests waiting for acknowledgement with KAFKA_STORAGE_ERROR:
// the log under it failed.
func (r *Replica) TakeOffline() { r.stop(kerr.KafkaStorageError) }

// stop ends the replica's work for good and answers every produce request
// waiting for acknowledgement with why.
func (r *Replica) stop(why error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mu.dead = true
	r.schedule() // out of the clock's heap
	for id, ch := range r.mu.waiters {
		ch <- why
		delete(r.mu.waiters, id)
	}
	for _, w := range r.mu.hwWaits {
		w.ch <- why
	}
	r.mu.hwWaits = nil
}

// Epoch is the current leader epoch.
func (r *Replica) Epoch() int32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.part.LeaderEpoch()
}

// Status is a snapshot of the replication state. The state machine's
// clock stands where its last event or wake-up left it; followers'
// BehindTicks count to now.
func (r *Replica) Status() partition.Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.mu.part.Status()
	if d := r.m.now() - r.mu.part.Now(); d > 0 {
		for i := range s.Followers {
			s.Followers[i].BehindTicks += d
		}
	}
	return s
}

// NotServing says whether the replica leads (per its state machine) but
// acknowledges nothing: fenced.
func (r *Replica) NotServing() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.mu.dead && r.mu.part.Fenced()
}

// HighWatermark is the published high watermark.
func (r *Replica) HighWatermark() int64 { return r.hw.Load() }

// MinInsyncReplicas is the min.insync.replicas last stepped (at least 1).
func (r *Replica) MinInsyncReplicas() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return max(r.mu.cfg.MinInsyncReplicas, 1)
}

// Topic is the partition's topic name.
func (r *Replica) Topic() string { return r.topic }

// Partition is the partition's index in its topic.
func (r *Replica) Partition() int32 { return r.partition }

// TopicID is the id of the topic the replica was opened for.
func (r *Replica) TopicID() quorum.UUID { return r.topicID }

// Log is the replica's log. The replica owns it: callers read and
// maintain it (flush, retention, checkpoints) but never truncate, append
// or close it.
func (r *Replica) Log() *segment.Log { return r.log }

// checkEpoch applies KIP-320 to the epoch a client sent (-1: none).
func (r *Replica) checkEpoch(current int32) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.part.CheckLeaderEpoch(current)
}

func (r *Replica) checkReadEpoch(current int32) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.dead {
		return kerr.NotLeaderForPartition
	}
	return r.mu.part.CheckReadEpoch(current)
}

// logErr logs a replica error once until a different one happens. r.mu
// must be held.
func (r *Replica) logErr(what string, err error) {
	r.m.host.DiskError(err)
	if s := what + err.Error(); s != r.mu.lastErr {
		r.mu.lastErr = s
		r.m.log.Error("node: replica "+what+" failed", "topic", r.topic, "partition", r.partition, "err", err)
	}
}

// segmentErrors are the Kafka errors clients get for the segment's errors,
// append and read alike; the first that matches wins.
var segmentErrors = []struct {
	err   error
	kafka *kerr.Error
}{
	{segment.ErrOffsetOutOfRange, kerr.OffsetOutOfRange},
	{segment.ErrCorruptBatch, kerr.CorruptMessage},
	{segment.ErrInvalidBatch, kerr.CorruptMessage},
	{segment.ErrInvalidRecord, kerr.InvalidRecord},
	{segment.ErrInvalidTimestamp, kerr.InvalidTimestamp},
	{segment.ErrUnsupportedCompression, kerr.UnsupportedCompressionType},
	{segment.ErrTransactionalBatch, kerr.TransactionalIDAuthorizationFailed},
	{segment.ErrBatchTooLarge, kerr.MessageTooLarge},
	{segment.ErrStaleEpoch, kerr.FencedLeaderEpoch},
	{segment.ErrOutOfOrderSequence, kerr.OutOfOrderSequenceNumber},
	{segment.ErrInvalidProducerEpoch, kerr.InvalidProducerEpoch},
	{segment.ErrInvalidTxnState, kerr.InvalidTxnState},
	{segment.ErrTransactionCoordinatorFenced, kerr.TransactionCoordinatorFenced},
	{segment.ErrClosed, kerr.NotLeaderForPartition},
	{segment.ErrLogFailed, kerr.KafkaStorageError},
}

// kafkaError maps an error of the replica's log to its Kafka error; one
// the table does not know is KAFKA_STORAGE_ERROR, keeping its text.
func kafkaError(err error) error {
	for _, e := range segmentErrors {
		if errors.Is(err, e.err) {
			return e.kafka
		}
	}
	return fmt.Errorf("%w: %v", kerr.KafkaStorageError, err)
}
