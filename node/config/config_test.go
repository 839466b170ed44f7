package config

import (
	"errors"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func load(t *testing.T, file string, env []string, args ...string) (*Config, error) {
	t.Helper()
	fs := pflag.NewFlagSet("node", pflag.ContinueOnError)
	Flags(fs)
	if file != "" {
		p := filepath.Join(t.TempDir(), "server.properties")
		if err := os.WriteFile(p, []byte(file), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--config", p)
	}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	if env == nil {
		env = []string{}
	}
	return Load(fs, env)
}

const minimal = "node.id=1\nlog.dirs=/data\n"

func TestDefaults(t *testing.T) {
	c, err := load(t, minimal, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		NodeID: 1, Broker: true, Controller: true, LogDirs: []string{"/data"},
		NumPartitions: 1, DefaultReplicationFactor: 1, MinInsyncReplicas: 1,
		LogSegmentBytes: 1 << 30, LogRoll: 7 * 24 * time.Hour, LogRetention: 7 * 24 * time.Hour,
		LogRetentionBytes: -1, LogFlushIntervalMessages: 1<<63 - 1, ReplicaLagTimeMax: 30 * time.Second,
		MessageMaxBytes: 1048588, SocketRequestMaxBytes: 104857600, AutoCreateTopicsEnable: true,
	}
	c.Listeners = nil
	if got := *c; !equalish(got, want) {
		t.Fatalf("defaults:\n got %+v\nwant %+v", got, want)
	}
}

func equalish(a, b Config) bool {
	return a.NodeID == b.NodeID && a.Broker == b.Broker && a.Controller == b.Controller &&
		strings.Join(a.LogDirs, ",") == strings.Join(b.LogDirs, ",") &&
		a.NumPartitions == b.NumPartitions && a.DefaultReplicationFactor == b.DefaultReplicationFactor &&
		a.MinInsyncReplicas == b.MinInsyncReplicas && a.UncleanLeaderElectionEnable == b.UncleanLeaderElectionEnable &&
		a.LogSegmentBytes == b.LogSegmentBytes && a.LogRoll == b.LogRoll && a.LogRetention == b.LogRetention &&
		a.LogRetentionBytes == b.LogRetentionBytes && a.LogFlushIntervalMessages == b.LogFlushIntervalMessages &&
		a.LogFlushInterval == b.LogFlushInterval && a.ReplicaLagTimeMax == b.ReplicaLagTimeMax &&
		a.MessageMaxBytes == b.MessageMaxBytes && a.SocketRequestMaxBytes == b.SocketRequestMaxBytes &&
		a.AutoCreateTopicsEnable == b.AutoCreateTopicsEnable
}

func TestSourcesAndErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		file  string
		env   []string
		args  []string
		check func(*Config) bool
		err   string // substring naming the key
	}{
		{name: "file", file: minimal + "num.partitions=6\nlog.retention.ms=-1\n# comment\n! also\n\nauto.create.topics.enable : false\n",
			check: func(c *Config) bool { return c.NumPartitions == 6 && c.LogRetention == -1 && !c.AutoCreateTopicsEnable }},
		{name: "env beats file", file: minimal + "num.partitions=6\n", env: []string{"SLUICE_NUM_PARTITIONS=3", "PATH=/bin"},
			check: func(c *Config) bool { return c.NumPartitions == 3 }},
		{name: "admin tool env ignored", file: minimal, env: []string{"SLUICE_CLI_BOOTSTRAP_SERVERS=h:1"},
			check: func(c *Config) bool { return c.NumPartitions == 1 }},
		{name: "flag beats env", file: minimal, env: []string{"SLUICE_NUM_PARTITIONS=3"}, args: []string{"--num.partitions=9"},
			check: func(c *Config) bool { return c.NumPartitions == 9 }},
		{name: "env only", env: []string{"SLUICE_NODE_ID=4", "SLUICE_LOG_DIRS=/d", "SLUICE_PROCESS_ROLES=broker"},
			check: func(c *Config) bool { return c.NodeID == 4 && c.Broker && !c.Controller }},
		{name: "listeners", file: minimal + "listeners=PLAINTEXT://127.0.0.1:0,controller://127.0.0.1:19093\nadvertised.listeners=PLAINTEXT://h1:9092\n",
			check: func(c *Config) bool {
				l, _ := c.Listener(ListenerController)
				a, _ := c.Advertised(ListenerKafka)
				ac, _ := c.Advertised(ListenerController)
				return l.Port == 19093 && a.Host == "h1" && ac.Port == 19093
			}},
		{name: "voters", file: minimal + "controller.quorum.voters=1@h1:9093,2@h2:9093\n",
			check: func(c *Config) bool { return len(c.ControllerQuorumVoters) == 2 }},
		{name: "flush", file: minimal + "log.flush.interval.ms=100\nlog.flush.interval.messages=1\n",
			check: func(c *Config) bool {
				return c.LogFlushInterval == 100*time.Millisecond && c.LogFlushIntervalMessages == 1
			}},

		{name: "writeback off by default", file: minimal,
			check: func(c *Config) bool { return c.LogWritebackIntervalBytes == 0 }},
		{name: "writeback", file: minimal, env: []string{"SLUICE_SLUICE_LOG_WRITEBACK_INTERVAL_BYTES=1048576"},
			check: func(c *Config) bool { return c.LogWritebackIntervalBytes == 1<<20 }},
		{name: "writeback below a page", file: minimal + "sluice.log.writeback.interval.bytes=100\n", err: "sluice.log.writeback.interval.bytes"},

		{name: "connection limits by default", file: minimal,
			check: func(c *Config) bool {
				return c.MaxConnections == int32(DefaultMaxConnections()) && c.MaxConnections >= 16 && c.MaxConnections <= 16384 &&
					c.MaxConnectionsPerIP == math.MaxInt32 && c.MaxConnectionsPerIPOverrides == nil && c.ConnectionsMaxIdle == 10*time.Minute &&
					c.MaxPartitionsPerRequest == 10000
			}},
		{name: "connection limits", file: minimal + "max.connections=100\nmax.connections.per.ip=10\nmax.connections.per.ip.overrides=127.0.0.1:20, [::1]:0 ,10.0.0.1:5\nconnections.max.idle.ms=-1\n",
			check: func(c *Config) bool {
				o := c.MaxConnectionsPerIPOverrides
				return c.MaxConnections == 100 && c.MaxConnectionsPerIP == 10 && len(o) == 3 &&
					o[netip.MustParseAddr("127.0.0.1")] == 20 && o[netip.MustParseAddr("::1")] == 0 && c.ConnectionsMaxIdle == 0
			}},
		{name: "override by host name", file: minimal + "max.connections.per.ip.overrides=broker1:5\n", err: "max.connections.per.ip.overrides"},
		{name: "partitions per request over the controller's", file: minimal + "sluice.max.partitions.per.request=10001\n", err: "sluice.max.partitions.per.request"},

		{name: "cleaner defaults", file: minimal,
			check: func(c *Config) bool {
				return c.LogCleanupPolicy == CleanupPolicy{Delete: true} && c.LogCleanerEnable && c.LogCleanerThreads == 1 &&
					c.LogCleanerDedupeBufferSize == 128<<20 && c.LogCleanerIoMaxBytesPerSecond == math.MaxFloat64 &&
					c.LogCleanerBackoff == 15*time.Second && c.LogCleanerMinCleanableRatio == 0.5 && c.LogCleanerMinCompactionLag == 0 &&
					c.LogCleanerMaxCompactionLag == 0 && c.LogCleanerDeleteRetention == 24*time.Hour
			}},
		{name: "cleaner", file: minimal + "log.cleanup.policy=delete,compact\nlog.cleaner.enable=false\nlog.cleaner.threads=2\nlog.cleaner.dedupe.buffer.size=2097152\nlog.cleaner.io.max.bytes.per.second=1e6\nlog.cleaner.backoff.ms=100\nlog.cleaner.min.cleanable.ratio=0.01\nlog.cleaner.max.compaction.lag.ms=60000\n",
			check: func(c *Config) bool {
				return c.LogCleanupPolicy == CleanupPolicy{Compact: true, Delete: true} && c.LogCleanupPolicy.String() == "compact,delete" &&
					!c.LogCleanerEnable && c.LogCleanerThreads == 2 && c.LogCleanerDedupeBufferSize == 2<<20 &&
					c.LogCleanerIoMaxBytesPerSecond == 1e6 && c.LogCleanerBackoff == 100*time.Millisecond &&
					c.LogCleanerMinCleanableRatio == 0.01 && c.LogCleanerMaxCompactionLag == time.Minute
			}},
		{name: "bad cleanup policy", file: minimal + "log.cleanup.policy=compress\n", err: "log.cleanup.policy"},
		{name: "cleanup policy twice", file: minimal + "log.cleanup.policy=compact,compact\n", err: "log.cleanup.policy"},
		{name: "no cleaner threads", file: minimal + "log.cleaner.threads=0\n", err: "log.cleaner.enable=false"},
		{name: "dedupe buffer per thread", file: minimal + "log.cleaner.threads=4\nlog.cleaner.dedupe.buffer.size=2097152\n", err: "log.cleaner.dedupe.buffer.size"},
		{name: "cleaner io rate zero", file: minimal + "log.cleaner.io.max.bytes.per.second=0\n", err: "log.cleaner.io.max.bytes.per.second"},
		{name: "dirty ratio above 1", file: minimal + "log.cleaner.min.cleanable.ratio=1.5\n", err: "log.cleaner.min.cleanable.ratio"},
		{name: "max lag zero", file: minimal + "log.cleaner.max.compaction.lag.ms=0\n", err: "log.cleaner.max.compaction.lag.ms"},
		{name: "max lag below min", file: minimal + "log.cleaner.min.compaction.lag.ms=2000\nlog.cleaner.max.compaction.lag.ms=1000\n", err: "log.cleaner.max.compaction.lag.ms"},

		{name: "unknown file key", file: minimal + "log.dir=/x\n", err: `"log.dir"`},
		{name: "unknown env", file: minimal, env: []string{"SLUICE_LOG_DIR=/x"}, err: "SLUICE_LOG_DIR"},
		{name: "missing node.id", file: "log.dirs=/d\n", err: "node.id"},
		{name: "missing log.dirs", file: "node.id=1\n", err: "log.dirs"},
		{name: "bad int", file: minimal + "num.partitions=many\n", err: "num.partitions"},
		{name: "zero partitions", file: minimal + "num.partitions=0\n", err: "num.partitions"},
		{name: "bad bool", file: minimal + "unclean.leader.election.enable=yes\n", err: "unclean.leader.election.enable"},
		{name: "bad role", file: minimal + "process.roles=broker,zookeeper\n", err: "process.roles"},
		{name: "unmapped listener", file: minimal + "listeners=INTERNAL://:9094,CONTROLLER://:9093\n", err: "add INTERNAL:PLAINTEXT to the map"},
		{name: "bad listener", file: minimal + "listeners=IN TERNAL://:9094,CONTROLLER://:9093\n", err: "listeners"},
		{name: "ssl listener without keystore", file: minimal + "listeners=SSL://:9094,CONTROLLER://:9093\n", err: "an SSL listener needs a certificate"},
		{name: "bad protocol", file: minimal + "listener.security.protocol.map=PLAINTEXT:TLS\n", err: "listener.security.protocol.map"},
		{name: "no inter-broker listener", file: minimal + "listeners=INTERNAL://:9092,EXTERNAL://:19092,CONTROLLER://:9093\nlistener.security.protocol.map=INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT\n",
			err: "inter.broker.listener.name=PLAINTEXT must be a Kafka listener in listeners; the valid options based on the listeners are INTERNAL,EXTERNAL"},
		{name: "wildcard kafka listener", file: minimal + "listeners=PLAINTEXT://0.0.0.0:9092,CONTROLLER://127.0.0.1:9093\n", err: "set advertised.listeners=PLAINTEXT://<host name or IP>:9092"},
		{name: "wildcard controller", file: minimal + "listeners=PLAINTEXT://:9092,CONTROLLER://0.0.0.0:9093\n", err: "set advertised.listeners=CONTROLLER://"},
		{name: "no kafka listener", file: minimal + "listeners=CONTROLLER://:9093\n", err: "PLAINTEXT"},
		{name: "advertised wildcard", file: minimal + "advertised.listeners=PLAINTEXT://0.0.0.0:9092\n", err: "advertised.listeners"},
		{name: "not a voter", file: minimal + "controller.quorum.voters=2@h:9093\n", err: "controller.quorum.voters"},
		{name: "initial controllers without cluster id", file: minimal + "initial.controllers=1@h:9093\n", err: "set cluster.id"},
		{name: "bad initial controllers", file: minimal + "cluster.id=MkU3OEVBNTcwNTJENDM2Qg\ninitial.controllers=h:9093\n", err: "initial.controllers"},
		{name: "bad voters", file: minimal + "controller.quorum.voters=h:9093\n", err: "controller.quorum.voters"},
		{name: "segment too small", file: minimal + "log.segment.bytes=1\n", err: "log.segment.bytes"},
		{name: "bad cluster id", file: minimal + "cluster.id=nope\n", err: "cluster.id"},
		{name: "two dirs", file: "node.id=1\nlog.dirs=/a,/b\n", err: "log.dirs"},
		{name: "not key=value", file: minimal + "garbage\n", err: "garbage"},
		{name: "duplicate", file: minimal + "node.id=2\n", err: "node.id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := load(t, tc.file, tc.env, tc.args...)
			if tc.err != "" {
				if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one naming %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(c) {
				t.Fatalf("unexpected config %+v", c)
			}
		})
	}
}

