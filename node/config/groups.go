package config

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/sluice-log/sluice/node/group"
)

// Groups is the group coordinator's configuration: the internal topic
// __consumer_offsets and the coordinator's own settings, Kafka's keys and
// defaults.
type Groups struct {
	// Coordinator is what node/group's shards take:
	// group.min.session.timeout.ms (6000), group.max.session.timeout.ms
	// (1800000), group.initial.rebalance.delay.ms (3000), group.max.size
	// (Kafka's 2147483647: no bound), offset.metadata.max.bytes (4096),
	// offsets.retention.minutes (10080), offsets.retention.check.interval.ms
	// (600000).
	Coordinator group.Config
	// OffsetsTopicNumPartitions (offsets.topic.num.partitions, 50) and
	// OffsetsTopicReplicationFactor (offsets.topic.replication.factor, 3;
	// clamped to the live brokers, with a warning, when the topic is
	// created) shape __consumer_offsets; OffsetsTopicSegmentBytes
	// (offsets.topic.segment.bytes, 104857600) is its segment.bytes.
	OffsetsTopicNumPartitions     int32
	OffsetsTopicReplicationFactor int16
	OffsetsTopicSegmentBytes      int32
	// OffsetsCommitTimeout (offsets.commit.timeout.ms, 5000) bounds the
	// wait for a write to __consumer_offsets to be committed (acks=all):
	// past it the request is answered REQUEST_TIMED_OUT.
	OffsetsCommitTimeout time.Duration
	// The bounds of the KIP-848 session timeout and heartbeat interval
	// (group.consumer.{min,max}.session.timeout.ms 45000/60000,
	// group.consumer.{min,max}.heartbeat.interval.ms 5000/15000): the
	// broker's values must lie within them.
	ConsumerMinSession, ConsumerMaxSession     time.Duration
	ConsumerMinHeartbeat, ConsumerMaxHeartbeat time.Duration
}

