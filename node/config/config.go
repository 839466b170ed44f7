package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/sluice-log/sluice/node/meta"
	"github.com/sluice-log/sluice/node/sasl"
	"github.com/sluice-log/sluice/quorum"
)

// ErrInvalid wraps every configuration error.
var ErrInvalid = errors.New("config")

// Listener names understood by the node. Any other name is a Kafka
// protocol listener (listener.security.protocol.map).
const (
	// ListenerKafka: the default Kafka listener and inter-broker name.
	ListenerKafka      = "PLAINTEXT"
	ListenerController = "CONTROLLER"
	// ListenerHTTP (optional) serves /health, /healthz, /readyz and /metrics.
	ListenerHTTP = "HTTP"
	// ListenerGossip (optional) runs memberlist liveness gossip (TCP and
	// UDP); without it the broker unfences itself and nothing fences a
	// dead broker.
	ListenerGossip = "GOSSIP"
)

// Listener is one NAME://host:port entry of listeners or advertised.listeners.
type Listener struct {
	Name string
	Host string
	Port int32
}

// Addr is host:port.
func (l Listener) Addr() string { return net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port))) }

// Config is a node's validated configuration.
type Config struct {
	NodeID int32
	// Broker and Controller are process.roles.
	Broker, Controller bool
	// ControllerQuorumVoters may be empty: the node then uses the
	// initial controllers of meta.properties.
	ControllerQuorumVoters []quorum.Voter
	Listeners              []Listener
	// AdvertisedListeners defaults to Listeners.
	AdvertisedListeners []Listener
	// KafkaListeners are the Kafka protocol listeners among Listeners
	// (every name but CONTROLLER, HTTP and GOSSIP), in their order.
	KafkaListeners []Listener
	// SecurityProtocols is listener.security.protocol.map: listener name
	// to security protocol.
	SecurityProtocols map[string]string
	// InterBrokerListener (inter.broker.listener.name) is the Kafka
	// listener replica fetchers dial on other brokers.
	InterBrokerListener string
	// TLS holds the TLS of each SSL and SASL_SSL listener (tls.go), by name.
	TLS map[string]*ListenerTLS
	// SASL: each SASL_PLAINTEXT and SASL_SSL listener's (sasl.go).
	SASL map[string]*ListenerSASL
	// SASLInterBrokerMechanism is sasl.mechanism.inter.broker.protocol
	// ("": the first enabled on the inter-broker listener).
	SASLInterBrokerMechanism string
	// FailedAuthenticationDelay is connection.failed.authentication.delay.ms.
	FailedAuthenticationDelay time.Duration
	// ConnectionsMaxReauth is connections.max.reauth.ms (0: none).
	ConnectionsMaxReauth time.Duration
	Quota                QuotaWindow // quota.window.num and quota.window.size.seconds (quota.go)
	// authorizer.class.name, allow.everyone.if.no.acl.found, super.users, ssl.principal.mapping.rules (authz.go).
	Authorizer, AllowEveryoneIfNoACLFound bool
	SuperUsers                            []string
	PrincipalRules                        sasl.PrincipalRules
	// saslMechanisms is sasl.enabled.mechanisms as given.
	saslMechanisms string
	// ssl holds the ssl.* values and sslOverrides the
	// listener.name.<name>.ssl.* ones, by listener name, with the SASL
	// ones (saslOverride).
	ssl          map[string]string
	sslOverrides map[string]map[string]string
	LogDirs      []string
	// ClusterID (cluster.id, a Sluice key) is checked against
	// meta.properties when set.
	ClusterID string
	// InitialControllers (initial.controllers, a Sluice key, as `sluice
	// init --initial-controllers`): when set, `sluice node` formats an
	// empty log.dirs for cluster.id with these voters before it starts,
	// as Kafka's container image formats its storage; a formatted
	// directory is only verified.
	InitialControllers []quorum.Voter
	// GossipSeeds (gossip.seeds, a Sluice key) are host:port gossip
	// addresses of other nodes to join.
	GossipSeeds []string

	NumPartitions               int32
	DefaultReplicationFactor    int16
	MinInsyncReplicas           int32
	UncleanLeaderElectionEnable bool
	LogSegmentBytes             int64
	LogRoll                     time.Duration
	// LogRetention < 0 keeps forever; LogRetentionBytes < 0 is unlimited.
	LogRetention      time.Duration
	LogRetentionBytes int64
	// LogFlushIntervalMessages math.MaxInt64 and LogFlushInterval 0 mean
	// never (the OS writes back), Kafka's defaults.
	LogFlushIntervalMessages int64
	LogFlushInterval         time.Duration
	// LogWritebackIntervalBytes (sluice.log.writeback.interval.bytes, a
	// Sluice key): every this many bytes appended to a log, ask the kernel
	// to start writing back what came before (sync_file_range on Linux).
	// Zero, the default: never; vm.dirty_* decide when pages are written.
	LogWritebackIntervalBytes int64
	// LogScrubInterval (sluice.log.scrub.interval.ms, a Sluice key): each
	// sealed segment is verified in the background (CRC of every batch)
	// this often; 0: never (reads still verify what came from disk).
	LogScrubInterval time.Duration
	// LogScrubMaxBytesPerSecond (sluice.log.scrub.max.bytes.per.second):
	// the background scrub reads at most this fast, over all logs; 0: no
	// limit.
	LogScrubMaxBytesPerSecond int64
	ReplicaLagTimeMax         time.Duration
	// ProducerIDExpiration (producer.id.expiration.ms): a partition forgets
	// an idempotent producer whose latest batch is this old.
	ProducerIDExpiration time.Duration
	// BrokerSessionTimeout (broker.session.timeout.ms): a broker the
	// active controller has not seen alive through gossip for this long is
	// fenced and its partitions get new leaders.
	BrokerSessionTimeout time.Duration
	// BrokerProbeInterval (sluice.broker.probe.interval.ms, a Sluice key):
	// the active controller connects to every live broker's Kafka listener
	// this often; two refusals in a row (the process is gone, its host up)
	// fence it at once. 0: no probes.
	BrokerProbeInterval time.Duration
	// ControlledShutdownEnable (controlled.shutdown.enable): a clean stop
	// first asks the controller to move the node's leaderships and ISR
	// memberships to the other replicas, for at most
	// ControlledShutdownTimeout (sluice.controlled.shutdown.timeout.ms).
	ControlledShutdownEnable  bool
	ControlledShutdownTimeout time.Duration
	// AutoLeaderRebalanceEnable (auto.leader.rebalance.enable): the
	// active controller checks every LeaderImbalanceCheckInterval
	// (leader.imbalance.check.interval.seconds) and moves leaderships back
	// to their preferred replicas (the first) for each broker whose share
	// of preferred partitions led elsewhere exceeds
	// LeaderImbalancePerBrokerPercentage
	// (leader.imbalance.per.broker.percentage).
	AutoLeaderRebalanceEnable          bool
	LeaderImbalanceCheckInterval       time.Duration
	LeaderImbalancePerBrokerPercentage int32
	MessageMaxBytes                    int32
	SocketRequestMaxBytes              int32
	AutoCreateTopicsEnable             bool
	// MaxConnections (max.connections) bounds the Kafka listener's open
	// connections; the default is derived from RLIMIT_NOFILE
	// (DefaultMaxConnections). MaxConnectionsPerIP
	// (max.connections.per.ip) and MaxConnectionsPerIPOverrides
	// (max.connections.per.ip.overrides, "ip:count,...") bound them per
	// peer address. ConnectionsMaxIdle (connections.max.idle.ms) closes a
	// connection idle that long; 0 never.
	MaxConnections               int32
	MaxConnectionsPerIP          int32
	MaxConnectionsPerIPOverrides map[netip.Addr]int
	ConnectionsMaxIdle           time.Duration
	// MaxPartitionsPerRequest (sluice.max.partitions.per.request, a Sluice
	// key): CreateTopics and CreatePartitions requests that would add more
	// partitions in all are refused with POLICY_VIOLATION; at most
	// quorum.MaxNewPartitionsPerRequest, the controller's own limit.
	MaxPartitionsPerRequest int32
	// LogMessageTimestampBeforeMaxMs and LogMessageTimestampAfterMaxMs
	// (log.message.timestamp.before.max.ms / after.max.ms, KIP-937): a
	// leader refuses a produced record whose CreateTime timestamp is
	// further than this before or after its clock (INVALID_TIMESTAMP).
	// Kafka 4's defaults: unbounded before, one hour after. Kafka takes
	// 0; Sluice takes 1 and up (0 would refuse nearly every record).
	LogMessageTimestampBeforeMaxMs int64
	LogMessageTimestampAfterMaxMs  int64
	// DebugPprof (sluice.debug.pprof, a Sluice key) serves Go's
	// /debug/pprof/ on the HTTP listener.
	DebugPprof bool

	// The log cleaner (log compaction; node/cleaner). LogCleanupPolicy
	// (log.cleanup.policy) is the default cleanup.policy of a topic;
	// LogCleanerEnable (log.cleaner.enable) runs LogCleanerThreads
	// (log.cleaner.threads) cleaner goroutines sharing
	// LogCleanerDedupeBufferSize (log.cleaner.dedupe.buffer.size) bytes of
	// offset map and LogCleanerIoMaxBytesPerSecond
	// (log.cleaner.io.max.bytes.per.second, read plus written; +Inf:
	// unlimited); with nothing to clean they wait LogCleanerBackoff
	// (log.cleaner.backoff.ms) or a produce.
	LogCleanupPolicy              CleanupPolicy
	LogCleanerEnable              bool
	LogCleanerThreads             int32
	LogCleanerDedupeBufferSize    int64
	LogCleanerIoMaxBytesPerSecond float64
	LogCleanerBackoff             time.Duration
	// The broker defaults of the compaction topic configs:
	// log.cleaner.min.cleanable.ratio (min.cleanable.dirty.ratio),
	// log.cleaner.min.compaction.lag.ms, log.cleaner.max.compaction.lag.ms
	// (0: never forced, Kafka's Long.MAX_VALUE) and
	// log.cleaner.delete.retention.ms (delete.retention.ms).
	LogCleanerMinCleanableRatio float64
	LogCleanerMinCompactionLag  time.Duration
	LogCleanerMaxCompactionLag  time.Duration
	LogCleanerDeleteRetention   time.Duration
	Groups                      Groups       // the group coordinator, its topic (groups.go)
	Transactions                Transactions // the transaction coordinator, its topic (txn.go)
	Racks                       Racks        // broker.rack and its uses (rack.go)
	Scale                       Scale        // fetch sessions (scale.go)
	Format                      Format       // first-start formatting (format.go)
	Security                                 // gossip encryption keys, TLS reloads (security.go)
	// Values holds every key's effective value as text, and Defaulted the
	// keys left at their default (DescribeConfigs of the broker).
	Values    map[string]string
	Defaulted map[string]bool
}

