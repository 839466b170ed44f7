package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/sluice-log/sluice/node/cleaner"
	"github.com/sluice-log/sluice/node/config"
	"github.com/sluice-log/sluice/node/kafka"
	"github.com/sluice-log/sluice/partition"
	"github.com/sluice-log/sluice/quorum"
	"github.com/sluice-log/sluice/segment"
)

// CleanShutdownFile is the node's clean-shutdown marker in its data
// directory: written last by Close, removed at Open.
const CleanShutdownFile = ".clean_shutdown"

// indexCacheBytes is the Pebble block cache of the node's segment Index.
const indexCacheBytes = 64 << 20

// Options are what a Node takes besides its Config.
type Options struct {
	// Logger; nil discards.
	Logger *slog.Logger
	// RegisterTimeout bounds the wait for the quorum at start (30s).
	RegisterTimeout time.Duration
	// KafkaListener and ControllerListener, when set, are used instead of
	// binding listeners (tests bind :0 first to learn the ports; the
	// controller address must be known to format the directory).
	KafkaListener, ControllerListener net.Listener
	// HTTPListener, when set, serves /health (else the HTTP listener of
	// the config, if any, is bound).
	HTTPListener net.Listener
	// FS holds the partition logs and their index; nil is the real disk
	// (vfs.Default). Tests cut power with vfs.NewCrashableMem; the soak
	// tool wraps the disk to forget unsynced writes.
	FS vfs.FS
}

// Node is one running Sluice process.
type Node struct {
	cfg  *config.Config
	log  *slog.Logger
	fs   vfs.FS
	dir  string
	ctrl *quorum.Controller
	idx  *segment.Index
	srv  *kafka.Server
	// httpSrv serves /health; nil without an HTTP listener.
	httpSrv *http.Server
	// gossip runs liveness gossip; nil without a GOSSIP listener.
	gossip *quorum.Gossip
	kafkaL net.Listener
	// epoch is the broker epoch of this run's registration, 0 until then
	// (set by register while the reconciler and fetchers may run).
	epoch atomic.Int64

	clusterID string

	// reconcileMu serialises reconciliations (lock order: first).
	reconcileMu sync.Mutex
	wake        chan struct{}

	mu struct {
		sync.RWMutex
		replicas map[tp]*replica
		// openErrs are the partitions hosted here whose log failed to
		// open at the last reconciliation, with the error (/readyz shows
		// those led here).
		openErrs map[tp]error
		closed   bool
	}

	// sig is a leaf.
	sig struct {
		sync.Mutex
		// appended is closed and replaced to wake long-polling fetches.
		appended chan struct{}
		// reconciled is the metadata index the logs were last reconciled
		// with (appended is closed when it moves): publish.go.
		reconciled uint64
	}

	// pids is the block of producer ids this node hands out; a leaf.
	pids struct {
		sync.Mutex
		next, limit int64
	}

	// fetch is taken before fetcher.mu (stopFetchers), never under it.
	fetch struct {
		sync.Mutex
		// fetchers are the replica fetchers, by leader broker id.
		fetchers map[int32]*fetcher
		stopped  bool
	}
	alterer *alterer
	// hwCkpt is the high-watermark checkpoint read at start.
	hwCkpt map[tp]int64
	// lostOnRecovery counts committed records the logs no longer held at
	// start (checkpointed high watermark above the recovered log end).
	lostOnRecovery atomic.Int64

	// ctx is cancelled when the node stops; stop is closed then too.
	ctx    context.Context
	cancel context.CancelFunc
	stop   chan struct{}
	wg     sync.WaitGroup
	// served is closed when the Kafka Serve loop returns.
	served chan struct{}

	// offline.err is the error that took the log directory offline
	// (logdir.go); dirFailed is closed then. offline is a leaf.
	offline struct {
		sync.Mutex
		err error
	}
	dirFailed chan struct{}

	metrics nodeMetrics // node/metrics.go
	// wb runs the logs' batched writeback requests; nil when
	// sluice.log.writeback.interval.bytes is 0.
	wb *segment.Writeback
	// scrub verifies the logs' sealed segments and repairs bad batches
	// (scrub.go).
	scrub *scrubber
	// cleaner compacts the logs of compacted topics (compaction.go); nil
	// when log.cleaner.enable is false.
	cleaner *cleaner.Pool
}

