package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// NATSServerModule and NATSServerVersion are what `--peer nats` installs
// with `go install` when no nats-server binary is found. nats-server is
// built as its own program, not linked into bin/sluice: it is a server, not
// a library we call, and its module would pin our dependencies to its own.
const (
	NATSServerModule  = "github.com/nats-io/nats-server/v2"
	NATSServerVersion = "v2.15.2"
)

// kgoMaxBuffered is kgo's default MaxBufferedRecords: the peer gets the
// same window of unacknowledged records, so that latencies under an
// unpaced load (window / throughput, by Little's law) compare.
const kgoMaxBuffered = 50000

// Peer durability labels: JetStream's fsync policy is server-wide
// (jetstream.sync_interval), not per stream.
const (
	natsSyncDefault = "sync_interval=2m" // the default: fsync every 2 minutes
	natsSyncAlways  = "sync_interval=always"
)

// peerKey is the peer cell that stands for a Sluice cell, "" if none: only
// acks=all has an equivalent (a JetStream ack means the write reached the
// stream's quorum); batching is the client's business and does not apply.
func peerKey(c Cell) string {
	if c.Acks != "all" {
		return ""
	}
	return peerCellKey(PeerCell(c))
}

// peerCellKey identifies a peer cell.
func peerCellKey(p Cell) string {
	return fmt.Sprintf("r%d %d p%d %s %g", p.RF, p.Size, p.Partitions, p.Durability, p.RateMBps)
}

// PeerCell is the JetStream cell closest to c: RF replicas per stream, one
// stream per partition, the same record size, duration and offered load;
// page-cache maps to the default sync interval, sync and flush.messages=1
// to sync_interval=always.
func PeerCell(c Cell) Cell {
	p := Cell{Acks: "all", Size: c.Size, RF: c.RF, Partitions: c.Partitions, Batching: "async", RateMBps: c.RateMBps, Durability: natsSyncDefault}
	if c.Durability != DurPageCache {
		p.Durability = natsSyncAlways
	}
	return p
}

// PeerCells are the distinct peer cells for cells, in order.
func PeerCells(cells []Cell) []Cell {
	seen := map[string]bool{}
	var out []Cell
	for _, c := range cells {
		k := peerKey(c)
		if k == "" || seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, PeerCell(c))
	}
	return out
}

// NATSPeer is a 3-node JetStream cluster of nats-server processes on
// 127.0.0.1 with file storage.
type NATSPeer struct {
	Bin      string // nats-server binary; found or installed by Ensure
	Dir      string // store dirs and configs
	BasePort int    // client port of node 1 (node i adds i-1); routes at +2000
	Nodes    int
	Version  string
	procs    []*exec.Cmd
	sync     string // the running cluster's sync label
	nc       *nats.Conn
	seq      int
}

// Ensure finds nats-server (Bin, then PATH, then binDir) or installs the
// pinned version into binDir with `go install`, printing progress.
func (p *NATSPeer) Ensure(ctx context.Context, w io.Writer, binDir string) error {
	if p.Bin == "" {
		if b, err := exec.LookPath("nats-server"); err == nil {
			p.Bin = b
		} else if b := filepath.Join(binDir, "nats-server"); fileExists(b) {
			p.Bin = b
		}
	}
	if p.Bin == "" {
		goBin, err := exec.LookPath("go")
		if err != nil {
			return fmt.Errorf("nats-server not found and no go toolchain on PATH to install it (%s@%s): %w", NATSServerModule, NATSServerVersion, err)
		}
		fmt.Fprintf(w, "installing nats-server %s into %s (go install, a minute or two)...\n", NATSServerVersion, binDir)
		if err := os.MkdirAll(binDir, 0o755); err != nil {
			return err
		}
		cmd := exec.CommandContext(ctx, goBin, "install", NATSServerModule+"@"+NATSServerVersion)
		// GOTOOLCHAIN=local: build with the Go we have instead of
		// fetching the newer toolchain its go.mod suggests.
		cmd.Env = append(os.Environ(), "GOBIN="+binDir, "GOTOOLCHAIN=local", "CGO_ENABLED=0")
		cmd.Stdout, cmd.Stderr = w, w
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go install %s@%s: %w", NATSServerModule, NATSServerVersion, err)
		}
		p.Bin = filepath.Join(binDir, "nats-server")
	}
	out, err := exec.CommandContext(ctx, p.Bin, "--version").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s --version: %w", p.Bin, err)
	}
	p.Version = strings.TrimSpace(string(out))
	fmt.Fprintf(w, "peer: %s (%s)\n", p.Version, p.Bin)
	return nil
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

