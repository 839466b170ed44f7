package kafka

import "context"

// TopicAdmin is the optional Broker capability to create and delete topics:
// the controller's job. When the Broker implements it, the server speaks
// CreateTopics and DeleteTopics; otherwise it does not advertise them.
//
// Contract, besides Broker's: the server has already refused what the
// protocol alone can tell is wrong (bad names, duplicates, inconsistent
// counts or assignments, null config values) and passes only the rest. The
// methods return one result per topic given, in the same order; Err in a
// result is a kerr error (TOPIC_ALREADY_EXISTS, INVALID_CONFIG,
// INVALID_REPLICATION_FACTOR for more replicas than brokers, NOT_CONTROLLER,
// REQUEST_TIMED_OUT, ...). ctx ends at the request's timeout_ms when that is
// positive. NumPartitions can be anything up to 2^31-1: bounding it is the
// Broker's policy (Kafka's controller refuses more than 10,000 partitions per
// request with POLICY_VIOLATION).
type TopicAdmin interface {
	// CreateTopics creates topics, or with validateOnly only checks that
	// it could.
	CreateTopics(ctx context.Context, topics []NewTopic, validateOnly bool) ([]CreatedTopic, error)
	// DeleteTopics deletes topics named by name or (v6+) by ID.
	DeleteTopics(ctx context.Context, topics []TopicRef) ([]DeletedTopic, error)
}

// NewTopic is one topic of a CreateTopics request, validated by the server.
type NewTopic struct {
	Name string
	// NumPartitions is -1 for the broker's num.partitions, or when
	// Assignment is set.
	NumPartitions int32
	// ReplicationFactor is -1 for default.replication.factor, or when
	// Assignment is set.
	ReplicationFactor int16
	// Assignment, when not nil, lists the replicas of partitions 0..n-1,
	// each list non-empty, of one length, without duplicates.
	Assignment [][]int32
	// Configs are the topic's config overrides; the Broker validates keys
	// and values.
	Configs map[string]string
}

// CreatedTopic is the result for one NewTopic.
type CreatedTopic struct {
	ID TopicID
	// Err is a kerr error, nil on success; ErrMessage optionally details it.
	Err        error
	ErrMessage string
	// NumPartitions and ReplicationFactor as created (v5+), -1 if unknown.
	NumPartitions     int32
	ReplicationFactor int16
}

// DeletedTopic is the result for one TopicRef of DeleteTopics: the topic's
// name and ID as known (either may be empty when the topic is unknown).
type DeletedTopic struct {
	Name       string
	ID         TopicID
	Err        error
	ErrMessage string
}
