package kafka

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/quorum"
)

// markerTimeout bounds the wait for a marker's replication: Kafka's
// request.timeout.ms default, which its WriteTxnMarkers appends use.
const markerTimeout = 30 * time.Second

// WriteTxnMarkers (key 27), versions 0-1; served when the Broker
// implements Logs and TxnMarkers. A broker-to-broker request: the
// transaction coordinator sends it to the leaders of a transaction's
// partitions to end it (Kafka's TransactionMarkerChannelManager).
//
// Behavior:
//   - Every marker's every partition is appended on its own, in request
//     order, through TxnMarkers.WriteTxnMarker: one control batch
//     (EndTransactionMarker, commit or abort, with the coordinator
//     epoch) at this leader's epoch, with acks=all. Internal topics are
//     allowed (__consumer_offsets carries transactional offset commits).
//   - The answer waits for all of them together, after the handler
//     returned (deferredResponse, as Produce), each until the high
//     watermark passed its marker, at most markerTimeout (Kafka's
//     request.timeout.ms, 30 s): REQUEST_TIMED_OUT.
//   - Per-partition errors: UNKNOWN_TOPIC_OR_PARTITION,
//     NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS(_AFTER_APPEND),
//     INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED,
//     KAFKA_STORAGE_ERROR; the coordinator retries the retriable ones.
//   - A committed marker on a partition of __consumer_offsets is told to
//     the group coordinator (GroupTxns.CompleteTxn, when the Broker
//     offers it) before the answer goes out, so that the transaction's
//     offsets are visible (or dropped) once the coordinator hears back.
//
// Authorization: CLUSTER_ACTION on the cluster (brokers only), else
// every partition answers CLUSTER_AUTHORIZATION_FAILED (authorizeAPI).
//
// Version notes: v1 is flexible; v2 (Kafka 4.2, KIP-1228's transaction
// version) is not served.
func handleWriteTxnMarkers(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.WriteTxnMarkersRequest)
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	markers := s.broker.(TxnMarkers)
	ctx, cancel := context.WithTimeout(ctx, markerTimeout)
	type waiting struct {
		m, t, p int // indexes in resp.Markers, its Topics and their Partitions
		pending <-chan error
	}
	var wait []waiting
	for mi, m := range req.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for _, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition = p
				res := markers.WriteTxnMarker(ctx, TxnMarker{Topic: t.Topic, Partition: p, ProducerID: m.ProducerID,
					ProducerEpoch: m.ProducerEpoch, Commit: m.Committed, CoordinatorEpoch: m.CoordinatorEpoch})
				rp.ErrorCode = quorum.ErrorCode(res.Err)
				rt.Partitions = append(rt.Partitions, rp)
				if res.Err == nil {
					wait = append(wait, waiting{m: mi, t: len(rm.Topics), p: len(rt.Partitions) - 1, pending: res.Pending})
				}
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	if len(wait) == 0 {
		cancel()
		return resp, nil
	}
	groups, _ := s.broker.(GroupTxns)
	return &deferredResponse{Response: resp, wait: func() {
		defer cancel()
		for _, w := range wait {
			var err error
			if w.pending != nil {
				select {
				case err = <-w.pending:
				case <-ctx.Done():
					err = kerr.RequestTimedOut
				}
			}
			rm := &resp.Markers[w.m]
			rt := &rm.Topics[w.t]
			rp := &rt.Partitions[w.p]
			if err != nil {
				rp.ErrorCode = quorum.ErrorCode(err)
				continue
			}
			if groups != nil && rt.Topic == offsetsTopic {
				groups.CompleteTxn(rp.Partition, rm.ProducerID, req.Markers[w.m].Committed)
			}
		}
	}}, nil
}
