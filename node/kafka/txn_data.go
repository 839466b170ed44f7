package kafka

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The transactional data path's capabilities (issue 18): what the server
// needs from the node to write transaction markers, describe producers,
// verify a transactional batch with its coordinator, and tell the group
// coordinator that a transaction's offsets committed or aborted.

// TxnMarkers is the optional Logs capability to write transaction markers
// (the serving side of WriteTxnMarkers). The node implements it over its
// partition replicas. Safe for concurrent use.
type TxnMarkers interface {
	// WriteTxnMarker appends m's control batch to m's partition as its
	// leader, with acks=all: like Produce it returns at once and the
	// result's Pending delivers the outcome once the marker is committed
	// (the high watermark passed it) or failed. Errors are kerr errors:
	// NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION,
	// NOT_ENOUGH_REPLICAS, INVALID_PRODUCER_EPOCH (the marker's epoch is
	// below the producer's), TRANSACTION_COORDINATOR_FENCED (its
	// coordinator epoch is below the last one seen), KAFKA_STORAGE_ERROR.
	// ctx bounds the wait (REQUEST_TIMED_OUT).
	WriteTxnMarker(ctx context.Context, m TxnMarker) ProduceResult
}

// TxnMarker is one marker for one partition of a WriteTxnMarkers request.
type TxnMarker struct {
	Topic            string
	Partition        int32
	ProducerID       int64
	ProducerEpoch    int16
	Commit           bool
	CoordinatorEpoch int32
}

// ProducerStates is the optional Logs capability to describe a
// partition's active producers (DescribeProducers). Safe for concurrent
// use.
type ProducerStates interface {
	// DescribeProducers returns the producers the partition's leader
	// keeps state for. Errors are kerr errors (NOT_LEADER_OR_FOLLOWER,
	// UNKNOWN_TOPIC_OR_PARTITION). The server reads the slice only until
	// the response is encoded.
	DescribeProducers(ctx context.Context, topic string, partition int32) ([]ProducerState, error)
}

// ProducerState is one active producer of a partition.
type ProducerState struct {
	ProducerID       int64
	ProducerEpoch    int16
	LastSequence     int32
	LastTimestamp    int64
	CoordinatorEpoch int32
	// CurrentTxnStartOffset is the first offset of its open transaction,
	// -1 when it has none.
	CurrentTxnStartOffset int64
}

// TxnVerifier verifies, with the transaction coordinator of
// transactionalID, that producerID at epoch has added topic/partition to
// its ongoing transaction (AddPartitionsToTxn v4+ with VerifyOnly,
// KIP-890 part 1), or, with add, adds it (v5 without VerifyOnly: the
// implicit add of transaction.version 2, KIP-890 part 2, for Produce v12+
// and TxnOffsetCommit v5+). The node's partition leader asks it before appending a
// transactional batch that would open a transaction on the partition, so
// that a late write of a zombie or an aborted transaction cannot open one
// that no coordinator will ever end (a hanging transaction, an LSO stuck
// for good). The transaction coordinator's wiring implements it; with
// none, every batch is accepted. Safe for concurrent use; it may block
// (a network round trip) and must honour ctx.
type TxnVerifier interface {
	// VerifyTxn returns nil when the partition is part of the ongoing
	// transaction, else a kerr error: INVALID_TXN_STATE (not added, or no
	// transaction ongoing), INVALID_PRODUCER_EPOCH or PRODUCER_FENCED (an
	// older epoch), or a coordinator error (NOT_COORDINATOR,
	// COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS,
	// CONCURRENT_TRANSACTIONS). VerifyError maps it to the produce's.
	VerifyTxn(ctx context.Context, transactionalID string, producerID int64, epoch int16, topic string, partition int32, add bool) error
}

// VerifyError is the Produce error for a TxnVerifier's error, as Kafka's
// AddPartitionsToTxnManager maps it: the fencing errors become
// INVALID_PRODUCER_EPOCH (the producer is a zombie), the coordinator's
// transient errors NOT_ENOUGH_REPLICAS (retriable for every producer:
// the verification is tried again on the retry), anything else
// INVALID_TXN_STATE. nil stays nil.
func VerifyError(err error) error {
	if err == nil {
		return nil
	}
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return kerr.NotEnoughReplicas // unreachable coordinator: retry
	}
	switch ke {
	case kerr.InvalidProducerEpoch, kerr.ProducerFenced:
		return kerr.InvalidProducerEpoch
	case kerr.NotCoordinator, kerr.CoordinatorNotAvailable, kerr.CoordinatorLoadInProgress,
		kerr.ConcurrentTransactions, kerr.RequestTimedOut, kerr.NotEnoughReplicas:
		return kerr.NotEnoughReplicas
	case kerr.TransactionalIDAuthorizationFailed, kerr.ClusterAuthorizationFailed:
		return ke
	}
	return kerr.InvalidTxnState
}

// GroupTxns is the optional Groups capability the group coordinator
// offers for transactional offset commits: once a WriteTxnMarkers marker
// on a partition of __consumer_offsets is committed, the server calls
// CompleteTxn so that the producer's pending transactional offsets in
// that shard become visible (commit) or are dropped (abort), as Kafka's
// GroupCoordinator.onTransactionCompleted. It must not block for long
// (it is called on the request's goroutine before the answer is sent).
type GroupTxns interface {
	CompleteTxn(partition int32, producerID int64, commit bool)
}

// offsetsTopic is the internal topic of consumer group offsets, whose
// markers WriteTxnMarkers reports to GroupTxns.
const offsetsTopic = "__consumer_offsets"