// Listener returns the listener named name, and whether there is one.
func (c *Config) Listener(name string) (Listener, bool) {
	i := slices.IndexFunc(c.Listeners, func(l Listener) bool { return l.Name == name })
	if i < 0 {
		return Listener{}, false
	}
	return c.Listeners[i], true
}

// Advertised returns the advertised listener named name (falling back to the
// listener itself).
func (c *Config) Advertised(name string) (Listener, bool) {
	if i := slices.IndexFunc(c.AdvertisedListeners, func(l Listener) bool { return l.Name == name }); i >= 0 {
		return c.AdvertisedListeners[i], true
	}
	return c.Listener(name)
}

// key is one configuration key: its default and how it lands in Config.
type key struct {
	name  string
	def   string
	help  string
	parse func(c *Config, v string) error
}

// keys is every key the node understands, in Kafka's names.
var keys = slices.Concat(baseKeys, sslKeyTable(), saslKeys, groupKeys(), txnKeys(), scaleKeys(), formatKeys(), authzKeys, quotaKeys, securityKeys, rackKeys(), oauthKeys, identityKeys)

// baseKeys are the keys but ssl.* (tls.go).
var baseKeys = []key{
	{"node.id", "", "this node's id (required)", func(c *Config, v string) error { return parseInt32(&c.NodeID, v, 0, math.MaxInt32) }},
	{"process.roles", "broker,controller", "broker, controller or both", parseRoles},
	{"controller.quorum.voters", "", "id@host:port,... of the controllers (default: initial.controllers of meta.properties)", func(c *Config, v string) error {
		if strings.TrimSpace(v) == "" {
			return nil
		}
		vs, err := meta.ParseControllers(v)
		c.ControllerQuorumVoters = vs
		return err
	}},
	{"listeners", "PLAINTEXT://:9092,CONTROLLER://:9093", "NAME://host:port,...", func(c *Config, v string) (err error) {
		c.Listeners, err = parseListeners(v)
		return err
	}},
	{"advertised.listeners", "", "NAME://host:port,... clients and peers dial (default: listeners)", func(c *Config, v string) (err error) {
		c.AdvertisedListeners, err = parseListeners(v)
		return err
	}},
	{"listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL", "NAME:PROTOCOL,... the security protocol of each Kafka listener: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", func(c *Config, v string) (err error) {
		c.SecurityProtocols, err = parseProtocolMap(v)
		return err
	}},
	{"inter.broker.listener.name", ListenerKafka, "the Kafka listener brokers use to reach each other (replica fetches)", func(c *Config, v string) error {
		c.InterBrokerListener = strings.ToUpper(v)
		return nil
	}},
	{"log.dirs", "", "the node's data directory (required; one directory for now)", func(c *Config, v string) error {
		for _, d := range strings.Split(v, ",") {
			if d = strings.TrimSpace(d); d != "" {
				c.LogDirs = append(c.LogDirs, d)
			}
		}
		if len(c.LogDirs) != 1 {
			return fmt.Errorf("want exactly one directory, got %d", len(c.LogDirs))
		}
		return nil
	}},
	{"cluster.id", "", "expected cluster id; checked against meta.properties", func(c *Config, v string) error {
		c.ClusterID = v
		if v == "" {
			return nil
		}
		_, err := quorum.ParseUUID(v)
		return err
	}},
	{"initial.controllers", "", "id@host:port,... the voters to format an empty log.dirs with on first start (needs cluster.id; a formatted directory is only verified)", func(c *Config, v string) error {
		if strings.TrimSpace(v) == "" {
			return nil
		}
		vs, err := meta.ParseControllers(v)
		c.InitialControllers = vs
		return err
	}},
	{"gossip.seeds", "", "host:port,... gossip listeners of other nodes to join", func(c *Config, v string) error {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s == "" {
				continue
			}
			if _, _, err := net.SplitHostPort(s); err != nil {
				return err
			}
			c.GossipSeeds = append(c.GossipSeeds, s)
		}
		return nil
	}},
	{"num.partitions", "1", "default partitions of a new topic", func(c *Config, v string) error { return parseInt32(&c.NumPartitions, v, 1, math.MaxInt32) }},
	{"default.replication.factor", "1", "default replication factor of a new topic", func(c *Config, v string) error {
		var n int32
		err := parseInt32(&n, v, 1, math.MaxInt16)
		c.DefaultReplicationFactor = int16(n)
		return err
	}},
	{"min.insync.replicas", "1", "acks=all needs this many in-sync replicas", func(c *Config, v string) error { return parseInt32(&c.MinInsyncReplicas, v, 1, math.MaxInt32) }},
	{"unclean.leader.election.enable", "false", "elect leaders from outside the ISR", func(c *Config, v string) error { return parseBool(&c.UncleanLeaderElectionEnable, v) }},
	{"log.segment.bytes", "1073741824", "segment size", func(c *Config, v string) error { return parseInt64(&c.LogSegmentBytes, v, 14, math.MaxInt32) }},
	{"log.roll.ms", "604800000", "roll a segment this old", func(c *Config, v string) error { return parseMs(&c.LogRoll, v, 1) }},
	{"log.retention.ms", "604800000", "delete segments older than this; -1 keeps forever", func(c *Config, v string) error { return parseMs(&c.LogRetention, v, -1) }},
	{"log.retention.bytes", "-1", "delete the oldest segments past this size; -1 unlimited", func(c *Config, v string) error { return parseInt64(&c.LogRetentionBytes, v, -1, math.MaxInt64) }},
	{"log.flush.interval.messages", "9223372036854775807", "fsync after this many records", func(c *Config, v string) error {
		return parseInt64(&c.LogFlushIntervalMessages, v, 1, math.MaxInt64)
	}},
	{"log.flush.interval.ms", "", "fsync when the oldest unflushed record is this old (default: never)", func(c *Config, v string) error {
		if v == "" {
			return nil
		}
		return parseMs(&c.LogFlushInterval, v, 0)
	}},
	{"sluice.log.writeback.interval.bytes", "0", "after this many bytes appended to a log, start writing back what came before (sync_file_range; Linux only; 0: never, the kernel decides by vm.dirty_*)", func(c *Config, v string) error {
		if err := parseInt64(&c.LogWritebackIntervalBytes, v, 0, math.MaxInt64); err != nil {
			return err
		}
		if n := c.LogWritebackIntervalBytes; n > 0 && n < 4096 {
			return fmt.Errorf("%d: must be 0 (off) or at least one page, 4096", n)
		}
		return nil
	}},
	{"sluice.log.scrub.interval.ms", "86400000", "re-verify every sealed segment (CRC of each batch) in the background this often; a replica repairs a bad batch from another copy; 0: never (reads still verify what came from disk)", func(c *Config, v string) error {
		return parseMs(&c.LogScrubInterval, v, 0)
	}},
	{"sluice.log.scrub.max.bytes.per.second", "10485760", "the background scrub reads at most this many bytes per second, over all logs; 0: no limit", func(c *Config, v string) error {
		return parseInt64(&c.LogScrubMaxBytesPerSecond, v, 0, math.MaxInt64)
	}},
	{"broker.session.timeout.ms", "9000", "a broker not seen alive (gossip) this long is fenced and loses its leaderships", func(c *Config, v string) error { return parseMs(&c.BrokerSessionTimeout, v, 1) }},
	{"sluice.broker.probe.interval.ms", "250", "the active controller connects to each broker's Kafka listener this often; a broker whose listener refuses twice in a row (its process is gone) is fenced at once, without waiting for broker.session.timeout.ms; 0: never", func(c *Config, v string) error { return parseMs(&c.BrokerProbeInterval, v, 0) }},
	{"controlled.shutdown.enable", "true", "on a clean stop (SIGTERM), move this node's leaderships and ISR memberships to the other replicas before closing, so that clients see no unavailable partition", func(c *Config, v string) error { return parseBool(&c.ControlledShutdownEnable, v) }},
	{"sluice.controlled.shutdown.timeout.ms", "10000", "how long a clean stop waits for the controller to move this node's leaderships before it closes anyway", func(c *Config, v string) error {
		return parseMs(&c.ControlledShutdownTimeout, v, 1)
	}},
	{"auto.leader.rebalance.enable", "true", "the active controller moves leaderships back to their preferred replicas (the first in each replica list) once those are alive and in sync, checking every leader.imbalance.check.interval.seconds", func(c *Config, v string) error {
		return parseBool(&c.AutoLeaderRebalanceEnable, v)
	}},
	{"leader.imbalance.check.interval.seconds", "300", "how often the active controller checks leader imbalance (auto.leader.rebalance.enable)", func(c *Config, v string) error {
		var n int64
		if err := parseInt64(&n, v, 1, math.MaxInt64/int64(time.Second)); err != nil {
			return err
		}
		c.LeaderImbalanceCheckInterval = time.Duration(n) * time.Second
		return nil
	}},
	{"leader.imbalance.per.broker.percentage", "10", "a broker's leaderships go back to it when more than this percentage of the partitions it prefers are led by others", func(c *Config, v string) error {
		return parseInt32(&c.LeaderImbalancePerBrokerPercentage, v, 0, 100)
	}},
	{"replica.lag.time.max.ms", "30000", "a follower this far behind leaves the ISR", func(c *Config, v string) error { return parseMs(&c.ReplicaLagTimeMax, v, 1) }},
	{"producer.id.expiration.ms", "86400000", "a partition forgets an idempotent producer whose latest batch is this old", func(c *Config, v string) error {
		return parseMs(&c.ProducerIDExpiration, v, 1)
	}},
	{"message.max.bytes", "1048588", "largest record batch", func(c *Config, v string) error { return parseInt32(&c.MessageMaxBytes, v, 61, math.MaxInt32) }},
	{"log.message.timestamp.before.max.ms", "9223372036854775807", "refuse a produced record timestamped further than this in the past (KIP-937)", func(c *Config, v string) error {
		return parseInt64(&c.LogMessageTimestampBeforeMaxMs, v, 1, math.MaxInt64)
	}},
	{"log.message.timestamp.after.max.ms", "3600000", "refuse a produced record timestamped further than this in the future (KIP-937)", func(c *Config, v string) error {
		return parseInt64(&c.LogMessageTimestampAfterMaxMs, v, 1, math.MaxInt64)
	}},
	{"socket.request.max.bytes", "104857600", "largest request frame", func(c *Config, v string) error { return parseInt32(&c.SocketRequestMaxBytes, v, 10, math.MaxInt32) }},
	{"auto.create.topics.enable", "true", "create a topic on first use", func(c *Config, v string) error { return parseBool(&c.AutoCreateTopicsEnable, v) }},
	{"max.connections", strconv.Itoa(DefaultMaxConnections()), "most client connections open at once; more are closed when accepted (default: half of RLIMIT_NOFILE, at most 16384)", func(c *Config, v string) error {
		return parseInt32(&c.MaxConnections, v, 1, math.MaxInt32)
	}},
	{"max.connections.per.ip", "2147483647", "most connections open at once from one address", func(c *Config, v string) error {
		return parseInt32(&c.MaxConnectionsPerIP, v, 1, math.MaxInt32)
	}},
	{"max.connections.per.ip.overrides", "", "ip:count,... per-address exceptions to max.connections.per.ip (0 refuses the address)", func(c *Config, v string) (err error) {
		c.MaxConnectionsPerIPOverrides, err = parseIPOverrides(v)
		return err
	}},
	{"connections.max.idle.ms", "600000", "close a connection that sent nothing for this long; -1 never", func(c *Config, v string) error {
		if err := parseMs(&c.ConnectionsMaxIdle, v, -1); err != nil {
			return err
		}
		c.ConnectionsMaxIdle = max(c.ConnectionsMaxIdle, 0)
		return nil
	}},
	{"sluice.max.partitions.per.request", "10000", "refuse a CreateTopics or CreatePartitions request that adds more partitions in all (POLICY_VIOLATION); at most 10000", func(c *Config, v string) error {
		return parseInt32(&c.MaxPartitionsPerRequest, v, 1, quorum.MaxNewPartitionsPerRequest)
	}},
	{"log.cleanup.policy", "delete", "default cleanup.policy of a topic: delete, compact or compact,delete", func(c *Config, v string) (err error) {
		c.LogCleanupPolicy, err = ParseCleanupPolicy(v)
		return err
	}},
	{"log.cleaner.enable", "true", "run the log cleaner (compaction of cleanup.policy=compact topics)", func(c *Config, v string) error { return parseBool(&c.LogCleanerEnable, v) }},
	{"log.cleaner.threads", "1", "cleaner goroutines (to turn the cleaner off: log.cleaner.enable=false)", func(c *Config, v string) error {
		if err := parseInt32(&c.LogCleanerThreads, v, 1, 256); err != nil {
			return fmt.Errorf("%v (to turn the cleaner off: log.cleaner.enable=false)", err)
		}
		return nil
	}},
	{"log.cleaner.dedupe.buffer.size", "134217728", "bytes of offset map (key hash to latest offset) shared by the cleaner threads; at least 1 MiB per thread", func(c *Config, v string) error {
		return parseInt64(&c.LogCleanerDedupeBufferSize, v, 1<<20, math.MaxInt64)
	}},
	{"log.cleaner.io.max.bytes.per.second", "1.7976931348623157E308", "the cleaners read plus write at most this many bytes per second, over all threads (default: unlimited)", func(c *Config, v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f > 0) {
			return errors.New("want a number above 0 (1.7976931348623157E308: unlimited)")
		}
		c.LogCleanerIoMaxBytesPerSecond = f
		return nil
	}},
	{"log.cleaner.backoff.ms", "15000", "how long a cleaner waits when no log is dirty enough (a produce to a compacted topic wakes it sooner)", func(c *Config, v string) error {
		return parseMs(&c.LogCleanerBackoff, v, 1)
	}},
	{"log.cleaner.min.cleanable.ratio", "0.5", "default min.cleanable.dirty.ratio: clean a log once this share of it is dirty", func(c *Config, v string) error {
		return parseRatio(&c.LogCleanerMinCleanableRatio, v)
	}},
	{"log.cleaner.min.compaction.lag.ms", "0", "default min.compaction.lag.ms: a record stays uncompacted at least this long", func(c *Config, v string) error {
		return parseMs(&c.LogCleanerMinCompactionLag, v, 0)
	}},
	{"log.cleaner.max.compaction.lag.ms", "9223372036854775807", "default max.compaction.lag.ms: a record is compacted at the latest this long after it was written", func(c *Config, v string) error {
		return parseLag(&c.LogCleanerMaxCompactionLag, v)
	}},
	{"log.cleaner.delete.retention.ms", "86400000", "default delete.retention.ms: how long a tombstone survives after its segment was cleaned", func(c *Config, v string) error {
		return parseMs(&c.LogCleanerDeleteRetention, v, 0)
	}},
	{"sluice.debug.pprof", "false", "serve Go's /debug/pprof/ (CPU, heap, allocation profiles) on the HTTP listener", func(c *Config, v string) error { return parseBool(&c.DebugPprof, v) }},
}

