package txn

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Errors of Replay. Kafka error codes for clients travel in Ready's
// responses.
var (
	// ErrCorruptRecord: a record of the state partition does not decode
	// as Kafka's schema says it must.
	ErrCorruptRecord = errors.New("txn: corrupt record")
	// ErrUnsupportedRecord: a key or value version this coordinator does
	// not know, or Replay after LoadDone.
	ErrUnsupportedRecord = errors.New("txn: unsupported record")
)

// Kafka error codes, from kerr's one table.
var (
	codeLoading        = kerr.CoordinatorLoadInProgress.Code
	codeNotAvailable   = kerr.CoordinatorNotAvailable.Code
	codeNotCoordinator = kerr.NotCoordinator.Code
	codeInvalidRequest = kerr.InvalidRequest.Code
	codeConcurrent     = kerr.ConcurrentTransactions.Code
	codeFenced         = kerr.ProducerFenced.Code
	codeInvalidEpoch   = kerr.InvalidProducerEpoch.Code
	codeInvalidState   = kerr.InvalidTxnState.Code
	codeInvalidMapping = kerr.InvalidProducerIDMapping.Code
	codeInvalidTimeout = kerr.InvalidTransactionTimeout.Code
	codeNotFound       = kerr.TransactionalIDNotFound.Code
	codeAbortable      = kerr.TransactionAbortable.Code
	codeUnknownServer  = kerr.UnknownServerError.Code
)

// fencedFor is code as a client of this version understands it: before
// PRODUCER_FENCED (KIP-588) clients knew INVALID_PRODUCER_EPOCH, as
// Kafka's KafkaApis translates it (InitProducerId v<4, the other
// transaction APIs v<2).
func fencedFor(code int16, version, since int16) int16 {
	if code == codeFenced && version < since {
		return codeInvalidEpoch
	}
	return code
}
