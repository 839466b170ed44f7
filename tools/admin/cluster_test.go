package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sluice-log/sluice/node"
	"github.com/sluice-log/sluice/node/config"
	"github.com/sluice-log/sluice/quorum"
	"github.com/sluice-log/sluice/tools/initcmd"
)

// startCluster starts n real nodes on 127.0.0.1, each a controller (Raft
// voter) and a broker, and returns their Kafka addresses.
func startCluster(t *testing.T, n int) ([]*node.Node, string) {
	t.Helper()
	kls, cls := make([]net.Listener, n), make([]net.Listener, n)
	var voters []quorum.Voter
	for i := range n {
		kls[i], cls[i] = listen(t), listen(t)
		voters = append(voters, quorum.Voter{ID: int32(i + 1), Addr: cls[i].Addr().String()})
	}
	clusterID := quorum.NewUUID().String()
	nodes := make([]*node.Node, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	var addrs []string
	for i := range n {
		dir := t.TempDir()
		if _, err := initcmd.Format(dir, initcmd.Meta{ClusterID: clusterID, NodeID: int32(i + 1), InitialControllers: voters}); err != nil {
			t.Fatal(err)
		}
		fs := pflag.NewFlagSet("node", pflag.ContinueOnError)
		config.Flags(fs)
		kport, cport := kls[i].Addr().(*net.TCPAddr).Port, cls[i].Addr().(*net.TCPAddr).Port
		if err := fs.Parse([]string{fmt.Sprintf("--node.id=%d", i+1), "--log.dirs=" + dir,
			"--listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
			fmt.Sprintf("--advertised.listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", kport, cport)}); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Load(fs, []string{})
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, kls[i].Addr().String())
		wg.Add(1)
		go func() {
			defer wg.Done()
			nodes[i], errs[i] = node.Open(cfg, node.Options{KafkaListener: kls[i], ControllerListener: cls[i]})
		}()
	}
	wg.Wait()
	for i, nd := range nodes {
		if errs[i] != nil {
			t.Fatalf("node %d: %v", i+1, errs[i])
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := nd.Close(ctx); err != nil {
				t.Errorf("close node %d: %v", i+1, err)
			}
		})
	}
	return nodes, strings.Join(addrs, ",")
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// run runs one sluice command line (as bin/sluice would) against the
// cluster at bootstrap and returns its standard output.
func run(t *testing.T, bootstrap string, args ...string) (string, error) {
	t.Helper()
	root := &cobra.Command{Use: "sluice", SilenceUsage: true, SilenceErrors: true}
	clusterCmd := &cobra.Command{Use: "cluster"}
	clusterCmd.AddCommand(NewHealthCommand(), NewInfoCommand())
	root.AddCommand(clusterCmd, NewTopicsCommand(), NewConfigsCommand(), NewQuorumCommand())
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append(args, "--bootstrap-server", bootstrap, "--timeout", "30s"))
	err := root.ExecuteContext(context.Background())
	return out.String(), err
}

// mustRun is run that fails the test on an error.
func mustRun(t *testing.T, bootstrap string, args ...string) string {
	t.Helper()
	out, err := run(t, bootstrap, args...)
	if err != nil {
		t.Fatalf("sluice %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func decode[T any](t *testing.T, out string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("output is not the JSON expected: %v\n%s", err, out)
	}
	return v
}
