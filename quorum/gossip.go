package quorum

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/memberlist"
)

// GossipConfig configures a node's memberlist (liveness gossip).
type GossipConfig struct {
	// NodeID is the broker id; the memberlist node name is its decimal form.
	NodeID int32
	// BindAddr and BindPort are the gossip listener (TCP and UDP); port 0
	// picks a free one. Advertise* default to the bound address.
	BindAddr      string
	BindPort      int
	AdvertiseAddr string
	AdvertisePort int
	// SessionTimeout: a broker not seen alive for this long is fenced (9s).
	SessionTimeout time.Duration
	// Tick is how often the active controller re-decides (SessionTimeout/10).
	Tick time.Duration
	// ProbeListener names the endpoint (of each broker's registration) the
	// active controller probes with a TCP connect every ProbeInterval; two
	// refusals in a row fence the broker (Liveness). Empty, or a
	// ProbeInterval <= 0: no probes, gossip and the session timeout alone.
	ProbeListener string
	ProbeInterval time.Duration
	// Tune, if set, adjusts the memberlist config last (tests make probes fast).
	Tune func(*memberlist.Config)
	// LogOutput receives memberlist's log; nil discards it.
	LogOutput io.Writer
	// ClusterID labels every gossip packet and stream (memberlist's
	// Label): a node of another cluster — a misconfigured seed, a stale
	// process on a reused port — is never merged into the membership,
	// where its name ("2") and epoch would fence or unfence our broker 2.
	// Empty: no label (tests).
	ClusterID string
	// Keys, if set, encrypt and authenticate every gossip packet and
	// stream (memberlist's keyring: AES-GCM, the label as authenticated
	// data): Keys[0] encrypts what this node sends, each key is tried on
	// what it receives, and anything no key opens is dropped. A node
	// without a key the others hold cannot join, nor speak for a member.
	// Keys of 16, 24 or 32 bytes (AES-128/192/256). Rotation, one node at
	// a time: add the new key behind the primary everywhere, then make it
	// primary everywhere, then drop the old one (docs/deploy.md).
	Keys [][]byte
	// Log, if set, gets a line for every fence and unfence the active
	// controller proposes, with what gossip showed of the broker (Kafka
	// logs these too: the first thing an operator asks when a broker
	// drops out of the metadata).
	Log *slog.Logger
}

// Gossip runs memberlist on one node. On every node it advertises the
// broker's current epoch in its memberlist metadata; on the active controller
// it also turns the membership into fence and unfence commands (see
// Liveness). Methods are safe for concurrent use.
type Gossip struct {
	cfg  GossipConfig
	ctrl *Controller
	ml   *memberlist.Memberlist
	// keyring is memberlist's (GossipConfig.Keys), nil without keys.
	keyring *memberlist.Keyring
	epoch   atomic.Int64
	nudge   chan struct{}
	// joinOnce starts keepJoining at the first Join.
	joinOnce sync.Once

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	// mu guards members and dead, written by memberlist's event callbacks
	// (memberlist's Node values must not be read outside them).
	mu      sync.Mutex
	members map[int32]int64     // alive members and their advertised epochs
	dead    map[int32]time.Time // leave events not yet given to Liveness

	// Proposed counts fence and unfence commands proposed (for tests/metrics).
	Proposed atomic.Int64
	// probeAddrs are the addresses the probes go to, by broker id; only
	// the loop goroutine touches them.
	probeAddrs map[int32]probeAddr

	// Probes, ProbesRefused and ProbesSilent count the active
	// controller's probes (silent: timed out or unreachable while another
	// broker answered the round).
	Probes, ProbesRefused, ProbesSilent atomic.Int64
}

