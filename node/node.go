package node

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/sluice-log/sluice/node/cleaner"
	"github.com/sluice-log/sluice/node/config"
	"github.com/sluice-log/sluice/node/coord"
	"github.com/sluice-log/sluice/node/group"
	"github.com/sluice-log/sluice/node/kafka"
	"github.com/sluice-log/sluice/node/meta"
	"github.com/sluice-log/sluice/node/replica"
	"github.com/sluice-log/sluice/node/sasl"
	"github.com/sluice-log/sluice/node/txn"
	"github.com/sluice-log/sluice/node/txncoord"
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
	// KafkaListener stands for the first Kafka listener of the config;
	// any others are bound.
	KafkaListener, ControllerListener net.Listener
	// HTTPListener, when set, serves /health (else the HTTP listener of
	// the config, if any, is bound).
	HTTPListener net.Listener
	// FS holds the partition logs and their index; nil is the real disk
	// (vfs.Default). Tests cut power with vfs.NewCrashableMem; the soak
	// tool wraps the disk to forget unsynced writes.
	FS vfs.FS

	// txnVerifier, when set, verifies transactional batches in place of
	// the transaction coordinator (KIP-890 part 1): tests fake the
	// coordinator's answers with it. Test-only.
	txnVerifier kafka.TxnVerifier

	// skipRecordCheck turns off the leader's record validation on every
	// log (segment.Options.SkipRecordCheck): BenchmarkProduceValidation
	// measures its cost with it. Test-only: no config key sets it.
	skipRecordCheck bool
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
	// kafkaLs are the bound Kafka listeners, in the order of
	// cfg.KafkaListeners (kafkaLs[i] serves cfg.KafkaListeners[i]).
	kafkaLs []net.Listener
	// epoch is the broker epoch of this run's registration, 0 until then
	// (set by register while the reconciler and fetchers may run).
	epoch atomic.Int64
	// prevEpoch is the broker epoch the clean-shutdown marker named (-1:
	// no marker; 0: a marker from before epochs were written in it).
	prevEpoch int64

	clusterID string
	// skipRecordCheck: Options.skipRecordCheck.
	skipRecordCheck bool

	// reconcileMu serialises reconciliations (lock order: first).
	reconcileMu sync.Mutex
	wake        chan struct{}
	// rc is the reconciler's state (under reconcileMu, reconcile.go):
	// primed after its first full pass, and the eligible brokers that
	// pass gave every replica.
	rc struct {
		primed  bool
		brokers map[int32]int64
	}
	// dirty is what applied changes touched since the reconciler last
	// looked (reconcile.go); a leaf.
	dirty struct {
		sync.Mutex
		set dirtySet
	}

	// rm runs the replicas of the partitions hosted here (node/replica).
	rm *replica.Manager
	// txnVerifier verifies transactional batches that open a transaction
	// with their coordinator (KIP-890 part 1, txndata.go); set in Open
	// before the listeners serve, nil: every batch is accepted.
	// testVerifier (Options.txnVerifier) stands in for it in tests.
	txnVerifier, testVerifier kafka.TxnVerifier
	// coord runs the group coordinator's shards (node/coord, groups.go);
	// topicsSeen are the topics of the last reconciliation (under
	// reconcileMu), to tell it which were deleted.
	coord      *coord.Coordinator
	topicsSeen map[string]bool
	// groupTopics are the topics last given to the coordinator (under
	// reconcileMu): SetTopics only when they change.
	groupTopics map[string]group.TopicInfo
	// txnc runs the transaction coordinator's shards (node/txncoord,
	// txns.go).
	txnc *txncoord.Coordinator

	mu struct {
		sync.RWMutex
		// openErrs are the partitions hosted here whose log failed to
		// open at the last reconciliation, with the error (/readyz shows
		// those led here).
		openErrs map[replica.TP]error
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

	// ctx is cancelled when the node stops; stop is closed then too.
	ctx    context.Context
	cancel context.CancelFunc
	stop   chan struct{}
	wg     sync.WaitGroup
	// oauth are the OAUTHBEARER listeners' validators (oauth.go).
	oauth map[string]*sasl.OAuthValidator
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
	// files is the budget of open segment files every log shares
	// (sluice.log.max.open.files).
	files *segment.Files
	// cleaner compacts the logs of compacted topics (compaction.go); nil
	// when log.cleaner.enable is false.
	cleaner *cleaner.Pool
}