// EnvPrefix is the prefix of environment variables: SLUICE_LOG_DIRS is log.dirs.
const EnvPrefix = "SLUICE"

func envName(k string) string {
	return EnvPrefix + "_" + strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(k))
}

// Flags registers --config and one flag per key on fs. Pass the same fs to
// Load after parsing.
func Flags(fs *pflag.FlagSet) {
	fs.String("config", "", "server.properties file")
	for _, k := range keys {
		fs.String(k.name, k.def, k.help)
	}
}

// Load reads the configuration from fs (parsed flags registered by Flags;
// may be nil), the environment env (os.Environ form; nil means os.Environ())
// and the file named by --config, and validates it. It does not touch the
// data directory: see Verify.
func Load(fs *pflag.FlagSet, env []string) (*Config, error) {
	if env == nil {
		env = os.Environ()
	}
	// "::" keeps Kafka's dotted keys flat instead of nesting them.
	v := viper.NewWithOptions(viper.KeyDelimiter("::"))
	known := map[string]bool{}
	overrides := map[string]map[string]string{}
	for _, k := range keys {
		known[k.name] = true
		v.SetDefault(k.name, k.def)
	}
	if fs != nil {
		if f := fs.Lookup("config"); f != nil && f.Value.String() != "" {
			m, err := readProperties(f.Value.String())
			if err != nil {
				return nil, err
			}
			for name, val := range m {
				if l, k, ok := listenerOverride(name); ok {
					overrides[l] = mapSet(overrides[l], k, fmt.Sprint(val))
					delete(m, name)
					continue
				}
				if !known[name] {
					return nil, fmt.Errorf("%w: %s: unknown key %q", ErrInvalid, f.Value.String(), name)
				}
			}
			if err := v.MergeConfigMap(m); err != nil {
				return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, f.Value.String(), err)
			}
		}
	}
	byEnv := map[string]string{}
	for _, k := range keys {
		byEnv[envName(k.name)] = k.name
	}
	for _, kv := range env {
		name, val, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, EnvPrefix+"_") || strings.HasPrefix(name, EnvPrefix+"_CLI_") {
			continue // SLUICE_CLI_* belong to the admin tools, not to a node
		}
		k, ok := byEnv[name]
		if l, sk, isOverride := envListenerOverride(name); !ok && isOverride {
			overrides[l] = mapSet(overrides[l], sk, val)
			continue
		}
		if !ok {
			return nil, fmt.Errorf("%w: environment variable %s is not a known key", ErrInvalid, name)
		}
		v.Set(k, val)
	}
	if fs != nil {
		for _, k := range keys {
			if f := fs.Lookup(k.name); f != nil && f.Changed {
				v.Set(k.name, f.Value.String())
			}
		}
	}
	c := &Config{Values: map[string]string{}, Defaulted: map[string]bool{}, sslOverrides: overrides}
	for _, k := range keys {
		val := strings.TrimSpace(v.GetString(k.name))
		c.Values[k.name] = val
		if Sensitive(k.name) {
			c.Values[k.name] = "" // never described
		}
		c.Defaulted[k.name] = !v.InConfig(k.name) && val == k.def
		if err := k.parse(c, val); err != nil {
			return nil, fmt.Errorf("%w: %s=%q: %v", ErrInvalid, k.name, val, err)
		}
	}
	if err := c.validate(v); err != nil {
		return nil, err
	}
	return c, nil
}

