package cluster

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/node/meta"
	"github.com/sluice-log/sluice/quorum"
)

// command is `sluice cluster`: its flags, and a method per subcommand.
type command struct {
	dir      string        // --dir, every subcommand's
	nodes    int           // start --nodes
	basePort int           // start --base-port
	timeout  time.Duration // start --timeout
	props    []string      // start --set
	secure   bool          // start --secure
	node     string        // kill's and restart's NODE argument
	nodeWait time.Duration // roll --node-timeout
}

// NewCommand returns `sluice cluster` and its subcommands.
func NewCommand() *cobra.Command {
	var c command
	root := &cobra.Command{
		Use:   "cluster",
		Short: "Run a local cluster of real node processes on 127.0.0.1",
	}
	root.PersistentFlags().StringVar(&c.dir, "dir", "./sluice-cluster", "the cluster's directory (data, logs, cluster.json)")
	bind := func(run func(*command, context.Context, io.Writer) error) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				c.node = args[0]
			}
			return run(&c, cmd.Context(), cmd.OutOrStdout())
		}
	}

	start := &cobra.Command{
		Use:   "start",
		Short: "Format and start a cluster, wait until it is healthy, print the bootstrap servers",
		Example: `  sluice cluster start --nodes 3 --dir ./demo
  sluice cluster start --nodes 5 --dir /tmp/c --set log.segment.bytes=1048576`,
		Args: cobra.NoArgs,
		RunE: bind((*command).start),
	}
	start.Flags().IntVar(&c.nodes, "nodes", 3, "number of nodes (each controller and broker)")
	start.Flags().IntVar(&c.basePort, "base-port", KafkaPort, "Kafka port of node 0; node i uses it + 100*i, and so on for each port")
	start.Flags().DurationVar(&c.timeout, "timeout", 90*time.Second, "how long to wait for the cluster to become healthy")
	start.Flags().StringArrayVar(&c.props, "set", nil, "extra server.properties line KEY=VALUE for every node (repeatable)")
	start.Flags().BoolVar(&c.secure, "secure", false, "TLS (a CA made for the cluster), SCRAM-SHA-512 and ACLs; writes DIR/client.properties and DIR/kcat.conf for the admin user")

	status := &cobra.Command{
		Use:   "status",
		Short: "Show which nodes run and what the cluster reports",
		Args:  cobra.NoArgs,
		RunE:  bind((*command).status),
	}
	stop := &cobra.Command{
		Use:   "stop",
		Short: "Stop every node cleanly (SIGTERM; SIGKILL after 30s)",
		Args:  cobra.NoArgs,
		RunE:  bind((*command).stop),
	}
	kill := &cobra.Command{
		Use:   "kill NODE",
		Short: "SIGKILL one node (no clean shutdown)",
		Args:  cobra.ExactArgs(1),
		RunE:  bind((*command).kill),
	}
	restart := &cobra.Command{
		Use:   "restart NODE",
		Short: "Start one node again with its config (stopping it first if it runs)",
		Args:  cobra.ExactArgs(1),
		RunE:  bind((*command).restart),
	}
	roll := &cobra.Command{
		Use:   "roll",
		Short: "Restart every node, one at a time, each back in every ISR before the next",
		Long: `Restart every node of the cluster, one at a time and the active controller
last: SIGTERM (a controlled shutdown moves the node's leaderships away
first), wait for it to exit, start it again, and wait until it is back in
the ISR of every partition it replicates before the next node. For
operators and upgrades: clients see no failed request.`,
		Example: `  sluice cluster roll --dir ./demo`,
		Args:    cobra.NoArgs,
		RunE:    bind((*command).roll),
	}
	roll.Flags().DurationVar(&c.nodeWait, "node-timeout", 5*time.Minute, "how long one node may take to stop, start and be back in every ISR")
	root.AddCommand(start, status, stop, kill, restart, roll)
	return root
}

func (c *command) start(ctx context.Context, out io.Writer) error {
	extra, err := parseProps(c.props)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	l, err := Start(ctx, out, Options{Dir: c.dir, Nodes: c.nodes, BasePort: c.basePort, Properties: extra, Secure: c.secure})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "cluster %s is up: %d nodes\n", l.ClusterID, len(l.Nodes))
	fmt.Fprintf(out, "bootstrap servers: %s\n", l.BootstrapServers)
	fmt.Fprintf(out, "layout:            %s\n", layoutPath(l.Dir))
	if l.ClientProperties != "" {
		fmt.Fprintf(out, "secured:           SASL_SSL, SCRAM-SHA-512 user admin, ACLs on; CA %s\n", filepath.Join(l.Dir, "secure", "ca.pem"))
		fmt.Fprintf(out, "client settings:   %s (Kafka tools: --command-config)\n", l.ClientProperties)
		fmt.Fprintf(out, "kcat:              kcat -F %s -b %s -L\n", filepath.Join(l.Dir, "kcat.conf"), l.BootstrapServers)
	}
	fmt.Fprintf(out, "stop it with:      sluice cluster stop --dir %s\n", l.Dir)
	return nil
}

