package kafka

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/quorum"
)

// Metadata (key 3), versions 0-12.
//
// Answers brokers, cluster id (v2+), controller id (v1+) and the topics asked
// for, from one Broker.Metadata call, with per-partition leader, leader epoch
// (v7+), replicas, ISR and offline replicas (v5+), and topic ids (v10+).
//
// Which topics: v0 with no topics, and v1+ with a null topic array, mean
// every topic; v1+ with an empty array means none (brokers only). Duplicates
// are asked once. v12 may name topics by ID; v10 and v11 may not (a null name
// or a non-zero ID there answers every topic INVALID_REQUEST and no brokers,
// as Kafka's MetadataRequest.getErrorResponse does).
//
// A requested topic missing from the Broker's answer is UNKNOWN_TOPIC_OR_PARTITION
// (by name) or UNKNOWN_TOPIC_ID with a null name (by ID). Auto-creation is the
// Broker's decision; the server passes allow_auto_topic_creation (true before
// v4, as in Kafka). Authorized operations are not computed: they stay
// at Kafka's "not provided" value, INT32_MIN.
//
// Authorization (metadataAuthorized): every topic the principal may not
// DESCRIBE is left out of an all-topics answer, and answered
// TOPIC_AUTHORIZATION_FAILED when named; a missing topic the client lets
// the broker auto-create needs CREATE on the cluster or the topic, else
// it is not created and answers TOPIC_AUTHORIZATION_FAILED (also when
// auto.create.topics.enable is off, where Kafka says
// UNKNOWN_TOPIC_OR_PARTITION). A Broker error closes
// the connection: before v13 Metadata has no top-level error to carry it.
//
// Requests over 8 MiB (about 200,000 topic names of 40 bytes) close the
// connection: Kafka has no such limit, but a hostile frame of empty names
// decodes into about 24 times its size (see api.maxBytes).
func handleMetadata(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)

	q := MetadataQuery{AllowAutoCreate: req.Version < 4 || req.AllowAutoTopicCreation, Listener: r.listener}
	if req.Topics == nil || req.Version == 0 && len(req.Topics) == 0 {
		q.AllTopics = true
	}
	seen := make(map[TopicRef]bool, len(req.Topics))
	for _, t := range req.Topics {
		if req.Version < 12 && (t.Topic == nil || t.TopicID != (TopicID{})) {
			return metadataInvalid(req, resp), nil
		}
		ref := TopicRef{ID: t.TopicID}
		if t.Topic != nil {
			ref.Name = *t.Topic
		}
		if !seen[ref] {
			seen[ref] = true
			q.Topics = append(q.Topics, ref)
		}
	}

	denied := map[TopicRef]int16{}
	md, err := metadataAuthorized(ctx, s, r, q, denied)
	if err != nil {
		return nil, fmt.Errorf("broker metadata: %w", err)
	}

	for _, b := range md.Brokers {
		rb := kmsg.NewMetadataResponseBroker()
		rb.NodeID, rb.Host, rb.Port = b.NodeID, b.Host, b.Port
		if b.Rack != "" {
			rb.Rack = kmsg.StringPtr(b.Rack)
		}
		resp.Brokers = append(resp.Brokers, rb)
	}
	if md.ClusterID != "" {
		resp.ClusterID = kmsg.StringPtr(md.ClusterID)
	}
	resp.ControllerID = md.ControllerID

	if q.AllTopics {
		for i := range md.Topics {
			if s.visible(r, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, md.Topics[i].Name) {
				resp.Topics = append(resp.Topics, metadataTopic(&md.Topics[i]))
			}
		}
		return resp, nil
	}
	byName := make(map[string]*TopicMetadata, len(md.Topics))
	byID := make(map[TopicID]*TopicMetadata, len(md.Topics))
	for i := range md.Topics {
		t := &md.Topics[i]
		byName[t.Name] = t
		if t.ID != (TopicID{}) {
			byID[t.ID] = t
		}
	}
	for _, ref := range q.Topics {
		if code, ok := denied[ref]; ok {
			rt := kmsg.NewMetadataResponseTopic()
			rt.TopicID, rt.ErrorCode = ref.ID, code
			if ref.ID == (TopicID{}) {
				rt.Topic = kmsg.StringPtr(ref.Name)
			}
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		t := byName[ref.Name]
		if ref.ID != (TopicID{}) {
			t = byID[ref.ID]
		}
		if t != nil {
			resp.Topics = append(resp.Topics, metadataTopic(t))
			continue
		}
		rt := kmsg.NewMetadataResponseTopic()
		rt.TopicID = ref.ID
		if ref.ID != (TopicID{}) {
			rt.ErrorCode = kerr.UnknownTopicID.Code
		} else {
			rt.Topic = kmsg.StringPtr(ref.Name)
			rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// metadataAuthorized asks the Broker for the topics of q that the
// request may see, as KafkaApis.handleTopicMetadataRequest does: a named
// topic without DESCRIBE is not looked up (TOPIC_AUTHORIZATION_FAILED in
// denied), and one that would be auto-created needs CREATE on the
// cluster or the topic: without it, it is asked for without
// auto-creation and answered TOPIC_AUTHORIZATION_FAILED if missing. A
// topic named by ID is checked once its name is known.
func metadataAuthorized(ctx context.Context, s *Server, r *request, q MetadataQuery, denied map[TopicRef]int16) (ClusterMetadata, error) {
	if !s.Authorizing() || q.AllTopics {
		return s.broker.Metadata(ctx, q)
	}
	failed := kerr.TopicAuthorizationFailed.Code
	var asked, noCreate []TopicRef
	clusterCreate := q.AllowAutoCreate && s.visible(r, kmsg.ACLOperationCreate, kmsg.ACLResourceTypeCluster, clusterName)
	for _, ref := range q.Topics {
		switch {
		case ref.Name != "" && !s.allowed(r, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, ref.Name):
			denied[ref] = failed
		case ref.Name != "" && q.AllowAutoCreate && !clusterCreate &&
			!s.visible(r, kmsg.ACLOperationCreate, kmsg.ACLResourceTypeTopic, ref.Name):
			noCreate = append(noCreate, ref)
		default:
			asked = append(asked, ref)
		}
	}
	q.Topics = asked
	md, err := s.broker.Metadata(ctx, q)
	if err != nil {
		return md, err
	}
	if len(noCreate) > 0 {
		q.Topics, q.AllowAutoCreate = noCreate, false
		more, err := s.broker.Metadata(ctx, q)
		if err != nil {
			return md, err
		}
		have := map[string]bool{}
		for _, t := range more.Topics {
			have[t.Name] = true
		}
		md.Topics = append(md.Topics, more.Topics...)
		for _, ref := range noCreate {
			if !have[ref.Name] {
				denied[ref] = failed
			}
		}
	}
	// Topics asked by ID: DESCRIBE on the name found.
	kept := md.Topics[:0]
	for _, t := range md.Topics {
		ref := TopicRef{ID: t.ID}
		if t.ID != (TopicID{}) && slices.Contains(asked, ref) && !s.allowed(r, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, t.Name) {
			denied[ref] = failed
			continue
		}
		kept = append(kept, t)
	}
	md.Topics = kept
	return md, nil
}

// metadataMaxBytes bounds a Metadata request frame.
const metadataMaxBytes = 8 << 20

// metadataInvalid is Kafka's error response for a request it rejects as a
// whole: every requested topic with INVALID_REQUEST, nothing else.
func metadataInvalid(req *kmsg.MetadataRequest, resp *kmsg.MetadataResponse) *kmsg.MetadataResponse {
	for _, t := range req.Topics {
		rt := kmsg.NewMetadataResponseTopic()
		rt.Topic = kmsg.StringPtr(derefOr(t.Topic, ""))
		rt.TopicID = t.TopicID
		rt.ErrorCode = kerr.InvalidRequest.Code
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func metadataTopic(t *TopicMetadata) kmsg.MetadataResponseTopic {
	rt := kmsg.NewMetadataResponseTopic()
	rt.Topic = kmsg.StringPtr(t.Name)
	rt.TopicID = t.ID
	rt.IsInternal = t.Internal
	rt.ErrorCode = quorum.ErrorCode(t.Err)
	rt.Partitions = make([]kmsg.MetadataResponseTopicPartition, 0, len(t.Partitions))
	for _, p := range t.Partitions {
		rp := kmsg.NewMetadataResponseTopicPartition()
		rp.Partition = p.Partition
		rp.Leader = p.Leader
		rp.LeaderEpoch = p.LeaderEpoch
		rp.Replicas = p.Replicas
		rp.ISR = p.ISR
		rp.OfflineReplicas = p.Offline
		rp.ErrorCode = quorum.ErrorCode(p.Err)
		rt.Partitions = append(rt.Partitions, rp)
	}
	return rt
}
