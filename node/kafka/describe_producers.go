package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/quorum"
)

// DescribeProducers (key 61), version 0; served when the Broker
// implements Logs and ProducerStates. For operators (kafka-transactions.sh
// describe-producers, find-hanging): the active producers of each
// partition as its leader keeps them.
//
// Behavior: each partition is answered through
// ProducerStates.DescribeProducers: producer id and epoch, last sequence
// and timestamp, the coordinator epoch of its last marker and the first
// offset of its open transaction (-1: none). A partition not led here
// answers NOT_LEADER_OR_FOLLOWER, an unknown one
// UNKNOWN_TOPIC_OR_PARTITION, with the error's message.
//
// Authorization: READ on each topic (TOPIC_AUTHORIZATION_FAILED), as
// Kafka.
func handleDescribeProducers(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DescribeProducersRequest)
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	ps := s.broker.(ProducerStates)
	for _, t := range req.Topics {
		rt := kmsg.NewDescribeProducersResponseTopic()
		rt.Topic = t.Topic
		denied := !s.allowed(r, kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewDescribeProducersResponseTopicPartition()
			rp.Partition = p
			var states []ProducerState
			var err error
			if denied {
				err = kerr.TopicAuthorizationFailed
			} else {
				states, err = ps.DescribeProducers(ctx, t.Topic, p)
			}
			if err != nil {
				rp.ErrorCode = quorum.ErrorCode(err)
				if ke, ok := err.(*kerr.Error); ok {
					rp.ErrorMessage = kmsg.StringPtr(ke.Message)
				}
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			rp.ActiveProducers = make([]kmsg.DescribeProducersResponseTopicPartitionActiveProducer, 0, len(states))
			for _, st := range states {
				ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
				ap.ProducerID, ap.ProducerEpoch = st.ProducerID, int32(st.ProducerEpoch)
				ap.LastSequence, ap.LastTimestamp = st.LastSequence, st.LastTimestamp
				ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = st.CoordinatorEpoch, st.CurrentTxnStartOffset
				rp.ActiveProducers = append(rp.ActiveProducers, ap)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
