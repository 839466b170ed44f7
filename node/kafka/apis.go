package kafka

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// handler answers one decoded request. It returns the response to send (nil
// for none), or an error to close the connection without answering: what
// Kafka does for a request it cannot make sense of. Errors meant for the
// client go in the response, not here.
type handler func(ctx context.Context, s *Server, r *request) (kmsg.Response, error)

// api is one row of the dispatch table.
type api struct {
	key      kmsg.Key
	min, max int16
	handle   handler
	// maxBytes, when set, bounds this API's requests below
	// socket.request.max.bytes. kmsg decodes a frame into up to ~24 times
	// its size (an empty string costs 2 bytes on the wire, a 40-byte
	// struct and a pointer decoded), so an API whose real requests are
	// small gets a cap that keeps a hostile frame's decoded size small.
	maxBytes int32
	// needs, when set, is the optional capability the row serves through
	// (has[TopicAdmin], has[Logs], ...): without it the row is left out,
	// neither listed by ApiVersions nor dispatched.
	needs func(Broker) bool
	// listFrom0 makes ApiVersions list the range from version 0 while
	// requests below min still close the connection: Produce, as Kafka 4
	// does since it dropped v0-2 (KAFKA-18659). librdkafka compresses with
	// gzip, snappy or lz4 only if the broker lists Produce v0, and
	// otherwise sends uncompressed batches without saying so (its issue
	// 4956); clients pick the highest version both sides have, never v0.
	listFrom0 bool
	// recycle says that nothing keeps the request's frame, nor any byte
	// field of its decoded body (kmsg aliases them into the frame), once
	// the handler returned, so the connection reuses the frame's buffer
	// for a later request (framePool). Strings are copies. Produce sets
	// it: its frames are large and Logs.Produce must not keep Records.
	recycle bool
}

// table is the dispatch table of one server, indexed by API key.
type table struct {
	byKey [kmsg.MaxKey + 1]*api
	// apis in key order, as ApiVersions lists them.
	apis []*api
}

