package kafka

import "context"

// Logs is the optional Broker capability to serve partition data: Produce,
// Fetch, ListOffsets and OffsetForLeaderEpoch. The node implements it over
// the partition replicas it hosts.
//
// Contract, besides Broker's:
//   - Errors meant for the client are kerr errors in the result's Err
//     (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, CORRUPT_MESSAGE,
//     OFFSET_OUT_OF_RANGE, FENCED_LEADER_EPOCH, ...); the methods have no
//     connection-closing error.
//   - Produce may rewrite p.Records in place (base offsets, leader epoch)
//     but must not keep it, or anything sliced from it, once it returns:
//     it lies in the request's frame, which the server then reuses for a
//     later request (framePool). Copy what must outlive the call.
//   - Fetch returns Records the server only reads until the response is
//     encoded, or File, which the server owns: it sends the bytes and
//     releases it, whatever becomes of the request.
//   - CurrentLeaderEpoch -1 means "the client did not say" and skips the
//     epoch check (KIP-320); otherwise an epoch below the partition's is
//     FENCED_LEADER_EPOCH and one above it UNKNOWN_LEADER_EPOCH.
type Logs interface {
	// Produce appends p.Records (one or more RecordBatch v2) to one
	// partition without waiting for acknowledgements: when they are still
	// due (acks=all until the records are committed) the result's Pending
	// delivers the outcome later, so that a request's partitions wait
	// together. ctx bounds the wait (REQUEST_TIMED_OUT).
	Produce(ctx context.Context, p ProducePartition) ProduceResult
	// Fetch reads committed batches from one partition without waiting.
	Fetch(ctx context.Context, p FetchPartition) FetchResult
	// Appended returns a channel closed at the next append (or high
	// watermark change) on any partition of this broker: long-polling
	// fetches wait on it instead of polling.
	Appended() <-chan struct{}
	// ListOffset answers one partition of ListOffsets: Timestamp -2 is
	// the log start, -1 the high watermark (the last stable offset when
	// ReadCommitted), -3 the offset of the largest
	// timestamp (KIP-734); otherwise the first record whose timestamp is
	// at or after Timestamp (Offset -1 and Timestamp -1 when there is none).
	ListOffset(ctx context.Context, p ListOffsetPartition) ListOffsetResult
	// EndOffsetForEpoch answers one partition of OffsetForLeaderEpoch
	// (KIP-101): the largest epoch at or below p.LeaderEpoch and the end
	// offset of that epoch.
	EndOffsetForEpoch(ctx context.Context, p EpochPartition) EpochResult
}

// TopicNames is the optional Logs capability to name a topic by its ID
// (KIP-516). With it the server serves Fetch v13-15 (topics by ID; v15
// carries the fetching replica's id and broker epoch, KIP-903), without it
// Fetch up to v12. Safe for concurrent use.
type TopicNames interface {
	// TopicName returns the name of the topic with this ID, false if
	// there is none.
	TopicName(id TopicID) (string, bool)
}

// TopicIDs is the optional Broker capability to give a topic's ID by its
// name. With it and TopicNames the server serves OffsetCommit and
// OffsetFetch v10 (topics by ID, Kafka 4.2), without them up to v9. Safe
// for concurrent use.
type TopicIDs interface {
	// TopicID returns the ID of the topic with this name, false if there
	// is none.
	TopicID(name string) (TopicID, bool)
}

// ProducerIDs is the optional Broker capability to hand out producer ids
// (InitProducerId for idempotent producers; transactions are not served).
type ProducerIDs interface {
	// InitProducerID returns a new producer id and epoch 0, or, when
	// producerID is not -1, bumps that producer's epoch. Errors are kerr
	// errors for the client.
	InitProducerID(ctx context.Context, producerID int64, producerEpoch int16) (int64, int16, error)
}

// ProducePartition is one partition of a Produce request.
type ProducePartition struct {
	Topic     string
	Partition int32
	// Acks is 0, 1 or -1 (all).
	Acks    int16
	Records []byte
	// TransactionalID is the request's transactional id, "" when it has
	// none. A transactional batch that would open a transaction on the
	// partition is verified with the transaction coordinator first
	// (KIP-890 part 1: TxnVerifier); the server has already checked that
	// such batches come with an id the client may use.
	TransactionalID string
	// AddToTxn: the request is Produce v12+ (transaction.version 2,
	// KIP-890 part 2): such a batch adds its partition to the
	// transaction through the coordinator (TxnVerifier with add) instead
	// of only verifying that the client added it.
	AddToTxn bool
}

