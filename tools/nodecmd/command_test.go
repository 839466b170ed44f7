package nodecmd

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-log/sluice/node"
	"github.com/sluice-log/sluice/node/meta"
	"github.com/sluice-log/sluice/quorum"
)

func TestCommandRejectsBadConfig(t *testing.T) {
	cmd := NewCommand()
	cmd.SetArgs([]string{"--node.id=1", "--num.partitions=0", "--log.dirs=" + t.TempDir()})
	cmd.SetOut(&strings.Builder{})
	cmd.SetErr(&strings.Builder{})
	err := cmd.Execute()
	if err == nil || !strings.Contains(err.Error(), "num.partitions") {
		t.Fatalf("err = %v, want one naming num.partitions", err)
	}
	cmd = NewCommand()
	cmd.SetArgs([]string{"--node.id=1", "--log.dirs=" + t.TempDir()})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "sluice init") {
		t.Fatalf("unformatted dir: err = %v, want a hint to run sluice init", err)
	}
}

// TestCommandRunsAndStopsCleanly runs `sluice node --config FILE` in
// process until its context ends (what SIGTERM does), and checks that a
// client was served and the clean-shutdown marker written.
func TestCommandRunsAndStopsCleanly(t *testing.T) {
	dir := t.TempDir()
	// The ports must be known before formatting: take free ones and
	// release them for the node (a small race with other processes).
	kl, cl := listen(t), listen(t)
	kafkaAddr, ctrlAddr := kl.Addr().String(), cl.Addr().String()
	kl.Close()
	cl.Close()
	if _, err := meta.Format(dir, meta.Meta{ClusterID: quorum.NewUUID().String(), NodeID: 7,
		InitialControllers: []quorum.Voter{{ID: 7, Addr: ctrlAddr}}}); err != nil {
		t.Fatal(err)
	}
	props := filepath.Join(dir, "server.properties")
	if err := os.WriteFile(props, []byte("# test\nnode.id=7\nlog.dirs="+dir+
		"\nlisteners=PLAINTEXT://"+kafkaAddr+",CONTROLLER://"+ctrlAddr+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan struct{})
	cmd := newCommand(func(*node.Node) { close(ready) })
	cmd.SetArgs([]string{"--config", props})
	var stderr strings.Builder
	cmd.SetErr(&stderr)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()

	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("node stopped before serving: %v", err)
	}
	cl2, err := kgo.NewClient(kgo.SeedBrokers(kafkaAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl2.Close()
	pctx, pcancel := context.WithTimeout(context.Background(), 30e9)
	defer pcancel()
	md, err := kadm.NewClient(cl2).BrokerMetadata(pctx)
	if err != nil {
		t.Fatalf("node never answered: %v (stderr: %s)", err, stderr.String())
	}
	if len(md.Brokers) != 1 || md.Brokers[0].NodeID != 7 {
		t.Fatalf("brokers = %+v, want node 7", md.Brokers)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("node: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, node.CleanShutdownFile)); err != nil {
		t.Fatalf("no clean-shutdown marker after a clean stop: %v", err)
	}
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// TestCommandFormatsEmptyDir: with cluster.id and initial.controllers a
// node formats its empty directory on first start and serves; started
// again on the same directory with another cluster's id, it refuses with
// the reason (what a container given another cluster's volume prints).
func TestCommandFormatsEmptyDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	kl, cl := listen(t), listen(t)
	kafkaAddr, ctrlAddr := kl.Addr().String(), cl.Addr().String()
	kl.Close()
	cl.Close()
	cluster := quorum.NewUUID().String()
	args := []string{"--node.id=3", "--log.dirs=" + dir, "--listeners=PLAINTEXT://" + kafkaAddr + ",CONTROLLER://" + ctrlAddr}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan struct{})
	cmd := newCommand(func(*node.Node) { close(ready) })
	cmd.SetArgs(append(args, "--cluster.id="+cluster, "--initial.controllers=3@"+ctrlAddr))
	var stderr strings.Builder
	cmd.SetErr(&stderr)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("node stopped before serving: %v (stderr: %s)", err, stderr.String())
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("node: %v", err)
	}
	m, err := meta.ReadMeta(dir)
	if err != nil || m.ClusterID != cluster || m.NodeID != 3 || meta.FormatControllers(m.InitialControllers) != "3@"+ctrlAddr {
		t.Fatalf("meta.properties = %+v, %v", m, err)
	}
	if !strings.Contains(stderr.String(), "formatted an empty data directory") {
		t.Fatalf("no log line for the format: %s", stderr.String())
	}

	other := quorum.NewUUID().String()
	cmd = NewCommand()
	cmd.SetArgs(append(args, "--cluster.id="+other, "--initial.controllers=3@"+ctrlAddr))
	cmd.SetErr(&strings.Builder{})
	err = cmd.Execute()
	if err == nil || !strings.Contains(err.Error(), "was formatted for cluster "+cluster+", not "+other) {
		t.Fatalf("another cluster's directory: err = %v", err)
	}
	if m2, _ := meta.ReadMeta(dir); m2.ClusterID != cluster {
		t.Fatalf("the directory was reformatted for %s", m2.ClusterID)
	}
}
