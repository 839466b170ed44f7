package kafka

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/quorum"
)

// DescribeTopicPartitions (key 75), version 0 (KIP-966).
//
// Behavior:
//   - The partitions of the topics named, or of every topic the principal
//     may DESCRIBE when none is named, in topic-name order, with Metadata's
//     leader, leader epoch, replicas, ISR and offline replicas, plus the
//     eligible leader replicas and the last-known ones (PartitionMetadata.ELR,
//     LastKnownELR).
//   - At most response_partition_limit partitions (capped at 2000, Kafka's
//     max.request.partition.size.limit default) per answer; when more are
//     left, next_cursor names the first of them, and a request with that
//     cursor goes on from there (topics before the cursor's are skipped,
//     and its topic starts at the cursor's partition).
//   - A named topic that does not exist answers UNKNOWN_TOPIC_OR_PARTITION,
//     one without DESCRIBE TOPIC_AUTHORIZATION_FAILED; no topic is created.
//     Authorized operations stay at INT32_MIN (not computed).
func handleDescribeTopicPartitions(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DescribeTopicPartitionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	q := MetadataQuery{Listener: r.listener, AllTopics: len(req.Topics) == 0}
	seen := map[string]bool{}
	for _, t := range req.Topics {
		if !seen[t.Topic] {
			seen[t.Topic] = true
			q.Topics = append(q.Topics, TopicRef{Name: t.Topic})
		}
	}
	denied := map[TopicRef]int16{}
	md, err := metadataAuthorized(ctx, s, r, q, denied)
	if err != nil {
		return nil, fmt.Errorf("broker metadata: %w", err)
	}
	byName := make(map[string]*TopicMetadata, len(md.Topics))
	var names []string
	for i := range md.Topics {
		t := &md.Topics[i]
		if q.AllTopics && !s.visible(r, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, t.Name) {
			continue
		}
		byName[t.Name] = t
		names = append(names, t.Name)
	}
	if !q.AllTopics {
		names = names[:0]
		for _, ref := range q.Topics {
			names = append(names, ref.Name)
		}
	}
	slices.Sort(names)
	limit := min(req.ResponsePartitionLimit, describeTopicPartitionsMax)
	if limit <= 0 {
		limit = describeTopicPartitionsMax
	}
	for _, name := range names {
		first := int32(0)
		if c := req.Cursor; c != nil {
			if cmp := strings.Compare(name, c.Topic); cmp < 0 {
				continue
			} else if cmp == 0 {
				first = max(c.Partition, 0)
			}
		}
		rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
		rt.Topic = kmsg.StringPtr(name)
		t := byName[name]
		switch code, ok := denied[TopicRef{Name: name}]; {
		case ok:
			rt.ErrorCode = code
		case t == nil:
			rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
		default:
			rt.TopicID, rt.IsInternal, rt.ErrorCode = t.ID, t.Internal, quorum.ErrorCode(t.Err)
		}
		if t != nil && rt.ErrorCode == 0 {
			for _, p := range t.Partitions {
				if p.Partition < first {
					continue
				}
				if limit == 0 {
					resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: p.Partition}
					break
				}
				limit--
				rp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
				rp.Partition, rp.LeaderID, rp.LeaderEpoch = p.Partition, p.Leader, p.LeaderEpoch
				rp.Replicas, rp.ISR, rp.OfflineReplicas = p.Replicas, p.ISR, p.Offline
				rp.EligibleLeaderReplicas, rp.LastKnownELR = p.ELR, p.LastKnownELR
				rp.ErrorCode = quorum.ErrorCode(p.Err)
				rt.Partitions = append(rt.Partitions, rp)
			}
		}
		if resp.NextCursor != nil {
			if len(rt.Partitions) > 0 {
				resp.Topics = append(resp.Topics, rt)
			}
			break
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// describeTopicPartitionsMax is the most partitions one answer holds
// (Kafka's max.request.partition.size.limit default).
const describeTopicPartitionsMax = 2000