// newTable builds the dispatch table: every API the server speaks, with the
// versions it accepts, one row each. Adding an API is adding its file and its
// row here (see doc.go).
func newTable(b Broker) *table {
	// Fetch v13+ names topics by ID.
	fetchMax := int16(12)
	if has[TopicNames](b) {
		fetchMax = 15
	}
	// OffsetCommit and OffsetFetch v10 name topics by ID.
	offsetsMax := int16(9)
	if has[TopicNames](b) && has[TopicIDs](b) {
		offsetsMax = 10
	}
	rows := []api{
		{key: kmsg.Metadata, min: 0, max: 12, handle: handleMetadata, maxBytes: metadataMaxBytes},
		{key: kmsg.ApiVersions, min: 0, max: 3, handle: handleAPIVersions, maxBytes: apiVersionsMaxBytes},
		{key: kmsg.CreateTopics, min: 0, max: 7, handle: handleCreateTopics, needs: has[TopicAdmin]},
		{key: kmsg.DeleteTopics, min: 0, max: 6, handle: handleDeleteTopics, needs: has[TopicAdmin]},
		{key: kmsg.Produce, min: 3, max: 12, handle: handleProduce, needs: has[Logs], listFrom0: true, recycle: true},
		{key: kmsg.Fetch, min: 4, max: fetchMax, handle: handleFetch, needs: has[Logs]},
		{key: kmsg.ListOffsets, min: 0, max: 8, handle: handleListOffsets, needs: has[Logs]},
		{key: kmsg.OffsetForLeaderEpoch, min: 0, max: 4, handle: handleOffsetForLeaderEpoch, needs: has[Logs]},
		{key: kmsg.InitProducerID, min: 0, max: 5, handle: handleInitProducerID, needs: has[ProducerIDs]},
		{key: kmsg.DescribeConfigs, min: 0, max: 4, handle: handleDescribeConfigs, needs: has[Configs]},
		{key: kmsg.IncrementalAlterConfigs, min: 0, max: 1, handle: handleIncrementalAlterConfigs, needs: has[Configs]},
		{key: kmsg.DescribeCluster, min: 0, max: 1, handle: handleDescribeCluster},
		{key: kmsg.ElectLeaders, min: 0, max: 2, handle: handleElectLeaders, needs: has[Elector]},
		{key: kmsg.AlterPartitionAssignments, min: 0, max: 1, handle: handleAlterPartitionReassignments, needs: has[Reassigner]},
		{key: kmsg.ListPartitionReassignments, min: 0, max: 0, handle: handleListPartitionReassignments, needs: has[Reassigner]},
		{key: kmsg.DescribeQuorum, min: 0, max: 2, handle: handleDescribeQuorum, needs: has[QuorumDescriber]},
		{key: kmsg.CreatePartitions, min: 0, max: 3, handle: handleCreatePartitions, needs: has[PartitionAdmin]},
		{key: kmsg.FindCoordinator, min: 0, max: 6, handle: handleFindCoordinator},
		{key: kmsg.JoinGroup, min: 2, max: 9, handle: handleJoinGroup, needs: has[Groups]},
		{key: kmsg.SyncGroup, min: 0, max: 5, handle: handleSyncGroup, needs: has[Groups]},
		{key: kmsg.Heartbeat, min: 0, max: 4, handle: handleHeartbeat, needs: has[Groups]},
		{key: kmsg.LeaveGroup, min: 0, max: 5, handle: handleLeaveGroup, needs: has[Groups]},
		{key: kmsg.OffsetCommit, min: 2, max: offsetsMax, handle: handleOffsetCommit, needs: has[Groups]},
		{key: kmsg.OffsetFetch, min: 1, max: offsetsMax, handle: handleOffsetFetch, needs: has[Groups]},
		{key: kmsg.DescribeGroups, min: 0, max: 6, handle: handleDescribeGroups, needs: has[Groups]},
		{key: kmsg.ListGroups, min: 0, max: 5, handle: handleListGroups, needs: has[Groups]},
		{key: kmsg.DeleteGroups, min: 0, max: 2, handle: handleDeleteGroups, needs: has[Groups]},
		{key: kmsg.OffsetDelete, min: 0, max: 0, handle: handleOffsetDelete, needs: has[Groups]},
		{key: kmsg.TxnOffsetCommit, min: 0, max: 5, handle: handleTxnOffsetCommit, needs: has[Groups]},
		{key: kmsg.SASLHandshake, min: 1, max: 1, handle: handleSASLHandshake, maxBytes: saslMaxReceive, listFrom0: true},
		{key: kmsg.SASLAuthenticate, min: 0, max: 2, handle: handleSASLAuthenticate, maxBytes: saslMaxReceive},
		{key: kmsg.DescribeUserSCRAMCredentials, min: 0, max: 0, handle: handleDescribeUserSCRAMCredentials, needs: has[ScramAdmin]},
		{key: kmsg.AlterUserSCRAMCredentials, min: 0, max: 0, handle: handleAlterUserSCRAMCredentials, needs: has[ScramAdmin]},
		{key: kmsg.ConsumerGroupHeartbeat, min: 0, max: 1, handle: handleConsumerGroupHeartbeat, needs: has[Groups]},
		{key: kmsg.ConsumerGroupDescribe, min: 0, max: 1, handle: handleConsumerGroupDescribe, needs: has[Groups]},
		{key: kmsg.DescribeACLs, min: 0, max: 3, handle: handleDescribeACLs, needs: has[ACLAdmin]},
		{key: kmsg.CreateACLs, min: 0, max: 3, handle: handleCreateACLs, needs: has[ACLAdmin]},
		{key: kmsg.DeleteACLs, min: 0, max: 3, handle: handleDeleteACLs, needs: has[ACLAdmin]},
		{key: kmsg.AddPartitionsToTxn, min: 0, max: 5, handle: handleAddPartitionsToTxn, needs: has[Transactions]},
		{key: kmsg.AddOffsetsToTxn, min: 0, max: 4, handle: handleAddOffsetsToTxn, needs: has[Transactions]},
		{key: kmsg.EndTxn, min: 0, max: 5, handle: handleEndTxn, needs: has[Transactions]},
		{key: kmsg.DescribeTransactions, min: 0, max: 0, handle: handleDescribeTransactions, needs: has[Transactions]},
		{key: kmsg.ListTransactions, min: 0, max: 1, handle: handleListTransactions, needs: has[Transactions]},
		{key: kmsg.WriteTxnMarkers, min: 0, max: 1, handle: handleWriteTxnMarkers, needs: has[TxnMarkers]},
		{key: kmsg.DescribeProducers, min: 0, max: 0, handle: handleDescribeProducers, needs: has[ProducerStates]},
		{key: kmsg.DescribeClientQuotas, min: 0, max: 1, handle: handleDescribeClientQuotas, needs: has[QuotaAdmin]},
		{key: kmsg.AlterClientQuotas, min: 0, max: 1, handle: handleAlterClientQuotas, needs: has[QuotaAdmin]},
		{key: kmsg.UnregisterBroker, min: 0, max: 0, handle: handleUnregisterBroker, needs: has[Unregisterer]},
		{key: kmsg.AddRaftVoter, min: 0, max: 1, handle: handleAddRaftVoter, needs: has[VoterAdmin]},
		{key: kmsg.RemoveRaftVoter, min: 0, max: 0, handle: handleRemoveRaftVoter, needs: has[VoterAdmin]},
		{key: kmsg.UpdateFeatures, min: 0, max: 2, handle: handleUpdateFeatures, needs: has[Features]},
	}
	return buildTable(slices.DeleteFunc(rows, func(a api) bool {
		return a.needs != nil && !a.needs(b)
	}))
}

// has reports whether b implements the optional capability C: the one
// place a Broker's capabilities are found by type assertion.
func has[C any](b Broker) bool {
	_, ok := b.(C)
	return ok
}

// buildTable indexes rows and panics on a row kmsg cannot decode: a
// programming error every test would hit.
func buildTable(rows []api) *table {
	t := &table{}
	for i := range rows {
		a := &rows[i]
		req := a.key.Request()
		switch {
		case req == nil:
			panic(fmt.Sprintf("kafka: dispatch table: key %d unknown to kmsg", a.key))
		case a.min < 0 || a.min > a.max || a.max > req.MaxVersion():
			panic(fmt.Sprintf("kafka: dispatch table: %s versions %d-%d outside kmsg's 0-%d", a.key.Name(), a.min, a.max, req.MaxVersion()))
		case t.byKey[a.key] != nil:
			panic(fmt.Sprintf("kafka: dispatch table: %s listed twice", a.key.Name()))
		}
		t.byKey[a.key] = a
		t.apis = append(t.apis, a)
	}
	slices.SortFunc(t.apis, func(x, y *api) int { return int(x.key) - int(y.key) })
	return t
}

// lookup returns the row for key, nil if the server does not speak it.
func (t *table) lookup(key int16) *api {
	if key < 0 || int(key) >= len(t.byKey) {
		return nil
	}
	return t.byKey[key]
}