func (c *command) status(ctx context.Context, out io.Writer) error {
	l, err := readLayout(c.dir)
	if err != nil {
		return err
	}
	return printStatus(ctx, out, l)
}

func (c *command) stop(ctx context.Context, out io.Writer) error {
	l, err := readLayout(c.dir)
	if err != nil {
		return err
	}
	return Stop(ctx, out, l)
}

func (c *command) roll(ctx context.Context, out io.Writer) error {
	l, err := readLayout(c.dir)
	if err != nil {
		return err
	}
	return Roll(ctx, out, l, RollOptions{NodeTimeout: c.nodeWait})
}

// target reads the layout and the node the NODE argument names.
func (c *command) target() (Layout, int32, error) {
	l, err := readLayout(c.dir)
	if err != nil {
		return l, 0, err
	}
	id, err := parseNodeID(c.node)
	return l, id, err
}

func (c *command) restart(ctx context.Context, out io.Writer) error {
	l, id, err := c.target()
	if err != nil {
		return err
	}
	if err := Restart(ctx, l, id); err != nil {
		return err
	}
	fmt.Fprintf(out, "node %d restarted\n", id)
	return nil
}

// kill is `sluice cluster kill NODE`: SIGKILL, and wait until it is gone.
func (c *command) kill(ctx context.Context, out io.Writer) error {
	l, id, err := c.target()
	if err != nil {
		return err
	}
	n, err := running(l, c.dir, id)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := stopNode(ctx, n, syscall.SIGKILL); err != nil {
		return err
	}
	fmt.Fprintf(out, "node %d killed (pid %d)\n", id, n.PID)
	return nil
}

// Options of Start.
type Options struct {
	Dir        string
	Nodes      int
	BasePort   int               // Kafka port of node 0 (node i adds 100*i); 0: 9092
	Properties map[string]string // extra server.properties for every node
	Executable string            // the sluice binary; "": this process's
	// Secure starts the cluster with TLS, SCRAM and ACLs (secure.go).
	Secure bool
	// NodeArgs, when set, gives extra `sluice node` arguments per node
	// (kept in cluster.json, so restarts use them too).
	NodeArgs func(Node) []string
	// NodeCgroup, when set, gives the cgroup v2 directory each node runs
	// in (kept in cluster.json).
	NodeCgroup func(Node) string
}

// Start formats and starts a cluster in o.Dir, replacing any cluster there,
// waits until every broker is registered and a controller is elected, and
// writes cluster.json. Progress goes to w.
func Start(ctx context.Context, w io.Writer, o Options) (Layout, error) {
	if o.Nodes < 1 {
		return Layout{}, fmt.Errorf("--nodes %d: need at least 1", o.Nodes)
	}
	if o.BasePort == 0 {
		o.BasePort = KafkaPort
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return Layout{}, err
	}
	exe := o.Executable
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return Layout{}, err
		}
	}
	if old, err := readLayout(dir); err == nil {
		fmt.Fprintf(w, "replacing the cluster in %s\n", dir)
		if err := Stop(ctx, w, old); err != nil {
			return Layout{}, err
		}
	}
	_ = os.Remove(layoutPath(dir))
	l := newLayout(dir, quorum.NewUUID().String(), o.Nodes, o.BasePort)
	if warn := ephemeralWarning(l, "/proc/sys/net/ipv4/ip_local_port_range"); warn != "" {
		fmt.Fprintln(w, warn)
	}
	voters, err := meta.ParseControllers(l.voters())
	if err != nil {
		return l, err
	}
	for _, n := range l.Nodes {
		nd := filepath.Dir(n.Config)
		if err := os.RemoveAll(nd); err != nil {
			return l, err
		}
		if err := os.MkdirAll(nd, 0o755); err != nil {
			return l, err
		}
		if _, err := meta.Format(n.DataDir, meta.Meta{ClusterID: l.ClusterID, NodeID: n.ID, InitialControllers: voters}); err != nil {
			return l, fmt.Errorf("format node %d: %w", n.ID, err)
		}
	}
	props := o.Properties
	if o.Secure {
		sec, err := secureFiles(&l)
		if err != nil {
			return l, fmt.Errorf("secure: %w", err)
		}
		l.Listener = secureListener
		maps.Copy(sec, o.Properties) // --set wins
		props = sec
	}
	for _, n := range l.Nodes {
		if err := writeFileAtomic(n.Config, []byte(l.properties(n, props))); err != nil {
			return l, err
		}
	}
	for i := range l.Nodes {
		if o.NodeArgs != nil {
			l.Nodes[i].Args = o.NodeArgs(l.Nodes[i])
		}
		if o.NodeCgroup != nil {
			l.Nodes[i].Cgroup = o.NodeCgroup(l.Nodes[i])
		}
	}
	for i := range l.Nodes {
		pid, err := startNode(exe, l.Nodes[i])
		if err != nil {
			return l, err
		}
		l.Nodes[i].PID = pid
		fmt.Fprintf(w, "node %d started (pid %d), Kafka on %s, log %s\n", l.Nodes[i].ID, pid, l.Nodes[i].Kafka, l.Nodes[i].LogFile)
	}
	if err := writeLayout(l); err != nil {
		return l, err
	}
	return l, waitHealthy(ctx, w, l)
}