// TestNamedListeners: two PLAINTEXT listeners under Kafka's names for them
// (the container layout of deploy/compose.yaml), advertised apart, one of
// them the inter-broker listener; CONTROLLER, HTTP and GOSSIP stay out of
// the Kafka listeners.
func TestNamedListeners(t *testing.T) {
	c, err := load(t, minimal, []string{
		"SLUICE_LISTENERS=INTERNAL://0.0.0.0:9092,EXTERNAL://0.0.0.0:19092,CONTROLLER://0.0.0.0:9093,HTTP://0.0.0.0:9644,GOSSIP://0.0.0.0:7946",
		"SLUICE_ADVERTISED_LISTENERS=INTERNAL://sluice-1:9092,EXTERNAL://127.0.0.1:19092,CONTROLLER://sluice-1:9093",
		"SLUICE_LISTENER_SECURITY_PROTOCOL_MAP=INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"SLUICE_INTER_BROKER_LISTENER_NAME=internal",
	})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range c.KafkaListeners {
		names = append(names, l.Name)
	}
	if got := strings.Join(names, ","); got != "INTERNAL,EXTERNAL" {
		t.Fatalf("Kafka listeners = %s, want INTERNAL,EXTERNAL", got)
	}
	if c.InterBrokerListener != "INTERNAL" {
		t.Fatalf("inter-broker listener = %q, want INTERNAL", c.InterBrokerListener)
	}
	if a, _ := c.Advertised("EXTERNAL"); a.Addr() != "127.0.0.1:19092" {
		t.Fatalf("EXTERNAL advertised as %s", a.Addr())
	}
	// The default map has PLAINTEXT:PLAINTEXT, so the old single-listener
	// form keeps working without one.
	c, err = load(t, minimal, nil)
	if err != nil || len(c.KafkaListeners) != 1 || c.KafkaListeners[0].Name != ListenerKafka || c.InterBrokerListener != ListenerKafka {
		t.Fatalf("default listeners: %+v, %v", c, err)
	}
}
