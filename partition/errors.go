package partition

import "errors"

// Errors returned by New and Step. They mean the caller broke the contract
// (or delivered a message that is no longer relevant); Kafka error codes for
// clients travel in Ready, as *kerr.Error values.
var (
	// ErrInvalidConfig: Config.Validate or ParseDurability refused a value.
	ErrInvalidConfig = errors.New("partition: invalid config")
	// ErrStaleEpoch: a BecomeLeader/BecomeFollower older than the replica's
	// leader epoch; it is ignored.
	ErrStaleEpoch = errors.New("partition: stale leader epoch")
	// ErrStaleResponse: a FetchResponse or AlterPartitionResult that answers
	// nothing in flight; it is ignored.
	ErrStaleResponse = errors.New("partition: response to nothing in flight")
	// ErrOffsetRegress: an event moved the log end backwards outside a
	// truncation the replica asked for.
	ErrOffsetRegress = errors.New("partition: log end offset moved backwards")
	// ErrUnknownMsg: Step got a message type it does not know.
	ErrUnknownMsg = errors.New("partition: unknown message")
)