// eachNodeSees asks every node alone for its metadata: which brokers it
// lists and which controller, so that a cluster stuck "2 of 3 brokers
// registered" says whether one node's view is stale (its metadata log
// behind) or every node agrees a broker is fenced.
func eachNodeSees(l Layout) string {
	var b strings.Builder
	for _, n := range l.Nodes {
		fmt.Fprintf(&b, "\nnode %d sees: ", n.ID)
		cl, err := l.client([]string{n.Kafka}, kgo.RequestRetries(0))
		if err != nil {
			fmt.Fprintf(&b, "%v", err)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		md, err := kadm.NewClient(cl).BrokerMetadata(ctx)
		cancel()
		cl.Close()
		if err != nil {
			fmt.Fprintf(&b, "no answer: %v", err)
			continue
		}
		var ids []int32
		for _, br := range md.Brokers {
			ids = append(ids, br.NodeID)
		}
		fmt.Fprintf(&b, "brokers %v, controller %d", ids, md.Controller)
	}
	return b.String()
}

// logTails is the last lines of every node's log, for an error that
// callers (bench, soak, tests) print after their temporary cluster
// directory, and so the logs, may be gone: a port taken by another process
// or a bad setting shows there.
func logTails(l Layout, lines int) string {
	var b strings.Builder
	for _, n := range l.Nodes {
		data, err := os.ReadFile(n.LogFile)
		if err != nil {
			continue
		}
		ls := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		ls = ls[max(0, len(ls)-lines):]
		fmt.Fprintf(&b, "\nnode %d's last log lines:\n  %s", n.ID, strings.Join(ls, "\n  "))
	}
	return b.String()
}

// waitHealthy waits until every node process runs, every broker is in the
// metadata and a controller is elected, printing progress every 2 s.
func waitHealthy(ctx context.Context, w io.Writer, l Layout) error {
	cl, err := l.client(nil, kgo.RequestRetries(0))
	if err != nil {
		return err
	}
	defer cl.Close()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	lastSay := time.Now()
	var why string
	for {
		why = ""
		for _, n := range l.Nodes {
			if !alive(n.PID) {
				return fmt.Errorf("node %d (pid %d) exited while starting; see %s%s", n.ID, n.PID, n.LogFile, logTails(l, 5))
			}
		}
		// A Metadata request of our own, not kadm's BrokerMetadata: that
		// answers from kgo's cache, whose broker list only the client's
		// metadata loop refreshes (every 5 minutes when the client does
		// nothing else), so a first answer of "2 of 3 brokers" stuck.
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		req := kmsg.NewPtrMetadataRequest()
		req.Topics = []kmsg.MetadataRequestTopic{}
		md, err := req.RequestWith(rctx, cl)
		cancel()
		switch {
		case err != nil:
			why = "no answer yet: " + err.Error()
		case len(md.Brokers) < len(l.Nodes):
			why = fmt.Sprintf("%d of %d brokers registered", len(md.Brokers), len(l.Nodes))
		case md.ControllerID < 0:
			why = "no active controller yet"
		default:
			return nil
		}
		if time.Since(lastSay) >= 2*time.Second {
			fmt.Fprintf(w, "waiting for the cluster: %s\n", why)
			lastSay = time.Now()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster not healthy in time (%s); node logs are in %s/node-*/node.log%s%s", why, l.Dir, eachNodeSees(l), logTails(l, 5))
		case <-tick.C:
		}
	}
}

// Stop stops every node cleanly (SIGTERM, then SIGKILL after 30 s). The
// pids are taken from cluster.json when it can be read: a node restarted
// since l was read (RestartWith from another process or another copy of
// the layout, as the demo does) runs under a pid l does not know, and was
// left running by every test that stopped its cluster with a stale layout.
func Stop(ctx context.Context, w io.Writer, l Layout) error {
	if cur, err := readLayout(l.Dir); err == nil {
		l = cur
	}
	for _, n := range l.Nodes {
		if !alive(n.PID) {
			continue
		}
		if err := stopClean(ctx, n); err != nil {
			return err
		}
		fmt.Fprintf(w, "node %d stopped\n", n.ID)
	}
	return nil
}

// stopClean stops n with SIGTERM, and SIGKILL after 30 s.
func stopClean(ctx context.Context, n Node) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return stopNode(ctx, n, syscall.SIGTERM)
}

