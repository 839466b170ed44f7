package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-log/sluice/node/config"
	"github.com/sluice-log/sluice/node/meta"
	"github.com/sluice-log/sluice/quorum"
)

// testNode is a one-node cluster (controller and broker) on 127.0.0.1
// with its data in a temporary directory, formatted with meta.Format.
type testNode struct {
	*Node
	dir   string
	cfg   *config.Config
	kl    net.Listener
	ctrlL net.Listener
	http  net.Listener
}

func listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// startNode formats a directory (unless dir is already formatted) and
// starts a node on it; extra are key=value settings, in which $KAFKA_PORT
// and $CONTROLLER_PORT stand for the ports of the listeners bound here.
func startNode(t testing.TB, dir string, extra ...string) *testNode {
	t.Helper()
	return startNodeWith(t, dir, Options{}, extra...)
}

// startNodeWith is startNode with Options (listeners are set here).
func startNodeWith(t testing.TB, dir string, opts Options, extra ...string) *testNode {
	t.Helper()
	tn := &testNode{dir: dir, kl: listen(t), ctrlL: listen(t)}
	if _, err := meta.ReadMeta(dir); err != nil {
		_, err := meta.Format(dir, meta.Meta{
			ClusterID: quorum.NewUUID().String(), NodeID: 1,
			InitialControllers: []quorum.Voter{{ID: 1, Addr: tn.ctrlL.Addr().String()}},
		})
		if err != nil {
			t.Fatal(err)
		}
	} else {
		// A restart: the controller address is in meta.properties.
		m, _ := meta.ReadMeta(dir)
		tn.ctrlL.Close()
		ln, err := net.Listen("tcp", m.InitialControllers[0].Addr)
		if err != nil {
			t.Fatal(err)
		}
		tn.ctrlL = ln
	}
	fs := pflag.NewFlagSet("node", pflag.ContinueOnError)
	config.Flags(fs)
	args := []string{"--node.id=1", "--log.dirs=" + dir,
		"--listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"--advertised.listeners=PLAINTEXT://127.0.0.1:" + port(tn.kl) + ",CONTROLLER://127.0.0.1:" + port(tn.ctrlL)}
	ports := strings.NewReplacer("$KAFKA_PORT", port(tn.kl), "$CONTROLLER_PORT", port(tn.ctrlL))
	replaced := make([]string, len(extra))
	for i, e := range extra {
		replaced[i] = ports.Replace(e)
	}
	args, env := splitExtra(t, dir, args, replaced)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(fs, env)
	if err != nil {
		t.Fatal(err)
	}
	tn.cfg = cfg
	tn.http = listen(t)
	opts.KafkaListener, opts.ControllerListener, opts.HTTPListener = tn.kl, tn.ctrlL, tn.http
	n, err := Open(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	tn.Node = n
	t.Cleanup(func() { tn.close(t) })
	return tn
}

func port(ln net.Listener) string { return fmt.Sprint(ln.Addr().(*net.TCPAddr).Port) }

func (tn *testNode) close(t testing.TB) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tn.Node.Close(ctx); err != nil {
		t.Errorf("close: %v", err)
	}
}

func TestNodeStartsAndStops(t *testing.T) {
	dir := t.TempDir()
	tn := startNode(t, dir)
	var brokers int
	tn.Node.ctrl.View(func(im *quorum.Image) {
		for _, b := range im.Brokers {
			if b.Alive() {
				brokers++
			}
		}
	})
	if brokers != 1 {
		t.Fatalf("alive brokers = %d, want 1", brokers)
	}
	resp, err := http.Get("http://" + tn.http.Addr().String() + "/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h health
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil || resp.StatusCode != 200 || h.NodeID != 1 || h.Controller != 1 || h.Status != "ok" || h.BrokerEpoch <= 0 {
		t.Fatalf("/health: %d %+v %v", resp.StatusCode, h, err)
	}
}

// TestOpenRefusesAnotherClustersDirectory: cluster.id must match
// meta.properties, and the error says so.
func TestOpenRefusesAnotherClustersDirectory(t *testing.T) {
	dir := t.TempDir()
	if _, err := meta.Format(dir, meta.Meta{ClusterID: quorum.NewUUID().String(), NodeID: 1,
		InitialControllers: []quorum.Voter{{ID: 1, Addr: "127.0.0.1:1"}}}); err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("node", pflag.ContinueOnError)
	config.Flags(fs)
	if err := fs.Parse([]string{"--node.id=1", "--log.dirs=" + dir, "--cluster.id=" + quorum.NewUUID().String()}); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(fs, []string{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(cfg, Options{}); !errors.Is(err, meta.ErrMismatch) {
		t.Fatalf("Open: %v, want ErrMismatch", err)
	}
}

// TestGossipUnfences: with a GOSSIP listener the broker does not unfence
// itself; the active controller's liveness gossip does, and the node serves.
func TestGossipUnfences(t *testing.T) {
	tn := startNode(t, t.TempDir(), "listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0,GOSSIP://127.0.0.1:0")
	if tn.gossip == nil {
		t.Fatal("no gossip")
	}
	ctx := testCtx(t)
	cl := newClient(t, tn)
	createTopic(ctx, t, cl, "g", 1)
	if err := newClient(t, tn, kgo.DefaultProduceTopic("g")).ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// TestOpenUndoesFailedPhases: a failure in a phase of Open leaves nothing
// behind. A taken Kafka port fails before the storage is touched (the
// clean-shutdown marker stays); a quorum that cannot be joined fails after
// the storage opened, and the Index (Pebble's directory lock) is closed
// again, so a later Open of the same directory works.
func TestOpenUndoesFailedPhases(t *testing.T) {
	dir := t.TempDir()
	gone := listen(t) // a controller nobody answers at
	goneAddr := gone.Addr().String()
	gone.Close()
	if _, err := meta.Format(dir, meta.Meta{ClusterID: quorum.NewUUID().String(), NodeID: 2,
		InitialControllers: []quorum.Voter{{ID: 1, Addr: goneAddr}}}); err != nil {
		t.Fatal(err)
	}
	if err := writeMarker(filepath.Join(dir, CleanShutdownFile), 0); err != nil {
		t.Fatal(err)
	}
	taken := listen(t)
	defer taken.Close()
	load := func(kafkaAddr string) *config.Config {
		fs := pflag.NewFlagSet("node", pflag.ContinueOnError)
		config.Flags(fs)
		if err := fs.Parse([]string{"--node.id=2", "--process.roles=broker", "--log.dirs=" + dir,
			"--listeners=PLAINTEXT://" + kafkaAddr + ",CONTROLLER://127.0.0.1:0"}); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Load(fs, []string{})
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	if _, err := Open(load(taken.Addr().String()), Options{}); err == nil || !strings.Contains(err.Error(), "kafka listener") {
		t.Fatalf("Open on a taken port: %v, want a kafka listener error", err)
	}
	if _, err := os.Stat(filepath.Join(dir, CleanShutdownFile)); err != nil {
		t.Fatalf("the clean-shutdown marker went with a failed bind: %v", err)
	}
	for i := range 2 {
		_, err := Open(load("127.0.0.1:0"), Options{RegisterTimeout: time.Second})
		if err == nil || !strings.Contains(err.Error(), "join the metadata quorum") {
			t.Fatalf("Open %d with no reachable quorum: %v, want the join error (not a locked index)", i, err)
		}
	}
}