// StartGossip starts memberlist for this node; ctrl is the node's
// controller (voter or non-voter), used to act when it is the leader.
func StartGossip(cfg GossipConfig, ctrl *Controller) (*Gossip, error) {
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = 9 * time.Second
	}
	if cfg.Tick <= 0 {
		cfg.Tick = cfg.SessionTimeout / 10
	}
	g := &Gossip{cfg: cfg, ctrl: ctrl, nudge: make(chan struct{}, 1), dead: map[int32]time.Time{}, members: map[int32]int64{}, done: make(chan struct{})}
	g.ctx, g.cancel = context.WithCancel(context.Background())
	mc := memberlist.DefaultLANConfig()
	mc.Name = strconv.Itoa(int(cfg.NodeID))
	mc.BindAddr, mc.BindPort = cfg.BindAddr, cfg.BindPort
	if mc.BindAddr == "" {
		mc.BindAddr = "0.0.0.0"
	}
	mc.AdvertiseAddr, mc.AdvertisePort = cfg.AdvertiseAddr, cfg.AdvertisePort
	// A restarted broker may come back on another address (a new pod IP,
	// or port 0): memberlist refuses a dead member's name from a new address
	// until DeadNodeReclaimTime has passed, so keep that well inside the
	// session timeout.
	mc.DeadNodeReclaimTime = cfg.SessionTimeout / 3
	if cfg.ClusterID != "" {
		mc.Label = "sluice/" + cfg.ClusterID
	}
	if len(cfg.Keys) > 0 {
		kr, err := memberlist.NewKeyring(cfg.Keys, cfg.Keys[0])
		if err != nil {
			return nil, fmt.Errorf("quorum: gossip keys: %w", err)
		}
		mc.Keyring, g.keyring = kr, kr
		mc.GossipVerifyIncoming, mc.GossipVerifyOutgoing = true, true
	}
	mc.Delegate = gossipDelegate{g}
	mc.Events = gossipEvents{g}
	mc.LogOutput = cfg.LogOutput
	if mc.LogOutput == nil {
		mc.LogOutput = io.Discard
	}
	if cfg.Tune != nil {
		cfg.Tune(mc)
	}
	ml, err := memberlist.Create(mc)
	if err != nil {
		return nil, fmt.Errorf("quorum: memberlist: %w", err)
	}
	g.ml = ml
	go g.loop()
	return g, nil
}

// Addr is the advertised gossip address (host:port) other nodes join.
func (g *Gossip) Addr() string { return g.ml.LocalNode().Address() }

// Join contacts existing members; it returns how many answered. It keeps
// trying in the background (every SessionTimeout/3, until Close) while
// this node knows fewer live members than seeds+1: memberlist never
// retries a join, so a node whose seeds were not listening yet when it
// started (three nodes started at once) could stay an island that the
// active controller never hears from, and fences.
func (g *Gossip) Join(seeds []string) (int, error) {
	n, err := g.ml.Join(seeds)
	g.joinOnce.Do(func() { go g.keepJoining(slices.Clone(seeds)) })
	return n, err
}

func (g *Gossip) keepJoining(seeds []string) {
	t := time.NewTicker(max(g.cfg.SessionTimeout/3, 100*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-g.ctx.Done():
			return
		case <-t.C:
		}
		if g.ml.NumMembers() < len(seeds)+1 {
			_, _ = g.ml.Join(seeds)
		}
	}
}

// SetBrokerEpoch advertises the epoch of this broker's current registration.
// Call it after RegisterBroker, once the broker has caught up with the
// metadata log: the active controller then unfences it.
func (g *Gossip) SetBrokerEpoch(epoch int64) error {
	g.epoch.Store(epoch)
	return g.ml.UpdateNode(g.cfg.SessionTimeout)
}

// SetKeys replaces the gossip keys of a running node: keys[0] becomes the
// primary (what this node encrypts with), every key of keys is accepted,
// and keys not listed are no longer accepted. Rotation without restarts
// takes the three steps of a rolling one (GossipConfig.Keys), each on
// every node before the next. Gossip started without keys cannot turn
// encryption on, nor off, here: that needs a restart.
func (g *Gossip) SetKeys(keys [][]byte) error {
	if g.keyring == nil || len(keys) == 0 {
		return errors.New("quorum: gossip keys can only be changed while encrypted: turning gossip encryption on or off needs a restart of every node")
	}
	for _, k := range keys {
		if err := g.keyring.AddKey(k); err != nil {
			return fmt.Errorf("quorum: gossip key: %w", err)
		}
	}
	if err := g.keyring.UseKey(keys[0]); err != nil {
		return fmt.Errorf("quorum: gossip key: %w", err)
	}
	for _, k := range g.keyring.GetKeys() {
		if !slices.ContainsFunc(keys, func(w []byte) bool { return bytes.Equal(w, k) }) {
			if err := g.keyring.RemoveKey(k); err != nil {
				return fmt.Errorf("quorum: gossip key: %w", err)
			}
		}
	}
	return nil
}

// Leave announces a clean departure, then stops; Close alone looks like a
// crash to the others.
func (g *Gossip) Leave(timeout time.Duration) error {
	err := g.ml.Leave(timeout)
	if cerr := g.Close(); err == nil {
		err = cerr
	}
	return err
}

// Close stops gossip without announcing it.
func (g *Gossip) Close() error {
	g.cancel()
	<-g.done
	return g.ml.Shutdown()
}

