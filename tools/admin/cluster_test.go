package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/node"
	"github.com/sluice-log/sluice/node/config"
	"github.com/sluice-log/sluice/node/meta"
	"github.com/sluice-log/sluice/quorum"
)

// clusterNode is one node of a test cluster.
type clusterNode struct {
	*node.Node
	cfg                 *config.Config
	kafkaAddr, ctrlAddr string
	dir                 string
}

// startCluster starts n real nodes on 127.0.0.1, each a controller (Raft
// voter) and a broker, and returns them and their bootstrap servers.
func startCluster(t *testing.T, n int) ([]*clusterNode, string) {
	t.Helper()
	return startSecureCluster(t, n, clusterSecurity{listener: "PLAINTEXT"})
}

// startClusterWith is startCluster with extra node flags (--key=value).
func startClusterWith(t *testing.T, n int, extra ...string) ([]*clusterNode, string) {
	t.Helper()
	return startSecureCluster(t, n, clusterSecurity{listener: "PLAINTEXT", args: extra})
}

// clusterSecurity secures a test cluster's one Kafka listener: its name
// (a security protocol), more node flags and SLUICE_* variables, SCRAM
// credentials bootstrapped, and the client options that get in.
type clusterSecurity struct {
	listener   string
	args, env  []string
	boot       []quorum.ScramCredentialRecord
	clientOpts []kgo.Opt
}

// startSecureCluster is startCluster with sec.
func startSecureCluster(t *testing.T, n int, sec clusterSecurity) ([]*clusterNode, string) {
	t.Helper()
	kls, cls := make([]net.Listener, n), make([]net.Listener, n)
	var voters []quorum.Voter
	for i := range n {
		kls[i], cls[i] = listen(t, "127.0.0.1:0"), listen(t, "127.0.0.1:0")
		voters = append(voters, quorum.Voter{ID: int32(i + 1), Addr: cls[i].Addr().String()})
	}
	clusterID := quorum.NewUUID().String()
	nodes := make([]*clusterNode, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	var addrs []string
	for i := range n {
		cn := &clusterNode{dir: t.TempDir(), kafkaAddr: kls[i].Addr().String(), ctrlAddr: cls[i].Addr().String()}
		nodes[i] = cn
		if _, err := meta.Format(cn.dir, meta.Meta{ClusterID: clusterID, NodeID: int32(i + 1), InitialControllers: voters}); err != nil {
			t.Fatal(err)
		}
		if len(sec.boot) > 0 {
			if err := meta.WriteBootstrap(cn.dir, sec.boot); err != nil {
				t.Fatal(err)
			}
		}
		fs := pflag.NewFlagSet("node", pflag.ContinueOnError)
		config.Flags(fs)
		if err := fs.Parse(append([]string{fmt.Sprintf("--node.id=%d", i+1), "--log.dirs=" + cn.dir,
			"--listeners=" + sec.listener + "://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
			"--inter.broker.listener.name=" + sec.listener,
			"--advertised.listeners=" + sec.listener + "://" + cn.kafkaAddr + ",CONTROLLER://" + cn.ctrlAddr}, sec.args...)); err != nil {
			t.Fatal(err)
		}
		var err error
		if cn.cfg, err = config.Load(fs, append([]string{}, sec.env...)); err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, cn.kafkaAddr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			cn.Node, errs[i] = node.Open(cn.cfg, node.Options{KafkaListener: kls[i], ControllerListener: cls[i]})
		}()
	}
	wg.Wait()
	for i, cn := range nodes {
		if errs[i] != nil {
			t.Fatalf("node %d: %v", i+1, errs[i])
		}
		t.Cleanup(func() { cn.close(t) })
	}
	for _, cn := range nodes {
		cn.waitBrokers(t, n, sec.clientOpts...)
	}
	return nodes, strings.Join(addrs, ",")
}

// waitBrokers waits until the node's Metadata lists n live brokers: every
// node applies the others' registrations on its own time.
func (cn *clusterNode) waitBrokers(t *testing.T, n int, opts ...kgo.Opt) {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(cn.kafkaAddr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		req := kmsg.NewPtrMetadataRequest()
		req.Topics = []kmsg.MetadataRequestTopic{}
		// Ask this node itself, not whichever broker kgo prefers.
		resp, err := req.RequestWith(ctx, cl.SeedBrokers()[0])
		if err == nil && len(resp.Brokers) == n {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("node %d does not list %d brokers: %v", cn.cfg.NodeID, n, err)
		case <-tick.C:
		}
	}
}

func (cn *clusterNode) close(t *testing.T) {
	if cn.Node == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cn.Node.Close(ctx); err != nil {
		t.Errorf("close node %d: %v", cn.cfg.NodeID, err)
	}
	cn.Node = nil
}

// restart stops the node and starts it again on the same addresses; with
// unclean, as after a crash (no clean-shutdown marker).
func (cn *clusterNode) restart(t *testing.T, unclean bool) {
	t.Helper()
	cn.close(t)
	if unclean {
		if err := os.Remove(filepath.Join(cn.dir, ".clean_shutdown")); err != nil {
			t.Fatal(err)
		}
	}
	var err error
	cn.Node, err = node.Open(cn.cfg, node.Options{KafkaListener: listen(t, cn.kafkaAddr), ControllerListener: listen(t, cn.ctrlAddr)})
	if err != nil {
		t.Fatalf("restart node %d: %v", cn.cfg.NodeID, err)
	}
}

// listen binds addr, retrying for a while when it is a port just freed.
func listen(t *testing.T, addr string) net.Listener {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ln, err := net.Listen("tcp", addr)
		if err == nil {
			return ln
		}
		if time.Now().After(deadline) {
			t.Fatalf("listen %s: %v", addr, err)
		}
		<-time.After(20 * time.Millisecond) // pace the retries, not a synchronisation
	}
}

// run runs one sluice command line (as bin/sluice would) against the
// cluster at bootstrap and returns its standard output.
func run(t *testing.T, bootstrap string, args ...string) (string, error) {
	t.Helper()
	root := &cobra.Command{Use: "sluice", SilenceUsage: true, SilenceErrors: true}
	clusterCmd := &cobra.Command{Use: "cluster"}
	clusterCmd.AddCommand(NewHealthCommand(), NewInfoCommand(), NewDecommissionCommand(), NewUnregisterCommand())
	root.AddCommand(clusterCmd, NewTopicsCommand(), NewConfigsCommand(), NewACLsCommand(), NewQuorumCommand(), NewFeaturesCommand(), NewLeadersCommand(), NewGroupsCommand(), NewTransactionsCommand())
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

// eventually waits until cond holds (metadata reaches every node on its
// own time), failing the test after 30 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

// onEveryNode waits until cond holds when asked of each node itself (a
// client's requests go to any node, and each applies the metadata on its
// own time).
func onEveryNode(t *testing.T, nodes []*clusterNode, what string, cond func(ctx context.Context, b *kgo.Broker) bool) {
	t.Helper()
	for _, cn := range nodes {
		cl, err := kgo.NewClient(kgo.SeedBrokers(cn.kafkaAddr))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		eventually(t, fmt.Sprintf("node %d: %s", cn.cfg.NodeID, what), func() bool { return cond(ctx, cl.SeedBrokers()[0]) })
		cancel()
		cl.Close()
	}
}

// partitionCount asks one broker for a topic's partition count (-1 if it
// does not know the topic).
func partitionCount(ctx context.Context, b *kgo.Broker, topic string) int {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, b)
	if err != nil || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		return -1
	}
	return len(resp.Topics[0].Partitions)
}
