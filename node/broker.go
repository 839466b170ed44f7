package node

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-log/sluice/node/kafka"
	"github.com/sluice-log/sluice/node/replica"
	"github.com/sluice-log/sluice/quorum"
)

// broker is the Node seen by the Kafka server: kafka.Broker, TopicAdmin,
// Logs and ProducerIDs.
type broker Node

var (
	_ kafka.Broker      = (*broker)(nil)
	_ kafka.TopicAdmin  = (*broker)(nil)
	_ kafka.Logs        = (*broker)(nil)
	_ kafka.ProducerIDs = (*broker)(nil)
)

func (b *broker) node() *Node { return (*Node)(b) }

// Metadata answers from the local metadata image, creating missing topics
// when auto.create.topics.enable and the client allow it.
func (b *broker) Metadata(ctx context.Context, q kafka.MetadataQuery) (kafka.ClusterMetadata, error) {
	n := b.node()
	if q.AllowAutoCreate && n.cfg.AutoCreateTopicsEnable && !q.AllTopics {
		var missing []quorum.TopicSpec
		n.ctrl.View(func(im *quorum.Image) {
			for _, t := range q.Topics {
				if t.Name != "" && t.ID == (kafka.TopicID{}) && im.Topics[t.Name] == nil && kafka.ValidTopicName(t.Name) && !isInternal(t.Name) {
					missing = append(missing, quorum.TopicSpec{Name: t.Name, Partitions: n.cfg.NumPartitions, ReplicationFactor: n.cfg.DefaultReplicationFactor})
				}
			}
		})
		if len(missing) > 0 {
			if _, err := n.ctrl.Propose(ctx, &quorum.CreateTopics{Topics: missing}); err != nil {
				n.log.Warn("node: auto-create topics", "err", err)
			}
			n.reconcile()
		}
	}
	md := kafka.ClusterMetadata{ClusterID: n.clusterID}
	// Each broker is listed at its endpoint for the listener the client
	// came in on (Kafka's rule); one without it is left out.
	listener := q.Listener
	if listener == "" {
		listener = n.cfg.InterBrokerListener
	}
	md.ControllerID, _ = n.ctrl.Leader()
	n.ctrl.View(func(im *quorum.Image) {
		if im.ClusterID != "" {
			md.ClusterID = im.ClusterID
		}
		for _, id := range im.SortedBrokers() {
			br := im.Brokers[id]
			if br.Fenced {
				continue
			}
			for _, e := range br.Endpoints {
				if e.Name == listener {
					md.Brokers = append(md.Brokers, kafka.BrokerInfo{NodeID: id, Host: e.Host, Port: e.Port, Rack: br.Rack})
				}
			}
		}
		add := func(t *quorum.Topic) {
			tm := kafka.TopicMetadata{Name: t.Name, ID: kafka.TopicID(t.ID), Internal: isInternal(t.Name)}
			for i, p := range t.Partitions {
				pm := kafka.PartitionMetadata{Partition: int32(i), Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, Replicas: p.Replicas, ISR: p.ISR,
					ELR: p.ELR, LastKnownELR: p.LastKnownELR}
				for _, r := range p.Replicas {
					if !im.Brokers[r].Alive() {
						pm.Offline = append(pm.Offline, r)
					}
				}
				if p.Leader == quorum.NoLeader {
					pm.Err = kerr.LeaderNotAvailable
				}
				tm.Partitions = append(tm.Partitions, pm)
			}
			md.Topics = append(md.Topics, tm)
		}
		if q.AllTopics {
			for _, name := range im.SortedTopics() {
				add(im.Topics[name])
			}
			return
		}
		for _, ref := range q.Topics {
			t := im.Topics[ref.Name]
			if ref.ID != (kafka.TopicID{}) {
				t = im.TopicByID(quorum.UUID(ref.ID))
			}
			if t != nil {
				add(t)
			}
		}
	})
	return md, nil
}

