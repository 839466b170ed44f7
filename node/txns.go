package node

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/node/kafka"
	"github.com/sluice-log/sluice/node/metrics"
	"github.com/sluice-log/sluice/node/txn"
	"github.com/sluice-log/sluice/node/txncoord"
	"github.com/sluice-log/sluice/quorum"
)

// The transaction coordinator on the node: the broker serves
// kafka.Transactions through node/txncoord, whose Host is txnHost; the
// reconciler tells it which __transaction_state partitions this node
// leads (syncGroups), and the produce path's KIP-890 verification asks it
// through VerifyTxn.

var (
	_ kafka.Transactions = (*broker)(nil)
	_ kafka.TxnVerifier  = (*broker)(nil)
	_ kafka.TxnVersion   = (*broker)(nil)
	_ kafka.Features     = (*broker)(nil)
)

// TransactionVersion implements kafka.TxnVersion: the finalized
// transaction.version (FinalizedFeatures).
func (b *broker) TransactionVersion() int16 {
	levels, _ := b.FinalizedFeatures()
	return levels[quorum.FeatureTransactionVersion]
}

// FinalizedFeatures implements kafka.Features from the metadata image:
// its feature levels once any feature record was written (the first
// controller writes the bootstrap levels with the cluster id). A cluster
// bootstrapped before feature records has none: its brokers keep
// finalizing their own transaction.version setting until UpdateFeatures
// writes one.
func (b *broker) FinalizedFeatures() (map[string]int16, int64) {
	n := b.node()
	var levels map[string]int16
	var epoch int64
	n.ctrl.View(func(im *quorum.Image) {
		levels, epoch = maps.Clone(im.Features), im.FeaturesEpoch
	})
	if epoch == 0 {
		levels = map[string]int16{}
		if v := n.cfg.Transactions.Version; v > 0 {
			levels[quorum.FeatureTransactionVersion] = v
		}
	}
	return levels, epoch
}

// UpdateFeatures implements kafka.Features: through the quorum, answered
// once every live broker has the new levels (publish). A quorum failure
// is the answer's error.
func (b *broker) UpdateFeatures(ctx context.Context, c *quorum.UpdateFeatures) (*quorum.UpdateFeaturesReply, error) {
	reply, err := b.node().publish(ctx, c)
	if err != nil {
		return &quorum.UpdateFeaturesReply{Code: quorum.ErrorCode(controllerError(err)), Message: err.Error()}, nil
	}
	return reply.(*quorum.UpdateFeaturesReply), nil
}

// FindTxnCoordinator implements kafka.Transactions: the leader of the
// id's partition of __transaction_state, created on first use.
func (b *broker) FindTxnCoordinator(ctx context.Context, listener, transactionalID string) (kafka.BrokerInfo, error) {
	n := b.node()
	info, exists, err := n.coordinatorOf(txn.StateTopic, transactionalID, listener)
	if !exists {
		t := n.cfg.Transactions
		n.createInternalTopic(ctx, txn.StateTopic, "transaction.state.log.replication.factor", t.Coordinator.StatePartitions,
			t.StateLogReplicationFactor, t.StateLogMinISR, t.StateLogSegmentBytes)
	}
	return info, err
}

// TxnShard implements kafka.Transactions.
func (b *broker) TxnShard(transactionalID string) (int32, bool) {
	return b.node().shardOf(txn.StateTopic, transactionalID)
}

// CoordinateTxn implements kafka.Transactions through node/txncoord.
func (b *broker) CoordinateTxn(ctx context.Context, shard int32, req kafka.GroupRequest) (kmsg.Response, error) {
	return b.txnc.Do(ctx, shard, req)
}

// ListTransactions implements kafka.Transactions.
func (b *broker) ListTransactions(_ context.Context, states []string, producerIDs []int64, minDuration time.Duration) ([]kmsg.ListTransactionsResponseTransactionState, []string, error) {
	return b.txnc.ListTransactions(states, producerIDs, minDuration)
}