func (p *NATSPeer) clientURL(i int) string { return fmt.Sprintf("nats://127.0.0.1:%d", p.BasePort+i) }
func (p *NATSPeer) routePort(i int) int    { return p.BasePort + 2000 + i }

// config is node i's nats-server configuration.
func (p *NATSPeer) config(i int, sync string) string {
	var routes []string
	for j := 0; j < p.Nodes; j++ {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", p.routePort(j)))
	}
	syncLine := ""
	if sync == natsSyncAlways {
		syncLine = "  sync_interval: always\n"
	}
	return fmt.Sprintf(`server_name: bench-%d
listen: 127.0.0.1:%d
jetstream {
  store_dir: %q
%s}
cluster {
  name: sluice-bench-peer
  listen: 127.0.0.1:%d
  routes: [%s]
}
`, i+1, p.BasePort+i, filepath.Join(p.Dir, fmt.Sprintf("n%d", i+1), "store"), syncLine, p.routePort(i), strings.Join(routes, ", "))
}

// start (re)starts the cluster with a fresh store and the sync setting,
// and waits until JetStream answers (a meta leader is elected).
func (p *NATSPeer) start(ctx context.Context, w io.Writer, sync string) error {
	if p.sync == sync && p.nc != nil {
		return nil
	}
	p.Stop()
	for i := 0; i < p.Nodes; i++ {
		nd := filepath.Join(p.Dir, fmt.Sprintf("n%d", i+1))
		if err := os.RemoveAll(nd); err != nil {
			return err
		}
		if err := os.MkdirAll(nd, 0o755); err != nil {
			return err
		}
		cfg := filepath.Join(nd, "nats.conf")
		if err := os.WriteFile(cfg, []byte(p.config(i, sync)), 0o644); err != nil {
			return err
		}
		logf, err := os.Create(filepath.Join(nd, "nats.log"))
		if err != nil {
			return err
		}
		cmd := exec.Command(p.Bin, "-c", cfg)
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		err = cmd.Start()
		logf.Close()
		if err != nil {
			return fmt.Errorf("start nats-server %d: %w", i+1, err)
		}
		p.procs = append(p.procs, cmd)
	}
	fmt.Fprintf(w, "peer: %d nats-server nodes started (%s), client ports %d-%d, logs in %s/n*/nats.log\n", p.Nodes, sync, p.BasePort, p.BasePort+p.Nodes-1, p.Dir)
	var urls []string
	for i := 0; i < p.Nodes; i++ {
		urls = append(urls, p.clientURL(i))
	}
	rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	var last error
	for {
		nc, err := nats.Connect(strings.Join(urls, ","), nats.Timeout(2*time.Second))
		if err == nil {
			js, jerr := jetstream.New(nc)
			if jerr == nil {
				actx, acancel := context.WithTimeout(rctx, 2*time.Second)
				_, jerr = js.AccountInfo(actx)
				acancel()
			}
			if jerr == nil {
				p.nc, p.sync = nc, sync
				return nil
			}
			nc.Close()
			err = jerr
		}
		last = err
		select {
		case <-rctx.Done():
			return fmt.Errorf("JetStream cluster not ready in 60s: %v (logs in %s/n*/nats.log)", last, p.Dir)
		case <-t.C:
		}
	}
}