// Open starts a node from cfg; see the package doc for the steps. It
// returns once the broker is registered and the Kafka listener serves.
func Open(cfg *config.Config, opts Options) (_ *Node, err error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.RegisterTimeout <= 0 {
		opts.RegisterTimeout = 30 * time.Second
	}
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	meta, err := cfg.Verify()
	if err != nil {
		return nil, err
	}
	n := &Node{
		cfg: cfg, log: opts.Logger, fs: opts.FS, dir: cfg.LogDirs[0], clusterID: meta.ClusterID,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), served: make(chan struct{}),
		dirFailed: make(chan struct{}),
	}
	n.mu.replicas, n.mu.openErrs = map[tp]*replica{}, map[tp]error{}
	n.sig.appended = make(chan struct{})
	n.fetch.fetchers = map[int32]*fetcher{}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	n.alterer = newAlterer(n)
	n.scrub = newScrubber(n)
	n.metrics.m = newMetrics(n)
	n.checkWriteback("/proc")
	var closers []func()
	n.cleaner = newCleaner(n)
	closers = append(closers, n.cleaner.Close)
	if cfg.LogWritebackIntervalBytes > 0 {
		n.wb = segment.NewWriteback()
		closers = append(closers, n.wb.Close)
	}
	defer func() {
		if err != nil {
			for i := len(closers) - 1; i >= 0; i-- {
				closers[i]()
			}
		}
	}()

	clean := false
	if _, err := os.Stat(filepath.Join(n.dir, CleanShutdownFile)); err == nil {
		clean = true
		if err := os.Remove(filepath.Join(n.dir, CleanShutdownFile)); err != nil {
			return nil, fmt.Errorf("node: %w", err)
		}
	}

	kl, _ := cfg.Listener(config.ListenerKafka)
	if n.kafkaL = opts.KafkaListener; n.kafkaL == nil {
		if n.kafkaL, err = net.Listen("tcp", kl.Addr()); err != nil {
			return nil, fmt.Errorf("node: kafka listener: %w", err)
		}
	}
	closers = append(closers, func() { n.kafkaL.Close() })
	hl := opts.HTTPListener
	if l, ok := cfg.Listener(config.ListenerHTTP); ok && hl == nil {
		if hl, err = net.Listen("tcp", l.Addr()); err != nil {
			return nil, fmt.Errorf("node: http listener: %w", err)
		}
	}
	if hl != nil {
		closers = append(closers, func() { hl.Close() })
	}
	cl, _ := cfg.Listener(config.ListenerController)
	ctrlL := opts.ControllerListener
	if ctrlL == nil {
		if ctrlL, err = net.Listen("tcp", cl.Addr()); err != nil {
			return nil, fmt.Errorf("node: controller listener: %w", err)
		}
	}

	// OpenIndex creates the data directory (with durable parents).
	if n.idx, err = segment.OpenIndex(n.fs, filepath.Join(n.dir, "index"), indexCacheBytes); err != nil {
		ctrlL.Close()
		return nil, fmt.Errorf("node: %w", err)
	}
	closers = append(closers, func() { n.idx.Close() })
	if n.hwCkpt, err = readHWCheckpoint(n.fs, n.dir); err != nil {
		ctrlL.Close()
		return nil, fmt.Errorf("node: %w (delete the file to start every replica's high watermark from 0)", err)
	}

	voters := cfg.ControllerQuorumVoters
	if len(voters) == 0 {
		voters = meta.InitialControllers
	}
	qc := quorum.Config{
		NodeID: cfg.NodeID, Dir: filepath.Join(n.dir, "quorum"), Listener: ctrlL,
		ClusterID: meta.ClusterID, PeerLog: n.log,
		Policy:       quorum.Policy{UncleanLeaderElectionEnable: cfg.UncleanLeaderElectionEnable},
		OnApply:      func(c quorum.Change) { n.metrics.apply(c, cfg.NodeID); n.poke() },
		AwaitApplied: n.awaitReconciled,
	}
	if a, ok := cfg.Advertised(config.ListenerController); ok && a.Host != "" {
		qc.AdvertiseAddr = net.JoinHostPort(a.Host, strconv.Itoa(int(ctrlL.Addr().(*net.TCPAddr).Port)))
		if a.Port != 0 {
			qc.AdvertiseAddr = a.Addr()
		}
	}
	for _, v := range voters {
		if v.ID == cfg.NodeID && cfg.Controller {
			qc.InitialVoters = voters
		}
	}
	if n.ctrl, err = quorum.Open(qc); err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	closers = append(closers, func() { n.ctrl.Close() })
	if len(qc.InitialVoters) == 0 {
		if err = n.joinQuorum(voters, opts.RegisterTimeout); err != nil {
			return nil, err
		}
	}

	n.wg.Add(4)
	go n.reconcileLoop()
	go n.tickLoop()
	go n.alterer.run()
	go n.logDirLoop()
	closers = append(closers, func() { n.stopLoops(); n.closeLogs() })

	if gl, ok := cfg.Listener(config.ListenerGossip); ok {
		gc := quorum.GossipConfig{NodeID: cfg.NodeID, BindAddr: gl.Host, BindPort: int(gl.Port), SessionTimeout: cfg.BrokerSessionTimeout, ClusterID: n.clusterID, Log: n.log}
		if a, ok := cfg.Advertised(config.ListenerGossip); ok && a.Port != 0 {
			gc.AdvertiseAddr, gc.AdvertisePort = a.Host, int(a.Port)
		}
		if n.gossip, err = quorum.StartGossip(gc, n.ctrl); err != nil {
			return nil, fmt.Errorf("node: %w", err)
		}
		closers = append(closers, func() { n.gossip.Close() })
		if len(cfg.GossipSeeds) > 0 {
			if _, err := n.gossip.Join(cfg.GossipSeeds); err != nil {
				// Not fatal: the others may start later and join us.
				n.log.Warn("node: gossip join", "seeds", cfg.GossipSeeds, "err", err)
			}
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), opts.RegisterTimeout)
	defer cancel()
	if err = n.register(ctx, clean); err != nil {
		return nil, err
	}

	kopts := kafka.Options{MaxRequestBytes: cfg.SocketRequestMaxBytes, Logger: n.log, Observer: n.metrics.m.Requests,
		MaxConnections: int(cfg.MaxConnections), MaxConnectionsPerIP: int(cfg.MaxConnectionsPerIP),
		MaxConnectionsPerIPOverrides: cfg.MaxConnectionsPerIPOverrides, ConnectionsMaxIdle: cfg.ConnectionsMaxIdle}
	if n.srv, err = kafka.NewServer((*broker)(n), kopts); err != nil {
		return nil, err
	}
	go func() {
		defer close(n.served)
		if err := n.srv.Serve(n.kafkaL); err != nil && !errors.Is(err, kafka.ErrServerClosed) {
			n.log.Error("node: kafka listener failed", "err", err)
		}
	}()
	n.wg.Add(2)
	go n.maintain()
	go n.scrub.run()
	if hl != nil {
		n.serveHTTP(hl)
	}
	return n, nil
}

