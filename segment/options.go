package segment

import (
	"fmt"
	"math"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Options are one log's settings, named after Kafka's topic configs. The node
// reads them from configuration (broker defaults, topic overrides) and passes
// them down; this package never reads configuration itself.
type Options struct {
	// SegmentBytes (segment.bytes): roll when the active segment would exceed it.
	SegmentBytes int64
	// SegmentMs (segment.ms): roll when the active segment's first batch is
	// older than this (by batch timestamp against Now).
	SegmentMs time.Duration
	// RetentionMs (retention.ms): delete closed segments whose newest batch
	// timestamp is older than this. Negative: keep forever.
	RetentionMs time.Duration
	// RetentionBytes (retention.bytes): delete the oldest closed segments while
	// the log is larger than this. Negative: no size limit.
	RetentionBytes int64
	// FlushMessages (flush.messages): fsync after this many appended records.
	// Zero or math.MaxInt64: never; the OS writes back (Kafka's default).
	FlushMessages int64
	// FlushMs (flush.ms): fsync when the oldest unflushed append is this old,
	// checked by MaybeFlush. Zero: never.
	FlushMs time.Duration
	// IndexIntervalBytes (index.interval.bytes): bytes between offset and
	// time index entries.
	IndexIntervalBytes int64
	// MaxBatchBytes (max.message.bytes): the largest batch accepted.
	MaxBatchBytes int
	// ProducerIDExpiration (producer.id.expiration.ms): forget an idempotent
	// producer whose latest batch's timestamp is this old. Negative: never.
	ProducerIDExpiration time.Duration
	// TimestampBeforeMaxMs and TimestampAfterMaxMs are KIP-937's
	// message.timestamp.before.max.ms and message.timestamp.after.max.ms:
	// Append (the leader) refuses a batch holding a CreateTime timestamp
	// more than this many milliseconds before or after Now
	// (ErrInvalidTimestamp). Zero: Kafka 4's defaults, no bound before
	// (math.MaxInt64) and one hour after (DefaultTimestampAfterMaxMs).
	TimestampBeforeMaxMs, TimestampAfterMaxMs int64
	// Now is the clock; time.Now when nil. Tests inject their own.
	Now func() time.Time
	// OnFlush, when set, is told how long each successful fsync pass of
	// Flush took (by Now): LogFlushRateAndTimeMs. It must not block.
	OnFlush func(time.Duration)

	// WritebackBytes (the node's sluice.log.writeback.interval.bytes):
	// after every this many bytes appended, ask the kernel to start
	// writing back what was appended before (sync_file_range on Linux;
	// see writeback.go). Zero: never, the kernel decides (vm.dirty_*).
	WritebackBytes int64
	// Writeback runs the requests of WritebackBytes off the append path;
	// shared by the logs of a node. Nil: Append runs them itself, after
	// releasing the log's lock.
	Writeback *Writeback
	// OnWriteback, when set, is told the bytes of each writeback request
	// and its error (the request is a hint: an error changes nothing
	// else). It must not block.
	OnWriteback func(bytes int64, err error)

	// Files is the node's budget of open segment files
	// (sluice.log.max.open.files), shared by its logs; see files.go. Nil:
	// no budget, a file opens on first use and stays open.
	Files *Files

	// SkipRecordCheck turns off Append's record validation (validate.go).
	// Only benchmarks set it, to measure what validation costs; no config
	// key reaches it (node sets it from a test-only option).
	SkipRecordCheck bool

	// syncRange replaces the kernel call in tests, and wbAlign the page
	// size the active segment's ranges end on (writebackAlign).
	syncRange func(f vfs.File, off, n int64) error
	wbAlign   int64
}

// Kafka's defaults for the settings above.
const (
	DefaultSegmentBytes       = 1 << 30
	DefaultSegmentMs          = 7 * 24 * time.Hour
	DefaultRetentionMs        = 7 * 24 * time.Hour
	DefaultIndexIntervalBytes = 4096
	DefaultMaxBatchBytes      = 1048588
	// DefaultProducerIDExpiration is producer.id.expiration.ms (1 day).
	DefaultProducerIDExpiration = 24 * time.Hour
	// DefaultTimestampAfterMaxMs is log.message.timestamp.after.max.ms
	// since Kafka 4.0 (KIP-1030); before.max.ms stays unbounded.
	DefaultTimestampAfterMaxMs = 3600000
)

// EnsureDefaults fills zero fields with Kafka's defaults and returns o.
// RetentionBytes zero means zero bytes kept, so its "unset" value is -1 like
// Kafka's; callers building Options by hand set it.
func (o *Options) EnsureDefaults() *Options {
	if o.SegmentBytes == 0 {
		o.SegmentBytes = DefaultSegmentBytes
	}
	if o.SegmentMs == 0 {
		o.SegmentMs = DefaultSegmentMs
	}
	if o.RetentionMs == 0 {
		o.RetentionMs = DefaultRetentionMs
	}
	if o.FlushMessages == 0 {
		o.FlushMessages = math.MaxInt64
	}
	if o.IndexIntervalBytes == 0 {
		o.IndexIntervalBytes = DefaultIndexIntervalBytes
	}
	if o.MaxBatchBytes == 0 {
		o.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if o.ProducerIDExpiration == 0 {
		o.ProducerIDExpiration = DefaultProducerIDExpiration
	}
	if o.TimestampBeforeMaxMs == 0 {
		o.TimestampBeforeMaxMs = math.MaxInt64
	}
	if o.TimestampAfterMaxMs == 0 {
		o.TimestampAfterMaxMs = DefaultTimestampAfterMaxMs
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Validate reports the first setting that cannot work, by its Kafka name.
func (o *Options) Validate() error {
	switch {
	case o.SegmentBytes < 14:
		return fmt.Errorf("segment.bytes %d: must be at least 14", o.SegmentBytes)
	case o.SegmentBytes > math.MaxInt32:
		return fmt.Errorf("segment.bytes %d: must be at most %d", o.SegmentBytes, math.MaxInt32)
	case o.SegmentMs < time.Millisecond:
		return fmt.Errorf("segment.ms %v: must be at least 1ms", o.SegmentMs)
	case o.FlushMessages < 0:
		return fmt.Errorf("flush.messages %d: must be positive", o.FlushMessages)
	case o.FlushMs < 0:
		return fmt.Errorf("flush.ms %v: must not be negative", o.FlushMs)
	case o.IndexIntervalBytes < 0:
		return fmt.Errorf("index.interval.bytes %d: must not be negative", o.IndexIntervalBytes)
	case o.WritebackBytes < 0:
		return fmt.Errorf("sluice.log.writeback.interval.bytes %d: must not be negative", o.WritebackBytes)
	case o.TimestampBeforeMaxMs < 0:
		return fmt.Errorf("message.timestamp.before.max.ms %d: must not be negative", o.TimestampBeforeMaxMs)
	case o.TimestampAfterMaxMs < 0:
		return fmt.Errorf("message.timestamp.after.max.ms %d: must not be negative", o.TimestampAfterMaxMs)
	case o.MaxBatchBytes < BatchHeaderSize:
		return fmt.Errorf("max.message.bytes %d: must be at least %d", o.MaxBatchBytes, BatchHeaderSize)
	}
	return nil
}