// VerifyTxn is the produce path's KIP-890 check (kafka.TxnVerifier): is
// topic's partition in the producer's ongoing transaction (part 1), or,
// with add, add it (part 2)? Asked of the id's coordinator: this node's
// shard, or the coordinator's node with AddPartitionsToTxn v4 VerifyOnly
// (v5 to add).
func (b *broker) VerifyTxn(ctx context.Context, transactionalID string, producerID int64, epoch int16, topic string, partition int32, add bool) error {
	n := b.node()
	if n.testVerifier != nil { // a test's stand-in (Options.txnVerifier)
		return n.testVerifier.VerifyTxn(ctx, transactionalID, producerID, epoch, topic, partition, add)
	}
	p, ok := n.shardOf(txn.StateTopic, transactionalID)
	if !ok {
		return kerr.CoordinatorNotAvailable
	}
	leader := quorum.NoLeader
	n.ctrl.View(func(im *quorum.Image) {
		if t := im.Topics[txn.StateTopic]; t != nil && int(p) < len(t.Partitions) {
			leader = t.Partitions[p].Leader
		}
	})
	if leader == quorum.NoLeader {
		return kerr.CoordinatorNotAvailable
	}
	return n.txnc.Verify(ctx, leader, n.cfg.NodeID, p, transactionalID, producerID, epoch, topic, partition, add)
}

// txnHost is the node seen by the transaction coordinator
// (txncoord.Host).
type txnHost struct{ coordHost }

var _ txncoord.Host = txnHost{}

// AllocateProducerIDs implements txncoord.Host through the quorum, as
// the idempotent producers' InitProducerID does.
func (h txnHost) AllocateProducerIDs(ctx context.Context) (int64, int64, error) {
	reply, err := h.n.ctrl.Propose(ctx, &quorum.AllocateProducerIDs{BrokerID: h.n.cfg.NodeID, BrokerEpoch: h.n.epoch.Load()})
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %v", controllerError(err), err)
	}
	blk := reply.(*quorum.ProducerIDBlock)
	return blk.Start, blk.Len, nil
}

// Leader implements txncoord.Host from the metadata image.
func (h txnHost) Leader(topic string, partition int32) (leader int32, exists bool) {
	leader = -1
	h.n.ctrl.View(func(im *quorum.Image) {
		t := im.Topics[topic]
		if exists = t != nil && partition >= 0 && int(partition) < len(t.Partitions); !exists {
			return
		}
		p := t.Partitions[partition]
		if b := im.Brokers[p.Leader]; p.Leader != quorum.NoLeader && b.Alive() {
			leader = p.Leader
		}
	})
	return leader, exists
}

// Dial implements txncoord.Host: broker id's inter-broker listener, with
// the TLS and SASL the replica fetchers use.
func (h txnHost) Dial(id int32) (*kafka.ClientConn, error) {
	addr := replicaHost{h.n}.KafkaEndpoint(id)
	if addr == "" {
		return nil, fmt.Errorf("broker %d has no endpoint for %s", id, h.n.cfg.InterBrokerListener)
	}
	const timeout = 10 * time.Second
	var c *kafka.ClientConn
	var err error
	if tlsFor := h.n.interBrokerTLS(); tlsFor != nil {
		c, err = kafka.DialTLS(addr, timeout, tlsFor(addr))
	} else {
		c, err = kafka.Dial(addr, timeout)
	}
	if err != nil {
		return nil, err
	}
	if a := h.n.interBrokerSASL(); a != nil {
		if err := c.Authenticate(*a, timeout); err != nil {
			c.Close()
			return nil, fmt.Errorf("authenticating to broker %d at %s: %w", id, addr, err)
		}
	}
	return c, nil
}

var _ metrics.TxnSource = (*metricsSource)(nil)

// Transactions implements metrics.TxnSource from the transaction
// coordinator's shards and marker senders.
func (s *metricsSource) Transactions() metrics.TxnStat {
	st := (*Node)(s).txnc.Stats()
	return metrics.TxnStat{Partitions: st.Shards, Loading: st.Loading, ByState: st.Transactions,
		Committed: st.Committed, Aborted: st.Aborted, TimedOut: st.TimedOut,
		LoadMaxMs: float64(st.MaxLoad) / float64(time.Millisecond), LoadLastMs: float64(st.LastLoad) / float64(time.Millisecond),
		MarkersQueued: st.MarkersQueued, MarkersWritten: st.MarkersSent, MarkersFailed: st.MarkersFailed,
		MarkerSeconds: st.MarkerLatency.Seconds(), MarkerRequests: st.MarkerRequests, MarkersInRequest: st.MarkerBatch}
}
