package node

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/node/coord"
	"github.com/sluice-log/sluice/node/group"
	"github.com/sluice-log/sluice/node/kafka"
	"github.com/sluice-log/sluice/node/txn"
	"github.com/sluice-log/sluice/quorum"
)

// The group coordinator on the node: the broker serves kafka.Groups
// through node/coord, whose Host is coordHost; the reconciler tells the
// coordinator which offsets partitions this node leads (syncGroups).

var _ kafka.Groups = (*broker)(nil)

// isInternal says whether topic is one of Sluice's internal topics: shown
// as internal in Metadata, refused to clients' Produce, DeleteTopics,
// CreateTopics and CreatePartitions.
func isInternal(topic string) bool { return topic == group.OffsetsTopic || topic == txn.StateTopic }

// internalTopicError is the answer to an admin request on an internal
// topic: INVALID_REQUEST with a message saying why.
func internalTopicError(topic, what string) (error, string) {
	return kerr.InvalidRequest, fmt.Sprintf("%s is an internal topic: clients may not %s it", topic, what)
}

// FindGroupCoordinator implements kafka.Groups: the leader of the group's
// partition of __consumer_offsets, created on first use.
func (b *broker) FindGroupCoordinator(ctx context.Context, listener, groupID string) (kafka.BrokerInfo, error) {
	n := b.node()
	info, exists, err := n.coordinatorOf(group.OffsetsTopic, groupID, listener)
	if !exists {
		g := n.cfg.Groups
		n.createInternalTopic(ctx, group.OffsetsTopic, "offsets.topic.replication.factor", g.OffsetsTopicNumPartitions,
			g.OffsetsTopicReplicationFactor, 2, g.OffsetsTopicSegmentBytes)
	}
	return info, err
}

// coordinatorOf is the broker leading key's partition of the internal
// topic, at its endpoint for listener (the inter-broker one when empty);
// exists is false while the topic does not exist.
// COORDINATOR_NOT_AVAILABLE while the partition has no live leader.
func (n *Node) coordinatorOf(topic, key, listener string) (info kafka.BrokerInfo, exists bool, err error) {
	if listener == "" {
		listener = n.cfg.InterBrokerListener
	}
	err = kerr.CoordinatorNotAvailable
	n.ctrl.View(func(im *quorum.Image) {
		t := im.Topics[topic]
		if exists = t != nil; !exists || len(t.Partitions) == 0 {
			return
		}
		p := t.Partitions[group.Partition(key, int32(len(t.Partitions)))]
		br := im.Brokers[p.Leader]
		if p.Leader == quorum.NoLeader || !br.Alive() {
			return
		}
		for _, e := range br.Endpoints {
			if e.Name == listener {
				info, err = kafka.BrokerInfo{NodeID: p.Leader, Host: e.Host, Port: e.Port, Rack: br.Rack}, nil
			}
		}
	})
	return info, exists, err
}

// createInternalTopic creates an internal topic (__consumer_offsets,
// __transaction_state): compacted, its replication factor (rfKey's
// value) clamped to the live brokers (with a warning), its
// min.insync.replicas minISR at most the replication factor. Another
// node creating it at the same time is no error.
func (n *Node) createInternalTopic(ctx context.Context, name, rfKey string, partitions int32, rf int16, minISR, segmentBytes int32) {
	live := 0
	n.ctrl.View(func(im *quorum.Image) {
		for _, b := range im.Brokers {
			if b.Alive() {
				live++
			}
		}
	})
	if live == 0 {
		return
	}
	if int(rf) > live {
		n.log.Warn("node: creating "+name+" with fewer replicas than "+rfKey+": not enough live brokers",
			rfKey, rf, "live_brokers", live)
		rf = int16(live)
	}
	spec := quorum.TopicSpec{Name: name, Partitions: partitions, ReplicationFactor: rf,
		Configs: map[string]string{"cleanup.policy": "compact", "segment.bytes": strconv.Itoa(int(segmentBytes)),
			// A write is acknowledged once in the ISR; with two copies
			// required, one lost disk never loses an acknowledged one.
			"min.insync.replicas": strconv.Itoa(int(min(int32(rf), minISR)))}}
	res, err := n.decideTopics(ctx, &quorum.CreateTopics{Topics: []quorum.TopicSpec{spec}}, false)
	switch {
	case err != nil:
		n.log.Warn("node: creating "+name, "err", err)
	case len(res) == 1 && res[0].Code != 0 && res[0].Code != kerr.TopicAlreadyExists.Code:
		n.log.Warn("node: creating "+name, "code", res[0].Code, "message", res[0].Message)
	case len(res) == 1 && res[0].Code == 0:
		n.log.Info("node: created "+name, "partitions", spec.Partitions, "replication_factor", rf)
	}
}

