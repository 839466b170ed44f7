package node

import (
	"context"
	"fmt"
	"maps"
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-log/sluice/node/config"
	"github.com/sluice-log/sluice/node/kafka"
	"github.com/sluice-log/sluice/node/replica"
	"github.com/sluice-log/sluice/partition"
	"github.com/sluice-log/sluice/quorum"
	"github.com/sluice-log/sluice/segment"
)

// Kafka ConfigType values used here.
const (
	typeBoolean int8 = 1
	typeString  int8 = 2
	typeInt     int8 = 3
	typeLong    int8 = 5
	typeDouble  int8 = 6
	typeList    int8 = 7
)

// topicConfig is one topic-level config key: its broker default key and
// how a value is checked.
type topicConfig struct {
	name, brokerKey string
	typ             int8
	doc             string
	// check validates a value; nil accepts only the default.
	check func(string) error
}

func intIn(lo, hi int64) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("%q is not an integer in [%d, %d]", v, lo, hi)
		}
		return nil
	}
}

func isBool(v string) error {
	if v != "true" && v != "false" {
		return fmt.Errorf("%q is not true or false", v)
	}
	return nil
}

func isRatio(v string) error {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || !(f >= 0 && f <= 1) {
		return fmt.Errorf("%q is not a number in [0, 1]", v)
	}
	return nil
}

func isPolicy(v string) error {
	_, err := config.ParseCleanupPolicy(v)
	return err
}

// topicConfigs are the topic configs Sluice understands (Kafka's names),
// sorted by name. Overrides of the log settings apply when the
// partition's log is opened; the compaction ones (cleanup.policy, the
// lags, the dirty ratio, delete.retention.ms) at once, on every replica.
var topicConfigs = []topicConfig{
	{"cleanup.policy", "log.cleanup.policy", typeList, "delete: drop old segments (retention.ms, retention.bytes); compact: keep the latest record of each key; or compact,delete", isPolicy},
	{"delete.retention.ms", "log.cleaner.delete.retention.ms", typeLong, "how long a tombstone (null value) survives after its segment was cleaned", intIn(0, math.MaxInt64)},
	{"flush.messages", "log.flush.interval.messages", typeLong, "fsync after this many records", intIn(1, math.MaxInt64)},
	{"flush.ms", "log.flush.interval.ms", typeLong, "fsync when the oldest unflushed record is this old", intIn(0, math.MaxInt64)},
	{quorum.ConfigFollowerThrottledReplicas, "", typeList, "replicas (partition:broker, or *) whose fetches outside the ISR count against their broker's follower.replication.throttled.rate", checkThrottledReplicas},
	{quorum.ConfigLeaderThrottledReplicas, "", typeList, "replicas (partition:broker, or *) that, as leader, send to followers outside the ISR within their broker's leader.replication.throttled.rate", checkThrottledReplicas},
	{"max.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms", typeLong, "a record is compacted at the latest this long after it was written", intIn(1, math.MaxInt64)},
	{"max.message.bytes", "message.max.bytes", typeInt, "largest record batch", intIn(61, math.MaxInt32)},
	{"message.timestamp.after.max.ms", "log.message.timestamp.after.max.ms", typeLong, "refuse a record timestamped further than this in the future", intIn(1, math.MaxInt64)},
	{"message.timestamp.before.max.ms", "log.message.timestamp.before.max.ms", typeLong, "refuse a record timestamped further than this in the past", intIn(1, math.MaxInt64)},
	{"message.timestamp.type", "", typeString, "only CreateTime is supported", nil},
	{"min.cleanable.dirty.ratio", "log.cleaner.min.cleanable.ratio", typeDouble, "clean a compacted log once this share of its cleanable bytes is dirty", isRatio},
	{"min.compaction.lag.ms", "log.cleaner.min.compaction.lag.ms", typeLong, "a record stays uncompacted at least this long", intIn(0, math.MaxInt64)},
	{quorum.ConfigMinInsyncReplicas, "min.insync.replicas", typeInt, "acks=all needs this many in-sync replicas", intIn(1, math.MaxInt32)},
	{"retention.bytes", "log.retention.bytes", typeLong, "delete the oldest segments past this size; -1 unlimited", intIn(-1, math.MaxInt64)},
	{"retention.ms", "log.retention.ms", typeLong, "delete segments older than this; -1 forever", intIn(-1, math.MaxInt64)},
	{"segment.bytes", "log.segment.bytes", typeInt, "segment size", intIn(14, math.MaxInt32)},
	{"segment.ms", "log.roll.ms", typeLong, "roll a segment this old", intIn(1, math.MaxInt64)},
	{partition.ConfigDurability, "", typeString, "page-cache: replication is the durability (Kafka's model); sync: replicas count towards acks=all only with what they fsynced (group commit)", func(v string) error {
		_, err := partition.ParseDurability(v)
		return err
	}},
	{quorum.ConfigUncleanLeaderElection, "unclean.leader.election.enable", typeBoolean, "elect leaders from outside the ISR", isBool},
}

