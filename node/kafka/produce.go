package kafka

import (
	"cmp"
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/quorum"
	"github.com/sluice-log/sluice/segment"
)

// Produce (key 0), versions 3-12; served when the Broker implements Logs.
// ApiVersions lists 0-12, as Kafka 4 does (api.listFrom0); a v0-2 request
// closes the connection like any other unsupported version. v10-11 answer
// as v9 (KIP-951's leader hints are optional tagged fields and are left
// out); v12 is transaction.version 2: its transactional batches add their
// partition to the transaction (ProducePartition.AddToTxn). v13 (topic
// ids) is not served.
//
// acks must be 0, 1 or -1 (all); anything else answers every partition
// INVALID_REQUIRED_ACKS and writes nothing. Each partition is appended on
// its own, in request order, through Logs.Produce, and gets its own error
// code (a batch with a bad CRC or a payload that does not decompress:
// CORRUPT_MESSAGE; records that do not match their header, or a control
// batch: INVALID_RECORD; a timestamp out of bounds: INVALID_TIMESTAMP; an
// unknown codec: UNSUPPORTED_COMPRESSION_TYPE; nothing written for any of
// them; a partition this broker does not lead: NOT_LEADER_OR_FOLLOWER); then the
// acknowledgements of all its partitions are waited for together
// (ProduceResult.Pending), after the handler returned (deferredResponse),
// so that pipelined requests append while earlier ones wait. With acks=0
// no response is sent, as the protocol says. timeout_ms bounds the wait
// for acks=all (REQUEST_TIMED_OUT). log_append_time is always -1
// (CreateTime topics).
//
// Transactional batches (issue 18) are appended like others, with the
// request's transactional id: the log keeps each producer's open
// transaction and refuses misuse (a plain batch from a producer with an
// open transaction or the reverse: INVALID_TXN_STATE; an old epoch:
// INVALID_PRODUCER_EPOCH), and a batch that would open a transaction on
// the partition is first verified with the transaction coordinator
// (KIP-890 part 1, TxnVerifier; its failure answers INVALID_TXN_STATE or
// INVALID_PRODUCER_EPOCH, a coordinator that cannot answer
// NOT_ENOUGH_REPLICAS, which the producer retries); from v12 it is added
// to the transaction instead (KIP-890 part 2: the client sends no
// AddPartitionsToTxn). A request with
// transactional batches but no transactional id answers every partition
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as Kafka does. Whether a request
// has any is read from each partition's first batch header (Kafka's
// hasTransactionalRecords): no per-record work.
//
// Authorization: WRITE on each topic; a topic without it answers its
// partitions TOPIC_AUTHORIZATION_FAILED and nothing of it is appended.
// A request with transactional batches needs WRITE on its transactional
// id, else every partition answers TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
func handleProduce(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	logs := s.broker.(Logs)

	var reject error
	switch {
	case req.Acks != 0 && req.Acks != 1 && req.Acks != -1:
		reject = kerr.InvalidRequiredAcks
	case hasTransactionalRecords(req) && (req.TransactionID == nil ||
		!s.allowed(r, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, *req.TransactionID)):
		reject = kerr.TransactionalIDAuthorizationFailed
	}
	var txnID string
	if req.TransactionID != nil {
		txnID = *req.TransactionID
	}
	cancel := context.CancelFunc(func() {})
	if req.Acks == -1 && req.TimeoutMillis > 0 {
		ctx, cancel = context.WithTimeout(ctx, time.Duration(req.TimeoutMillis)*time.Millisecond)
	}
	type waiting struct {
		t, p    int // indexes in resp.Topics and its Partitions
		pending <-chan error
	}
	var wait []waiting
	for _, t := range req.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		var denied error
		if reject == nil && !s.allowed(r, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic, t.Topic) {
			denied = kerr.TopicAuthorizationFailed
		}
		for _, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = -1, -1, -1
			if reject != nil || denied != nil {
				err := cmp.Or(reject, denied)
				s.produced(t.Topic, 0, len(p.Records), err)
				rp.ErrorCode = quorum.ErrorCode(err)
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			res := logs.Produce(ctx, ProducePartition{Topic: t.Topic, Partition: p.Partition, Acks: req.Acks,
				Records: p.Records, TransactionalID: txnID, AddToTxn: req.Version >= 12})
			s.produced(t.Topic, res.Records, len(p.Records), res.Err)
			rp.ErrorCode = quorum.ErrorCode(res.Err)
			if res.Err == nil {
				rp.BaseOffset = res.BaseOffset
				rp.LogStartOffset = res.LogStartOffset
			}
			if res.ErrMessage != "" {
				rp.ErrorMessage = kmsg.StringPtr(res.ErrMessage)
			}
			rt.Partitions = append(rt.Partitions, rp)
			if res.Err == nil && res.Pending != nil && req.Acks != 0 {
				wait = append(wait, waiting{t: len(resp.Topics), p: len(rt.Partitions) - 1, pending: res.Pending})
			}
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if req.Acks == 0 || len(wait) == 0 {
		cancel()
		if req.Acks == 0 {
			return nil, nil
		}
		return resp, nil
	}
	// Every partition is appended. The acknowledgements are waited for
	// after the handler returns (deferredResponse): the connection reads
	// and appends the next pipelined requests meanwhile, in order, and
	// answers in order, so one replication round acknowledges them all.
	return &deferredResponse{Response: resp, wait: func() {
		defer cancel()
		for _, w := range wait {
			var err error
			select {
			case err = <-w.pending:
			case <-ctx.Done():
				err = kerr.RequestTimedOut
			}
			if err != nil {
				rp := &resp.Topics[w.t].Partitions[w.p]
				rp.ErrorCode = quorum.ErrorCode(err)
				rp.BaseOffset, rp.LogStartOffset = -1, -1
			}
		}
	}}, nil
}

// hasTransactionalRecords says whether any partition's first batch is
// transactional (Kafka's ProduceRequest.hasTransactionalRecords: clients
// send one batch per partition). A header that does not parse is left to
// the log's checks.
func hasTransactionalRecords(req *kmsg.ProduceRequest) bool {
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			it := segment.NewBatchIter(p.Records)
			if h, _, ok := it.Next(); ok && h.IsTransactional() {
				return true
			}
		}
	}
	return false
}

// deferredResponse is a response that is complete only once wait returns.
// The connection calls wait on its own goroutine, in request order, while
// it goes on handling the requests after this one (Redpanda's two-stage
// produce: appends in order now, acknowledgements later).
type deferredResponse struct {
	kmsg.Response
	wait func()
}