// validate checks what no single key can.
func (c *Config) validate(v *viper.Viper) error {
	if strings.TrimSpace(v.GetString("node.id")) == "" {
		return fmt.Errorf("%w: node.id is required", ErrInvalid)
	}
	if len(c.LogDirs) == 0 {
		return fmt.Errorf("%w: log.dirs is required", ErrInvalid)
	}
	if len(c.InitialControllers) > 0 && c.ClusterID == "" {
		return fmt.Errorf("%w: initial.controllers formats an empty log.dirs on first start and needs the cluster's id: set cluster.id (make one with `sluice init random-uuid`)", ErrInvalid)
	}
	if err := c.validateListeners(); err != nil {
		return err
	}
	if err := c.validateGroups(); err != nil {
		return err
	}
	if per := c.LogCleanerDedupeBufferSize / int64(c.LogCleanerThreads); per < 1<<20 {
		return fmt.Errorf("%w: log.cleaner.dedupe.buffer.size=%d over log.cleaner.threads=%d leaves %d bytes per thread: give each at least 1 MiB (1048576)",
			ErrInvalid, c.LogCleanerDedupeBufferSize, c.LogCleanerThreads, per)
	}
	if c.LogCleanerMaxCompactionLag > 0 && c.LogCleanerMaxCompactionLag < c.LogCleanerMinCompactionLag {
		return fmt.Errorf("%w: log.cleaner.max.compaction.lag.ms is below log.cleaner.min.compaction.lag.ms: raise the max or lower the min", ErrInvalid)
	}
	if c.Controller && len(c.ControllerQuorumVoters) > 0 &&
		!slices.ContainsFunc(c.ControllerQuorumVoters, func(q quorum.Voter) bool { return q.ID == c.NodeID }) {
		return fmt.Errorf("%w: process.roles includes controller but node.id %d is not in controller.quorum.voters", ErrInvalid, c.NodeID)
	}
	return nil
}