// Open starts a node from cfg; see the package doc for the steps. It
// returns once the broker is registered and the Kafka listener serves.
//
// It runs four phases, each undone (in reverse) when a later one fails:
// bind the listeners, open the storage, start the quorum and register,
// serve.
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
		cfg: cfg, log: opts.Logger, fs: opts.FS, dir: cfg.LogDirs[0], clusterID: meta.ClusterID, skipRecordCheck: opts.skipRecordCheck,
		testVerifier: opts.txnVerifier,
		wake:         make(chan struct{}, 1), stop: make(chan struct{}), served: make(chan struct{}),
		dirFailed: make(chan struct{}),
	}
	n.mu.openErrs = map[replica.TP]error{}
	n.sig.appended = make(chan struct{})
	n.ctx, n.cancel = context.WithCancel(context.Background())
	n.metrics.m = newMetrics(n)
	n.checkWriteback("/proc")
	var undo []func()
	defer func() {
		if err != nil {
			for i := len(undo) - 1; i >= 0; i-- {
				undo[i]()
			}
		}
	}()
	l, err := bindListeners(cfg, opts, &undo)
	if err != nil {
		return nil, err
	}
	n.kafkaLs = l.kafka
	clean, err := n.openStorage(&undo)
	if err != nil {
		return nil, err
	}
	if err = n.startQuorum(meta, l.controller, clean, opts.RegisterTimeout, &undo); err != nil {
		return nil, err
	}
	if err = n.serve(l.http); err != nil {
		return nil, err
	}
	return n, nil
}

// listeners are the sockets a node serves on; http is nil without an
// HTTP listener.
type listeners struct {
	kafka            []net.Listener // in the order of cfg.KafkaListeners
	controller, http net.Listener
}

// bindListeners binds the Kafka listeners (every name mapped to
// PLAINTEXT), the HTTP and the controller listener the config names,
// unless opts brings them bound (opts.KafkaListener is the first Kafka
// listener's). A taken port fails here, before anything is opened.
func bindListeners(cfg *config.Config, opts Options, undo *[]func()) (l listeners, err error) {
	for i, kl := range cfg.KafkaListeners {
		ln := opts.KafkaListener
		if i > 0 || ln == nil {
			if ln, err = net.Listen("tcp", kl.Addr()); err != nil {
				return l, fmt.Errorf("node: kafka listener %s: %w", kl.Name, err)
			}
		}
		l.kafka = append(l.kafka, ln)
		*undo = append(*undo, func() { ln.Close() })
	}
	l.http = opts.HTTPListener
	if hl, ok := cfg.Listener(config.ListenerHTTP); ok && l.http == nil {
		if l.http, err = net.Listen("tcp", hl.Addr()); err != nil {
			return l, fmt.Errorf("node: http listener: %w", err)
		}
	}
	if l.http != nil {
		*undo = append(*undo, func() { l.http.Close() })
	}
	cl, _ := cfg.Listener(config.ListenerController)
	if l.controller = opts.ControllerListener; l.controller == nil {
		if l.controller, err = net.Listen("tcp", cl.Addr()); err != nil {
			return l, fmt.Errorf("node: controller listener: %w", err)
		}
	}
	// The quorum owns it once started; closing it again is harmless.
	*undo = append(*undo, func() { l.controller.Close() })
	return l, nil
}

