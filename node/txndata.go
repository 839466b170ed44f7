package node

import (
	"context"

	"github.com/sluice-log/sluice/node/kafka"
)

// The transactional data path on the node (issue 18): the broker writes
// WriteTxnMarkers' markers through the partition leaders' replicas
// (kafka.TxnMarkers), describes their producers (kafka.ProducerStates),
// tells the group coordinator of committed markers on __consumer_offsets
// (kafka.GroupTxns), and has its replicas verify transactional batches
// through txnVerify (KIP-890 part 1). Read_committed fetches and
// ListOffsets go through kafka.Logs with the isolation level.

var (
	_ kafka.TxnMarkers     = (*broker)(nil)
	_ kafka.ProducerStates = (*broker)(nil)
	_ kafka.GroupTxns      = (*broker)(nil)
)

// WriteTxnMarker implements kafka.TxnMarkers: the partition's leader
// appends the marker (internal topics included: __consumer_offsets holds
// transactional offset commits).
func (b *broker) WriteTxnMarker(ctx context.Context, m kafka.TxnMarker) kafka.ProduceResult {
	r, err := b.lookup(m.Topic, m.Partition)
	if err != nil {
		return kafka.ProduceResult{Err: err, BaseOffset: -1, LogStartOffset: -1}
	}
	res := r.WriteMarker(ctx, m)
	if res.Err == nil {
		b.node().signal() // read_committed long polls: the LSO may move
	}
	return res
}

// DescribeProducers implements kafka.ProducerStates from the leader's log.
func (b *broker) DescribeProducers(ctx context.Context, topic string, partition int32) ([]kafka.ProducerState, error) {
	r, err := b.lookup(topic, partition)
	if err != nil {
		return nil, err
	}
	return r.DescribeProducers()
}

// txnCompleter is what the group coordinator offers once it keeps
// transactional offset commits (node/coord's CompleteTxn).
type txnCompleter interface {
	CompleteTxn(partition int32, producerID int64, commit bool)
}

// CompleteTxn implements kafka.GroupTxns: the marker of producerID's
// transaction on partition of __consumer_offsets is committed; the group
// coordinator makes its offsets visible or drops them. Without a
// coordinator that keeps them it does nothing.
func (b *broker) CompleteTxn(partition int32, producerID int64, commit bool) {
	if c, ok := any(b.coord).(txnCompleter); ok && b.coord != nil {
		c.CompleteTxn(partition, producerID, commit)
	}
}

// txnVerify is the replicas' kafka.TxnVerifier: the transaction
// coordinator's verification (Node.txnVerifier, which the transaction
// coordinator's wiring sets in Open before the listeners serve; a test's
// Options.txnVerifier before it), or, with none, acceptance of every
// batch.
type txnVerify struct{ n *Node }

// VerifyTxn implements kafka.TxnVerifier.
func (v txnVerify) VerifyTxn(ctx context.Context, transactionalID string, producerID int64, epoch int16, topic string, partition int32, add bool) error {
	tv := v.n.txnVerifier
	if v.n.testVerifier != nil {
		tv = v.n.testVerifier
	}
	if tv != nil {
		return tv.VerifyTxn(ctx, transactionalID, producerID, epoch, topic, partition, add)
	}
	return nil
}