// CreateTopics proposes the topics to the quorum (or only plans them, with
// validateOnly) and answers once every live broker has the topics in
// effect (publish.go), so a produce right after the answer finds its
// partition wherever it leads.
func (b *broker) CreateTopics(ctx context.Context, topics []kafka.NewTopic, validateOnly bool) ([]kafka.CreatedTopic, error) {
	n := b.node()
	out := make([]kafka.CreatedTopic, len(topics))
	cmd := &quorum.CreateTopics{}
	var idx []int // out index of each topic in cmd
	for i, t := range topics {
		out[i] = kafka.CreatedTopic{NumPartitions: -1, ReplicationFactor: -1}
		if isInternal(t.Name) {
			out[i].Err, out[i].ErrMessage = internalTopicError(t.Name, "create")
			continue
		}
		if err := validateTopicConfigs(n.cfg, t.Configs); err != nil {
			out[i].Err, out[i].ErrMessage = kerr.InvalidConfig, err.Error()
			continue
		}
		if err := validateTopicCombination(n.cfg, t.Configs); err != nil {
			out[i].Err, out[i].ErrMessage = kerr.InvalidConfig, err.Error()
			continue
		}
		idx = append(idx, i)
		spec := quorum.TopicSpec{Name: t.Name, Partitions: t.NumPartitions, ReplicationFactor: t.ReplicationFactor, Assignments: t.Assignment, Configs: t.Configs}
		if t.Assignment == nil {
			if spec.Partitions < 0 {
				spec.Partitions = n.cfg.NumPartitions
			}
			if spec.ReplicationFactor < 0 {
				spec.ReplicationFactor = n.cfg.DefaultReplicationFactor
			}
		}
		cmd.Topics = append(cmd.Topics, spec)
	}
	if len(cmd.Topics) == 0 {
		return out, nil
	}
	total := 0
	for _, spec := range cmd.Topics {
		if spec.Assignments != nil {
			total += len(spec.Assignments)
		} else {
			total += int(max(spec.Partitions, 0))
		}
	}
	if err := n.checkPartitionsPerRequest(total); err != nil {
		for _, i := range idx {
			out[i].Err, out[i].ErrMessage = kerr.PolicyViolation, err.Error()
		}
		return out, nil
	}
	res, err := n.decideTopics(ctx, cmd, validateOnly)
	if err != nil {
		for _, i := range idx {
			out[i].Err, out[i].ErrMessage = controllerError(err), err.Error()
		}
		return out, nil
	}
	for j, i := range idx {
		if j >= len(res) {
			out[i].Err = kerr.UnknownServerError
			continue
		}
		r := res[j]
		out[i].ID = kafka.TopicID(r.ID)
		out[i].Err = kerr.ErrorForCode(r.Code)
		out[i].ErrMessage = r.Message
		if r.Code == 0 {
			spec := cmd.Topics[j]
			out[i].NumPartitions, out[i].ReplicationFactor = spec.Partitions, spec.ReplicationFactor
			if spec.Assignments != nil {
				out[i].NumPartitions, out[i].ReplicationFactor = int32(len(spec.Assignments)), int16(len(spec.Assignments[0]))
			}
		}
	}
	return out, nil
}

// DeleteTopics resolves ids to names and proposes the deletion.
func (b *broker) DeleteTopics(ctx context.Context, refs []kafka.TopicRef) ([]kafka.DeletedTopic, error) {
	n := b.node()
	out := make([]kafka.DeletedTopic, len(refs))
	cmd := &quorum.DeleteTopics{}
	var idx []int
	n.ctrl.View(func(im *quorum.Image) {
		for i, ref := range refs {
			out[i] = kafka.DeletedTopic{Name: ref.Name, ID: ref.ID}
			if ref.ID != (kafka.TopicID{}) {
				t := im.TopicByID(quorum.UUID(ref.ID))
				if t == nil {
					out[i].Err = kerr.UnknownTopicID
					continue
				}
				out[i].Name = t.Name
			}
			if isInternal(out[i].Name) {
				out[i].Err, out[i].ErrMessage = internalTopicError(out[i].Name, "delete")
				continue
			}
			cmd.Names = append(cmd.Names, out[i].Name)
			idx = append(idx, i)
		}
	})
	if len(cmd.Names) == 0 {
		return out, nil
	}
	res, err := n.decideTopics(ctx, cmd, false)
	if err != nil {
		for _, i := range idx {
			out[i].Err, out[i].ErrMessage = controllerError(err), err.Error()
		}
		return out, nil
	}
	for j, i := range idx {
		if j >= len(res) {
			out[i].Err = kerr.UnknownServerError
			continue
		}
		out[i].Err, out[i].ErrMessage = kerr.ErrorForCode(res[j].Code), res[j].Message
		if res[j].ID != (quorum.UUID{}) {
			out[i].ID = kafka.TopicID(res[j].ID)
		}
	}
	return out, nil
}

// checkPartitionsPerRequest refuses a CreateTopics or CreatePartitions
// request that adds more than sluice.max.partitions.per.request partitions
// in all, saying what to do instead (Kafka's controller refuses more than
// 10,000 records per request with POLICY_VIOLATION; one topic of 45,000
// partitions took minutes to materialise, past every client's timeout).
func (n *Node) checkPartitionsPerRequest(total int) error {
	limit := int(n.cfg.MaxPartitionsPerRequest)
	if total <= limit {
		return nil
	}
	return fmt.Errorf("the request adds %d partitions in all, more than sluice.max.partitions.per.request (%d): "+
		"create fewer topics per request, or create a bigger topic with at most %d partitions and grow it with CreatePartitions "+
		"(sluice topics alter --partitions) in steps of at most %d", total, limit, limit, limit)
}

