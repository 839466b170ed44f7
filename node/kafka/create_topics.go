package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/quorum"
)

// CreateTopics (key 19), versions 0-7; spoken only when the Broker is a
// TopicAdmin.
//
// The server refuses per topic, without asking the Broker, what the request
// alone shows to be wrong, with Kafka's codes and messages:
//   - a name given more than once: INVALID_REQUEST, one result for the name;
//   - a name Kafka would refuse: INVALID_TOPIC_EXCEPTION;
//   - a replica assignment together with num_partitions or
//     replication_factor other than -1: INVALID_REQUEST;
//   - an assignment whose partitions are not 0..n-1 in order, or with an
//     empty replica list, a replica twice, or lists of different lengths:
//     INVALID_REPLICA_ASSIGNMENT;
//   - num_partitions 0 or below -1: INVALID_PARTITIONS; replication_factor 0
//     or below -1: INVALID_REPLICATION_FACTOR (-1 means the broker default;
//     accepted at every version, as the KRaft controller does);
//   - a config with a null value or given twice: INVALID_CONFIG.
//
// The rest go to TopicAdmin.CreateTopics in one call, with validate_only
// (v1+) and a context that ends at timeout_ms when it is positive. Results
// keep request order (first appearance). v5+ results carry the partition
// count and replication factor; config values are not returned yet (empty
// Configs). v7+ results carry the topic ID.
// Authorization: CREATE on the cluster, or else on each topic
// (TOPIC_AUTHORIZATION_FAILED).
func handleCreateTopics(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)

	var valid []NewTopic
	var validAt []int // index in resp.Topics of valid[i]
	clusterCreate := !s.Authorizing() || s.visible(r, kmsg.ACLOperationCreate, kmsg.ACLResourceTypeCluster, clusterName)
	for i, n := range firstOfEach(req.Topics, func(t kmsg.CreateTopicsRequestTopic) string { return t.Topic }) {
		t := &req.Topics[i]
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic = t.Topic
		if n > 1 {
			setCreateError(&rt, kerr.InvalidRequest, "Duplicate topic name.")
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		nt, bad := newTopic(t)
		if bad == nil && !clusterCreate && !s.allowed(r, kmsg.ACLOperationCreate, kmsg.ACLResourceTypeTopic, t.Topic) {
			bad = &refusal{kerr.TopicAuthorizationFailed, "Authorization failed."}
		}
		if bad != nil {
			setCreateError(&rt, bad.err, bad.msg)
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		valid = append(valid, nt)
		validAt = append(validAt, len(resp.Topics))
		resp.Topics = append(resp.Topics, rt)
	}
	results, err := askBroker(ctx, req.TimeoutMillis, "create topics", valid,
		func(ctx context.Context, valid []NewTopic) ([]CreatedTopic, error) {
			return s.broker.(TopicAdmin).CreateTopics(ctx, valid, req.ValidateOnly)
		})
	if err != nil {
		return nil, err
	}
	for i, res := range results {
		rt := &resp.Topics[validAt[i]]
		rt.TopicID = res.ID
		rt.NumPartitions = res.NumPartitions
		rt.ReplicationFactor = res.ReplicationFactor
		if res.Err != nil {
			setCreateError(rt, res.Err, res.ErrMessage)
		}
	}
	return resp, nil
}

// refusal is the Kafka error and message a topic is refused with.
type refusal struct {
	err error
	msg string
}

// newTopic validates one requested topic.
func newTopic(t *kmsg.CreateTopicsRequestTopic) (NewTopic, *refusal) {
	nt := NewTopic{Name: t.Topic, NumPartitions: t.NumPartitions, ReplicationFactor: t.ReplicationFactor}
	if err := validateTopicName(t.Topic); err != nil {
		return nt, &refusal{kerr.InvalidTopicException, err.Error()}
	}
	if len(t.ReplicaAssignment) > 0 {
		if t.NumPartitions != -1 {
			return nt, &refusal{kerr.InvalidRequest, "A manual partition assignment was specified, but numPartitions was not set to -1."}
		}
		if t.ReplicationFactor != -1 {
			return nt, &refusal{kerr.InvalidRequest, "A manual partition assignment was specified, but replicationFactor was not set to -1."}
		}
		for i, a := range t.ReplicaAssignment {
			if msg := checkAssignment(int32(i), a, len(t.ReplicaAssignment[0].Replicas)); msg != "" {
				return nt, &refusal{kerr.InvalidReplicaAssignment, msg}
			}
			nt.Assignment = append(nt.Assignment, a.Replicas)
		}
	} else {
		if t.NumPartitions == 0 || t.NumPartitions < -1 {
			return nt, &refusal{kerr.InvalidPartitions, "Number of partitions was set to an invalid non-positive value."}
		}
		if t.ReplicationFactor == 0 || t.ReplicationFactor < -1 {
			return nt, &refusal{kerr.InvalidReplicationFactor, "Replication factor must be larger than 0, or -1 to use the default value."}
		}
	}
	if len(t.Configs) > 0 {
		nt.Configs = make(map[string]string, len(t.Configs))
	}
	for _, c := range t.Configs {
		if c.Value == nil {
			return nt, &refusal{kerr.InvalidConfig, "Null value not supported for topic configs: " + c.Name}
		}
		if _, dup := nt.Configs[c.Name]; dup {
			return nt, &refusal{kerr.InvalidConfig, "Duplicate topic config: " + c.Name}
		}
		nt.Configs[c.Name] = *c.Value
	}
	return nt, nil
}

// checkAssignment checks the replicas of the i-th listed partition; it
// returns the INVALID_REPLICA_ASSIGNMENT message, or "" if they are fine.
func checkAssignment(i int32, a kmsg.CreateTopicsRequestTopicReplicaAssignment, firstLen int) string {
	switch {
	case a.Partition != i:
		return fmt.Sprintf("Partitions should be numbered from 0 in order, but partition %d is listed in position %d.", a.Partition, i)
	case len(a.Replicas) == 0:
		return fmt.Sprintf("The manual partition assignment includes an empty replica list for partition %d.", i)
	case len(a.Replicas) != firstLen:
		return fmt.Sprintf("The manual partition assignment includes the partition %d with %d replicas, but %d is expected.", i, len(a.Replicas), firstLen)
	}
	for j, b := range a.Replicas {
		for _, c := range a.Replicas[:j] {
			if b == c {
				return fmt.Sprintf("The manual partition assignment of partition %d includes broker %d more than once.", i, b)
			}
		}
	}
	return ""
}

func setCreateError(rt *kmsg.CreateTopicsResponseTopic, err error, msg string) {
	rt.ErrorCode = quorum.ErrorCode(err)
	if msg != "" {
		rt.ErrorMessage = kmsg.StringPtr(msg)
	}
}