// openStorage takes the clean-shutdown marker (reporting whether the last
// run left one), starts batched writeback, opens the node's segment Index
// and the replica manager, which reads the high-watermark checkpoint. No
// log is opened yet: the reconciler opens them from the metadata.
func (n *Node) openStorage(undo *[]func()) (clean bool, err error) {
	n.prevEpoch = -1
	if b, err := os.ReadFile(filepath.Join(n.dir, CleanShutdownFile)); err == nil {
		clean, n.prevEpoch = true, markerEpoch(b)
		if err := os.Remove(filepath.Join(n.dir, CleanShutdownFile)); err != nil {
			return false, fmt.Errorf("node: %w", err)
		}
	}
	n.files = segment.NewFiles(n.cfg.Scale.MaxOpenFiles())
	if n.cfg.LogWritebackIntervalBytes > 0 {
		n.wb = segment.NewWriteback()
		*undo = append(*undo, n.wb.Close)
	}
	n.cleaner = newCleaner(n)
	*undo = append(*undo, n.cleaner.Close)
	// OpenIndex creates the data directory (with durable parents).
	if n.idx, err = segment.OpenIndex(n.fs, filepath.Join(n.dir, "index"), indexCacheBytes); err != nil {
		return false, fmt.Errorf("node: %w", err)
	}
	*undo = append(*undo, func() { n.idx.Close() })
	n.rm, err = replica.NewManager(replicaHost{n}, replica.Options{
		NodeID: n.cfg.NodeID, Logger: n.log, FS: n.fs, Dir: n.dir,
		ScrubInterval: n.cfg.LogScrubInterval, ScrubBytesPerSecond: n.cfg.LogScrubMaxBytesPerSecond,
		OnCorruptBatch: n.metrics.m.ObserveCorruptBatch,
		FetchTLS:       n.interBrokerTLS(),
		FetchSASL:      n.interBrokerSASL(),
		TxnVerifier:    txnVerify{n},
	})
	if err != nil {
		return false, fmt.Errorf("node: %w", err)
	}
	n.coord = coord.New(coordHost{n, group.OffsetsTopic}, coord.Options{Config: n.cfg.Groups.Coordinator,
		CommitTimeout: n.cfg.Groups.OffsetsCommitTimeout, Logger: n.log})
	n.topicsSeen = map[string]bool{}
	*undo = append(*undo, n.coord.Close)
	n.txnc = txncoord.New(txnHost{coordHost{n, txn.StateTopic}}, txncoord.Options{Config: n.cfg.Transactions.Coordinator, Logger: n.log})
	*undo = append(*undo, n.txnc.Close)
	n.txnVerifier = (*broker)(n)
	return clean, nil
}