// controllerError maps a Propose failure to the Kafka error for the client.
func controllerError(err error) error {
	var ke *kerr.Error
	switch {
	case errors.As(err, &ke):
		return ke
	case errors.Is(err, quorum.ErrNoLeader), errors.Is(err, quorum.ErrClosed):
		return kerr.NotController
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, quorum.ErrOutcomeUnknown):
		return kerr.RequestTimedOut
	}
	return kerr.UnknownServerError
}

// lookup finds the local replica, or the Kafka error for a partition that
// is not here.
func (b *broker) lookup(topic string, partition int32) (*replica.Replica, error) {
	n := b.node()
	if r := n.replica(topic, partition); r != nil {
		if err := n.logDirOffline(); err != nil {
			return nil, fmt.Errorf("%w: log dir %s is offline: %v", kerr.KafkaStorageError, n.dir, err)
		}
		return r, nil
	}
	var err error = kerr.UnknownTopicOrPartition
	n.ctrl.View(func(im *quorum.Image) {
		if t := im.Topics[topic]; t != nil && partition >= 0 && int(partition) < len(t.Partitions) {
			err = kerr.NotLeaderForPartition
		}
	})
	return nil, err
}

// Produce implements kafka.Logs.
//
// Clients may not write to internal topics: INVALID_TOPIC_EXCEPTION, as
// Kafka answers (the group coordinator writes __consumer_offsets through
// coordHost, not here).
func (b *broker) Produce(ctx context.Context, p kafka.ProducePartition) kafka.ProduceResult {
	if isInternal(p.Topic) {
		return kafka.ProduceResult{Err: kerr.InvalidTopicException, ErrMessage: "Cannot append to internal topic " + p.Topic, BaseOffset: -1, LogStartOffset: -1}
	}
	r, err := b.lookup(p.Topic, p.Partition)
	if err != nil {
		return kafka.ProduceResult{Err: err, BaseOffset: -1, LogStartOffset: -1}
	}
	res := r.Produce(ctx, p)
	if res.Err == nil {
		b.node().signal()
	}
	return res
}

// Fetch implements kafka.Logs.
func (b *broker) Fetch(ctx context.Context, p kafka.FetchPartition) kafka.FetchResult {
	r, err := b.lookup(p.Topic, p.Partition)
	if err != nil {
		return kafka.FetchResult{Err: err, HighWatermark: -1, LogStartOffset: -1}
	}
	if p.ClientRack != "" && p.ReplicaID < 0 && b.cfg.Racks.RackAwareFetch {
		if to, ok := b.readReplica(p); ok {
			return r.Redirect(p, to)
		}
	}
	return r.Fetch(p)
}

// readReplica is the replica a consumer in p.ClientRack is sent to
// (replica.selector.class RackAwareReplicaSelector, KIP-392), and
// whether it is another one than this broker as the partition's leader.
// A consumer already past the high watermark stays (a follower may not
// have its offset yet).
func (b *broker) readReplica(p kafka.FetchPartition) (int32, bool) {
	to := int32(quorum.NoLeader)
	b.ctrl.View(func(im *quorum.Image) {
		t := im.Topics[p.Topic]
		if t == nil || p.Partition < 0 || int(p.Partition) >= len(t.Partitions) {
			return
		}
		part := &t.Partitions[p.Partition]
		if part.Leader == b.cfg.NodeID {
			to = im.PreferredReadReplica(part, p.ClientRack)
		}
	})
	if to == quorum.NoLeader || to == b.cfg.NodeID {
		return 0, false
	}
	if r := b.node().replica(p.Topic, p.Partition); r == nil || p.Offset > r.HighWatermark() {
		return 0, false
	}
	return to, true
}

// TopicName implements kafka.TopicNames (Fetch v13+ names topics by ID).
func (b *broker) TopicName(id kafka.TopicID) (string, bool) {
	var name string
	b.node().ctrl.View(func(im *quorum.Image) {
		if t := im.TopicByID(quorum.UUID(id)); t != nil {
			name = t.Name
		}
	})
	return name, name != ""
}

// TopicID implements kafka.TopicIDs (OffsetCommit and OffsetFetch v10
// name topics by ID).
func (b *broker) TopicID(name string) (kafka.TopicID, bool) {
	var id kafka.TopicID
	ok := false
	b.node().ctrl.View(func(im *quorum.Image) {
		if t := im.Topics[name]; t != nil {
			id, ok = kafka.TopicID(t.ID), true
		}
	})
	return id, ok
}

