package replica

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/sluice-log/sluice/node/kafka"
	"github.com/sluice-log/sluice/partition"
	"github.com/sluice-log/sluice/quorum"
	"github.com/sluice-log/sluice/segment"
)

// Host is what the replicas need from the node that runs them. The
// Manager calls it from its own goroutines (ticker, fetchers, AlterPartition
// sender, scrubber) and from the goroutines that call into replicas, often
// with a Replica's mu held: no method may block on or call back into the
// Manager or a Replica.
type Host interface {
	// BrokerEpoch is this broker's registered epoch, 0 before it
	// registered. Fetches and ISR proposals carry it.
	BrokerEpoch() int64
	// KafkaEndpoint is the "host:port" of broker's Kafka listener in the
	// metadata image, "" when it has none: where the fetcher for a leader
	// connects.
	KafkaEndpoint(broker int32) string
	// AlterPartitions proposes the ISR changes to the controller and
	// returns its reply. A failure wraps the *kerr.Error that the
	// proposing replicas step (NOT_CONTROLLER, REQUEST_TIMED_OUT, ...);
	// an error without one steps as UNKNOWN_SERVER_ERROR.
	AlterPartitions(ctx context.Context, cmd *quorum.AlterPartitions) (*quorum.AlterPartitionsReply, error)
	// Poke asks for the replicas to be brought up to the metadata image
	// soon (Become with its partition states): after an ISR change the
	// reconciler may be slower than the answer.
	Poke()
	// Signal wakes the fetches long-polling for new records or a new high
	// watermark.
	Signal()
	// DiskError takes the log directory offline when err is a disk
	// error (a failed log, ENOSPC, EIO) and reports whether it was.
	DiskError(err error) bool
}

// Options configure a Manager.
type Options struct {
	// NodeID is this broker's id.
	NodeID int32
	// Logger; nil discards.
	Logger *slog.Logger
	// FS and Dir hold the high-watermark checkpoint (the log directory).
	FS  vfs.FS
	Dir string
	// ScrubInterval is sluice.log.scrub.interval.ms (0: no periodic
	// scrub); ScrubBytesPerSecond sluice.log.scrub.max.bytes.per.second
	// (0: no limit).
	ScrubInterval       time.Duration
	ScrubBytesPerSecond int64
	// OnCorruptBatch, when set, counts a bad batch the scrub found.
	OnCorruptBatch func(topic string, partition int32)
	// FetchTLS, when set, is the TLS a replica fetcher dials the leader's
	// inter-broker listener with (an SSL listener), given the address
	// dialled; nil: plaintext.
	FetchTLS func(addr string) *tls.Config
	// FetchSASL, when set, authenticates each fetcher connection (the
	// inter-broker listener is SASL_PLAINTEXT or SASL_SSL) before its
	// first Fetch.
	FetchSASL *kafka.ClientSASL
	// TxnVerifier, when set, verifies a transactional batch that would
	// open a transaction on a partition with its transaction coordinator
	// before the leader appends it (KIP-890 part 1); nil accepts.
	TxnVerifier kafka.TxnVerifier
}

// TP names a partition: the key of the replicas.
type TP struct {
	Topic     string
	Partition int32
}

// String is "<topic>-<partition>": the name of the partition's log and
// its directory, and how logs and /readyz name it.
func (k TP) String() string {
	return k.Topic + "-" + strconv.Itoa(int(k.Partition))
}

// TickInterval is the replicas' clock: produce deadlines and
// replica.lag.time.max.ms are counted in these. A replica is woken only at
// the tick its state machine has something due (clock.go), not every tick.
const TickInterval = 10 * time.Millisecond

// errStopped is what the scrub's throttle returns once the Manager stops.
var errStopped = errors.New("replica: stopped")

