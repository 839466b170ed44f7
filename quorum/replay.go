package quorum

import (
	"fmt"
	"maps"
	"slices"
)

// Replay applies one record to the image. It is the only code that changes an
// Image. It first checks that the record still fits (epochs, existence) and
// returns an error wrapping ErrStaleRecord, leaving the image unchanged, if it
// does not: every node replays the same log, so a rejected record is rejected
// everywhere and the images stay identical.
func (im *Image) Replay(r Record) error {
	switch r := r.(type) {
	case *ClusterIDRecord:
		if im.ClusterID != "" && im.ClusterID != r.ClusterID {
			return stale(r, "cluster id is already %s", im.ClusterID)
		}
		im.ClusterID = r.ClusterID
	case *RegisterBrokerRecord:
		if r.Epoch <= im.LastBrokerEpoch {
			return stale(r, "epoch %d is not above the last broker epoch %d", r.Epoch, im.LastBrokerEpoch)
		}
		im.LastBrokerEpoch = r.Epoch
		im.Brokers[r.ID] = &Broker{
			ID: r.ID, Epoch: r.Epoch, Endpoints: slices.Clone(r.Endpoints), Rack: r.Rack,
			Fenced: true, CleanShutdown: r.CleanShutdown,
		}
	case *FenceBrokerRecord:
		b, err := im.brokerAt(r, r.ID, r.Epoch)
		if err != nil {
			return err
		}
		b.Fenced = true
	case *UnfenceBrokerRecord:
		b, err := im.brokerAt(r, r.ID, r.Epoch)
		if err != nil {
			return err
		}
		b.Fenced = false
	case *BrokerShutdownRecord:
		b, err := im.brokerAt(r, r.ID, r.Epoch)
		if err != nil {
			return err
		}
		b.ShuttingDown = true
	case *CreateTopicRecord:
		if _, ok := im.Topics[r.Name]; ok {
			return stale(r, "topic exists")
		}
		if _, ok := im.topicsByID[r.ID]; ok || r.ID == (UUID{}) {
			return stale(r, "topic id %s is zero or in use", r.ID)
		}
		t := &Topic{Name: r.Name, ID: r.ID, Configs: maps.Clone(r.Configs), Partitions: make([]Partition, len(r.Partitions))}
		for i := range r.Partitions {
			t.Partitions[i] = r.Partitions[i].clone()
		}
		im.Topics[r.Name] = t
		im.topicsByID[r.ID] = r.Name
		im.idx.addTopic(t)
	case *RemoveTopicRecord:
		t, ok := im.Topics[r.Name]
		if !ok || t.ID != r.ID {
			return stale(r, "no topic %s with id %s", r.Name, r.ID)
		}
		delete(im.Topics, r.Name)
		delete(im.topicsByID, r.ID)
		im.idx.removeTopic(t)
	case *TopicConfigRecord:
		t := im.TopicByID(r.TopicID)
		if t == nil {
			return stale(r, "no topic id %s", r.TopicID)
		}
		if t.Configs == nil && len(r.Set) > 0 {
			t.Configs = map[string]string{}
		}
		for k, v := range r.Set {
			t.Configs[k] = v
		}
		for _, k := range r.Delete {
			delete(t.Configs, k)
		}
		if len(t.Configs) == 0 {
			t.Configs = nil
		}
	case *PartitionChangeRecord:
		t := im.TopicByID(r.TopicID)
		if t == nil || r.Partition < 0 || int(r.Partition) >= len(t.Partitions) {
			return stale(r, "no partition %s/%d", r.TopicID, r.Partition)
		}
		p := &t.Partitions[r.Partition]
		if r.PartitionEpoch != p.PartitionEpoch+1 {
			return stale(r, "partition epoch %d does not follow %d", r.PartitionEpoch, p.PartitionEpoch)
		}
		if r.LeaderEpoch != p.LeaderEpoch && r.LeaderEpoch != p.LeaderEpoch+1 {
			return stale(r, "leader epoch %d does not follow %d", r.LeaderEpoch, p.LeaderEpoch)
		}
		im.idx.remove(t, r.Partition)
		p.apply(r)
		im.idx.add(t, r.Partition)
	case *ProducerIDsRecord:
		if r.Start != im.NextProducerID || r.Len <= 0 {
			return stale(r, "block starts at %d, next producer id is %d", r.Start, im.NextProducerID)
		}
		im.NextProducerID = r.Start + r.Len
		b := *r
		im.LastProducerBlock = &ProducerIDBlock{BrokerID: b.BrokerID, Start: b.Start, Len: b.Len}
	case *AddPartitionsRecord:
		return im.replayAddPartitions(r)
	case *LogDirOfflineRecord:
		return im.replayLogDirOffline(r)
	case *ScramCredentialRecord, *RemoveScramCredentialRecord:
		return im.replayScram(r)
	case *ClientQuotaRecord:
		return im.replayClientQuota(r)
	case *ACLRecord, *RemoveACLRecord:
		return im.replayACL(r)
	case *UnregisterBrokerRecord:
		return im.replayUnregisterBroker(r)
	case *BrokerConfigRecord:
		return im.replayBrokerConfig(r)
	case *FeatureLevelRecord:
		return im.replayFeatureLevel(r)
	default:
		return fmt.Errorf("%w: replay of %T", ErrUnknownCommand, r)
	}
	return nil
}

// apply sets the partition to the state a change record carries.
func (p *Partition) apply(r *PartitionChangeRecord) {
	p.Leader = r.Leader
	p.ISR = slices.Clone(r.ISR)
	p.LeaderEpoch = r.LeaderEpoch
	p.PartitionEpoch = r.PartitionEpoch
	p.StaleISR = r.StaleISR
	p.ELR = nilIfEmpty(slices.Clone(r.ELR))
	p.LastKnownELR = nilIfEmpty(slices.Clone(r.LastKnownELR))
	if a := r.Assignment; a != nil {
		p.Replicas = slices.Clone(a.Replicas)
		p.AddingReplicas = slices.Clone(a.Adding)
		p.RemovingReplicas = slices.Clone(a.Removing)
	}
	if r.Unclean != nil {
		u := *r.Unclean
		u.LostISR = slices.Clone(u.LostISR)
		p.UncleanElections = append(slices.Clone(p.UncleanElections), u)
	}
}

func (im *Image) brokerAt(r Record, id int32, epoch int64) (*Broker, error) {
	b := im.Brokers[id]
	if b == nil || b.Epoch != epoch {
		return nil, stale(r, "broker %d is not registered with epoch %d", id, epoch)
	}
	return b, nil
}

func stale(r Record, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrStaleRecord, r.Type(), fmt.Sprintf(format, args...))
}