// validateListeners sorts the Kafka listeners out of listeners and checks
// their protocols, the inter-broker listener and the advertised addresses.
func (c *Config) validateListeners() error {
	for _, l := range c.Listeners {
		if l.Name == ListenerController || l.Name == ListenerHTTP || l.Name == ListenerGossip {
			if p, ok := c.SecurityProtocols[l.Name]; ok && p != "PLAINTEXT" && (p != "SSL" || l.Name == ListenerGossip) {
				return internalProtocolError(l.Name, p)
			}
			continue
		}
		_, ok := c.SecurityProtocols[l.Name]
		if !ok {
			return fmt.Errorf("%w: listeners: %s is not a listener name Sluice knows (%s, %s, %s) nor in listener.security.protocol.map; add %s:PLAINTEXT to the map for a Kafka listener",
				ErrInvalid, l.Name, ListenerController, ListenerHTTP, ListenerGossip, l.Name)
		}
		c.KafkaListeners = append(c.KafkaListeners, l)
	}
	for name, over := range c.sslOverrides {
		for k := range over {
			switch {
			case isSASLKey(k) && !slices.Contains(c.saslListeners(), name):
				return fmt.Errorf("%w: listener.name.%s.%s: %s is not a Kafka listener mapped to SASL_PLAINTEXT or SASL_SSL in listener.security.protocol.map; fix the listener name or the map",
					ErrInvalid, strings.ToLower(name), strings.ToLower(k), name)
			case !isSASLKey(k) && !slices.Contains(c.sslListeners(), name):
				return fmt.Errorf("%w: listener.name.%s.ssl.*: %s is not a Kafka listener mapped to SSL or SASL_SSL in listener.security.protocol.map; fix the listener name or the map",
					ErrInvalid, strings.ToLower(name), name)
			}
		}
	}
	for _, name := range c.saslListeners() {
		s, err := c.buildSASL(name)
		if err != nil {
			return err
		}
		if c.SASL == nil {
			c.SASL = map[string]*ListenerSASL{}
		}
		c.SASL[name] = s
	}
	for _, name := range c.sslListeners() {
		t, err := c.buildTLS(name)
		if err != nil {
			return err
		}
		if c.TLS == nil {
			c.TLS = map[string]*ListenerTLS{}
		}
		c.TLS[name] = t
	}
	if c.Broker && len(c.KafkaListeners) == 0 {
		return fmt.Errorf("%w: listeners: a broker needs a Kafka listener (e.g. %s://:9092)", ErrInvalid, ListenerKafka)
	}
	if c.Broker && !slices.ContainsFunc(c.KafkaListeners, func(l Listener) bool { return l.Name == c.InterBrokerListener }) {
		names := make([]string, len(c.KafkaListeners))
		for i, l := range c.KafkaListeners {
			names[i] = l.Name
		}
		return fmt.Errorf("%w: inter.broker.listener.name=%s must be a Kafka listener in listeners; the valid options based on the listeners are %s",
			ErrInvalid, c.InterBrokerListener, strings.Join(names, ","))
	}
	if _, ok := c.Listener(ListenerController); !ok {
		return fmt.Errorf("%w: listeners: a %s listener is required (every node replays the metadata log over it)", ErrInvalid, ListenerController)
	}
	for _, a := range c.AdvertisedListeners {
		if _, ok := c.Listener(a.Name); !ok {
			return fmt.Errorf("%w: advertised.listeners: %s is not in listeners", ErrInvalid, a.Name)
		}
		if unroutable(a.Host) {
			return fmt.Errorf("%w: advertised.listeners: %s needs a host clients can dial", ErrInvalid, a.Name)
		}
	}
	// A listener bound to every address must say which one peers dial.
	ctrl, _ := c.Listener(ListenerController)
	for _, l := range append(slices.Clone(c.KafkaListeners), ctrl) {
		if a, _ := c.Advertised(l.Name); a.Host != "" && unroutable(a.Host) {
			return fmt.Errorf("%w: listeners: %s binds %s, which peers and clients cannot dial; set advertised.listeners=%s://<host name or IP>:%d",
				ErrInvalid, l.Name, l.Addr(), l.Name, l.Port)
		}
	}
	return nil
}

