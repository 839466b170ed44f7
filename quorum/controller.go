package quorum

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Voter is one initial controller: a Raft voter.
type Voter struct {
	ID   int32
	Addr string // host:port of its controller (Raft) listener
}

// Config configures a Controller. Zero durations take raft's defaults.
type Config struct {
	// NodeID is this node's id; it is also its Raft server id (decimal).
	NodeID int32
	// DirectoryID is the id of the node's formatted directory
	// (meta.properties); AddVoter may check it (voters.go).
	DirectoryID UUID
	// Dir holds raft.db (bolt log and stable store) and snapshots/.
	Dir string
	// Listener, if set, is the controller port, already bound. Otherwise
	// BindAddr is listened on.
	Listener net.Listener
	BindAddr string
	// AdvertiseAddr is the address peers dial; default the listener's.
	AdvertiseAddr string
	// InitialVoters bootstraps a new quorum (ignored when Dir has Raft
	// state). Every initial voter must be given the same list. Empty means
	// this node waits to be added (AddNonvoter / AddVoter on the leader).
	InitialVoters []Voter
	// ClusterID is written to the image by the first leader, and every
	// connection to and from the controller port carries it (hello.go): a
	// peer that names another cluster is refused. Empty accepts any peer
	// (tests); at most 64 bytes.
	ClusterID string
	// BootstrapScram are SCRAM credentials written with the cluster id
	// when it is first written (sluice init --add-scram); ignored after.
	BootstrapScram []ScramCredentialRecord
	// BootstrapFeatures are the feature levels written with the cluster
	// id when it is first written (features.go); ignored after.
	BootstrapFeatures map[string]int16
	Policy            Policy
	// OnApply receives the stream of applied changes; see FSM. It may run
	// before Open returns (raft restores the latest snapshot in Open).
	OnApply func(Change)
	// Logger for raft; nil silences it.
	Logger hclog.Logger
	// ServerTLS and ClientTLS, when set, secure the controller port with
	// mutual TLS (the node's CONTROLLER listener mapped to SSL): accepted
	// connections are served with ServerTLS, which must require and verify
	// client certificates (tls.RequireAndVerifyClientCert), and peers are
	// dialled with ClientTLS(addr), which presents this node's
	// certificate. The handshake comes before the hello: a peer whose
	// certificate the truststore does not trust is refused, counted and
	// logged before raft or the forwarding server reads a byte of it.
	ServerTLS *tls.Config
	ClientTLS func(addr string) *tls.Config
	// AuthorizePeer, if set (with ServerTLS), decides from the verified
	// certificate of an accepted peer whether it is a member of the
	// cluster (the node: a super user, when the authorizer is on); an
	// error refuses the connection, counted and logged with the reason.
	// A trusted CA may also sign clients' certificates, which must not
	// reach raft or forwarding.
	AuthorizePeer func(cert *x509.Certificate) error
	// AuthorizePeerNode, if set (with ServerTLS), decides whether the
	// verified certificate of an accepted peer may speak for the node id
	// its hello names (the node: sluice.node.principal.pattern), so one
	// member's certificate cannot pose as another member in raft or
	// forwarding; an error refuses the connection, counted and logged.
	AuthorizePeerNode func(cert *x509.Certificate, nodeID int32) error
	// PeerLog receives one line per refused controller-port connection
	// (another cluster's id, a malformed hello), at most one a minute per
	// peer host and reason; nil discards.
	PeerLog *slog.Logger

	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	CommitTimeout      time.Duration
	// SnapshotThreshold and TrailingLogs: see raft.Config.
	SnapshotThreshold uint64
	TrailingLogs      uint64
	// ApplyTimeout bounds one Raft apply and one forwarded request (10s).
	ApplyTimeout time.Duration
	// AwaitApplied, if set, waits until the entry at index is in effect on
	// this node (the node: applied and reconciled) or ctx ends; it answers
	// AwaitBrokers (publish.go). nil waits until the image holds index.
	AwaitApplied func(ctx context.Context, index uint64) error
}