// topicDefault is the value a topic without an override has for tc.
func topicDefault(cfg *config.Config, tc topicConfig) string {
	switch tc.name {
	case "message.timestamp.type":
		return "CreateTime"
	case partition.ConfigDurability:
		return partition.PageCache.String()
	case "flush.ms":
		if cfg.LogFlushInterval <= 0 {
			return strconv.FormatInt(math.MaxInt64, 10)
		}
	}
	return cfg.Values[tc.brokerKey]
}

// validateTopicConfigs checks override keys and values (INVALID_CONFIG).
func validateTopicConfigs(cfg *config.Config, m map[string]string) error {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		i := sort.Search(len(topicConfigs), func(i int) bool { return topicConfigs[i].name >= k })
		if i == len(topicConfigs) || topicConfigs[i].name != k {
			return fmt.Errorf("%w: unknown topic config %s", kerr.InvalidConfig, k)
		}
		tc := topicConfigs[i]
		if tc.check == nil {
			if m[k] != topicDefault(cfg, tc) {
				return fmt.Errorf("%w: %s=%s: only %s is supported", kerr.InvalidConfig, k, m[k], topicDefault(cfg, tc))
			}
			continue
		}
		if err := tc.check(m[k]); err != nil {
			return fmt.Errorf("%w: %s: %v", kerr.InvalidConfig, k, err)
		}
	}
	return nil
}

// validateTopicCombination checks what no single topic config can, over a
// topic's whole set of overrides m (INVALID_CONFIG, as Kafka's
// LogConfig.validate).
func validateTopicCombination(cfg *config.Config, m map[string]string) error {
	lag := func(k string) int64 {
		v, ok := m[k]
		if !ok {
			v = topicDefaultByName(cfg, k)
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0
		}
		return n
	}
	if lo, hi := lag("min.compaction.lag.ms"), lag("max.compaction.lag.ms"); hi > 0 && hi < lo {
		return fmt.Errorf("%w: max.compaction.lag.ms %d is below min.compaction.lag.ms %d: raise the max or lower the min", kerr.InvalidConfig, hi, lo)
	}
	return nil
}

// logOptions are the segment options of a topic's logs: broker defaults
// with the topic's overrides.
func logOptions(cfg *config.Config, overrides map[string]string) segment.Options {
	o := segment.Options{
		SegmentBytes: cfg.LogSegmentBytes, SegmentMs: cfg.LogRoll, RetentionMs: cfg.LogRetention,
		RetentionBytes: cfg.LogRetentionBytes, FlushMessages: cfg.LogFlushIntervalMessages,
		FlushMs: cfg.LogFlushInterval, MaxBatchBytes: int(cfg.MessageMaxBytes),
		ProducerIDExpiration: cfg.ProducerIDExpiration,
		TimestampBeforeMaxMs: cfg.LogMessageTimestampBeforeMaxMs, TimestampAfterMaxMs: cfg.LogMessageTimestampAfterMaxMs,
	}
	num := func(k string) (int64, bool) {
		v, ok := overrides[k]
		if !ok {
			return 0, false
		}
		n, err := strconv.ParseInt(v, 10, 64)
		return n, err == nil
	}
	ms := func(n int64) time.Duration {
		if n < 0 {
			return -1
		}
		if n > math.MaxInt64/int64(time.Millisecond) {
			return 0 // never
		}
		return time.Duration(n) * time.Millisecond
	}
	if n, ok := num("segment.bytes"); ok {
		o.SegmentBytes = n
	}
	if n, ok := num("segment.ms"); ok {
		o.SegmentMs = ms(n)
	}
	if n, ok := num("retention.ms"); ok {
		o.RetentionMs = ms(n)
	}
	if n, ok := num("retention.bytes"); ok {
		o.RetentionBytes = n
	}
	if n, ok := num("flush.messages"); ok {
		o.FlushMessages = n
	}
	if n, ok := num("flush.ms"); ok {
		o.FlushMs = ms(n)
	}
	if n, ok := num("max.message.bytes"); ok {
		o.MaxBatchBytes = int(n)
	}
	if n, ok := num("message.timestamp.before.max.ms"); ok {
		o.TimestampBeforeMaxMs = n
	}
	if n, ok := num("message.timestamp.after.max.ms"); ok {
		o.TimestampAfterMaxMs = n
	}
	return o
}

