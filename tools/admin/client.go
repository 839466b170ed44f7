package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-log/sluice/tools/internal/cli"
)

// common are the flags every admin command takes.
type common struct {
	bootstrap     string
	format        string
	timeout       time.Duration
	commandConfig string
}

func (c *common) register(cmd *cobra.Command) {
	cmd.PersistentFlags().StringVar(&c.bootstrap, "bootstrap-server", "", "HOST:PORT,... of the cluster (default $SLUICE_CLI_BOOTSTRAP_SERVERS, ./sluice-cluster/cluster.json, 127.0.0.1:9092)")
	cmd.PersistentFlags().StringVar(&c.format, "format", "text", "output format: text or json")
	cmd.PersistentFlags().DurationVar(&c.timeout, "timeout", 30*time.Second, "how long to wait for the cluster")
	cmd.PersistentFlags().StringVar(&c.commandConfig, "command-config", "", "Kafka client properties: security.protocol, sasl.mechanism, sasl.jaas.config, ssl.truststore.location (as Kafka's tools take them)")
}

// servers resolves the bootstrap servers.
func (c *common) servers() []string {
	s := c.bootstrap
	if s == "" {
		s = os.Getenv("SLUICE_CLI_BOOTSTRAP_SERVERS")
	}
	if s == "" {
		s, _ = localCluster()
	}
	if s == "" {
		s = "127.0.0.1:9092"
	}
	return strings.Split(s, ",")
}

// client opens a kgo client, for requests kadm has no call for; the
// caller closes it.
func (c *common) client(opts ...kgo.Opt) (*kgo.Client, error) {
	if c.format != "text" && c.format != "json" {
		return nil, fmt.Errorf("--format %q: want text or json", c.format)
	}
	props := c.commandConfig
	if props == "" && c.bootstrap == "" && os.Getenv("SLUICE_CLI_BOOTSTRAP_SERVERS") == "" {
		// The local cluster's own client settings (sluice cluster start
		// --secure writes them).
		_, props = localCluster()
	}
	sec, err := cli.SecurityOpts(props)
	if err != nil {
		return nil, err
	}
	return kgo.NewClient(slices.Concat([]kgo.Opt{kgo.SeedBrokers(c.servers()...)}, sec, opts)...)
}

// localCluster is the bootstrap servers and client properties file of
// the local cluster in ./sluice-cluster (cluster.json), "" where none.
func localCluster() (bootstrap, clientProperties string) {
	var l struct {
		BootstrapServers string `json:"bootstrap_servers"`
		ClientProperties string `json:"client_properties"`
	}
	if b, err := os.ReadFile(filepath.Join("sluice-cluster", "cluster.json")); err == nil && json.Unmarshal(b, &l) == nil {
		return l.BootstrapServers, l.ClientProperties
	}
	return "", ""
}

func (c *common) ctx(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, c.timeout)
}

// session is what an admin command runs with: a client, its kadm view,
// and a context bounded by --timeout.
type session struct {
	ctx context.Context
	cl  *kgo.Client
	adm *kadm.Client
}

// with is every admin command's prologue: it checks --format, opens a
// session, runs fn and closes the session. opts configure the client (the
// producing and consuming commands pass theirs).
func (c *common) with(ctx context.Context, fn func(s session) error, opts ...kgo.Opt) error {
	cl, err := c.client(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	return fn(session{ctx: ctx, cl: cl, adm: kadm.NewClient(cl)})
}

// streams are a command's standard streams (cobra's, which tests set).
type streams struct {
	in       io.Reader
	out, err io.Writer
}

func streamsOf(cmd *cobra.Command) streams {
	return streams{in: cmd.InOrStdin(), out: cmd.OutOrStdout(), err: cmd.ErrOrStderr()}
}

// emit prints v as JSON when --format json, else calls text.
func (c *common) emit(w io.Writer, v any, text func()) error {
	if c.format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	text()
	return nil
}

// unreachable turns a transport error into one that says what to check.
func (c *common) unreachable(err error) error {
	return fmt.Errorf("%w (bootstrap servers %s: is the cluster running? try `sluice cluster status`)", err, strings.Join(c.servers(), ","))
}

func joinIDs(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return strings.Join(s, ",")
}

// parseKVs parses k=v,k2=v2 (repeatable flags). A list value is written
// as kafka-configs.sh takes it, in brackets (cleanup.policy=[compact,delete]),
// or bare as kafka-topics.sh's --config takes it (cleanup.policy=compact,delete):
// a piece without "=" continues the value before it.
func parseKVs(vals []string) (map[string]string, error) {
	m := map[string]string{}
	for _, v := range vals {
		last := ""
		for _, kv := range splitOutsideBrackets(v) {
			if kv = strings.TrimSpace(kv); kv == "" {
				continue
			}
			k, val, ok := strings.Cut(kv, "=")
			if !ok && last != "" {
				m[last] += "," + kv
				continue
			}
			if !ok || k == "" {
				return nil, fmt.Errorf("config %q: want KEY=VALUE, e.g. retention.ms=86400000", kv)
			}
			if strings.HasPrefix(val, "[") && strings.HasSuffix(val, "]") {
				val = val[1 : len(val)-1]
			}
			m[k], last = val, k
		}
	}
	return m, nil
}

// splitOutsideBrackets splits s at the commas that are not inside [ ].
func splitOutsideBrackets(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '[':
			depth++
		case ']':
			depth = max(depth-1, 0)
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}