// groupKeys are the group coordinator's keys.
func groupKeys() []key {
	return []key{
		{"offsets.topic.num.partitions", "50", "partitions of __consumer_offsets (fixed once it is created: a group's coordinator is the leader of partition hash(group) mod this)", func(c *Config, v string) error {
			return parseInt32(&c.Groups.OffsetsTopicNumPartitions, v, 1, math.MaxInt32)
		}},
		{"offsets.topic.replication.factor", "3", "replication factor of __consumer_offsets (at creation, at most the live brokers)", func(c *Config, v string) error {
			var n int32
			if err := parseInt32(&n, v, 1, math.MaxInt16); err != nil {
				return err
			}
			c.Groups.OffsetsTopicReplicationFactor = int16(n)
			return nil
		}},
		{"offsets.topic.segment.bytes", "104857600", "segment.bytes of __consumer_offsets", func(c *Config, v string) error {
			return parseInt32(&c.Groups.OffsetsTopicSegmentBytes, v, 1<<14, math.MaxInt32)
		}},
		{"offsets.retention.minutes", "10080", "committed offsets of an empty group expire this long after it became empty (of a group without members: after the commit)", func(c *Config, v string) error {
			var n int64
			if err := parseInt64(&n, v, 1, math.MaxInt64/int64(time.Minute)); err != nil {
				return err
			}
			c.Groups.Coordinator.OffsetsRetention = time.Duration(n) * time.Minute
			return nil
		}},
		{"offsets.retention.check.interval.ms", "600000", "how often expired offsets are looked for", func(c *Config, v string) error {
			return parseMs(&c.Groups.Coordinator.RetentionCheckInterval, v, 1)
		}},
		{"offset.metadata.max.bytes", "4096", "largest metadata of a committed offset (OFFSET_METADATA_TOO_LARGE)", func(c *Config, v string) error {
			var n int32
			err := parseInt32(&n, v, 0, math.MaxInt32)
			c.Groups.Coordinator.OffsetMetadataMaxBytes = int(n)
			return err
		}},
		{"offsets.commit.timeout.ms", "5000", "a write to __consumer_offsets (acks=all) not committed within this answers REQUEST_TIMED_OUT", func(c *Config, v string) error {
			return parseMs(&c.Groups.OffsetsCommitTimeout, v, 1)
		}},
		{"group.min.session.timeout.ms", "6000", "smallest session timeout a member may ask for (INVALID_SESSION_TIMEOUT)", func(c *Config, v string) error {
			return parseMs(&c.Groups.Coordinator.MinSessionTimeout, v, 0)
		}},
		{"group.max.session.timeout.ms", "1800000", "largest session timeout a member may ask for (INVALID_SESSION_TIMEOUT)", func(c *Config, v string) error {
			return parseMs(&c.Groups.Coordinator.MaxSessionTimeout, v, 1)
		}},
		{"group.initial.rebalance.delay.ms", "3000", "the first rebalance of an empty group waits this long for more members", func(c *Config, v string) error {
			return parseMs(&c.Groups.Coordinator.InitialRebalanceDelay, v, 0)
		}},
		{"group.max.size", "2147483647", "most members of one group (GROUP_MAX_SIZE_REACHED)", func(c *Config, v string) error {
			var n int32
			err := parseInt32(&n, v, 1, math.MaxInt32)
			c.Groups.Coordinator.MaxSize = int(n)
			if n == math.MaxInt32 {
				c.Groups.Coordinator.MaxSize = 0 // no bound
			}
			return err
		}},
		{"group.consumer.session.timeout.ms", "45000", "a KIP-848 consumer group member without a heartbeat this long is removed", func(c *Config, v string) error {
			return parseMs(&c.Groups.Coordinator.ConsumerSessionTimeout, v, 1)
		}},
		{"group.consumer.min.session.timeout.ms", "45000", "lower bound of group.consumer.session.timeout.ms", func(c *Config, v string) error {
			return parseMs(&c.Groups.ConsumerMinSession, v, 1)
		}},
		{"group.consumer.max.session.timeout.ms", "60000", "upper bound of group.consumer.session.timeout.ms", func(c *Config, v string) error {
			return parseMs(&c.Groups.ConsumerMaxSession, v, 1)
		}},
		{"group.consumer.heartbeat.interval.ms", "5000", "how often KIP-848 consumer group members are told to heartbeat", func(c *Config, v string) error {
			return parseMs(&c.Groups.Coordinator.ConsumerHeartbeatInterval, v, 1)
		}},
		{"group.consumer.min.heartbeat.interval.ms", "5000", "lower bound of group.consumer.heartbeat.interval.ms", func(c *Config, v string) error {
			return parseMs(&c.Groups.ConsumerMinHeartbeat, v, 1)
		}},
		{"group.consumer.max.heartbeat.interval.ms", "15000", "upper bound of group.consumer.heartbeat.interval.ms", func(c *Config, v string) error {
			return parseMs(&c.Groups.ConsumerMaxHeartbeat, v, 1)
		}},
		{"group.consumer.max.size", "2147483647", "most members of one KIP-848 consumer group (GROUP_MAX_SIZE_REACHED)", func(c *Config, v string) error {
			var n int32
			err := parseInt32(&n, v, 1, math.MaxInt32)
			c.Groups.Coordinator.ConsumerMaxSize = int(n)
			if n == math.MaxInt32 {
				c.Groups.Coordinator.ConsumerMaxSize = 0 // no bound
			}
			return err
		}},
		{"group.consumer.assignors", "uniform,range", "the server-side assignors of KIP-848 consumer groups (uniform, range; the first is the default)", func(c *Config, v string) error {
			var names []string
			for _, a := range strings.Split(v, ",") {
				a = strings.TrimSpace(a)
				switch a {
				case "uniform", "org.apache.kafka.coordinator.group.assignor.UniformAssignor":
					names = append(names, "uniform")
				case "range", "org.apache.kafka.coordinator.group.assignor.RangeAssignor":
					names = append(names, "range")
				default:
					return fmt.Errorf("%w: unknown assignor %q (uniform, range)", ErrInvalid, a)
				}
			}
			c.Groups.Coordinator.ConsumerAssignors = names
			return nil
		}},
		{"group.consumer.migration.policy", "bidirectional", "online migration between classic and KIP-848 consumer groups (bidirectional, upgrade, downgrade, disabled)", func(c *Config, v string) error {
			p := strings.ToLower(strings.TrimSpace(v))
			if !slices.Contains(group.MigrationPolicies, p) {
				return fmt.Errorf("%w: group.consumer.migration.policy %q: use one of %s", ErrInvalid, v, strings.Join(group.MigrationPolicies, ", "))
			}
			c.Groups.Coordinator.MigrationPolicy = p
			return nil
		}},
	}
}

// validateGroups checks what no single group key can, then the
// transaction keys (validateTxns).
func (c *Config) validateGroups() error {
	g := c.Groups.Coordinator
	if g.MinSessionTimeout > g.MaxSessionTimeout {
		return fmt.Errorf("%w: group.min.session.timeout.ms (%d) is above group.max.session.timeout.ms (%d)",
			ErrInvalid, g.MinSessionTimeout.Milliseconds(), g.MaxSessionTimeout.Milliseconds())
	}
	if s := g.ConsumerSessionTimeout; s < c.Groups.ConsumerMinSession || s > c.Groups.ConsumerMaxSession {
		return fmt.Errorf("%w: group.consumer.session.timeout.ms (%d) is outside [%d, %d]", ErrInvalid,
			s.Milliseconds(), c.Groups.ConsumerMinSession.Milliseconds(), c.Groups.ConsumerMaxSession.Milliseconds())
	}
	if h := g.ConsumerHeartbeatInterval; h < c.Groups.ConsumerMinHeartbeat || h > c.Groups.ConsumerMaxHeartbeat {
		return fmt.Errorf("%w: group.consumer.heartbeat.interval.ms (%d) is outside [%d, %d]", ErrInvalid,
			h.Milliseconds(), c.Groups.ConsumerMinHeartbeat.Milliseconds(), c.Groups.ConsumerMaxHeartbeat.Milliseconds())
	}
	if g.ConsumerHeartbeatInterval >= g.ConsumerSessionTimeout {
		return fmt.Errorf("%w: group.consumer.heartbeat.interval.ms must be below group.consumer.session.timeout.ms", ErrInvalid)
	}
	return c.validateTxns()
}
