package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/quorum"
)

// TxnOffsetCommit (key 28), versions 0-5; served when the Broker
// implements Groups. The group's coordinator writes the offsets as a
// transactional batch of the request's producer and keeps them pending
// until the transaction's marker (node/group, txn_offsets.go).
//
// Behavior:
//
//   - Authorization as Kafka's KafkaApis: WRITE on the transactional id
//     (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED for every partition),
//     READ on the group (GROUP_AUTHORIZATION_FAILED), READ on each topic
//     (TOPIC_AUTHORIZATION_FAILED for its partitions; the rest commit).
//
//   - An empty group id answers INVALID_GROUP_ID for every partition; a
//     partition that does not exist UNKNOWN_TOPIC_OR_PARTITION.
//
//   - The others go to the group's shard, routed as OffsetCommit is; a
//     shard that cannot answer (NOT_COORDINATOR,
//     COORDINATOR_LOAD_IN_PROGRESS, ...) gives its error to every
//     partition it was asked about. The answer keeps the request's order.
//
//   - KIP-890: before the shard writes, the group's __consumer_offsets
//     partition is verified to be in the producer's transaction (v0-4:
//     the client sent AddOffsetsToTxn) or, v5+ (transaction.version 2),
//     added to it (the client sends no AddOffsetsToTxn), through the
//     Broker's TxnVerifier; a zombie's commit is INVALID_PRODUCER_EPOCH,
//     one outside the transaction INVALID_TXN_STATE, a coordinator that
//     cannot answer COORDINATOR_NOT_AVAILABLE (the client retries), for
//     every partition.
//
// Version notes: v3+ carry the member id, generation and group instance
// id (KIP-447), which the shard checks; v0-2 commit without membership.
// v2+ carry the leader epoch.
func handleTxnOffsetCommit(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.TxnOffsetCommitRequest)
	g := s.broker.(Groups)
	type tp struct {
		topic     string
		partition int32
	}
	codes := map[tp]int16{}
	all := int16(0)
	switch {
	case !s.allowed(r, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, req.TransactionalID):
		all = kerr.TransactionalIDAuthorizationFailed.Code
	case !s.allowed(r, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, req.Group):
		all = kerr.GroupAuthorizationFailed.Code
	case req.Group == "":
		all = kerr.InvalidGroupID.Code
	}
	readable := topicCheck(s, r, kmsg.ACLOperationRead)
	sub := *req
	sub.Topics = nil
	for _, t := range req.Topics {
		st := t
		st.Partitions = nil
		for _, p := range t.Partitions {
			k := tp{t.Topic, p.Partition}
			switch {
			case all != 0:
				codes[k] = all
			case !readable(t.Topic):
				codes[k] = kerr.TopicAuthorizationFailed.Code
			case !g.PartitionExists(t.Topic, p.Partition):
				codes[k] = kerr.UnknownTopicOrPartition.Code
			default:
				st.Partitions = append(st.Partitions, p)
			}
		}
		if len(st.Partitions) > 0 {
			sub.Topics = append(sub.Topics, st)
		}
	}
	if len(sub.Topics) > 0 {
		if code := txnOffsetsVerify(ctx, s, req); code != 0 {
			for _, t := range sub.Topics {
				for _, p := range t.Partitions {
					codes[tp{t.Topic, p.Partition}] = code
				}
			}
			sub.Topics = nil
		}
	}
	if len(sub.Topics) > 0 {
		r2 := *r
		r2.body = &sub
		answer, err := coordinateOne(ctx, s, &r2, req.Group)
		if err != nil {
			for _, t := range sub.Topics {
				for _, p := range t.Partitions {
					codes[tp{t.Topic, p.Partition}] = groupCode(err)
				}
			}
		} else {
			for _, t := range answer.(*kmsg.TxnOffsetCommitResponse).Topics {
				for _, p := range t.Partitions {
					codes[tp{t.Topic, p.Partition}] = p.ErrorCode
				}
			}
		}
	}
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			code, ok := codes[tp{t.Topic, p.Partition}]
			if !ok {
				code = kerr.UnknownServerError.Code // the shard left it out
			}
			rp.ErrorCode = code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// txnOffsetsVerify is the KIP-890 step of TxnOffsetCommit: 0, or the code
// for every partition of the request.
func txnOffsetsVerify(ctx context.Context, s *Server, req *kmsg.TxnOffsetCommitRequest) int16 {
	v, ok := s.broker.(TxnVerifier)
	if !ok {
		return 0
	}
	shard, ok := s.broker.(Groups).GroupShard(req.Group)
	if !ok {
		return 0 // the shard answers NOT_COORDINATOR
	}
	err := VerifyError(v.VerifyTxn(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, offsetsTopic, shard, req.Version >= 5))
	switch err {
	case nil:
		return 0
	case kerr.NotEnoughReplicas:
		return kerr.CoordinatorNotAvailable.Code
	}
	return quorum.ErrorCode(err)
}