// minISR is the topic's min.insync.replicas.
func minISR(cfg *config.Config, overrides map[string]string) int32 {
	if v, ok := overrides[quorum.ConfigMinInsyncReplicas]; ok {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			return int32(n)
		}
	}
	return cfg.MinInsyncReplicas
}

// replicaConfig is the partition.Config of this broker's replicas of a
// topic with these overrides.
func (n *Node) replicaConfig(overrides map[string]string) (partition.Config, error) {
	d, err := partition.ParseDurability(overrides[partition.ConfigDurability])
	lag := max(int64(n.cfg.ReplicaLagTimeMax/replica.TickInterval), 1)
	return partition.Config{ID: n.cfg.NodeID, MinInsyncReplicas: int(minISR(n.cfg, overrides)), LagTicks: lag, Durability: d,
		FetchBackoffTicks: int64(replica.FetchBackoff / replica.TickInterval)}, err
}

var _ kafka.Configs = (*broker)(nil)

// DescribeConfigs implements kafka.Configs for topics and this broker,
// reading the image in place under the FSM's read lock: the cost is the
// resources asked for, not a copy of the image.
func (b *broker) DescribeConfigs(ctx context.Context, rs []kafka.ConfigResource) ([]kafka.ConfigResult, error) {
	var out []kafka.ConfigResult
	b.ctrl.View(func(im *quorum.Image) { out = b.describeConfigs(im, rs) })
	return out, nil
}

// describeConfigs answers DescribeConfigs from im (under View: the
// entries keep nothing of im).
func (b *broker) describeConfigs(im *quorum.Image, rs []kafka.ConfigResource) []kafka.ConfigResult {
	out := make([]kafka.ConfigResult, len(rs))
	for i, r := range rs {
		want := func(k string) bool {
			if r.Keys == nil {
				return true
			}
			for _, x := range r.Keys {
				if x == k {
					return true
				}
			}
			return false
		}
		switch r.Type {
		case kafka.ConfigResourceTopic:
			t := im.Topics[r.Name]
			if t == nil {
				out[i].Err = kerr.UnknownTopicOrPartition
				continue
			}
			for _, tc := range topicConfigs {
				if !want(tc.name) {
					continue
				}
				e := kafka.ConfigEntry{Name: tc.name, Value: topicDefault(b.cfg, tc), Source: kafka.ConfigSourceDefaultConfig, Type: tc.typ, Doc: tc.doc}
				if v, ok := t.Configs[tc.name]; ok {
					e.Value, e.Source = v, kafka.ConfigSourceTopic
				} else if tc.brokerKey != "" && !b.cfg.Defaulted[tc.brokerKey] {
					e.Source = kafka.ConfigSourceStaticBroker
				}
				out[i].Entries = append(out[i].Entries, e)
			}
			if askedFor(r.Keys, UncleanElectionsKey) {
				out[i].Entries = append(out[i].Entries, uncleanEntry(t))
			}
		case kafka.ConfigResourceBroker:
			if r.Name == "" {
				// The cluster default resource: its dynamic configs only.
				for _, dc := range brokerDynamicConfigs {
					if v, ok := im.BrokerConfigs[""][dc.name]; ok && want(dc.name) {
						out[i].Entries = append(out[i].Entries, kafka.ConfigEntry{Name: dc.name, Value: v, Source: kafka.ConfigSourceDynamicDefaultBroker, Type: typeLong, Doc: dc.doc})
					}
				}
				continue
			}
			if r.Name != strconv.Itoa(int(b.cfg.NodeID)) {
				out[i].Err, out[i].ErrMessage = kerr.InvalidRequest, "describe the configs of broker "+r.Name+" on that broker (this is broker "+strconv.Itoa(int(b.cfg.NodeID))+")"
				continue
			}
			for _, dc := range brokerDynamicConfigs {
				if !want(dc.name) {
					continue
				}
				e := kafka.ConfigEntry{Name: dc.name, Value: strconv.FormatInt(replica.Unthrottled, 10), Source: kafka.ConfigSourceDefaultConfig, Type: typeLong, Doc: dc.doc}
				if v, ok := im.BrokerConfigs[r.Name][dc.name]; ok {
					e.Value, e.Source = v, kafka.ConfigSourceDynamicBroker
				} else if v, ok := im.BrokerConfigs[""][dc.name]; ok {
					e.Value, e.Source = v, kafka.ConfigSourceDynamicDefaultBroker
				}
				out[i].Entries = append(out[i].Entries, e)
			}
			for _, k := range config.Keys() {
				if !want(k) {
					continue
				}
				e := kafka.ConfigEntry{Name: k, Value: b.cfg.Values[k], ReadOnly: true, Source: kafka.ConfigSourceStaticBroker, Type: typeString, Sensitive: config.Sensitive(k)}
				if b.cfg.Defaulted[k] {
					e.Source = kafka.ConfigSourceDefaultConfig
				}
				out[i].Entries = append(out[i].Entries, e)
			}
		default:
			out[i].Err, out[i].ErrMessage = kerr.InvalidRequest, fmt.Sprintf("resource type %d is not served", r.Type)
		}
	}
	return out
}