// unroutable reports whether host is empty or a wildcard address.
func unroutable(host string) bool {
	if host == "" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsUnspecified()
}

// parseProtocolMap parses listener.security.protocol.map: NAME:PROTOCOL
// pairs, names upper-cased.
func parseProtocolMap(v string) (map[string]string, error) {
	out := map[string]string{}
	for _, part := range strings.Split(v, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		name, proto, ok := strings.Cut(part, ":")
		name, proto = strings.ToUpper(strings.TrimSpace(name)), strings.ToUpper(strings.TrimSpace(proto))
		if !ok || name == "" {
			return nil, fmt.Errorf("%q is not NAME:PROTOCOL", part)
		}
		switch proto {
		case "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL":
		default:
			return nil, fmt.Errorf("%q: unknown security protocol %s (want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL)", part, proto)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("listener %s mapped twice", name)
		}
		out[name] = proto
	}
	return out, nil
}

// Verify checks that the data directory was formatted (sluice init) for
// this node and, when cluster.id is set, this cluster, and returns its
// meta.properties.
func (c *Config) Verify() (meta.Meta, error) {
	return meta.Verify(c.LogDirs[0], c.ClusterID, c.NodeID)
}

// Sensitive reports whether key's value is a secret (a private key, a
// password): its Values entry is empty, and DescribeConfigs answers it
// as null, as Kafka does.
func Sensitive(key string) bool {
	return key == gossipKeysKey || slices.ContainsFunc(sslKeys, func(k sslKey) bool { return k.sensitive && k.name == key })
}

