package segment

import "errors"

// Errors of this package. Callers test with errors.Is; the protocol layer maps
// them to Kafka error codes (see the comment on each).
var (
	// ErrInvalidBatch: bytes that are not a well-formed RecordBatch v2
	// (framing, magic, counts). Kafka: INVALID_RECORD / CORRUPT_MESSAGE.
	ErrInvalidBatch = errors.New("segment: invalid record batch")
	// ErrCorruptBatch marks corruption: a CRC-32C mismatch, in a produced batch
	// or in bytes read back from disk (then a *CorruptionError says where).
	// Kafka: CORRUPT_MESSAGE.
	ErrCorruptBatch = errors.New("segment: corrupt record batch")
	// ErrInvalidRecord: a produced batch whose records do not match its
	// header or do not decode (count, offset deltas, varint framing,
	// trailing bytes), or that a client may not write (a control batch, an
	// idempotent batch sent with others in one append). Checked on leader
	// appends only. Kafka: INVALID_RECORD.
	ErrInvalidRecord = errors.New("segment: invalid record")
	// ErrInvalidTimestamp: a produced record or batch timestamp outside
	// message.timestamp.before.max.ms / after.max.ms of now (KIP-937), or
	// a producer's LogAppendTime flag. Kafka: INVALID_TIMESTAMP.
	ErrInvalidTimestamp = errors.New("segment: record timestamp out of range")
	// ErrUnsupportedCompression: a batch's codec is none of none, gzip,
	// snappy, lz4, zstd. Kafka: UNSUPPORTED_COMPRESSION_TYPE.
	ErrUnsupportedCompression = errors.New("segment: unsupported compression codec")
	// ErrTransactionalBatch is no longer returned: the log takes
	// transactional batches. Kept while the node's error table names it.
	ErrTransactionalBatch = errors.New("segment: transactional batches are not supported")
	// ErrBatchTooLarge: a batch over message.max.bytes. Kafka: MESSAGE_TOO_LARGE.
	ErrBatchTooLarge = errors.New("segment: record batch too large")
	// ErrNonContiguous: AppendReplicated got a batch that overlaps the log
	// end offset or the batch before it (a gap is an offset hole left by
	// compaction, and is taken). The follower must truncate or refetch.
	ErrNonContiguous = errors.New("segment: batch offsets overlap the log end")
	// ErrStaleEpoch: an append with a leader epoch below the latest epoch in
	// the leader-epoch cache. Kafka: FENCED_LEADER_EPOCH.
	ErrStaleEpoch = errors.New("segment: leader epoch older than the log's latest")
	// ErrOffsetOutOfRange: a read or truncation outside [log start, log end].
	// Kafka: OFFSET_OUT_OF_RANGE.
	ErrOffsetOutOfRange = errors.New("segment: offset out of range")
	// ErrLogFailed: an earlier write or fsync failed. After a failed fsync the
	// page cache may have dropped dirty pages while reporting them clean, so
	// the log refuses every further write until it is closed and reopened,
	// which runs recovery. Kafka: KAFKA_STORAGE_ERROR.
	ErrLogFailed = errors.New("segment: log failed on an I/O error; close and reopen it to recover")
	// ErrClosed: the log or index was closed.
	ErrClosed = errors.New("segment: closed")
	// ErrOutOfOrderSequence: an idempotent producer's batch whose sequence
	// does not follow the producer's last one in this partition. Kafka:
	// OUT_OF_ORDER_SEQUENCE_NUMBER.
	ErrOutOfOrderSequence = errors.New("segment: out of order sequence number")
	// ErrInvalidProducerEpoch: an idempotent producer's batch at an epoch
	// older than the partition has seen from that producer id (a fenced
	// producer), or a transaction marker at such an epoch. Kafka 2.7+:
	// INVALID_PRODUCER_EPOCH.
	ErrInvalidProducerEpoch = errors.New("segment: producer epoch older than the partition's")
	// ErrInvalidTxnState: a producer's non-transactional batch while it has
	// a transaction open on the partition. Kafka: INVALID_TXN_STATE.
	ErrInvalidTxnState = errors.New("segment: invalid transaction state")
	// ErrTransactionCoordinatorFenced: a transaction marker from a
	// coordinator epoch older than the last one the partition saw from the
	// producer (a stale coordinator). Kafka:
	// TRANSACTION_COORDINATOR_FENCED.
	ErrTransactionCoordinatorFenced = errors.New("segment: transaction coordinator epoch older than the partition's")
	// ErrCleanRaced: a truncation or retention changed the log while a
	// Clean read and rewrote it; nothing was swapped. Not a fault of the
	// log: clean it again later.
	ErrCleanRaced = errors.New("segment: the log changed while it was being cleaned; nothing was swapped, clean again")
)

// ErrCorruptSnapshot marks a producer-state snapshot that does not decode
// (a torn write, or damage). Open falls back to an older snapshot or a scan
// of the log; it never refuses to open for it.
var ErrCorruptSnapshot = errors.New("segment: corrupt producer-state snapshot")

// ErrCorruptIndex marks an index record that does not decode. Checkpoints
// and segment seals cannot be derived from the segments, so a log whose
// records do not decode refuses to open rather than guess.
var ErrCorruptIndex = errors.New("segment: corrupt index record")