// AlterConfigs implements kafka.Configs: topic overrides and dynamic
// broker configs (the cluster default "" or a broker id; throttle.go) go
// through the quorum, and are answered once every live broker has them;
// other broker configs are static.
func (b *broker) AlterConfigs(ctx context.Context, rs []kafka.ConfigAlteration, validateOnly bool) ([]kafka.ConfigResult, error) {
	out := make([]kafka.ConfigResult, len(rs))
	var published uint64 // the highest index of the changes proposed
	for i, r := range rs {
		if r.Type == kafka.ConfigResourceBroker {
			if msg, err := validateBrokerAlteration(r); err != nil {
				out[i].Err, out[i].ErrMessage = err, msg
				continue
			}
			cmd := &quorum.AlterBrokerConfigs{Broker: r.Name, Set: r.Set, Delete: r.Delete}
			var err error
			if validateOnly {
				err = b.node().validate(cmd)
			} else {
				var index uint64
				_, index, err = b.ctrl.Publish(ctx, cmd)
				published = max(published, index)
			}
			if err != nil {
				out[i].Err, out[i].ErrMessage = controllerError(err), err.Error()
			}
			continue
		}
		if r.Type != kafka.ConfigResourceTopic {
			out[i].Err, out[i].ErrMessage = kerr.InvalidRequest, fmt.Sprintf("resource type %d is not served", r.Type)
			continue
		}
		if err := validateTopicConfigs(b.cfg, r.Set); err != nil {
			out[i].Err, out[i].ErrMessage = kerr.InvalidConfig, err.Error()
			continue
		}
		for _, k := range r.Delete {
			if err := validateTopicConfigs(b.cfg, map[string]string{k: topicDefaultByName(b.cfg, k)}); err != nil {
				out[i].Err, out[i].ErrMessage = kerr.InvalidConfig, err.Error()
			}
		}
		if out[i].Err != nil {
			continue
		}
		var merged map[string]string // nil: no such topic
		b.ctrl.View(func(im *quorum.Image) {
			if t := im.Topics[r.Name]; t != nil {
				merged = maps.Clone(t.Configs)
				if merged == nil {
					merged = map[string]string{}
				}
			}
		})
		if merged != nil {
			maps.Copy(merged, r.Set)
			for _, k := range r.Delete {
				delete(merged, k)
			}
			if err := validateTopicCombination(b.cfg, merged); err != nil {
				out[i].Err, out[i].ErrMessage = kerr.InvalidConfig, err.Error()
				continue
			}
		}
		cmd := &quorum.AlterConfigs{Topic: r.Name, Set: r.Set, Delete: r.Delete}
		var err error
		if validateOnly {
			err = b.node().validate(cmd)
		} else {
			var index uint64
			_, index, err = b.ctrl.Publish(ctx, cmd)
			published = max(published, index)
		}
		if err != nil {
			out[i].Err, out[i].ErrMessage = controllerError(err), err.Error()
		}
	}
	if published > 0 {
		// Answer once every live broker has the new configs (publish.go).
		b.node().awaitPublished(ctx, published, string(quorum.CmdAlterConfigs))
	}
	return out, nil
}

func topicDefaultByName(cfg *config.Config, name string) string {
	for _, tc := range topicConfigs {
		if tc.name == name {
			return topicDefault(cfg, tc)
		}
	}
	return ""
}
