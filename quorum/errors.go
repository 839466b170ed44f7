package quorum

import "errors"

// Errors of this package. Kafka-level rejections of a command are the kerr
// values (kerr.FencedLeaderEpoch, kerr.IneligibleReplica, ...) wrapped with
// context: test them with errors.Is and send their code on the wire.
var (
	// ErrCorruptEntry marks a Raft log entry or snapshot that does not decode.
	ErrCorruptEntry = errors.New("quorum: corrupt metadata entry")
	// ErrBadUUID is returned by ParseUUID.
	ErrBadUUID = errors.New("quorum: bad uuid")
	// ErrStaleRecord is returned by Replay for a record that no longer fits
	// the image (e.g. planned by a deposed leader); the image is unchanged.
	ErrStaleRecord = errors.New("quorum: stale record")
	// ErrUnknownCommand is returned for a command type this build does not know.
	ErrUnknownCommand = errors.New("quorum: unknown command")
	// ErrClosed is returned by a Controller after Close.
	ErrClosed = errors.New("quorum: controller closed")
	// ErrOutcomeUnknown marks a command that may or may not have been
	// applied (leadership was lost after its records were appended, or the
	// connection to the active controller broke after the request was sent).
	// It also wraps kerr.RequestTimedOut. Retrying may find the command done
	// (TOPIC_ALREADY_EXISTS, INVALID_UPDATE_VERSION), as with Kafka.
	ErrOutcomeUnknown = errors.New("quorum: outcome unknown")
	// ErrNoLeader is returned when no active controller is known before the deadline.
	ErrNoLeader = errors.New("quorum: no active controller")
	// ErrBadHello marks a controller-port connection that did not open with
	// a well-formed hello of this version (hello.go).
	ErrBadHello = errors.New("quorum: bad controller-port hello")
	// ErrWrongCluster marks a controller-port connection from a node of
	// another cluster (its hello names another cluster id).
	ErrWrongCluster = errors.New("quorum: peer of another cluster")
	// ErrNotPublished is returned by AwaitBrokers when a live broker did
	// not confirm, before the deadline, that a change is in effect there.
	// The change itself is committed.
	ErrNotPublished = errors.New("quorum: change not yet in effect on every live broker")
)