// Controller is one node's member of the metadata quorum: a voter (an
// initial controller) or a non-voter (a broker that only replays the log).
// All methods are safe for concurrent use.
type Controller struct {
	cfg  Config
	log  hclog.Logger
	fsm  *FSM
	raft *raft.Raft
	// raftReady is closed once raft is set: forwarded requests, which the
	// mux accepts from the start (raft's transport needs it), wait for it.
	raftReady chan struct{}
	store     *raftboltdb.BoltStore
	mux       *muxListener
	trans     *raft.NetworkTransport

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// proposeMu serialises planning and the order of raft.Apply calls on
	// the leader (lock order: before FSM.mu). It guards barrierTerm and spec.
	proposeMu   sync.Mutex
	barrierTerm uint64
	// spec is the leader's speculative image: the committed image plus the
	// records of every entry it appended and is still waiting for. Commands
	// are planned against it, so several can be in flight (pipelined) while
	// their entries commit in one batch. nil means "rebuild after a Barrier".
	spec *Image

	connMu sync.Mutex
	conns  map[net.Conn]struct{} // open forwarding connections; nil after Close
	// pool keeps this node's idle forwarding connections (forward_pool.go).
	pool forwardPool

	// caught is the leader's memory for DescribeQuorum (status.go).
	caught caughtUp

	commits commitStats // RaftStats

	// nudges asks nudgeLoop for a Barrier (publish.go); capacity 1.
	nudges chan struct{}

	// fresh: Open found no Raft state in Dir (a new or wiped disk). Join
	// says so, and the leader refuses a fresh node that is still a voter
	// (voters.go).
	fresh bool
}

// Open starts a controller: opens (or creates) Dir, starts Raft on the
// controller port and, with InitialVoters and no existing state, bootstraps.
func Open(cfg Config) (*Controller, error) {
	if cfg.NodeID < 0 || cfg.Dir == "" {
		return nil, fmt.Errorf("quorum: Config needs a NodeID >= 0 and a Dir (got %d, %q)", cfg.NodeID, cfg.Dir)
	}
	if len(cfg.ClusterID) > maxClusterIDLen {
		return nil, fmt.Errorf("quorum: cluster id %q is longer than %d bytes", cfg.ClusterID, maxClusterIDLen)
	}
	if cfg.ApplyTimeout <= 0 {
		cfg.ApplyTimeout = 10 * time.Second
	}
	logger := cfg.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	ln := cfg.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", cfg.BindAddr); err != nil {
			return nil, fmt.Errorf("quorum: controller listener: %w", err)
		}
	}
	adv := ln.Addr()
	if cfg.AdvertiseAddr != "" {
		a, err := net.ResolveTCPAddr("tcp", cfg.AdvertiseAddr)
		if err != nil {
			ln.Close()
			return nil, fmt.Errorf("quorum: advertise address: %w", err)
		}
		adv = a
	}
	c := &Controller{cfg: cfg, log: logger, fsm: NewFSM(cfg.OnApply), conns: map[net.Conn]struct{}{}, nudges: make(chan struct{}, 1)}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.raftReady = make(chan struct{})
	if (cfg.ServerTLS == nil) != (cfg.ClientTLS == nil) {
		ln.Close()
		return nil, errors.New("quorum: Config needs both ServerTLS and ClientTLS, or neither")
	}
	if cfg.ServerTLS != nil && cfg.ServerTLS.ClientAuth != tls.RequireAndVerifyClientCert {
		ln.Close()
		return nil, errors.New("quorum: Config.ServerTLS must require and verify client certificates (mutual TLS)")
	}
	c.mux = newMuxListener(ln, adv, c.serveForward, hello{ClusterID: cfg.ClusterID, NodeID: cfg.NodeID}, newRefusals(cfg.PeerLog), cfg.ServerTLS, cfg.ClientTLS)
	c.mux.authorizePeer, c.mux.authorizePeerNode = cfg.AuthorizePeer, cfg.AuthorizePeerNode
	c.trans = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: c.mux, MaxPool: 3, Timeout: 10 * time.Second, Logger: logger,
	})
	fail := func(err error) (*Controller, error) {
		c.cancel()
		c.trans.Close()
		c.mux.Close()
		if c.store != nil {
			c.store.Close()
		}
		return nil, err
	}
	var err error
	if c.store, err = raftboltdb.New(raftboltdb.Options{Path: filepath.Join(cfg.Dir, "raft.db")}); err != nil {
		return fail(fmt.Errorf("quorum: raft log: %w", err))
	}
	logs, err := raft.NewLogCache(512, c.store)
	if err != nil {
		return fail(err)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(cfg.Dir, 2, logger)
	if err != nil {
		return fail(fmt.Errorf("quorum: snapshots: %w", err))
	}
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(strconv.Itoa(int(cfg.NodeID)))
	rc.Logger = logger
	setIf := func(d *time.Duration, v time.Duration) {
		if v > 0 {
			*d = v
		}
	}
	setIf(&rc.HeartbeatTimeout, cfg.HeartbeatTimeout)
	setIf(&rc.ElectionTimeout, cfg.ElectionTimeout)
	setIf(&rc.LeaderLeaseTimeout, cfg.LeaderLeaseTimeout)
	setIf(&rc.CommitTimeout, cfg.CommitTimeout)
	if cfg.SnapshotThreshold > 0 {
		rc.SnapshotThreshold = cfg.SnapshotThreshold
	}
	if cfg.TrailingLogs > 0 {
		rc.TrailingLogs = cfg.TrailingLogs
	}
	// A buffered apply channel lets raft.Apply return at once, so pipelined
	// commands queue up and share one disk write (group commit).
	rc.BatchApplyCh = true
	notify := make(chan bool, 8)
	rc.NotifyCh = notify
	has, err := raft.HasExistingState(logs, c.store, snaps)
	if err != nil {
		return fail(err)
	}
	c.fresh = !has
	if len(cfg.InitialVoters) > 0 {
		if !has {
			var conf raft.Configuration
			for _, v := range cfg.InitialVoters {
				conf.Servers = append(conf.Servers, raft.Server{
					Suffrage: raft.Voter, ID: serverID(v.ID), Address: raft.ServerAddress(v.Addr),
				})
			}
			if err := raft.BootstrapCluster(rc, logs, c.store, snaps, c.trans, conf); err != nil {
				return fail(fmt.Errorf("quorum: bootstrap: %w", err))
			}
		}
	}
	if c.raft, err = raft.NewRaft(rc, c.fsm, logs, c.store, snaps, c.trans); err != nil {
		return fail(fmt.Errorf("quorum: raft: %w", err))
	}
	close(c.raftReady)
	c.wg.Add(2)
	go c.leaderLoop(notify)
	go c.nudgeLoop()
	return c, nil
}