func mapSet(m map[string]string, k, v string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[k] = v
	return m
}

// Keys lists the known keys, sorted (documentation, tests).
func Keys() []string {
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, k.name)
	}
	sort.Strings(out)
	return out
}

func parseRoles(c *Config, v string) error {
	c.Broker, c.Controller = false, false
	for _, r := range strings.Split(v, ",") {
		switch strings.TrimSpace(r) {
		case "broker":
			c.Broker = true
		case "controller":
			c.Controller = true
		default:
			return fmt.Errorf("unknown role %q (want broker, controller)", strings.TrimSpace(r))
		}
	}
	return nil
}

func parseListeners(v string) ([]Listener, error) {
	var out []Listener
	for _, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, hp, ok := strings.Cut(part, "://")
		if !ok || name == "" {
			return nil, fmt.Errorf("%q is not NAME://host:port", part)
		}
		name = strings.ToUpper(name)
		if strings.IndexFunc(name, func(r rune) bool { return !(r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') }) >= 0 {
			return nil, fmt.Errorf("listener name %q: use letters, digits, _ and -", name)
		}
		host, ps, err := net.SplitHostPort(hp)
		if err != nil {
			return nil, fmt.Errorf("%q: %v", part, err)
		}
		port, err := strconv.ParseUint(ps, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("%q: bad port", part)
		}
		if slices.ContainsFunc(out, func(l Listener) bool { return l.Name == name }) {
			return nil, fmt.Errorf("listener %s given twice", name)
		}
		out = append(out, Listener{Name: name, Host: host, Port: int32(port)})
	}
	return out, nil
}

func parseInt64(dst *int64, v string, lo, hi int64) error {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return errors.New("not an integer")
	}
	if n < lo || n > hi {
		return fmt.Errorf("must be in [%d, %d]", lo, hi)
	}
	*dst = n
	return nil
}

func parseInt32(dst *int32, v string, lo, hi int64) error {
	var n int64
	if err := parseInt64(&n, v, lo, hi); err != nil {
		return err
	}
	*dst = int32(n)
	return nil
}

