package node

import (
	"context"
	"sync"
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
	n *Node
	// mu is a leaf: taken under replica.mu by submit.
	mu struct {
		sync.Mutex
		queue map[*replica]*partition.Proposal
	}
	wake chan struct{}
}

func newAlterer(n *Node) *alterer {
	a := &alterer{n: n, wake: make(chan struct{}, 1)}
	a.mu.queue = map[*replica]*partition.Proposal{}
	return a
}

// submit queues r's proposal; its answer is stepped as an
// AlterPartitionResult. It never blocks.
func (a *alterer) submit(r *replica, p *partition.Proposal) {
	a.mu.Lock()
	a.mu.queue[r] = p
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

func (a *alterer) run() {
	defer a.n.wg.Done()
	for {
		select {
		case <-a.n.stop:
			return
		case <-a.wake:
		}
		a.mu.Lock()
		batch := a.mu.queue
		a.mu.queue = map[*replica]*partition.Proposal{}
		a.mu.Unlock()
		if len(batch) > 0 {
			a.send(batch)
		}
	}
}

func (a *alterer) send(batch map[*replica]*partition.Proposal) {
	n := a.n
	cmd := &quorum.AlterPartitions{BrokerID: n.cfg.NodeID, BrokerEpoch: n.epoch.Load()}
	order := make([]*replica, 0, len(batch))
	for r, p := range batch {
		item := quorum.AlterPartitionItem{TopicID: r.topicID, Partition: r.partition, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch}
		for _, m := range p.NewISR {
			item.NewISR = append(item.NewISR, quorum.ISRMember{ID: m.ID, Epoch: m.BrokerEpoch})
		}
		cmd.Partitions = append(cmd.Partitions, item)
		order = append(order, r)
	}
	ctx, cancel := context.WithTimeout(n.ctx, alterTimeout)
	reply, err := n.ctrl.Propose(ctx, cmd)
	cancel()
	if err != nil {
		n.log.Warn("node: AlterPartition failed", "partitions", len(order), "err", err)
		for _, r := range order {
			r.altered(partition.AlterPartitionResult{Proposal: batch[r], Err: controllerError(err)})
		}
		return
	}
	type key struct {
		id quorum.UUID
		p  int32
	}
	byKey := map[key]*quorum.AlterPartitionResult{}
	for i, res := range reply.(*quorum.AlterPartitionsReply).Partitions {
		byKey[key{res.TopicID, res.Partition}] = &reply.(*quorum.AlterPartitionsReply).Partitions[i]
	}
	for _, r := range order {
		m := partition.AlterPartitionResult{Proposal: batch[r], Err: kerr.UnknownServerError}
		if res := byKey[key{r.topicID, r.partition}]; res != nil {
			if res.Code != 0 {
				m.Err = kerr.ErrorForCode(res.Code)
				n.log.Info("node: AlterPartition refused", "topic", r.topic, "partition", r.partition, "code", res.Code, "message", res.Message)
			} else if st := res.State; st != nil {
				m.Err, m.LeaderEpoch, m.PartitionEpoch, m.ISR = nil, st.LeaderEpoch, st.PartitionEpoch, st.ISR
			}
		}
		r.altered(m)
	}
	// The metadata changed: let the replicas see the new partition states
	// even if the reconciler is slower.
	n.poke()
}

// altered steps the controller's answer to an ISR proposal.
func (r *replica) altered(m partition.AlterPartitionResult) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.dead {
		return
	}
	if err := r.mu.part.Step(m); err == nil {
		r.process()
	}
}