func (g *Gossip) poke() {
	select {
	case g.nudge <- struct{}{}:
	default:
	}
}

func (g *Gossip) loop() {
	defer close(g.done)
	tick := time.NewTicker(g.cfg.Tick)
	defer tick.Stop()
	var probeTick <-chan time.Time
	if g.cfg.ProbeListener != "" && g.cfg.ProbeInterval > 0 {
		t := time.NewTicker(g.cfg.ProbeInterval)
		defer t.Stop()
		probeTick = t.C
	}
	live := Liveness{SessionTimeout: g.cfg.SessionTimeout}
	leading := false
	for {
		probe := false
		select {
		case <-g.ctx.Done():
			return
		case <-tick.C:
		case <-g.nudge:
		case <-probeTick:
			probe = true
		}
		if !g.ctrl.IsLeader() {
			leading = false
			continue
		}
		now := time.Now()
		if !leading {
			live.Reset(now)
			leading = true
		}
		g.mu.Lock()
		for id, at := range g.dead {
			live.Dead(id, at)
		}
		clear(g.dead)
		for id, epoch := range g.members {
			live.Alive(id, epoch, now)
		}
		g.mu.Unlock()
		if probe {
			g.probe(&live)
		}
		var cmds []Command
		g.ctrl.View(func(im *Image) { cmds = live.Decide(im, now) })
		for _, cmd := range cmds {
			ctx, cancel := context.WithTimeout(g.ctx, g.cfg.SessionTimeout)
			_, err := g.ctrl.Propose(ctx, cmd)
			if err == nil {
				g.Proposed.Add(1)
			}
			cancel()
			g.logDecision(cmd, err, &live)
		}
	}
}

func decodeEpoch(meta []byte) int64 {
	if len(meta) < 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(meta))
}

type gossipDelegate struct{ g *Gossip }

func (d gossipDelegate) NodeMeta(limit int) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, uint64(d.g.epoch.Load()))
	return b
}
func (gossipDelegate) NotifyMsg([]byte)                    {}
func (gossipDelegate) GetBroadcasts(int, int) [][]byte     { return nil }
func (gossipDelegate) LocalState(bool) []byte              { return nil }
func (gossipDelegate) MergeRemoteState(buf []byte, _ bool) {}

// gossipEvents keeps Gossip.members. memberlist calls it with its node lock
// held, so the Node may be read here (and only here).
type gossipEvents struct{ g *Gossip }

func (e gossipEvents) NotifyJoin(n *memberlist.Node)   { e.alive(n) }
func (e gossipEvents) NotifyUpdate(n *memberlist.Node) { e.alive(n) }

func (e gossipEvents) alive(n *memberlist.Node) {
	id, err := strconv.Atoi(n.Name)
	if err != nil {
		return
	}
	epoch := decodeEpoch(n.Meta)
	e.g.mu.Lock()
	e.g.members[int32(id)] = epoch
	delete(e.g.dead, int32(id))
	e.g.mu.Unlock()
	e.g.poke()
}

func (e gossipEvents) NotifyLeave(n *memberlist.Node) {
	id, err := strconv.Atoi(n.Name)
	if err != nil {
		return
	}
	e.g.mu.Lock()
	delete(e.g.members, int32(id))
	e.g.dead[int32(id)] = time.Now()
	e.g.mu.Unlock()
	e.g.poke()
}

// probe connects to the ProbeListener endpoint of every broker that is
// registered and not shutting down (but this one), all at once,
// each for at most ProbeInterval, and tells live which refused and which
// accepted. A timeout or another error is no evidence either way.
func (g *Gossip) probe(live *Liveness) {
	type target struct {
		id    int32
		epoch int64
		addr  string
	}
	var targets []target
	g.ctrl.View(func(im *Image) {
		for _, id := range im.SortedBrokers() {
			b := im.Brokers[id]
			// Fenced brokers are probed too: one fenced for silence
			// (a network cut that heals, same process and epoch) is
			// unfenced only once a probe is answered again.
			if id == g.cfg.NodeID || b.ShuttingDown {
				continue
			}
			for _, e := range b.Endpoints {
				if e.Name == g.cfg.ProbeListener {
					targets = append(targets, target{id, b.Epoch, net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port)))})
				}
			}
		}
	})
	if g.probeAddrs == nil {
		g.probeAddrs = map[int32]probeAddr{}
	}
	results := make([]error, len(targets))
	resolved := make([]probeAddr, len(targets))
	var wg sync.WaitGroup
	d := net.Dialer{Timeout: g.cfg.ProbeInterval}
	for i, t := range targets {
		cached := g.probeAddrs[t.id]
		if cached.epoch != t.epoch || cached.name != t.addr {
			cached = probeAddr{epoch: t.epoch, name: t.addr}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			resolved[i], results[i] = g.dialProbe(&d, cached)
		}()
	}
	wg.Wait()
	for i, t := range targets {
		if resolved[i].ip != "" {
			g.probeAddrs[t.id] = resolved[i]
		}
	}
	now := time.Now()
	answered := 0
	for _, err := range results {
		if err == nil {
			answered++
		}
	}
	for i, t := range targets {
		g.Probes.Add(1)
		switch err := results[i]; {
		case err == nil:
			live.Answered(t.id, t.epoch)
		case errors.Is(err, syscall.ECONNREFUSED):
			g.ProbesRefused.Add(1)
			live.Refused(t.id, t.epoch)
		case answered > 0 && silence(err):
			// Another listener answered this round: the silence is
			// the broker's, not this controller's.
			g.ProbesSilent.Add(1)
			live.Silent(t.id, t.epoch, now)
		}
	}
}