// GroupShard implements kafka.Groups.
func (b *broker) GroupShard(groupID string) (int32, bool) {
	return b.node().shardOf(group.OffsetsTopic, groupID)
}

// shardOf is key's partition of an internal topic; false while the topic
// does not exist.
func (n *Node) shardOf(topic, key string) (int32, bool) {
	var np int
	n.ctrl.View(func(im *quorum.Image) {
		if t := im.Topics[topic]; t != nil {
			np = len(t.Partitions)
		}
	})
	if np == 0 {
		return 0, false
	}
	return group.Partition(key, int32(np)), true
}

// Coordinate implements kafka.Groups through node/coord.
func (b *broker) Coordinate(ctx context.Context, shard int32, req kafka.GroupRequest) (kmsg.Response, error) {
	return b.coord.Do(ctx, shard, req)
}

// ListGroups implements kafka.Groups.
func (b *broker) ListGroups(_ context.Context, states, types []string) ([]kmsg.ListGroupsResponseGroup, error) {
	return b.coord.ListGroups(states, types)
}

// PartitionExists implements kafka.Groups from the metadata image.
func (b *broker) PartitionExists(topic string, partition int32) bool {
	var ok bool
	b.node().ctrl.View(func(im *quorum.Image) {
		t := im.Topics[topic]
		ok = t != nil && partition >= 0 && int(partition) < len(t.Partitions)
	})
	return ok
}

// syncGroups tells the coordinator which offsets partitions this node
// leads (after the replicas became leaders) and which topics were deleted
// since the last call. n.reconcileMu must be held.
func (n *Node) syncGroups(im *quorum.Image) {
	n.coord.Sync(n.ledPartitions(im, group.OffsetsTopic))
	n.txnc.Sync(n.ledPartitions(im, txn.StateTopic))
	var deleted []string
	for name := range n.topicsSeen {
		if im.Topics[name] == nil {
			deleted = append(deleted, name)
			delete(n.topicsSeen, name)
		}
	}
	for name := range im.Topics {
		n.topicsSeen[name] = true
	}
	if len(deleted) > 0 {
		n.coord.TopicsDeleted(deleted)
	}
	n.syncGroupTopics(im)
}

// syncGroupTopics gives the coordinator the topics (name, id, partition
// count; internal topics left out, as Kafka's regex subscriptions do) when
// they differ from the last it got. n.reconcileMu must be held.
func (n *Node) syncGroupTopics(im *quorum.Image) {
	same := n.groupTopics != nil && len(n.groupTopics) == len(im.Topics)-countInternal(im)
	topics := make(map[string]group.TopicInfo, len(im.Topics))
	for name, t := range im.Topics {
		if strings.HasPrefix(name, "__") {
			continue
		}
		ti := groupTopicInfo(im, t)
		if old, ok := n.groupTopics[name]; same && (!ok || !old.Equal(ti)) {
			same = false
		}
		topics[name] = ti
	}
	if same {
		return
	}
	n.groupTopics = topics
	n.coord.SetTopics(topics)
}

