package replica

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-log/sluice/partition"
	"github.com/sluice-log/sluice/quorum"
)

// alterTimeout bounds one AlterPartitions proposal.
const alterTimeout = 10 * time.Second

// alterer sends the ISR changes the partitions this broker leads propose
// to the controller, batched: what queues while one AlterPartitions
// command is in flight goes in the next (Kafka's AlterPartitionManager).
type alterer struct {
	m *Manager
	// queue holds each leader's latest proposal (its lock is a leaf,
	// taken under Replica.mu by submit).
	queue *queue[*partition.Proposal]
}

func newAlterer(m *Manager) *alterer {
	return &alterer{m: m, queue: newQueue[*partition.Proposal]()}
}

// submit queues r's proposal; its answer is stepped as an
// AlterPartitionResult. It never blocks.
func (a *alterer) submit(r *Replica, p *partition.Proposal) { a.queue.put(r, p) }

func (a *alterer) run() {
	defer a.m.wg.Done()
	for {
		select {
		case <-a.m.stop:
			return
		case <-a.queue.wake:
		}
		if batch := a.queue.take(); len(batch) > 0 {
			a.send(batch)
		}
	}
}

func (a *alterer) send(batch map[*Replica]*partition.Proposal) {
	m := a.m
	cmd := &quorum.AlterPartitions{BrokerID: m.nodeID, BrokerEpoch: m.host.BrokerEpoch()}
	order := make([]*Replica, 0, len(batch))
	for r, p := range batch {
		item := quorum.AlterPartitionItem{TopicID: r.topicID, Partition: r.partition, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch}
		for _, m := range p.NewISR {
			item.NewISR = append(item.NewISR, quorum.ISRMember{ID: m.ID, Epoch: m.BrokerEpoch})
		}
		cmd.Partitions = append(cmd.Partitions, item)
		order = append(order, r)
	}
	ctx, cancel := context.WithTimeout(m.ctx, alterTimeout)
	reply, err := m.host.AlterPartitions(ctx, cmd)
	cancel()
	if err != nil {
		m.log.Warn("node: AlterPartition failed", "partitions", len(order), "err", err)
		var ke *kerr.Error
		if !errors.As(err, &ke) {
			ke = kerr.UnknownServerError
		}
		for _, r := range order {
			r.altered(partition.AlterPartitionResult{Proposal: batch[r], Err: ke})
		}
		return
	}
	type key struct {
		id quorum.UUID
		p  int32
	}
	byKey := map[key]*quorum.AlterPartitionResult{}
	for i, res := range reply.Partitions {
		byKey[key{res.TopicID, res.Partition}] = &reply.Partitions[i]
	}
	for _, r := range order {
		ar := partition.AlterPartitionResult{Proposal: batch[r], Err: kerr.UnknownServerError}
		if res := byKey[key{r.topicID, r.partition}]; res != nil {
			if res.Code != 0 {
				ar.Err = kerr.ErrorForCode(res.Code)
				m.log.Info("node: AlterPartition refused", "topic", r.topic, "partition", r.partition, "code", res.Code, "message", res.Message)
			} else if st := res.State; st != nil {
				ar.Err, ar.LeaderEpoch, ar.PartitionEpoch, ar.ISR = nil, st.LeaderEpoch, st.PartitionEpoch, st.ISR
			}
		}
		r.altered(ar)
	}
	// The metadata changed: let the replicas see the new partition states
	// even if the reconciler is slower.
	m.host.Poke()
}

// altered steps the controller's answer to an ISR proposal.
func (r *Replica) altered(m partition.AlterPartitionResult) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.dead {
		return
	}
	if err := r.step(m); err == nil {
		r.process()
	}
}
