package kafka

import (
	"context"
	"fmt"
	"iter"
	"time"
)

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

// requestDeadline bounds ctx by an admin request's timeout_ms when it is
// positive (Kafka: zero or less means "do not wait", which the Broker
// answers as it can without a deadline of ours).
func requestDeadline(ctx context.Context, timeoutMillis int32) (context.Context, context.CancelFunc) {
	if timeoutMillis <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, time.Duration(timeoutMillis)*time.Millisecond)
}

// askBroker makes the one Broker call of a batched admin request
// (CreateTopics, CreatePartitions, DeleteTopics) for the topics that passed
// the server's checks, with a context that ends at timeout_ms when it is
// positive. With no topics it calls nothing and returns no results. An
// error, or not exactly one result per topic, fails the request.
func askBroker[T, R any](ctx context.Context, timeoutMillis int32, what string, topics []T,
	call func(context.Context, []T) ([]R, error)) ([]R, error) {
	if len(topics) == 0 {
		return nil, nil
	}
	ctx, cancel := requestDeadline(ctx, timeoutMillis)
	defer cancel()
	results, err := call(ctx, topics)
	if err != nil {
		return nil, fmt.Errorf("broker %s: %w", what, err)
	}
	if len(results) != len(topics) {
		return nil, fmt.Errorf("broker %s: %d results for %d topics", what, len(results), len(topics))
	}
	return results, nil
}

// firstOfEach yields, in request order, the index of each entry whose key
// no earlier entry has, and how many entries in all have that key. Kafka
// answers a name given more than once with one result, at its first
// appearance (CreateTopics, CreatePartitions, DeleteTopics).
func firstOfEach[T any, K comparable](entries []T, key func(T) K) iter.Seq2[int, int] {
	return func(yield func(int, int) bool) {
		count := make(map[K]int, len(entries))
		for _, e := range entries {
			count[key(e)]++
		}
		for i, e := range entries {
			k := key(e)
			n, ok := count[k]
			if !ok {
				continue // a repeat, answered at the first appearance
			}
			delete(count, k)
			if !yield(i, n) {
				return
			}
		}
	}
}