// groupTopicInfo is what the coordinator knows of topic t.
func groupTopicInfo(im *quorum.Image, t *quorum.Topic) group.TopicInfo {
	return group.TopicInfo{ID: t.ID, Partitions: int32(len(t.Partitions)), Racks: partitionRacks(im, t)}
}

// partitionRacks are the racks of each partition's replicas (their
// brokers' rack), sorted, for the rack-aware assignors; nil when no
// replica of the topic has a rack.
func partitionRacks(im *quorum.Image, t *quorum.Topic) [][]string {
	var out [][]string
	some := false
	for _, p := range t.Partitions {
		var racks []string
		for _, id := range p.Replicas {
			if b := im.Brokers[id]; b != nil && b.Rack != "" && !slices.Contains(racks, b.Rack) {
				racks = append(racks, b.Rack)
			}
		}
		slices.Sort(racks)
		some = some || len(racks) > 0
		out = append(out, racks)
	}
	if !some {
		return nil
	}
	return out
}

// ledPartitions are the partitions of topic led here, with their leader
// epochs.
func (n *Node) ledPartitions(im *quorum.Image, topic string) map[int32]int32 {
	led := map[int32]int32{}
	if t := im.Topics[topic]; t != nil {
		for i, p := range t.Partitions {
			if p.Leader == n.cfg.NodeID {
				led[int32(i)] = p.LeaderEpoch
			}
		}
	}
	return led
}

func countInternal(im *quorum.Image) int {
	k := 0
	for name := range im.Topics {
		if strings.HasPrefix(name, "__") {
			k++
		}
	}
	return k
}

// coordHost is the node seen by a coordinator (coord.Host) for the
// partitions of its internal topic.
type coordHost struct {
	n     *Node
	topic string
}

var (
	_ coord.Host      = coordHost{}
	_ coord.Sequencer = coordHost{}
)

// Append implements coord.Host: the leader's produce path, as clients'.
func (h coordHost) Append(ctx context.Context, p int32, batch []byte) kafka.ProduceResult {
	r, err := (*broker)(h.n).lookup(h.topic, p)
	if err != nil {
		return kafka.ProduceResult{Err: err}
	}
	res := r.Produce(ctx, kafka.ProducePartition{Topic: h.topic, Partition: p, Acks: -1, Records: batch})
	if res.Err == nil {
		h.n.signal()
	}
	return res
}

// Read implements coord.Host from the local replica's log.
func (h coordHost) Read(p int32, offset, upTo int64, maxBytes int, buf []byte) ([]byte, int64, error) {
	r := h.n.replica(h.topic, p)
	if r == nil {
		return nil, offset, kerr.NotLeaderForPartition
	}
	c, err := r.Log().Read(offset, maxBytes, upTo, buf)
	if err != nil {
		return nil, offset, err
	}
	return c.Data, c.Next, nil
}

// Offsets implements coord.Host.
func (h coordHost) Offsets(p, epoch int32) (start, hw, leo int64, ok bool) {
	r := h.n.replica(h.topic, p)
	if r == nil {
		return 0, 0, 0, false
	}
	st := r.Status()
	if st.Leader != h.n.cfg.NodeID || st.LeaderEpoch != epoch {
		return 0, 0, 0, false
	}
	return r.Log().LogStartOffset(), r.HighWatermark(), st.LEO, true
}

// NextSequence implements coord.Sequencer from the local replica's producer
// state: the sequence after the producer's last batch at epoch, else 0.
func (h coordHost) NextSequence(p int32, pid int64, epoch int16) int32 {
	r := h.n.replica(h.topic, p)
	if r == nil {
		return 0
	}
	for _, pi := range r.Log().Producers(nil) {
		if pi.ProducerID == pid && pi.Epoch == epoch && pi.LastSequence >= 0 {
			if pi.LastSequence == math.MaxInt32 {
				return 0
			}
			return pi.LastSequence + 1
		}
	}
	return 0
}

// Changed implements coord.Host.
func (h coordHost) Changed() <-chan struct{} { return (*broker)(h.n).Appended() }