// Restart starts node id again (stopping it first if it runs), waits until
// it is up (waitStarted: a node that exits at once, on a config error or
// a port in use, is an error with its last log lines) and records its new
// pid in cluster.json. The node runs this executable.
func Restart(ctx context.Context, l Layout, id int32) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	return RestartWith(ctx, l, id, exe)
}

// RestartWith is Restart running the sluice executable exe.
func RestartWith(ctx context.Context, l Layout, id int32, exe string) error {
	for i, n := range l.Nodes {
		if n.ID != id {
			continue
		}
		if err := stopClean(ctx, n); err != nil {
			return err
		}
		pid, err := startNode(exe, n)
		if err != nil {
			return err
		}
		n.PID = pid
		if err := waitStarted(ctx, n); err != nil {
			return err
		}
		l.Nodes[i].PID = pid
		return writeLayout(l)
	}
	return fmt.Errorf("no node %d in %s", id, layoutPath(l.Dir))
}

// ReadLayout reads DIR/cluster.json.
func ReadLayout(dir string) (Layout, error) { return readLayout(dir) }

// Kill sends SIGKILL to node id and waits until it is gone.
func Kill(ctx context.Context, l Layout, id int32) error {
	n, ok := l.node(id)
	if !ok {
		return fmt.Errorf("no node %d in %s", id, layoutPath(l.Dir))
	}
	return stopNode(ctx, n, syscall.SIGKILL)
}

// Signal sends sig (e.g. SIGSTOP, SIGCONT) to node id without waiting.
func Signal(l Layout, id int32, sig syscall.Signal) error {
	n, err := running(l, l.Dir, id)
	if err != nil {
		return err
	}
	return syscall.Kill(n.PID, sig)
}

// running returns node id of l, or an error that says it is not in the
// layout read from dir or not running.
func running(l Layout, dir string, id int32) (Node, error) {
	n, ok := l.node(id)
	if !ok {
		return n, fmt.Errorf("no node %d in %s", id, layoutPath(dir))
	}
	if !alive(n.PID) {
		return n, fmt.Errorf("node %d (pid %d) is not running", id, n.PID)
	}
	return n, nil
}

// Alive reports whether node id's process runs.
func Alive(l Layout, id int32) bool {
	n, ok := l.node(id)
	return ok && alive(n.PID)
}

func printStatus(ctx context.Context, w io.Writer, l Layout) error {
	fmt.Fprintf(w, "cluster %s in %s\n", l.ClusterID, l.Dir)
	fmt.Fprintf(w, "%-5s %-8s %-8s %-22s %s\n", "NODE", "PID", "STATE", "KAFKA", "LOG")
	up := 0
	for _, n := range l.Nodes {
		state := "down"
		if alive(n.PID) {
			state, up = "running", up+1
		}
		fmt.Fprintf(w, "%-5d %-8d %-8s %-22s %s\n", n.ID, n.PID, state, n.Kafka, n.LogFile)
	}
	if up == 0 {
		return fmt.Errorf("no node is running; start them with `sluice cluster start --dir %s`", l.Dir)
	}
	cl, err := l.client(nil)
	if err != nil {
		return err
	}
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	md, err := kadm.NewClient(cl).BrokerMetadata(rctx)
	if err != nil {
		return fmt.Errorf("%d of %d nodes run, but none answered metadata: %w", up, len(l.Nodes), err)
	}
	fmt.Fprintf(w, "brokers registered: %d, active controller: %d\n", len(md.Brokers), md.Controller)
	if up < len(l.Nodes) {
		return fmt.Errorf("%d of %d nodes are down", len(l.Nodes)-up, len(l.Nodes))
	}
	return nil
}

func parseNodeID(s string) (int32, error) {
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("node %q: want a node id such as 1", s)
	}
	return int32(v), nil
}

func parseProps(kvs []string) (map[string]string, error) {
	m := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("--set %q: want KEY=VALUE, e.g. log.segment.bytes=1048576", kv)
		}
		m[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return m, nil
}
