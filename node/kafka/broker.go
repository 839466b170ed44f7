package kafka

import "context"

// Broker is what the protocol server needs from the node behind it. The node
// implements it over the quorum's metadata image and the partition replicas;
// the tests implement it with a fake.
//
// Contract:
//   - Every method may be called concurrently, from many connections at once.
//   - The server reads returned values only until it has encoded the response
//     and never modifies them, so an implementation may hand out shared,
//     immutable snapshots; it must not modify them afterwards either.
//   - Errors meant for the client are Kafka errors from kerr (for example
//     kerr.UnknownTopicOrPartition) placed in the result where the protocol
//     has an error field. A non-nil error returned by a method means the
//     request could not be answered at all: the server logs it and closes
//     the connection, and the client retries (possibly elsewhere), as it
//     does with any broker that fails.
//
// Optional capabilities (TopicAdmin) are separate interfaces found by type
// assertion; the server advertises in ApiVersions only the APIs its Broker
// can serve.
type Broker interface {
	// Metadata describes the cluster and the topics q asks for. The result
	// holds the topics that exist (or were auto-created) among those asked
	// for, in any order; the server answers UNKNOWN_TOPIC_OR_PARTITION or
	// UNKNOWN_TOPIC_ID itself for requested topics missing from it.
	Metadata(ctx context.Context, q MetadataQuery) (ClusterMetadata, error)
}

// TopicID is a topic's UUID (KIP-516); the zero value means "no ID".
type TopicID [16]byte

// TopicRef names a topic by name, by ID, or both (Metadata v12 may ask by ID).
type TopicRef struct {
	Name string
	ID   TopicID
}

// MetadataQuery is a Metadata request in the server's terms.
type MetadataQuery struct {
	// AllTopics asks for every topic; Topics is then empty.
	AllTopics bool
	// Topics asks for these topics only (possibly none: brokers and
	// controller only).
	Topics []TopicRef
	// AllowAutoCreate is the client's allow_auto_topic_creation (v4+;
	// true for older versions, as in Kafka). Whether a missing topic is
	// created is the Broker's decision (auto.create.topics.enable).
	AllowAutoCreate bool
	// Listener is the name of the listener the request came in on
	// (Server.ServeListener; "" from Serve): the Broker answers the
	// brokers' advertised endpoints of that listener, as Kafka does.
	Listener string
}

// ClusterMetadata is the answer to a MetadataQuery.
type ClusterMetadata struct {
	ClusterID string
	// ControllerID is the node id of the active controller, -1 if none.
	ControllerID int32
	Brokers      []BrokerInfo
	Topics       []TopicMetadata
}

// BrokerInfo is one live broker as clients should reach it (its advertised
// endpoint for the listener of the query).
type BrokerInfo struct {
	NodeID int32
	Host   string
	Port   int32
	// Rack is empty when the broker has no rack.
	Rack string
}

// TopicMetadata describes one topic.
type TopicMetadata struct {
	Name     string
	ID       TopicID
	Internal bool
	// Err is the topic-level Kafka error (a *kerr.Error, e.g.
	// kerr.LeaderNotAvailable right after auto-creation), nil if none.
	Err        error
	Partitions []PartitionMetadata
}

// PartitionMetadata describes one partition of a topic.
type PartitionMetadata struct {
	Partition int32
	// Leader is the leader's node id, -1 if there is none.
	Leader      int32
	LeaderEpoch int32
	Replicas    []int32
	ISR         []int32
	// Offline lists replicas on offline log directories or dead brokers.
	Offline []int32
	// ELR and LastKnownELR are the eligible leader replicas and the
	// last-known ones (KIP-966; DescribeTopicPartitions answers them).
	ELR, LastKnownELR []int32
	// Err is the partition-level Kafka error (e.g. kerr.LeaderNotAvailable),
	// nil if none.
	Err error
}
