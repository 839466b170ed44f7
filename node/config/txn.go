package config

import (
	"fmt"
	"math"
	"time"

	"github.com/sluice-log/sluice/node/txn"
)

// Transactions is the transaction coordinator's configuration: the
// internal topic __transaction_state and the coordinator's own settings,
// Kafka's keys and defaults.
type Transactions struct {
	// Coordinator is what node/txn's shards take:
	// transaction.state.log.num.partitions (50), transaction.max.timeout.ms
	// (900000), transactional.id.expiration.ms (604800000),
	// transaction.abort.timed.out.transaction.cleanup.interval.ms (10000),
	// transaction.remove.expired.transaction.cleanup.interval.ms
	// (3600000); its OffsetsPartitions is offsets.topic.num.partitions.
	Coordinator txn.Config
	// StateLogReplicationFactor (transaction.state.log.replication.factor,
	// 3; clamped to the live brokers, with a warning, when the topic is
	// created), StateLogMinISR (transaction.state.log.min.isr, 2: the
	// topic's min.insync.replicas, at most its replication factor) and
	// StateLogSegmentBytes (transaction.state.log.segment.bytes,
	// 104857600) shape __transaction_state.
	StateLogReplicationFactor int16
	StateLogMinISR            int32
	StateLogSegmentBytes      int32
	// Version is the transaction.version feature level the cluster
	// starts with (transaction.version, 2): the first controller writes
	// it as the quorum's feature record when it bootstraps the cluster;
	// after that `sluice features` (UpdateFeatures) changes it. 2 lets
	// clients use KIP-890 part 2, 1 keeps them on part 1 (both versions
	// are served whatever it says: only the clients' choice depends on
	// it). A cluster bootstrapped before feature records advertises
	// this setting until a level is written.
	Version int16
}

// txnKeys are the transaction coordinator's keys.
func txnKeys() []key {
	return []key{
		{"transaction.state.log.num.partitions", "50", "partitions of __transaction_state (fixed once it is created: a transactional id's coordinator is the leader of partition hash(id) mod this)", func(c *Config, v string) error {
			return parseInt32(&c.Transactions.Coordinator.StatePartitions, v, 1, math.MaxInt32)
		}},
		{"transaction.state.log.replication.factor", "3", "replication factor of __transaction_state (at creation, at most the live brokers)", func(c *Config, v string) error {
			var n int32
			if err := parseInt32(&n, v, 1, math.MaxInt16); err != nil {
				return err
			}
			c.Transactions.StateLogReplicationFactor = int16(n)
			return nil
		}},
		{"transaction.state.log.min.isr", "2", "min.insync.replicas of __transaction_state (at most its replication factor)", func(c *Config, v string) error {
			return parseInt32(&c.Transactions.StateLogMinISR, v, 1, math.MaxInt16)
		}},
		{"transaction.state.log.segment.bytes", "104857600", "segment.bytes of __transaction_state", func(c *Config, v string) error {
			return parseInt32(&c.Transactions.StateLogSegmentBytes, v, 1<<14, math.MaxInt32)
		}},
		{"transaction.version", "2", "the transaction.version feature level a new cluster starts with (written by the first controller; then sluice features changes it): 2 is KIP-890 part 2 (no AddPartitionsToTxn round trips, the epoch bumped at each transaction's end), 1 the earlier protocol", func(c *Config, v string) error {
			var n int32
			if err := parseInt32(&n, v, 0, 2); err != nil {
				return err
			}
			c.Transactions.Version = int16(n)
			return nil
		}},
		{"transaction.max.timeout.ms", "900000", "largest transaction.timeout.ms a producer may ask for (INVALID_TRANSACTION_TIMEOUT)", func(c *Config, v string) error {
			return parseMs(&c.Transactions.Coordinator.MaxTimeout, v, 1)
		}},
		{"transactional.id.expiration.ms", "604800000", "a transactional id without a transaction, idle this long, is removed", func(c *Config, v string) error {
			return parseMs(&c.Transactions.Coordinator.IDExpiration, v, 1)
		}},
		{"transaction.abort.timed.out.transaction.cleanup.interval.ms", "10000", "how often transactions past their timeout are looked for (and aborted)", func(c *Config, v string) error {
			return parseMs(&c.Transactions.Coordinator.AbortInterval, v, 1)
		}},
		{"transaction.remove.expired.transaction.cleanup.interval.ms", "3600000", "how often expired transactional ids are looked for (and removed)", func(c *Config, v string) error {
			return parseMs(&c.Transactions.Coordinator.RemoveInterval, v, 1)
		}},
	}
}

// validateTxns completes and checks what no single transaction key can.
func (c *Config) validateTxns() error {
	t := &c.Transactions
	t.Coordinator.OffsetsPartitions = c.Groups.OffsetsTopicNumPartitions
	if t.Coordinator.RetryBackoff == 0 {
		t.Coordinator.RetryBackoff = txn.DefaultConfig().RetryBackoff
	}
	if int64(t.StateLogMinISR) > int64(t.StateLogReplicationFactor) {
		return fmt.Errorf("%w: transaction.state.log.min.isr (%d) is above transaction.state.log.replication.factor (%d)",
			ErrInvalid, t.StateLogMinISR, t.StateLogReplicationFactor)
	}
	if t.Coordinator.MaxTimeout > time.Duration(math.MaxInt32)*time.Millisecond {
		return fmt.Errorf("%w: transaction.max.timeout.ms must fit in 32 bits", ErrInvalid)
	}
	return c.validateFailover()
}