func serverID(id int32) raft.ServerID { return raft.ServerID(strconv.Itoa(int(id))) }

// leaderLoop does the first duties of a new leader: it writes the cluster id.
func (c *Controller) leaderLoop(notify <-chan bool) {
	defer c.wg.Done()
	for {
		select {
		case <-c.ctx.Done():
			return
		case leader := <-notify:
			if !leader || c.cfg.ClusterID == "" {
				continue
			}
			ctx, cancel := context.WithTimeout(c.ctx, c.cfg.ApplyTimeout)
			if _, _, err := c.proposeLocal(ctx, &SetClusterID{ClusterID: c.cfg.ClusterID, Scram: c.cfg.BootstrapScram, Features: c.cfg.BootstrapFeatures}, false); err != nil {
				c.log.Error("quorum: cannot record the cluster id", "cluster-id", c.cfg.ClusterID, "error", err)
			}
			cancel()
		}
	}
}

// Addr returns the advertised controller address of this node.
func (c *Controller) Addr() string { return c.mux.Addr().String() }

// IsLeader reports whether this node is the active controller.
func (c *Controller) IsLeader() bool { return c.raft.State() == raft.Leader }

// Leader returns the active controller as this node knows it (-1, "" when
// none is known).
func (c *Controller) Leader() (int32, string) {
	addr, id := c.raft.LeaderWithID()
	if id == "" {
		return -1, ""
	}
	n, err := strconv.Atoi(string(id))
	if err != nil {
		return -1, string(addr)
	}
	return int32(n), string(addr)
}

// View calls fn with the local image under the read lock (see FSM.View).
func (c *Controller) View(fn func(*Image)) { c.fsm.View(fn) }

// Image returns a deep copy of the local image.
func (c *Controller) Image() *Image { return c.fsm.Image() }

