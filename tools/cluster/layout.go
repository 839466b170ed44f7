package cluster

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Default ports of one node (DESIGN.md) and the step between nodes.
const (
	KafkaPort      = 9092
	ControllerPort = 9093
	GossipPort     = 7946
	HTTPPort       = 9644
	PortStep       = 100
)

// Layout is DIR/cluster.json: everything a script needs to reach the cluster.
type Layout struct {
	ClusterID        string `json:"cluster_id"`
	Dir              string `json:"dir"`
	BootstrapServers string `json:"bootstrap_servers"`
	Nodes            []Node `json:"nodes"`
	// Listener is the Kafka listener's name and security protocol:
	// PLAINTEXT, or SASL_SSL for a --secure cluster (secure.go), whose
	// ClientProperties is the admin's client.properties.
	Listener         string `json:"listener,omitempty"`
	ClientProperties string `json:"client_properties,omitempty"`
}

// Node is one node of the cluster.
type Node struct {
	ID         int32  `json:"id"`
	PID        int    `json:"pid"`
	Kafka      string `json:"kafka"`
	Controller string `json:"controller"`
	Gossip     string `json:"gossip"`
	HTTP       string `json:"http"`
	DataDir    string `json:"data_dir"`
	Config     string `json:"config"`
	LogFile    string `json:"log_file"`
	// Args are extra arguments of this node's `sluice node` command.
	Args []string `json:"args,omitempty"`
	// Cgroup, when set, is a cgroup v2 directory the node's process is
	// started in (CLONE_INTO_CGROUP), so that every socket it opens
	// belongs to that group (sluice soak's network partitions).
	Cgroup string `json:"cgroup,omitempty"`
}

// newLayout plans a cluster of n nodes in dir.
func newLayout(dir, clusterID string, n int, basePort int) Layout {
	l := Layout{ClusterID: clusterID, Dir: dir}
	var boot []string
	for i := 1; i <= n; i++ {
		off := basePort - KafkaPort + PortStep*i
		nd := filepath.Join(dir, fmt.Sprintf("node-%d", i))
		node := Node{
			ID:         int32(i),
			Kafka:      fmt.Sprintf("127.0.0.1:%d", KafkaPort+off),
			Controller: fmt.Sprintf("127.0.0.1:%d", ControllerPort+off),
			Gossip:     fmt.Sprintf("127.0.0.1:%d", GossipPort+off),
			HTTP:       fmt.Sprintf("127.0.0.1:%d", HTTPPort+off),
			DataDir:    filepath.Join(nd, "data"),
			Config:     filepath.Join(nd, "server.properties"),
			LogFile:    filepath.Join(nd, "node.log"),
		}
		l.Nodes = append(l.Nodes, node)
		boot = append(boot, node.Kafka)
	}
	l.BootstrapServers = strings.Join(boot, ",")
	return l
}

// voters is controller.quorum.voters for the layout.
func (l Layout) voters() string {
	var vs []string
	for _, n := range l.Nodes {
		vs = append(vs, fmt.Sprintf("%d@%s", n.ID, n.Controller))
	}
	return strings.Join(vs, ",")
}

// properties is node n's server.properties, in Kafka's key names.
func (l Layout) properties(n Node, extra map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# written by sluice cluster start\n")
	fmt.Fprintf(&b, "node.id=%d\n", n.ID)
	fmt.Fprintf(&b, "process.roles=broker,controller\n")
	fmt.Fprintf(&b, "controller.quorum.voters=%s\n", l.voters())
	listener := l.Listener
	if listener == "" {
		listener = "PLAINTEXT"
	}
	fmt.Fprintf(&b, "listeners=%s://%s,CONTROLLER://%s,GOSSIP://%s,HTTP://%s\n", listener, n.Kafka, n.Controller, n.Gossip, n.HTTP)
	if l.ClientProperties != "" {
		fmt.Fprintf(&b, "ssl.keystore.location=%s\n", filepath.Join(l.Dir, "secure", fmt.Sprintf("node-%d.pem", n.ID)))
	}
	var seeds []string
	for _, o := range l.Nodes {
		if o.ID != n.ID {
			seeds = append(seeds, o.Gossip)
		}
	}
	if len(seeds) > 0 {
		fmt.Fprintf(&b, "gossip.seeds=%s\n", strings.Join(seeds, ","))
	}
	fmt.Fprintf(&b, "log.dirs=%s\n", n.DataDir)
	fmt.Fprintf(&b, "cluster.id=%s\n", l.ClusterID)
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		fmt.Fprintf(&b, "%s=%s\n", k, extra[k])
	}
	return b.String()
}

func (l Layout) node(id int32) (Node, bool) {
	for _, n := range l.Nodes {
		if n.ID == id {
			return n, true
		}
	}
	return Node{}, false
}

func layoutPath(dir string) string { return filepath.Join(dir, "cluster.json") }

// readLayout reads DIR/cluster.json.
func readLayout(dir string) (Layout, error) {
	b, err := os.ReadFile(layoutPath(dir))
	if err != nil {
		if os.IsNotExist(err) {
			return Layout{}, fmt.Errorf("no cluster in %s (no cluster.json): start one with `sluice cluster start --dir %s`", dir, dir)
		}
		return Layout{}, err
	}
	var l Layout
	if err := json.Unmarshal(b, &l); err != nil {
		return Layout{}, fmt.Errorf("%s: %w", layoutPath(dir), err)
	}
	return l, nil
}

// writeLayout writes DIR/cluster.json atomically.
func writeLayout(l Layout) error {
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(layoutPath(l.Dir), append(b, '\n'))
}

// writeFileAtomic replaces path with data durably: a power cut leaves the
// old file or the new one, never an empty or torn one. It writes a
// temporary file in the same directory, fsyncs it, renames it over path
// and fsyncs the directory (which makes the rename durable).
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("write %s: fsync of its directory: %w", path, err)
	}
	return nil
}