// parseMs parses milliseconds; -1 (when lo allows it) means "forever".
func parseMs(dst *time.Duration, v string, lo int64) error {
	var n int64
	if err := parseInt64(&n, v, lo, math.MaxInt64/int64(time.Millisecond)); err != nil {
		return err
	}
	*dst = time.Duration(n) * time.Millisecond
	if n < 0 {
		*dst = -1
	}
	return nil
}

// CleanupPolicy is a parsed cleanup.policy: Kafka's list of delete and
// compact.
type CleanupPolicy struct{ Compact, Delete bool }

// String is the policy as Kafka writes it: delete, compact or
// compact,delete.
func (p CleanupPolicy) String() string {
	switch {
	case p.Compact && p.Delete:
		return "compact,delete"
	case p.Compact:
		return "compact"
	case p.Delete:
		return "delete"
	}
	return ""
}

// ParseCleanupPolicy parses cleanup.policy (and log.cleanup.policy) as
// Kafka does: a comma-separated list of delete and compact, in any order,
// each at most once.
func ParseCleanupPolicy(v string) (CleanupPolicy, error) {
	var p CleanupPolicy
	for _, part := range strings.Split(v, ",") {
		var seen bool
		switch strings.TrimSpace(part) {
		case "delete":
			seen, p.Delete = p.Delete, true
		case "compact":
			seen, p.Compact = p.Compact, true
		default:
			return p, fmt.Errorf("%q is not a cleanup policy: want delete, compact or compact,delete", v)
		}
		if seen {
			return p, fmt.Errorf("%q names %s twice: want delete, compact or compact,delete", v, strings.TrimSpace(part))
		}
	}
	return p, nil
}

// parseRatio parses a ratio in [0, 1].
func parseRatio(dst *float64, v string) error {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || !(f >= 0 && f <= 1) {
		return errors.New("want a number in [0, 1]")
	}
	*dst = f
	return nil
}

// parseLag parses max.compaction.lag.ms: at least 1; values past what a
// time.Duration holds (Kafka's default Long.MAX_VALUE) mean never, 0.
func parseLag(dst *time.Duration, v string) error {
	var n int64
	if err := parseInt64(&n, v, 1, math.MaxInt64); err != nil {
		return err
	}
	*dst = 0
	if n <= math.MaxInt64/int64(time.Millisecond) {
		*dst = time.Duration(n) * time.Millisecond
	}
	return nil
}

// DefaultMaxConnections is max.connections by default: half of this
// process's RLIMIT_NOFILE (the other half stays for segment files, Pebble,
// the Raft log and transport, replica fetchers, gossip and HTTP, so a
// flood of clients cannot take the descriptors replication and the
// controller need), at most 16,384 (an idle connection costs about 20 KiB
// of goroutine stacks and queues; Kafka's default is unbounded). Go
// raises the soft limit to the hard one at start on Linux.
func DefaultMaxConnections() int {
	const most = 16384
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == 0 {
		return 1024
	}
	return int(max(min(rl.Cur/2, most), 16))
}

// parseIPOverrides parses max.connections.per.ip.overrides: ip:count
// pairs separated by commas (IP literals; an IPv6 address may be written
// bare or in brackets).
func parseIPOverrides(v string) (map[netip.Addr]int, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	out := map[netip.Addr]int{}
	for _, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		i := strings.LastIndex(part, ":")
		if i <= 0 {
			return nil, fmt.Errorf("%q: want ip:count", part)
		}
		ip, err := netip.ParseAddr(strings.Trim(part[:i], "[]"))
		if err != nil {
			return nil, fmt.Errorf("%q: %q is not an IP address (host names are not resolved)", part, part[:i])
		}
		n, err := strconv.Atoi(part[i+1:])
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q: the count must be an integer >= 0", part)
		}
		out[ip.Unmap()] = n
	}
	return out, nil
}

func parseBool(dst *bool, v string) error {
	switch strings.ToLower(v) {
	case "true":
		*dst = true
	case "false":
		*dst = false
	default:
		return errors.New("want true or false")
	}
	return nil
}

// ReadProperties reads a Java properties file as readProperties does,
// for the tools' client settings (--command-config).
func ReadProperties(path string) (map[string]string, error) {
	m, err := readProperties(path)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = fmt.Sprint(v)
	}
	return out, nil
}

// readProperties reads a Java properties file: key=value or key:value lines,
// # and ! comments, blank lines, and Java's line continuations (a line
// ending in a backslash goes on with the next, its leading blanks
// dropped: how Kafka's docs write inline PEM). Escapes are not
// supported.
func readProperties(path string) (map[string]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	m := map[string]any{}
	lines := strings.Split(string(b), "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		for strings.HasSuffix(line, `\`) {
			if i+1 == len(lines) {
				return nil, fmt.Errorf("%w: %s:%d: the last line ends in a backslash (a continuation of nothing): remove it", ErrInvalid, path, i+1)
			}
			i++
			line = line[:len(line)-1] + strings.TrimSpace(lines[i])
		}
		sep := strings.IndexAny(line, "=:")
		if sep <= 0 {
			return nil, fmt.Errorf("%w: %s:%d: %q is not key=value", ErrInvalid, path, i+1, line)
		}
		k, val := strings.TrimSpace(line[:sep]), strings.TrimSpace(line[sep+1:])
		if _, dup := m[k]; dup {
			return nil, fmt.Errorf("%w: %s:%d: key %q given twice", ErrInvalid, path, i+1, k)
		}
		m[k] = val
	}
	return m, nil
}