// register registers this broker with the quorum and unfences it.
func (n *Node) register(ctx context.Context, clean bool) error {
	adv, _ := n.cfg.Advertised(config.ListenerKafka)
	host, port := adv.Host, adv.Port
	if host == "" {
		host = "localhost"
	}
	if port == 0 {
		port = int32(n.kafkaL.Addr().(*net.TCPAddr).Port)
	}
	reply, err := n.proposeRetrying(ctx, &quorum.RegisterBroker{
		ID: n.cfg.NodeID, ClusterID: n.clusterID, CleanShutdown: clean,
		Endpoints: []quorum.Endpoint{{Name: config.ListenerKafka, Host: host, Port: port}},
	})
	if err != nil {
		return fmt.Errorf("node: register broker %d: %w", n.cfg.NodeID, err)
	}
	epoch := reply.(*quorum.RegisterBrokerReply).Epoch
	n.epoch.Store(epoch)
	if n.gossip == nil {
		// Without gossip the broker unfences itself once registered,
		// having replayed the metadata log up to its registration.
		if _, err := n.proposeRetrying(ctx, &quorum.UnfenceBroker{ID: n.cfg.NodeID, Epoch: epoch}); err != nil {
			return fmt.Errorf("node: unfence broker %d: %w", n.cfg.NodeID, err)
		}
		n.reconcile()
		return nil
	}
	// With gossip, advertising the new epoch asks the active controller
	// to unfence this broker; wait until the image says it did.
	if err := n.gossip.SetBrokerEpoch(epoch); err != nil {
		// The update stays queued for retransmission and travels in
		// gossip's push-pull syncs too: a broadcast not confirmed within
		// the session timeout (peers restarting after a power loss, this
		// process paused) is no reason to exit. Wait for the unfence.
		n.log.Warn("node: gossip broadcast of the broker epoch not confirmed yet; waiting for the controller to unfence", "epoch", epoch, "err", err)
	}
	for {
		changed := (*broker)(n).Appended() // closed by every reconciliation
		var alive bool
		n.ctrl.View(func(im *quorum.Image) {
			b := im.Brokers[n.cfg.NodeID]
			alive = b.Alive() && b.Epoch == epoch
		})
		if alive {
			n.reconcile()
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("node: broker %d epoch %d was not unfenced by the active controller (is gossip reaching it?): %w", n.cfg.NodeID, epoch, ctx.Err())
		}
	}
}

