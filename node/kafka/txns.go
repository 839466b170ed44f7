package kafka

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Transactions is the optional Broker capability to coordinate
// transactions (Kafka's transaction coordinator). With it the server
// serves FindCoordinator for transactional ids, InitProducerId with a
// transactional id, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
// DescribeTransactions and ListTransactions; the node implements it over
// node/txncoord.
//
// The handlers route as the group handlers do: each transactional id
// lives in one shard (a partition of __transaction_state); a request
// naming several ids (AddPartitionsToTxn v4+, DescribeTransactions) is
// split by shard and the answers merged in request order. The handlers
// check authorization and what needs the metadata (partitions of unknown
// topics); the shard answers the rest.
//
// Contract, besides Broker's: every method may be called concurrently; a
// returned error is a *kerr.Error meant for the client (any other error is
// answered COORDINATOR_NOT_AVAILABLE).
type Transactions interface {
	// FindTxnCoordinator returns the broker that coordinates
	// transactionalID, at its endpoint for listener, creating
	// __transaction_state on first use. COORDINATOR_NOT_AVAILABLE while
	// the id's partition has no leader.
	FindTxnCoordinator(ctx context.Context, listener, transactionalID string) (BrokerInfo, error)
	// TxnShard is the __transaction_state partition of transactionalID;
	// false while the topic does not exist.
	TxnShard(transactionalID string) (int32, bool)
	// CoordinateTxn passes one request, holding only ids of shard, to
	// that shard and returns its answer (see Groups.Coordinate for the
	// errors). Bodies: InitProducerId (with a transactional id),
	// AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, DescribeTransactions.
	CoordinateTxn(ctx context.Context, shard int32, req GroupRequest) (kmsg.Response, error)
	// ListTransactions lists the transactions of every shard this broker
	// leads, filtered by states, producer ids and the least time since
	// they started (empty, zero: all); unknown are the states of the
	// filter it does not know. An error (a shard still loading) is the
	// response's.
	ListTransactions(ctx context.Context, states []string, producerIDs []int64, minDuration time.Duration) (txns []kmsg.ListTransactionsResponseTransactionState, unknown []string, err error)
	// PartitionExists says whether topic has partition: AddPartitionsToTxn
	// answers any other UNKNOWN_TOPIC_OR_PARTITION.
	PartitionExists(topic string, partition int32) bool
}

// TxnVersion is an optional Transactions capability: the level of the
// transaction.version feature the cluster finalizes, which ApiVersions
// v3+ advertises (FinalizedFeatures) so that clients pick their path:
// 2 is KIP-890 part 2 (no AddPartitionsToTxn, EndTxn v5 bumps the epoch),
// 0 or 1 keeps them on part 1. Without it the level is 2. The server
// serves both whatever the level: each request's version decides.
type TxnVersion interface {
	TransactionVersion() int16
}

// MaxTransactionVersion is the highest transaction.version this server
// supports (ApiVersions' SupportedFeatures).
const MaxTransactionVersion = 2

// coordinateTxn passes a request for one transactional id to its shard.
// Before __transaction_state exists no broker coordinates anything:
// NOT_COORDINATOR, which sends the client back to FindCoordinator.
func coordinateTxn(ctx context.Context, s *Server, r *request, id string, body kmsg.Request) (kmsg.Response, error) {
	t := s.broker.(Transactions)
	shard, ok := t.TxnShard(id)
	if !ok {
		return nil, kerr.NotCoordinator
	}
	resp, err := t.CoordinateTxn(ctx, shard, groupRequest(r, body))
	if err == nil && resp == nil {
		err = kerr.CoordinatorNotAvailable
	}
	return resp, err
}

// coordinateTxns splits ids by shard (see coordinateSplit).
func coordinateTxns(ctx context.Context, s *Server, r *request, ids []string, build func(idx []int) kmsg.Request) []shardAnswer {
	t := s.broker.(Transactions)
	return coordinateSplit(ctx, r, ids, t.TxnShard, t.CoordinateTxn, build)
}

// txnCode is the error code for an error from Transactions.
func txnCode(err error) int16 { return groupCode(err) }

// txnWriteAllowed is Kafka's check of the transaction APIs' clients:
// WRITE on the transactional id.
func txnWriteAllowed(s *Server, r *request, id string) bool {
	return s.allowed(r, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, id)
}