// ProduceResult is the outcome for one ProducePartition.
type ProduceResult struct {
	Err        error
	ErrMessage string
	// BaseOffset is the offset of the first record written, or, for a
	// duplicate idempotent batch, of the first record written the first time.
	BaseOffset     int64
	LogStartOffset int64
	// Records is how many records were appended, as the log counted
	// them while validating (0 on an error or for a duplicate): the
	// server's per-topic metrics take it from here rather than parse the
	// batches again.
	Records int64
	// Pending, when not nil, delivers the acknowledgement once the acks
	// are satisfied: nil, or the Kafka error that replaces the result
	// (NOT_ENOUGH_REPLICAS_AFTER_APPEND, NOT_LEADER_OR_FOLLOWER,
	// REQUEST_TIMED_OUT). It delivers at most one value and need not be read.
	Pending <-chan error
}

// FetchPartition is one partition of a Fetch request.
type FetchPartition struct {
	Topic              string
	Partition          int32
	CurrentLeaderEpoch int32
	Offset             int64
	// MaxBytes bounds the batches returned, but the first batch is
	// returned whole (KIP-74).
	MaxBytes int
	// ReplicaID is the fetching broker's id, or -1 for a consumer: the
	// request's replica_id below v15, ReplicaState's id from v15 on.
	ReplicaID int32
	// BrokerEpoch is the fetching broker's epoch from v15's ReplicaState
	// (KIP-903), -1 when the request has none (below v15, or not sent).
	// Nothing proves either: they are what the sender claims.
	BrokerEpoch int64
	// LastFetchedEpoch (v12+) is the epoch of the last batch the fetching
	// replica holds, -1: not sent; the leader answers a diverging epoch
	// when its log differs there (KIP-320/595).
	LastFetchedEpoch int32
	// ReadCommitted is the consumer's isolation_level 1: batches only
	// below the last stable offset, with the aborted transactions among
	// them (FetchResult.Aborted). Replica fetches read uncommitted.
	ReadCommitted bool
}

// EpochEnd is a diverging-epoch answer to a replica fetch: the leader's
// log has Epoch ending at EndOffset.
type EpochEnd struct {
	Epoch     int32
	EndOffset int64
}

// FetchResult is the outcome for one FetchPartition.
type FetchResult struct {
	Err            error
	HighWatermark  int64
	LogStartOffset int64
	// LastStableOffset is the partition's LSO: min(high watermark, the
	// first offset of its oldest open transaction). Set wherever the high
	// watermark is, for either isolation level (Kafka sends it to all).
	LastStableOffset int64
	// Aborted, for a read_committed fetch, lists the aborted
	// transactions whose data overlaps the batches returned (Kafka's
	// AbortedTransactions), in the log's order; nil when there are none.
	// The server reads it only until the response is encoded.
	Aborted []AbortedTxn
	Records []byte
	// File, when not nil, holds the records instead of Records: the
	// connection sends them from the file (sendfile) and releases it.
	File FileRecords
	// Diverging (replica fetches, v12+) tells the follower where its log
	// leaves the leader's; no records come with it.
	Diverging *EpochEnd
}

// FileRecords are record batches left in a file, which a Fetch response
// sends without copying them through user memory: with sendfile(2) on a TCP
// connection when Fd is a descriptor, else read with AppendTo.
// segment.Span implements it.
type FileRecords interface {
	// Len is the number of bytes; Pos the file position of the first.
	Len() int
	Pos() int64
	// Fd is the file's descriptor, or ^uintptr(0) when it has none.
	Fd() uintptr
	// AppendTo appends the bytes to dst.
	AppendTo(dst []byte) ([]byte, error)
	// Release lets the file go; called once the bytes are sent or never
	// will be. Calling it again does nothing.
	Release()
}

// ListOffsetPartition is one partition of ListOffsets.
type ListOffsetPartition struct {
	Topic              string
	Partition          int32
	CurrentLeaderEpoch int32
	Timestamp          int64
	// ReadCommitted is isolation_level 1 (v2+): the latest offset (-1)
	// is the last stable offset instead of the high watermark, and the
	// other lookups stay below it.
	ReadCommitted bool
}

// AbortedTxn is one aborted transaction of a read_committed Fetch: the
// producer and the offset of its first batch in the partition.
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64
}

// ListOffsetResult is the outcome for one ListOffsetPartition.
type ListOffsetResult struct {
	Err         error
	Offset      int64
	Timestamp   int64
	LeaderEpoch int32
}

// EpochPartition is one partition of OffsetForLeaderEpoch.
type EpochPartition struct {
	Topic              string
	Partition          int32
	CurrentLeaderEpoch int32
	LeaderEpoch        int32
}

// EpochResult is the outcome for one EpochPartition: EndOffset -1 and
// LeaderEpoch -1 when the epoch is unknown.
type EpochResult struct {
	Err         error
	LeaderEpoch int32
	EndOffset   int64
}