// Stop stops the nats-server processes (SIGTERM, SIGKILL after 10 s).
func (p *NATSPeer) Stop() {
	if p.nc != nil {
		p.nc.Close()
		p.nc = nil
	}
	for _, c := range p.procs {
		_ = c.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = c.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = c.Process.Kill()
			<-done
		}
	}
	p.procs = nil
	p.sync = ""
}

// Run runs one peer cell for d.
func (p *NATSPeer) Run(ctx context.Context, w io.Writer, c Cell, d time.Duration) Result {
	fail := func(format string, args ...any) Result {
		return Result{System: "nats", Cell: c, Name: c.Name(), Err: fmt.Sprintf(format, args...)}
	}
	if err := p.start(ctx, w, c.Durability); err != nil {
		return fail("%v", err)
	}
	p.seq++
	m := newMeter()
	vals := newValuePool(c.Size)
	js, err := jetstream.New(p.nc,
		jetstream.WithPublishAsyncMaxPending(kgoMaxBuffered),
		jetstream.WithPublishAsyncAckHandler(func(_ jetstream.JetStream, msg *nats.Msg, _ *jetstream.PubAck) {
			now := time.Now()
			if sent, ok := stamp(msg.Data); ok {
				m.ack(sent, len(msg.Data), now)
			}
			vals.put(msg.Data)
		}),
		jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, _ *nats.Msg, err error) {
			m.fail(fmt.Errorf("publish: %w", err))
		}))
	if err != nil {
		return fail("jetstream: %v", err)
	}
	sctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	var subjects, streams []string
	for i := 0; i < c.Partitions; i++ {
		name := fmt.Sprintf("bench%d_%d", p.seq, i)
		subj := fmt.Sprintf("bench.%d.%d", p.seq, i)
		_, err := js.CreateStream(sctx, jetstream.StreamConfig{Name: name, Subjects: []string{subj}, Replicas: c.RF, Storage: jetstream.FileStorage})
		if err != nil {
			return fail("create stream %s (R%d): %v", name, c.RF, err)
		}
		streams, subjects = append(streams, name), append(subjects, subj)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, s := range streams {
			_ = js.DeleteStream(dctx, s)
		}
	}()
	start := time.Now()
	var consumers []jetstream.ConsumeContext
	for _, s := range streams {
		cons, err := js.OrderedConsumer(sctx, s, jetstream.OrderedConsumerConfig{})
		if err != nil {
			return fail("consumer on %s: %v", s, err)
		}
		cc, err := cons.Consume(func(msg jetstream.Msg) {
			now := time.Now()
			if sent, ok := stamp(msg.Data()); ok && !sent.Before(start) {
				m.e2e.Record(now.Sub(sent))
				m.consumed.Add(1)
			}
		})
		if err != nil {
			return fail("consume %s: %v", s, err)
		}
		consumers = append(consumers, cc)
	}
	defer func() {
		for _, cc := range consumers {
			cc.Stop()
		}
	}()
	pctx, stopProgress := context.WithCancel(ctx)
	go m.progress(pctx, w, 5*time.Second)
	next := 0
	produceLoop(ctx, m, c, start, d, vals, func(v []byte) bool {
		subj := subjects[next%len(subjects)]
		next++
		for {
			// A full window stalls the publish: back-pressure.
			_, err := js.PublishAsync(subj, v, jetstream.WithStallWait(time.Second))
			if err == nil {
				return true
			}
			if !errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
				m.fail(fmt.Errorf("publish: %w", err))
				return false
			}
			if ctx.Err() != nil || m.failure() != nil {
				return false
			}
		}
	})
	fctx, fcancel := context.WithTimeout(ctx, drainTimeout)
	defer fcancel()
	select {
	case <-js.PublishAsyncComplete():
	case <-fctx.Done():
		m.fail(fmt.Errorf("%d publishes not acknowledged %v after the load", js.PublishAsyncPending(), drainTimeout))
	}
	elapsed := time.Since(start)
	stopProgress()
	waitConsumed(fctx, m)
	return m.result("nats", c, elapsed)
}