// probeAddr is where the probes of one broker registration go: its
// endpoint (name, host:port) and the address it resolved to (ip,
// host:port) when a probe last reached it or first resolved it. A host
// that is gone may take its name with it (docker's DNS forgets a killed
// container at once, "no such host"): its last address is still probed,
// and its silence is evidence.
type probeAddr struct {
	epoch    int64
	name, ip string
}

// errProbeMoved: the probe's address did not answer, but the broker's
// name now resolves to another address: no evidence.
var errProbeMoved = errors.New("quorum: the broker's name resolves to another address")

// dialProbe connects to the broker at a (its resolved address, else its
// name resolved now) and returns where it probed.
func (g *Gossip) dialProbe(d *net.Dialer, a probeAddr) (probeAddr, error) {
	if a.ip == "" {
		ip, err := g.resolve(a.name)
		if err != nil {
			return a, err
		}
		a.ip = ip
	}
	c, err := d.DialContext(g.ctx, "tcp", a.ip)
	if err == nil {
		_ = c.Close()
		return a, nil
	}
	if silence(err) && a.ip != a.name {
		// Silent at the address we know: has the name moved (a new IP
		// for the same registration)? A name that no longer resolves
		// is no move.
		if ip, rerr := g.resolve(a.name); rerr == nil && ip != a.ip {
			a.ip = ip
			return a, errProbeMoved
		}
	}
	return a, err
}

// resolve returns host:port with the host resolved to an IP address,
// within a probe interval.
func (g *Gossip) resolve(hostport string) (string, error) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return "", err
	}
	if net.ParseIP(host) != nil {
		return hostport, nil
	}
	ctx, cancel := context.WithTimeout(g.ctx, g.cfg.ProbeInterval)
	defer cancel()
	ips, err := net.DefaultResolver.LookupHost(ctx, host)
	if err != nil {
		return "", err
	}
	if len(ips) == 0 {
		return "", fmt.Errorf("quorum: %s resolves to no address", host)
	}
	return net.JoinHostPort(ips[0], port), nil
}

// silence reports whether a failed connect is silence from its host: a
// timeout, or the host or its network unreachable (no ARP answer, an ICMP
// unreachable).
func silence(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() ||
		errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH)
}

// logDecision logs a fence or unfence the active controller proposed, with
// the broker's gossip state (advertised epoch, or not a live member).
func (g *Gossip) logDecision(cmd Command, err error, live *Liveness) {
	if g.cfg.Log == nil {
		return
	}
	var what string
	var id int32
	var epoch int64
	switch c := cmd.(type) {
	case *FenceBroker:
		what, id, epoch = "fencing broker", c.ID, c.Epoch
	case *UnfenceBroker:
		what, id, epoch = "unfencing broker", c.ID, c.Epoch
	default:
		return
	}
	g.mu.Lock()
	gossipEpoch, member := g.members[id]
	g.mu.Unlock()
	attrs := []any{"broker", id, "registered_epoch", epoch, "gossip_member", member}
	if member {
		attrs = append(attrs, "gossip_epoch", gossipEpoch)
	}
	if live.Refusing(id, epoch) {
		attrs = append(attrs, "listener", "refusing connections")
	} else if live.Silenced(id, epoch, time.Now()) {
		attrs = append(attrs, "listener", "silent (probes time out while other brokers answer)")
	}
	if err != nil {
		g.cfg.Log.Warn("quorum: "+what+" failed", append(attrs, "err", err)...)
		return
	}
	g.cfg.Log.Info("quorum: "+what, attrs...)
}