// proposeRetrying proposes cmd again while the outcome is unknown
// (leadership changed while committing, which happens while a new quorum
// settles): only for commands that are safe to repeat (a repeated
// registration only bumps the epoch again; a repeated unfence is a no-op).
func (n *Node) proposeRetrying(ctx context.Context, cmd quorum.Command) (any, error) {
	for {
		reply, err := n.ctrl.Propose(ctx, cmd)
		if err == nil || !errors.Is(err, quorum.ErrOutcomeUnknown) || ctx.Err() != nil {
			return reply, err
		}
		n.log.Info("node: retrying a command whose outcome is unknown", "command", cmd.CommandType(), "err", err)
	}
}

// KafkaAddr is the address the Kafka listener is bound to.
func (n *Node) KafkaAddr() string { return n.kafkaL.Addr().String() }

// ControllerAddr is the address of the controller (Raft) listener.
func (n *Node) ControllerAddr() string { return n.ctrl.Addr() }

// Close shuts the node down cleanly; see the package doc. ctx bounds the
// wait for Kafka requests in flight.
func (n *Node) Close(ctx context.Context) error {
	n.mu.Lock()
	if n.mu.closed {
		n.mu.Unlock()
		return nil
	}
	n.mu.closed = true
	n.mu.Unlock()
	var errs []error
	if err := n.srv.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("kafka server: %w", err))
	}
	<-n.served
	if n.httpSrv != nil {
		_ = n.httpSrv.Close()
	}
	if n.gossip != nil {
		if err := n.gossip.Leave(2 * time.Second); err != nil {
			errs = append(errs, fmt.Errorf("gossip: %w", err))
		}
	}
	n.stopLoops()
	n.cleaner.Close()
	n.reconcileMu.Lock()
	if err := n.writeHWCheckpoint(); err != nil {
		errs = append(errs, fmt.Errorf("high-watermark checkpoint: %w", err))
	}
	logErr := n.closeLogs()
	n.reconcileMu.Unlock()
	if n.wb != nil {
		n.wb.Close()
	}
	if logErr != nil {
		errs = append(errs, logErr)
	}
	if err := n.idx.Close(); err != nil {
		errs = append(errs, fmt.Errorf("index: %w", err))
	}
	if err := n.ctrl.Close(); err != nil {
		errs = append(errs, fmt.Errorf("quorum: %w", err))
	}
	if len(errs) == 0 && n.logDirOffline() == nil {
		// After a failed log directory the restart is not clean: the
		// logs recover from their checkpoints.
		if err := writeMarker(filepath.Join(n.dir, CleanShutdownFile)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// stopLoops stops the node's goroutines: reconciler, ticker, fetchers,
// AlterPartition sender, maintenance.
func (n *Node) stopLoops() {
	close(n.stop)
	n.cancel()
	n.stopFetchers()
	n.wg.Wait()
}

// tickInterval is the replicas' clock: produce deadlines and
// replica.lag.time.max.ms are counted in these.
const tickInterval = 10 * time.Millisecond

// tickLoop ticks every replica.
func (n *Node) tickLoop() {
	defer n.wg.Done()
	t := time.NewTicker(tickInterval)
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
			for _, r := range n.snapshotReplicas() {
				r.tick()
			}
		}
	}
}

// closeLogs closes every open log; each checkpoints with its clean marker.
func (n *Node) closeLogs() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	var errs []error
	for k, r := range n.mu.replicas {
		r.kill()
		r.cleanup.remove()
		if err := r.log.Close(); err != nil && !errors.Is(err, segment.ErrClosed) {
			errs = append(errs, fmt.Errorf("log %s: %w", k, err))
		}
		delete(n.mu.replicas, k)
	}
	return errors.Join(errs...)
}

func writeMarker(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("node: clean-shutdown marker: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("node: clean-shutdown marker: %w", err)
	}
	return f.Close()
}

