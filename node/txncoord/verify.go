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

// verifier holds one connection per coordinator broker for the
// verification requests of the produce path; a connection serves one
// request at a time (lock order: verifier.mu, then a conn's mu, a leaf
// each, taken with no other lock of this package held).
type verifier struct {
	mu    sync.Mutex
	conns map[int32]*verifyConn
}

type verifyConn struct {
	mu sync.Mutex
	c  *kafka.ClientConn
}

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

// remote sends req to broker id on its pooled connection.
func (v *verifier) remote(c *Coordinator, ctx context.Context, id int32, req *kmsg.AddPartitionsToTxnRequest) (*kmsg.AddPartitionsToTxnResponse, error) {
	v.mu.Lock()
	if v.conns == nil {
		v.conns = map[int32]*verifyConn{}
	}
	vc := v.conns[id]
	if vc == nil {
		vc = &verifyConn{}
		v.conns[id] = vc
	}
	v.mu.Unlock()

	vc.mu.Lock()
	defer vc.mu.Unlock()
	if vc.c == nil {
		cc, err := c.host.Dial(id)
		if err != nil {
			return nil, kerr.CoordinatorNotAvailable
		}
		cc.ClientID = "sluice-txn-verify"
		vc.c = cc
	}
	timeout := c.opts.WriteTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	resp := kmsg.NewPtrAddPartitionsToTxnResponse()
	if err := vc.c.RoundTrip(req, resp, timeout); err != nil {
		vc.c.Close()
		vc.c = nil
		return nil, kerr.CoordinatorNotAvailable
	}
	return resp, nil
}

func (v *verifier) close() {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, vc := range v.conns {
		vc.mu.Lock()
		if vc.c != nil {
			vc.c.Close()
			vc.c = nil
		}
		vc.mu.Unlock()
	}
}