// Manager runs this broker's replicas: it holds them by partition, ticks
// them, runs the replica fetchers, the AlterPartition sender and the
// scrubber they use, and keeps the high-watermark checkpoint. Methods are
// safe for concurrent use.
type Manager struct {
	host      Host
	nodeID    int32
	log       *slog.Logger
	fs        vfs.FS
	dir       string
	onCorrupt func(topic string, partition int32)
	fetchTLS  func(addr string) *tls.Config
	fetchSASL *kafka.ClientSASL
	// txnVerifier is Options.TxnVerifier (txn.go).
	txnVerifier kafka.TxnVerifier

	mu struct {
		sync.RWMutex
		replicas map[TP]*Replica
	}

	// fetch is taken before fetcher.mu (stopFetchers), never under it.
	fetch struct {
		sync.Mutex
		// fetchers are the replica fetchers, by leader broker id.
		fetchers map[int32]*fetcher
		stopped  bool
	}
	alterer *alterer
	scrub   *scrubber
	// leaderQuota and followerQuota are the replication throttles
	// (throttle.go).
	leaderQuota, followerQuota *quota
	// reassignIn and reassignOut count reassignment bytes
	// (ReplicationBytes).
	reassignIn, reassignOut atomic.Int64

	// start is when the replicas' clock began; clock reads it in ticks
	// (tests replace it); sched holds the replicas with something due.
	start time.Time
	clock func() int64
	sched scheduler

	// hwCkpt is the high-watermark checkpoint read at start.
	hwCkpt map[TP]int64
	// hwWritten is the checkpoint last written (WriteHWCheckpoint), nil
	// when none or when writing it failed; its mutex is a leaf.
	hwWritten struct {
		sync.Mutex
		b []byte
	}
	// lostOnRecovery counts committed records the logs no longer held at
	// start (checkpointed high watermark above the recovered log end).
	lostOnRecovery atomic.Int64
	// wakeups counts the times the clock woke a replica (clock.go).
	wakeups atomic.Int64

	// ctx is cancelled and stop closed when the Manager stops.
	ctx      context.Context
	cancel   context.CancelFunc
	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

// NewManager reads the high-watermark checkpoint in opts.Dir and returns
// a Manager with no replicas; Start runs its goroutines.
func NewManager(h Host, opts Options) (*Manager, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	m := &Manager{host: h, nodeID: opts.NodeID, log: opts.Logger, fs: opts.FS, dir: opts.Dir,
		onCorrupt: opts.OnCorruptBatch, fetchTLS: opts.FetchTLS, fetchSASL: opts.FetchSASL, txnVerifier: opts.TxnVerifier, stop: make(chan struct{})}
	m.mu.replicas = map[TP]*Replica{}
	m.start = time.Now()
	m.clock = func() int64 { return int64(time.Since(m.start) / TickInterval) }
	m.sched.kick = make(chan struct{}, 1)
	m.fetch.fetchers = map[int32]*fetcher{}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.leaderQuota, m.followerQuota = newQuota(), newQuota()
	m.alterer = newAlterer(m)
	m.scrub = newScrubber(m, opts.ScrubInterval, opts.ScrubBytesPerSecond)
	var err error
	if m.hwCkpt, err = readHWCheckpoint(m.fs, m.dir); err != nil {
		return nil, fmt.Errorf("replica: %w (delete the file to start every replica's high watermark from 0)", err)
	}
	return m, nil
}

// Start runs the clock (clock.go), the AlterPartition sender and the scrubber;
// fetchers start as followers need them.
func (m *Manager) Start() {
	m.wg.Add(3)
	go m.clockLoop()
	go m.alterer.run()
	go m.scrub.run()
}

// Stop ends the Manager's goroutines and waits for them: a fetch in
// flight returns at once. The replicas stay open (CloseLogs).
func (m *Manager) Stop() {
	m.stopOnce.Do(func() {
		close(m.stop)
		m.cancel()
		m.stopFetchers()
	})
	m.wg.Wait()
}

// Add makes l, the opened log of partition of topic t, a replica run
// with cfg, starting from its checkpointed high watermark. The replica
// owns l from then on, also when Add fails.
func (m *Manager) Add(t *quorum.Topic, partitionID int32, l *segment.Log, cfg partition.Config) (*Replica, error) {
	key := TP{t.Name, partitionID}
	r, err := newReplica(m, t, partitionID, l, cfg, m.hwCkpt[key])
	if err != nil {
		l.Close()
		return nil, err
	}
	m.mu.Lock()
	m.mu.replicas[key] = r
	m.mu.Unlock()
	return r, nil
}

// Replica returns the replica of a partition, nil when none is open here.
func (m *Manager) Replica(key TP) *Replica {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.mu.replicas[key]
}

// Replicas returns the open replicas, in no order.
func (m *Manager) Replicas() []*Replica {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]*Replica, 0, len(m.mu.replicas))
	for _, r := range m.mu.replicas {
		out = append(out, r)
	}
	return out
}

// Keys returns the partitions with an open replica, in no order.
func (m *Manager) Keys() []TP {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]TP, 0, len(m.mu.replicas))
	for k := range m.mu.replicas {
		out = append(out, k)
	}
	return out
}

// Len is the number of open replicas.
func (m *Manager) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.mu.replicas)
}

// Drop ends the replica of a partition that left this broker and deletes
// its log.
func (m *Manager) Drop(key TP) {
	m.mu.Lock()
	r := m.mu.replicas[key]
	delete(m.mu.replicas, key)
	m.mu.Unlock()
	if r == nil {
		return
	}
	r.Kill()
	r.cleanup.remove()
	if err := r.log.Delete(); err != nil {
		m.log.Error("node: delete log", "partition", key.String(), "err", err)
	}
}

// CloseLogs ends every replica and closes its log (each checkpoints with
// its clean marker).
func (m *Manager) CloseLogs() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	for k, r := range m.mu.replicas {
		r.Kill()
		r.cleanup.remove()
		if err := r.log.Close(); err != nil && !errors.Is(err, segment.ErrClosed) {
			errs = append(errs, fmt.Errorf("log %s: %w", k, err))
		}
		delete(m.mu.replicas, k)
	}
	return errors.Join(errs...)
}

// TakeOffline stops every replica for good (TakeOffline): the log
// directory under them failed.
func (m *Manager) TakeOffline() {
	for _, r := range m.Replicas() {
		r.TakeOffline()
	}
}

// LostOnRecovery counts the committed records the logs no longer held
// when they opened (their checkpointed high watermark was above the
// recovered log end: a power cut in page-cache mode).
func (m *Manager) LostOnRecovery() int64 { return m.lostOnRecovery.Load() }

// Wakeups counts the times the Manager's clock woke a replica: only
// when its state machine had something due (a produce deadline, a lag,
// a retry), so idle replicas add none.
func (m *Manager) Wakeups() int64 { return m.wakeups.Load() }

// Scheduled is the number of replicas the clock will wake: those with
// something due.
func (m *Manager) Scheduled() int { return m.sched.scheduled() }

// CorruptBatchesFound counts the bad batches the scrub reported.
func (m *Manager) CorruptBatchesFound() int64 { return m.scrub.found.Load() }