// poke wakes the reconciler; it never blocks (OnApply runs on raft's FSM
// goroutine).
func (n *Node) poke() {
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

func (n *Node) reconcileLoop() {
	defer n.wg.Done()
	for {
		select {
		case <-n.stop:
			return
		case <-n.wake:
			n.reconcile()
		}
	}
}

// hwCheckpointInterval is replica.high.watermark.checkpoint.interval.ms.
const hwCheckpointInterval = 5 * time.Second

// recoveryCheckpointInterval is log.flush.offset.checkpoint.interval.ms:
// each log's recovery point is recorded (after an fsync) this often.
const recoveryCheckpointInterval = 60 * time.Second

// maintain runs the time-driven log work: flush.ms, retention, the
// recovery-point and high-watermark checkpoints.
func (n *Node) maintain() {
	defer n.wg.Done()
	period := hwCheckpointInterval
	if f := n.cfg.LogFlushInterval; f > 0 && f < period {
		period = f
	}
	t := time.NewTicker(period)
	defer t.Stop()
	lastRetention, lastHWCkpt, lastRecovery := time.Now(), time.Now(), time.Now()
	for {
		select {
		case <-n.stop:
			return
		case now := <-t.C:
			if n.logDirOffline() != nil {
				continue // nothing more is written to a failed directory
			}
			if now.Sub(lastHWCkpt) >= hwCheckpointInterval {
				lastHWCkpt = now
				if err := n.writeHWCheckpoint(); err != nil {
					n.log.Warn("node: high-watermark checkpoint failed", "err", err)
				}
			}
			retention := now.Sub(lastRetention) >= 5*time.Minute // log.retention.check.interval.ms
			if retention {
				lastRetention = now
			}
			recovery := now.Sub(lastRecovery) >= recoveryCheckpointInterval
			if recovery {
				lastRecovery = now
			}
			for _, r := range n.snapshotReplicas() {
				if err := r.log.MaybeFlush(now); err != nil && !n.checkDiskError(err) {
					n.log.Warn("node: flush failed", "topic", r.topic, "partition", r.partition, "err", err)
				}
				if recovery {
					// Record the recovery point, so that recovery after a
					// crash scans only what came after it.
					if err := r.log.Checkpoint(); err != nil && !n.checkDiskError(err) {
						n.log.Warn("node: recovery-point checkpoint failed", "topic", r.topic, "partition", r.partition, "err", err)
					}
				}
				if retention && r.cleanup.retains() {
					if _, err := r.log.EnforceRetention(now, r.highWatermark()); err != nil && !n.checkDiskError(err) {
						n.log.Warn("node: retention failed", "topic", r.topic, "partition", r.partition, "err", err)
					}
				}
			}
		}
	}
}

func (n *Node) snapshotReplicas() []*replica {
	n.mu.RLock()
	defer n.mu.RUnlock()
	out := make([]*replica, 0, len(n.mu.replicas))
	for _, r := range n.mu.replicas {
		out = append(out, r)
	}
	return out
}

// tp names a partition: the key of the node's maps of partitions.
type tp struct {
	topic     string
	partition int32
}

// String is "<topic>-<partition>": the name of the partition's log and
// its directory, and how logs and /readyz name it.
func (k tp) String() string {
	return k.topic + "-" + strconv.Itoa(int(k.partition))
}

// reconcile makes the open logs match the metadata image: open a log for
// every partition this node hosts, update roles and epochs, delete the logs
// of removed topics.
func (n *Node) reconcile() {
	n.reconcileMu.Lock()
	defer n.reconcileMu.Unlock()
	im, index := n.ctrl.ImageAt()
	if n.logDirOffline() != nil {
		// Its replicas are offline until the node restarts: nothing to
		// open, but the metadata counts as applied here, so admin writes
		// (publish.go) do not wait for this node until their deadline.
		n.sig.Lock()
		n.sig.reconciled = max(n.sig.reconciled, index)
		n.sig.Unlock()
		n.signal()
		return
	}
	self := n.cfg.NodeID
	want := map[tp]bool{}
	// The eligible brokers and their epochs (KIP-841/903), one map for
	// every replica: it is never changed after this.
	brokers := map[int32]int64{}
	for id, b := range im.Brokers {
		if b.Alive() {
			brokers[id] = b.Epoch
		}
	}
	for _, name := range im.SortedTopics() {
		t := im.Topics[name]
		for i := range t.Partitions {
			p := &t.Partitions[i]
			if !contains(p.Replicas, self) {
				continue
			}
			key := tp{name, int32(i)}
			want[key] = true
			n.mu.RLock()
			r, ok := n.mu.replicas[key]
			closed := n.mu.closed
			n.mu.RUnlock()
			if closed {
				return
			}
			if ok && r.topicID != t.ID {
				n.dropReplica(key, r) // a new topic of the same name
				ok = false
			}
			pc, err := n.replicaConfig(t.Configs)
			if err != nil {
				n.log.Error("node: replica config", "partition", key.String(), "err", err)
				continue
			}
			if !ok {
				r, err = n.openReplica(t, int32(i), pc)
				n.mu.Lock()
				if err != nil {
					n.mu.openErrs[key] = err
				} else {
					delete(n.mu.openErrs, key)
				}
				n.mu.Unlock()
				if err != nil {
					n.checkDiskError(err)
					n.log.Error("node: open log", "partition", key.String(), "err", err)
					continue
				}
			}
			n.applyCleanup(r, t)
			r.become(p, pc, brokers)
		}
	}
	n.mu.Lock()
	for key := range n.mu.openErrs {
		if !want[key] {
			delete(n.mu.openErrs, key)
		}
	}
	n.mu.Unlock()
	n.mu.RLock()
	var drop []tp
	for key := range n.mu.replicas {
		if !want[key] {
			drop = append(drop, key)
		}
	}
	n.mu.RUnlock()
	for _, key := range drop {
		n.mu.RLock()
		r := n.mu.replicas[key]
		n.mu.RUnlock()
		n.dropReplica(key, r)
	}
	n.sig.Lock()
	n.sig.reconciled = max(n.sig.reconciled, index)
	n.sig.Unlock()
	n.signal()
}

func (n *Node) openReplica(t *quorum.Topic, partition int32, pc partition.Config) (*replica, error) {
	key := tp{t.Name, partition}
	name := key.String()
	opts := logOptions(n.cfg, t.Configs)
	opts.OnFlush = n.metrics.m.ObserveFlush
	opts.WritebackBytes, opts.Writeback, opts.OnWriteback = n.cfg.LogWritebackIntervalBytes, n.wb, n.metrics.m.ObserveWriteback
	l, rep, err := segment.Open(n.fs, filepath.Join(n.dir, name), name, n.idx, opts)
	if err != nil {
		return nil, err
	}
	if rep.CutReason != "" || len(rep.Damaged) > 0 {
		// Recovery dropped a torn or corrupt tail, or found sealed
		// segments shorter than their seals: the operator should know.
		n.log.Warn("node: log recovery found damage", "partition", name, "cut_reason", rep.CutReason,
			"bytes_cut", rep.BytesCut, "damaged_segments", len(rep.Damaged), "recovery", fmt.Sprintf("%+v", rep))
	} else {
		n.log.Debug("node: opened log", "partition", name, "recovery", fmt.Sprintf("%+v", rep))
	}
	if pr := rep.Producers; pr.BadSnapshots > 0 || pr.Err != nil {
		// The idempotent-producer state came from an older snapshot or a
		// scan; after a scan error it lacks the producers past the damage.
		n.log.Warn("node: producer state recovery", "partition", name, "snapshot", pr.Snapshot,
			"bad_snapshots", pr.BadSnapshots, "batches_scanned", pr.BatchesScanned, "err", pr.Err)
	}
	r, err := newReplica(n, t, partition, l, pc, n.hwCkpt[key])
	if err != nil {
		l.Close()
		return nil, err
	}
	n.mu.Lock()
	n.mu.replicas[key] = r
	n.mu.Unlock()
	return r, nil
}

// dropReplica deletes the log of a partition that left this node.
func (n *Node) dropReplica(key tp, r *replica) {
	n.mu.Lock()
	delete(n.mu.replicas, key)
	n.mu.Unlock()
	r.kill()
	r.cleanup.remove()
	if err := r.log.Delete(); err != nil {
		n.log.Error("node: delete log", "partition", key.String(), "err", err)
	}
}

func (n *Node) replica(topic string, partition int32) *replica {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.mu.replicas[tp{topic, partition}]
}

// signal wakes every long-polling fetch (kafka.Logs.Appended).
func (n *Node) signal() {
	n.sig.Lock()
	close(n.sig.appended)
	n.sig.appended = make(chan struct{})
	n.sig.Unlock()
}

func contains(s []int32, v int32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