// Appended implements kafka.Logs.
func (b *broker) Appended() <-chan struct{} {
	b.sig.Lock()
	defer b.sig.Unlock()
	return b.sig.appended
}

// ListOffset implements kafka.Logs.
func (b *broker) ListOffset(ctx context.Context, p kafka.ListOffsetPartition) kafka.ListOffsetResult {
	r, err := b.lookup(p.Topic, p.Partition)
	if err != nil {
		return kafka.ListOffsetResult{Err: err, Offset: -1, Timestamp: -1, LeaderEpoch: -1}
	}
	return r.ListOffset(p)
}

// EndOffsetForEpoch implements kafka.Logs.
func (b *broker) EndOffsetForEpoch(ctx context.Context, p kafka.EpochPartition) kafka.EpochResult {
	r, err := b.lookup(p.Topic, p.Partition)
	if err != nil {
		return kafka.EpochResult{Err: err, LeaderEpoch: -1, EndOffset: -1}
	}
	return r.EndOffsetForEpoch(p)
}

// InitProducerID implements kafka.ProducerIDs: ids come from blocks the
// quorum allocates to this broker (AllocateProducerIDs).
func (b *broker) InitProducerID(ctx context.Context, producerID int64, producerEpoch int16) (int64, int16, error) {
	if producerID >= 0 {
		if producerEpoch < 0 || producerEpoch == 1<<15-1 {
			return -1, -1, kerr.InvalidProducerEpoch
		}
		return producerID, producerEpoch + 1, nil
	}
	b.pids.Lock()
	defer b.pids.Unlock()
	if b.pids.next >= b.pids.limit {
		reply, err := b.ctrl.Propose(ctx, &quorum.AllocateProducerIDs{BrokerID: b.cfg.NodeID, BrokerEpoch: b.epoch.Load()})
		if err != nil {
			return -1, -1, fmt.Errorf("%w: %v", controllerError(err), err)
		}
		blk := reply.(*quorum.ProducerIDBlock)
		b.pids.next, b.pids.limit = blk.Start, blk.Start+blk.Len
	}
	id := b.pids.next
	b.pids.next++
	return id, 0, nil
}

var _ kafka.Elector = (*broker)(nil)

// ElectLeaders implements kafka.Elector through the quorum.
func (b *broker) ElectLeaders(ctx context.Context, unclean bool, parts []kafka.PartitionRef) ([]kafka.ElectionResult, error) {
	cmd := &quorum.ElectLeaders{Election: quorum.ElectPreferred}
	if unclean {
		cmd.Election = quorum.ElectUnclean
	}
	for _, p := range parts {
		cmd.Partitions = append(cmd.Partitions, quorum.TopicPartition{Topic: p.Topic, Partition: p.Partition})
	}
	reply, err := b.ctrl.Propose(ctx, cmd)
	b.node().reconcile()
	if err != nil {
		out := make([]kafka.ElectionResult, len(parts))
		for i, p := range parts {
			out[i] = kafka.ElectionResult{PartitionRef: p, Err: controllerError(err), ErrMessage: err.Error()}
		}
		return out, nil
	}
	res := reply.(*quorum.ElectLeadersReply).Partitions
	out := make([]kafka.ElectionResult, len(res))
	for i, r := range res {
		out[i] = kafka.ElectionResult{PartitionRef: kafka.PartitionRef{Topic: r.Topic, Partition: r.Partition}, Err: kerr.ErrorForCode(r.Code), ErrMessage: r.Message}
	}
	return out, nil
}

// validate plans cmd against the local image in place, under the FSM's
// read lock (Plan does not change the image), for validateOnly requests:
// the per-command errors without writing anything or copying the image.
func (n *Node) validate(cmd quorum.Command) error {
	var err error
	n.ctrl.View(func(im *quorum.Image) {
		_, _, err = quorum.Plan(im, quorumPolicy(n.cfg), cmd)
	})
	return err
}

// decideTopics proposes a topic command (create or delete topics, add
// partitions) to the quorum and brings the local logs in line before
// returning; with validateOnly it only plans the command against the local
// image, which answers the same per-topic codes without writing anything.
// It returns the per-topic results in command order.
func (n *Node) decideTopics(ctx context.Context, cmd quorum.Command, validateOnly bool) ([]quorum.TopicResult, error) {
	var reply any
	var err error
	if validateOnly {
		n.ctrl.View(func(im *quorum.Image) {
			_, reply, err = quorum.Plan(im, quorumPolicy(n.cfg), cmd)
		})
	} else {
		reply, err = n.publish(ctx, cmd)
	}
	if err != nil {
		return nil, err
	}
	return reply.(*quorum.TopicsReply).Topics, nil
}
