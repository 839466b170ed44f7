package group

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Errors of Replay. Kafka error codes for clients travel in Ready's
// responses.
var (
	// ErrCorruptRecord: a record of the offsets partition does not decode
	// as Kafka's schema says it must.
	ErrCorruptRecord = errors.New("group: corrupt record")
	// ErrUnsupportedRecord: a record type this coordinator does not keep
	// (the share and streams group records of Kafka 4's coordinator: key
	// versions 9 and up), or a value version it does not know.
	ErrUnsupportedRecord = errors.New("group: unsupported record")
)

// Kafka error codes, from kerr's one table.
var (
	codeLoading          = kerr.CoordinatorLoadInProgress.Code
	codeNotAvailable     = kerr.CoordinatorNotAvailable.Code
	codeNotCoordinator   = kerr.NotCoordinator.Code
	codeUnknownMember    = kerr.UnknownMemberID.Code
	codeIllegalGen       = kerr.IllegalGeneration.Code
	codeRebalancing      = kerr.RebalanceInProgress.Code
	codeFenced           = kerr.FencedInstanceID.Code
	codeInconsistent     = kerr.InconsistentGroupProtocol.Code
	codeInvalidGroupID   = kerr.InvalidGroupID.Code
	codeInvalidSession   = kerr.InvalidSessionTimeout.Code
	codeMemberIDRequired = kerr.MemberIDRequired.Code
	codeMaxSize          = kerr.GroupMaxSizeReached.Code
	codeInvalidRequest   = kerr.InvalidRequest.Code
	codeMetadataTooLarge = kerr.OffsetMetadataTooLarge.Code
	codeGroupNotFound    = kerr.GroupIDNotFound.Code
	codeNotEmpty         = kerr.NonEmptyGroup.Code
	codeSubscribed       = kerr.GroupSubscribedToTopic.Code
	codeUnknownServer    = kerr.UnknownServerError.Code
	codeUnstable         = kerr.UnstableOffsetCommit.Code

	codeFencedEpoch         = kerr.FencedMemberEpoch.Code
	codeStaleEpoch          = kerr.StaleMemberEpoch.Code
	codeUnreleasedInstance  = kerr.UnreleasedInstanceID.Code
	codeUnsupportedAssignor = kerr.UnsupportedAssignor.Code
	codeInvalidRegex        = kerr.InvalidRegularExpression.Code
	codeUnsupportedVersion  = kerr.UnsupportedVersion.Code
)

// AppendErrorCode is the code a client gets when the write it waited on
// failed, as Kafka 4's GroupCoordinatorService.normalizeException maps it
// (and Kafka's TransactionStateManager the same way: node/txn uses it):
// a lost leadership (NOT_LEADER_OR_FOLLOWER, KAFKA_STORAGE_ERROR) is
// NOT_COORDINATOR; a partition that is missing, short of replicas or timed
// out is COORDINATOR_NOT_AVAILABLE; a batch too large is
// UNKNOWN_SERVER_ERROR. An error that carries no Kafka code counts as
// COORDINATOR_NOT_AVAILABLE (retriable: the client looks the coordinator up
// again).
func AppendErrorCode(err error) int16 {
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return codeNotAvailable
	}
	switch ke {
	case kerr.NotLeaderForPartition, kerr.KafkaStorageError, kerr.NotCoordinator:
		return codeNotCoordinator
	case kerr.UnknownTopicOrPartition, kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend,
		kerr.RequestTimedOut, kerr.CoordinatorNotAvailable:
		return codeNotAvailable
	case kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidFetchSize:
		return codeUnknownServer
	}
	return ke.Code
}