// ImageAt returns a deep copy of the local image and the Raft index it holds.
func (c *Controller) ImageAt() (*Image, uint64) { return c.fsm.ImageAt() }

// AppliedIndex returns the Raft index of the last entry applied locally.
func (c *Controller) AppliedIndex() uint64 { return c.fsm.AppliedIndex() }

// Snapshot takes a Raft snapshot now (normally raft takes them by itself).
func (c *Controller) Snapshot() error { return c.wait(c.ctx, c.raft.Snapshot()) }

// Propose plans cmd on the active controller, commits its records through
// Raft and returns the command's reply (see each command's doc) once the
// records are applied on the active controller. On a follower it forwards
// the command over TCP and retries on leader changes until ctx ends.
//
// A command whose outcome is unknown returns an error wrapping
// ErrOutcomeUnknown and is not retried here.
func (c *Controller) Propose(ctx context.Context, cmd Command) (any, error) {
	reply, _, err := c.propose(ctx, cmd, false)
	return reply, err
}

// propose is Propose, also returning the index (see Publish); with nudge
// the active controller nudges the followers after the commit.
func (c *Controller) propose(ctx context.Context, cmd Command, nudge bool) (any, uint64, error) {
	for {
		if c.ctx.Err() != nil {
			return nil, 0, ErrClosed
		}
		if c.IsLeader() {
			reply, index, err := c.proposeLocal(ctx, cmd, nudge)
			if !errors.Is(err, kerr.NotController) {
				return reply, index, err
			}
		} else if _, addr := c.Leader(); addr != "" && addr != c.Addr() {
			reply, index, err := c.forwardCommand(ctx, addr, cmd, nudge)
			if err == nil {
				return reply, index, nil
			}
			if !retriableRemote(err) {
				return nil, 0, err
			}
		}
		if err := c.pause(ctx); err != nil {
			return nil, 0, err
		}
	}
}

func outcomeUnknown(err error) error {
	return fmt.Errorf("%w: %w: %v", ErrOutcomeUnknown, kerr.RequestTimedOut, err)
}

// pause waits a little before looking for the leader again.
func (c *Controller) pause(ctx context.Context) error {
	t := time.NewTimer(20 * time.Millisecond)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("%w: %v", ErrNoLeader, ctx.Err())
	case <-c.ctx.Done():
		return ErrClosed
	case <-t.C:
		return nil
	}
}

// proposeLocal runs cmd on this node, which must be the active controller.
//
// Under proposeMu it plans cmd against the speculative image, replays the
// records into it and hands the entry to raft; it then waits for the commit
// without the lock, so the next command can be planned and appended while
// this one is being replicated and fsynced. Raft keeps the order of Apply
// calls, so the committed image goes through the same states as spec. When
// an entry fails, spec is dropped and rebuilt, after a Barrier, from the
// committed image.
//
// The index returned is the entry's, or, for a command that needed no
// records, the index the local image holds. With nudge, a committed entry
// nudges the followers (publish.go).
func (c *Controller) proposeLocal(ctx context.Context, cmd Command, nudge bool) (any, uint64, error) {
	timeout := c.cfg.ApplyTimeout
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < timeout {
		timeout = time.Until(dl)
	}
	start := time.Now()
	reply, f, err := c.appendCommand(cmd, timeout)
	if err != nil {
		return reply, 0, err
	}
	if f == nil {
		return reply, c.fsm.AppliedIndex(), nil
	}
	if err := c.wait(ctx, f); err != nil {
		c.dropSpec()
		if errors.Is(err, ErrClosed) || ctx.Err() != nil {
			return nil, 0, outcomeUnknown(err)
		}
		return nil, 0, c.raftError(err, true)
	}
	if rerr, ok := f.Response().(error); ok && rerr != nil {
		// Planned against a stale image: some records may have applied.
		c.dropSpec()
		return nil, 0, outcomeUnknown(rerr)
	}
	c.commits.observe(time.Since(start))
	if nudge {
		c.nudge()
	}
	return reply, f.Index(), nil
}

