package txncoord

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/node/kafka"
)

// verifyAPIVersion is the AddPartitionsToTxn version of KIP-890 part 1's
// broker form: v4 (several transactions, VerifyOnly); addAPIVersion the
// one part 2's implicit add sends (v5, not VerifyOnly).
const (
	verifyAPIVersion = 4
	addAPIVersion    = 5
)

// verifier pools connections to each coordinator broker for the
// verification and add requests of the produce path. A connection serves
// one request at a time, and a request may wait long (an add held until
// the previous transaction's markers are written): so each request takes
// an idle connection or dials one, and gives it back after (at most
// maxIdleVerifyConns idle per broker are kept). One shared connection made
// every producer's first write wait behind another's held add: 37% of the
// mutex delay of the 4-producer bench. verifier.mu is a leaf, never held
// during a round trip.
type verifier struct {
	mu     sync.Mutex
	idle   map[int32][]*kafka.ClientConn
	closed bool
}

// maxIdleVerifyConns bounds the idle connections kept per broker.
const maxIdleVerifyConns = 8

// Verify asks the transaction coordinator of transactionalID whether
// topic's partition is in the producer's ongoing transaction: KIP-890
// part 1's check before a transactional batch opens a transaction on a
// partition (AddPartitionsToTxn v4 with VerifyOnly). leader leads the
// id's state partition p; when it is self the local shard answers,
// otherwise the request goes to leader over the inter-broker listener.
// nil means verified; otherwise the Kafka error for the produce
// response (TRANSACTION_ABORTABLE when the partition was not added,
// INVALID_PRODUCER_EPOCH / PRODUCER_FENCED, NOT_COORDINATOR, ...; a
// failed connection is COORDINATOR_NOT_AVAILABLE, which the produce
// path answers as retriable).
//
// With add (transaction.version 2, KIP-890 part 2: Produce v12+,
// TxnOffsetCommit v5+) the partition is added to the transaction, which
// starts if none runs (AddPartitionsToTxn v5 without VerifyOnly): the
// client sent no AddPartitionsToTxn of its own.
func (c *Coordinator) Verify(ctx context.Context, leader, self, p int32, transactionalID string, producerID int64, epoch int16, topic string, partition int32, add bool) error {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = verifyAPIVersion
	if add {
		req.Version = addAPIVersion
	}
	t := kmsg.NewAddPartitionsToTxnRequestTransaction()
	t.TransactionalID, t.ProducerID, t.ProducerEpoch, t.VerifyOnly = transactionalID, producerID, epoch, !add
	rt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
	rt.Topic, rt.Partitions = topic, []int32{partition}
	t.Topics = append(t.Topics, rt)
	req.Transactions = append(req.Transactions, t)

	var resp *kmsg.AddPartitionsToTxnResponse
	if leader == self {
		r, err := c.Do(ctx, p, kafka.GroupRequest{Body: req})
		if err != nil {
			return err
		}
		resp = r.(*kmsg.AddPartitionsToTxnResponse)
	} else {
		var err error
		if resp, err = c.verify.remote(c, ctx, leader, req); err != nil {
			return err
		}
	}
	if resp.ErrorCode != 0 {
		return kerr.ErrorForCode(resp.ErrorCode)
	}
	for _, tr := range resp.Transactions {
		for _, rt := range tr.Topics {
			for _, rp := range rt.Partitions {
				if rp.Partition == partition && rt.Topic == topic {
					return kerr.ErrorForCode(rp.ErrorCode)
				}
			}
		}
	}
	return kerr.UnknownServerError
}

// remote sends req to broker id on an idle pooled connection or a new one.
func (v *verifier) remote(c *Coordinator, ctx context.Context, id int32, req *kmsg.AddPartitionsToTxnRequest) (*kmsg.AddPartitionsToTxnResponse, error) {
	var cc *kafka.ClientConn
	v.mu.Lock()
	if n := len(v.idle[id]); n > 0 {
		cc = v.idle[id][n-1]
		v.idle[id] = v.idle[id][:n-1]
	}
	v.mu.Unlock()
	if cc == nil {
		var err error
		if cc, err = c.host.Dial(id); err != nil {
			return nil, kerr.CoordinatorNotAvailable
		}
		cc.ClientID = "sluice-txn-verify"
	}
	timeout := c.opts.WriteTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	resp := kmsg.NewPtrAddPartitionsToTxnResponse()
	if err := cc.RoundTrip(req, resp, timeout); err != nil {
		cc.Close()
		return nil, kerr.CoordinatorNotAvailable
	}
	v.mu.Lock()
	if v.idle == nil {
		v.idle = map[int32][]*kafka.ClientConn{}
	}
	keep := !v.closed && len(v.idle[id]) < maxIdleVerifyConns
	if keep {
		v.idle[id] = append(v.idle[id], cc)
	}
	v.mu.Unlock()
	if !keep {
		cc.Close()
	}
	return resp, nil
}

func (v *verifier) close() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.closed = true
	for id, cs := range v.idle {
		for _, cc := range cs {
			cc.Close()
		}
		delete(v.idle, id)
	}
}