// startQuorum starts the quorum Controller on ctrlL (bootstrapping as a
// voter, or joining as a non-voter), the reconciler, the log-dir watcher
// and the replica manager, liveness gossip when configured, and then
// registers the broker and waits until it is unfenced (register).
func (n *Node) startQuorum(m meta.Meta, ctrlL net.Listener, clean bool, timeout time.Duration, undo *[]func()) (err error) {
	cfg := n.cfg
	voters := cfg.ControllerQuorumVoters
	if len(voters) == 0 {
		voters = m.InitialControllers
	}
	boot, err := meta.ReadBootstrap(n.dir)
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	qc := quorum.Config{
		BootstrapScram: boot,
		// The cluster's feature levels start at this node's settings
		// (when it is the first active controller).
		BootstrapFeatures: map[string]int16{quorum.FeatureTransactionVersion: cfg.Transactions.Version},
		NodeID:            cfg.NodeID, DirectoryID: m.DirectoryID, Dir: filepath.Join(n.dir, "quorum"), Listener: ctrlL,
		ClusterID: m.ClusterID, PeerLog: n.log,
		Policy:           quorumPolicy(cfg),
		HeartbeatTimeout: cfg.Failover.RaftHeartbeatTimeout, ElectionTimeout: cfg.Failover.RaftElectionTimeout,
		LeaderLeaseTimeout: cfg.Failover.RaftLeaderLease(),
		OnApply:            func(c quorum.Change) { n.metrics.apply(c, cfg.NodeID); n.noteChange(c); n.poke() },
		AwaitApplied:       n.awaitReconciled,
	}
	if ct := cfg.TLS[config.ListenerController]; ct != nil {
		// Mutual TLS between the nodes on the controller port.
		qc.ServerTLS, qc.ClientTLS = ct.Server, ct.ClientFor
		if cfg.Authorizer {
			qc.AuthorizePeer = n.authorizeControllerPeer
		}
		if cfg.NodePrincipal != "" {
			qc.AuthorizePeerNode = n.authorizePeerNode
		}
	}
	if a, ok := cfg.Advertised(config.ListenerController); ok && a.Host != "" {
		qc.AdvertiseAddr = net.JoinHostPort(a.Host, strconv.Itoa(int(ctrlL.Addr().(*net.TCPAddr).Port)))
		if a.Port != 0 {
			qc.AdvertiseAddr = a.Addr()
		}
	}
	for _, v := range voters {
		// A directory formatted without initial controllers (a
		// replacement controller) never bootstraps: it joins as an
		// observer and waits for add-controller (quorum/voters.go).
		if v.ID == cfg.NodeID && cfg.Controller && m.Bootstraps() {
			qc.InitialVoters = voters
		}
	}
	if n.ctrl, err = quorum.Open(qc); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	*undo = append(*undo, func() { n.ctrl.Close() })
	if len(qc.InitialVoters) == 0 {
		if err = n.joinQuorum(voters, timeout); err != nil {
			return err
		}
	}

	n.wg.Add(2)
	go n.reconcileLoop()
	go n.logDirLoop()
	if cfg.AutoLeaderRebalanceEnable {
		n.wg.Add(1)
		go n.leaderRebalanceLoop()
	}
	n.rm.Start()
	*undo = append(*undo, func() { n.stopLoops(); n.rm.CloseLogs() })

	if gl, ok := cfg.Listener(config.ListenerGossip); ok {
		gc := quorum.GossipConfig{NodeID: cfg.NodeID, BindAddr: gl.Host, BindPort: int(gl.Port), SessionTimeout: cfg.BrokerSessionTimeout, ClusterID: n.clusterID, Log: n.log,
			ProbeListener: cfg.InterBrokerListener, ProbeInterval: cfg.BrokerProbeInterval, Keys: cfg.GossipKeys,
			OnFence: func(cause quorum.FenceCause, since time.Time, moved int) {
				n.metrics.m.ObserveFence(string(cause), time.Since(since), moved)
			}}
		if a, ok := cfg.Advertised(config.ListenerGossip); ok && a.Port != 0 {
			if gc.AdvertiseAddr, err = gossipAdvertiseIP(a.Host); err != nil {
				return fmt.Errorf("node: advertised GOSSIP listener: %w", err)
			}
			gc.AdvertisePort = int(a.Port)
		}
		if n.gossip, err = quorum.StartGossip(gc, n.ctrl); err != nil {
			return fmt.Errorf("node: %w", err)
		}
		*undo = append(*undo, func() { n.gossip.Close() })
		if len(cfg.GossipSeeds) > 0 {
			if _, err := n.gossip.Join(cfg.GossipSeeds); err != nil {
				// Not fatal: the others may start later and join us.
				n.log.Warn("node: gossip join", "seeds", cfg.GossipSeeds, "err", err)
			}
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return n.register(ctx, clean)
}

// serve starts the Kafka protocol server on the Kafka listener, the
// maintenance loop and, with an HTTP listener, /healthz, /readyz and
// /metrics.
func (n *Node) serve(httpL net.Listener) (err error) {
	cfg := n.cfg
	kopts := kafka.Options{MaxRequestBytes: cfg.SocketRequestMaxBytes, Logger: n.log, Observer: n.metrics.m.Requests,
		MaxConnections: int(cfg.MaxConnections), MaxConnectionsPerIP: int(cfg.MaxConnectionsPerIP),
		MaxConnectionsPerIPOverrides: cfg.MaxConnectionsPerIPOverrides, ConnectionsMaxIdle: cfg.ConnectionsMaxIdle,
		FailedAuthenticationDelay: cfg.FailedAuthenticationDelay, Authorizer: n.kafkaAuthorizer(),
		FetchSessionCacheSlots: cfg.Scale.FetchSessionSlots(),
		QuotaWindowNum:         int(cfg.Quota.Num), QuotaWindowSize: cfg.Quota.Size}
	if len(cfg.KafkaListeners) > 1 {
		// Clients have listeners of their own: replica fetches are taken
		// only on the inter-broker one (issue 14).
		kopts.ReplicaListener = cfg.InterBrokerListener
	}
	if cfg.NodePrincipal != "" {
		kopts.ReplicaPrincipal = cfg.NodePrincipalOf
	}
	if n.srv, err = kafka.NewServer((*broker)(n), kopts); err != nil {
		return err
	}
	if err := n.oauthValidators(); err != nil {
		return err
	}
	var serving sync.WaitGroup
	for i, ln := range n.kafkaLs {
		name := cfg.KafkaListeners[i].Name
		serving.Go(func() {
			if err := n.srv.ServeListenerSecure(name, ln, n.listenerSecurity(name)); err != nil && !errors.Is(err, kafka.ErrServerClosed) {
				n.log.Error("node: kafka listener failed", "listener", name, "err", err)
			}
		})
	}
	go func() {
		serving.Wait()
		close(n.served)
	}()
	n.wg.Add(1)
	go n.maintain()
	if cfg.TLSReloadInterval > 0 && len(cfg.TLS) > 0 {
		n.wg.Add(1)
		go n.tlsReloadLoop(cfg.TLSReloadInterval)
	}
	if httpL != nil {
		n.serveHTTP(httpL)
	}
	return nil
}

// gossipAdvertiseIP is the address memberlist advertises for host, which
// must be an IP there: "" for a wildcard or empty host (memberlist then
// picks this host's private address, a container's own), the address a
// host name resolves to (a container's hostname on its network) otherwise.
func gossipAdvertiseIP(host string) (string, error) {
	if host == "" {
		return "", nil
	}
	if ip := net.ParseIP(host); ip != nil {
		if ip.IsUnspecified() {
			return "", nil
		}
		return host, nil
	}
	ips, err := net.LookupIP(host)
	if err != nil || len(ips) == 0 {
		return "", fmt.Errorf("host %s does not resolve (%v); advertise an IP address or a name this node resolves", host, err)
	}
	for _, ip := range ips {
		if ip.To4() != nil {
			return ip.String(), nil
		}
	}
	return ips[0].String(), nil
}

// register registers this broker with the quorum and unfences it.
func (n *Node) register(ctx context.Context, clean bool) error {
	reply, err := n.proposeRetrying(ctx, &quorum.RegisterBroker{
		ID: n.cfg.NodeID, ClusterID: n.clusterID, CleanShutdown: clean, PreviousBrokerEpoch: n.prevEpoch,
		Endpoints: n.endpoints(), Rack: n.cfg.Racks.Rack,
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

// endpoints are the advertised addresses of the Kafka listeners, by name,
// as the broker registers them: clients are told those of the listener
// they connected to, and replica fetchers dial the inter-broker one.
func (n *Node) endpoints() []quorum.Endpoint {
	var out []quorum.Endpoint
	for i, kl := range n.cfg.KafkaListeners {
		adv, _ := n.cfg.Advertised(kl.Name)
		host, port := adv.Host, adv.Port
		if host == "" {
			host = "localhost"
		}
		if port == 0 {
			port = int32(n.kafkaLs[i].Addr().(*net.TCPAddr).Port)
		}
		out = append(out, quorum.Endpoint{Name: kl.Name, Host: host, Port: port})
	}
	return out
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

// interBrokerTLS is how replica fetchers dial an SSL inter-broker
// listener (its keystore as client certificate, its truststore as
// roots); nil when that listener is PLAINTEXT.
func (n *Node) interBrokerTLS() func(addr string) *tls.Config {
	lt := n.cfg.TLS[n.cfg.InterBrokerListener]
	if lt == nil {
		return nil
	}
	return lt.ClientFor
}

// KafkaAddr is the address the first Kafka listener is bound to.
func (n *Node) KafkaAddr() string { return n.kafkaLs[0].Addr().String() }

// ControllerAddr is the address of the controller (Raft) listener.
func (n *Node) ControllerAddr() string { return n.ctrl.Addr() }

// Close shuts the node down cleanly; see the package doc. ctx bounds the
// wait for Kafka requests in flight.
func (n *Node) Close(ctx context.Context) error {
	n.mu.Lock()
	closed := n.mu.closed
	n.mu.Unlock()
	if closed {
		return nil
	}
	if n.cfg.ControlledShutdownEnable {
		n.controlledShutdown(ctx)
	}
	n.mu.Lock()
	if n.mu.closed {
		n.mu.Unlock()
		return nil
	}
	n.mu.closed = true
	n.mu.Unlock()
	var errs []error
	// Requests waiting in the group coordinator (a JoinGroup waits for
	// its rebalance) are answered NOT_COORDINATOR now, and their clients
	// go to the new coordinators, instead of holding the shutdown.
	n.coord.Close()
	n.txnc.Close()
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
	n.coord.Close()
	n.txnc.Close()
	if err := n.rm.WriteHWCheckpoint(); err != nil {
		errs = append(errs, fmt.Errorf("high-watermark checkpoint: %w", err))
	}
	logErr := n.rm.CloseLogs()
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
		if err := writeMarker(filepath.Join(n.dir, CleanShutdownFile), n.epoch.Load()); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// controlledShutdown asks the active controller to move this broker's
// leaderships and ISR memberships to the other replicas (Kafka's
// controlled shutdown; quorum.ControlledShutdown) and waits until every
// live broker has the change in effect (the new leaders lead), for at
// most ControlledShutdownTimeout or until ctx ends. The node keeps serving meanwhile: its replicas become
// followers, and a producer waiting on one gets NOT_LEADER_OR_FOLLOWER
// and retries at the new leader. A failure is logged; the stop goes on.
func (n *Node) controlledShutdown(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, n.cfg.ControlledShutdownTimeout)
	defer cancel()
	start := time.Now()
	var epoch int64 = -1
	var led int
	var movable bool
	n.ctrl.View(func(im *quorum.Image) {
		if b := im.Brokers[n.cfg.NodeID]; b != nil && !b.Fenced && !b.ShuttingDown {
			epoch = b.Epoch
		}
		led = n.partitionsLed(im)
		movable = n.anyISRPeerAlive(im)
	})
	if epoch < 0 || !movable {
		// Fenced or already shutting down; or no partition of ours has
		// another live in-sync replica to take over (the last node of a
		// cluster being stopped, whose quorum may already be gone).
		return
	}
	// Published: answered once every live broker has applied and
	// reconciled it, that is once the new leaders lead (node/publish.go).
	if _, err := n.publish(ctx, &quorum.ControlledShutdown{ID: n.cfg.NodeID, Epoch: epoch}); err != nil {
		n.log.Warn("node: controlled shutdown: the controller did not take it; closing with leaderships in place", "err", err, "partitions_led", led)
		return
	}
	var still int
	n.ctrl.View(func(im *quorum.Image) { still = n.partitionsLed(im) })
	// What still leads had no other live in-sync replica.
	n.log.Info("node: controlled shutdown: leaderships moved", "took", time.Since(start), "partitions_led_before", led, "still_led", still)
}

// anyISRPeerAlive says whether some partition has this node and another
// live broker in its ISR: then a controlled shutdown has something to move.
func (n *Node) anyISRPeerAlive(im *quorum.Image) bool {
	for _, t := range im.Topics {
		for _, p := range t.Partitions {
			if !slices.Contains(p.ISR, n.cfg.NodeID) {
				continue
			}
			for _, r := range p.ISR {
				if r != n.cfg.NodeID && im.Brokers[r].Alive() {
					return true
				}
			}
		}
	}
	return false
}

// partitionsLed counts the partitions im says this node leads.
func (n *Node) partitionsLed(im *quorum.Image) int {
	led := 0
	for _, t := range im.Topics {
		for _, p := range t.Partitions {
			if p.Leader == n.cfg.NodeID {
				led++
			}
		}
	}
	return led
}

// stopLoops stops the node's goroutines: reconciler, log-dir watcher,
// maintenance, HTTP, and the replica manager's (ticker, fetchers,
// AlterPartition sender, scrubber).
func (n *Node) stopLoops() {
	close(n.stop)
	n.cancel()
	n.rm.Stop()
	n.wg.Wait()
}

func writeMarker(path string, epoch int64) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("node: clean-shutdown marker: %w", err)
	}
	if _, err := f.WriteString(strconv.FormatInt(epoch, 10)); err != nil {
		f.Close()
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
				if err := n.rm.WriteHWCheckpoint(); err != nil {
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
			for _, r := range n.rm.Replicas() {
				l := r.Log()
				if err := l.MaybeFlush(now); err != nil && !n.checkDiskError(err) {
					n.log.Warn("node: flush failed", "topic", r.Topic(), "partition", r.Partition(), "err", err)
				}
				if recovery {
					// Record the recovery point, so that recovery after a
					// crash scans only what came after it.
					if err := l.Checkpoint(); err != nil && !n.checkDiskError(err) {
						n.log.Warn("node: recovery-point checkpoint failed", "topic", r.Topic(), "partition", r.Partition(), "err", err)
					}
				}
				if retention && r.Cleanup().Retains() {
					if _, err := l.EnforceRetention(now, r.HighWatermark()); err != nil && !n.checkDiskError(err) {
						n.log.Warn("node: retention failed", "topic", r.Topic(), "partition", r.Partition(), "err", err)
					}
				}
			}
		}
	}
}

func (n *Node) openReplica(t *quorum.Topic, partition int32, pc partition.Config) (*replica.Replica, error) {
	key := replica.TP{Topic: t.Name, Partition: partition}
	name := key.String()
	opts := logOptions(n.cfg, t.Configs)
	opts.OnFlush = n.metrics.m.ObserveFlush
	opts.SkipRecordCheck = n.skipRecordCheck
	opts.WritebackBytes, opts.Writeback, opts.OnWriteback = n.cfg.LogWritebackIntervalBytes, n.wb, n.metrics.m.ObserveWriteback
	opts.Files = n.files
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
	return n.rm.Add(t, partition, l, pc)
}

// dropReplica deletes the log of a partition that left this node.
func (n *Node) dropReplica(key replica.TP) { n.rm.Drop(key) }

// replica returns the local replica of a partition, nil when none.
func (n *Node) replica(topic string, partition int32) *replica.Replica {
	return n.rm.Replica(replica.TP{Topic: topic, Partition: partition})
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