// appendCommand plans cmd and appends its entry; f is nil when there is
// nothing to append.
func (c *Controller) appendCommand(cmd Command, timeout time.Duration) (any, raft.ApplyFuture, error) {
	c.proposeMu.Lock()
	defer c.proposeMu.Unlock()
	if c.raft.State() != raft.Leader {
		return nil, nil, kerrf(kerr.NotController, "node %d is not the active controller", c.cfg.NodeID)
	}
	// Plan against an image that holds every entry of earlier terms.
	if term := c.raft.CurrentTerm(); term != c.barrierTerm || c.spec == nil {
		if err := c.wait(c.ctx, c.raft.Barrier(timeout)); err != nil {
			return nil, nil, c.raftError(err, false)
		}
		c.barrierTerm = term
		c.spec = c.fsm.Image()
	}
	recs, reply, err := Plan(c.spec, c.cfg.Policy, cmd)
	if err != nil || len(recs) == 0 {
		return reply, nil, err
	}
	data, err := EncodeEntry(recs)
	if err != nil {
		return nil, nil, err
	}
	for _, r := range recs {
		if err := c.spec.Replay(r); err != nil {
			// Plan emitted a record that does not fit the image it was
			// planned on: a bug in Plan.
			panic(fmt.Sprintf("quorum: %T planned %s, which does not replay: %v", cmd, r, err))
		}
	}
	if invariantsOn {
		if err := c.spec.CheckInvariants(); err != nil {
			panic(fmt.Sprintf("quorum: speculative image after %T: %v", cmd, err))
		}
	}
	return reply, c.raft.Apply(data, timeout), nil
}

// dropSpec forgets the speculative image after a failed entry: the next
// command waits for a Barrier and plans on the committed image.
func (c *Controller) dropSpec() {
	c.proposeMu.Lock()
	c.spec = nil
	c.proposeMu.Unlock()
}

// specMatches reports, for tests, whether the speculative image (if any)
// equals the committed one; call it when no command is in flight.
func (c *Controller) specMatches() bool {
	c.proposeMu.Lock()
	defer c.proposeMu.Unlock()
	if c.spec == nil {
		return true
	}
	var a, b strings.Builder
	_ = WriteSnapshot(&a, c.spec, 0)
	_ = WriteSnapshot(&b, c.fsm.Image(), 0)
	return a.String() == b.String()
}

func (c *Controller) raftError(err error, appended bool) error {
	switch {
	case errors.Is(err, raft.ErrRaftShutdown):
		return ErrClosed
	case errors.Is(err, raft.ErrNotLeader):
		return kerrf(kerr.NotController, "%v", err)
	case appended && (errors.Is(err, raft.ErrLeadershipLost) || errors.Is(err, raft.ErrEnqueueTimeout)):
		return outcomeUnknown(err)
	case errors.Is(err, raft.ErrLeadershipLost):
		return kerrf(kerr.NotController, "%v", err)
	}
	return err
}

// wait returns f.Error(); ctx.Err() if ctx ends first; ErrClosed if the
// controller closes first. raft never answers futures still queued in its
// buffered apply channel when it shuts down (BatchApplyCh), so no wait may
// rely on raft alone; the goroutine of such a future stays blocked after
// Close.
func (c *Controller) wait(ctx context.Context, f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		if c.ctx.Err() != nil {
			return ErrClosed
		}
		return ctx.Err()
	case <-c.ctx.Done():
		return ErrClosed
	}
}

// Close stops Raft, the listener and open forwarding connections. The
// directory keeps the log and snapshots: Open on it again restarts the node.
func (c *Controller) Close() error {
	c.cancel()
	err := c.raft.Shutdown().Error()
	c.trans.Close()
	c.mux.Close()
	c.pool.reset(true)
	c.connMu.Lock()
	for conn := range c.conns {
		conn.Close()
	}
	c.conns = nil
	c.connMu.Unlock()
	c.wg.Wait()
	if cerr := c.store.Close(); err == nil {
		err = cerr
	}
	return err
}

// trackConn registers (add) or forgets a forwarding connection; it returns
// false when the controller is closed.
func (c *Controller) trackConn(conn net.Conn, add bool) bool {
	c.connMu.Lock()
	defer c.connMu.Unlock()
	if !add {
		delete(c.conns, conn) // no-op on a nil map after Close
		c.wg.Done()
		return true
	}
	if c.conns == nil {
		return false
	}
	c.conns[conn] = struct{}{}
	c.wg.Add(1)
	return true
}
