package quorum

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Topic config keys the controller interprets. Other keys are stored as given.
const (
	ConfigUncleanLeaderElection = "unclean.leader.election.enable"
	ConfigMinInsyncReplicas     = "min.insync.replicas"
)

// DefaultProducerIDBlockSize is the size of a producer id block (Kafka's).
const DefaultProducerIDBlockSize = 1000

// Policy is the controller's static configuration that planning depends on.
type Policy struct {
	// UncleanLeaderElectionEnable is the broker default of
	// unclean.leader.election.enable; a topic config overrides it.
	UncleanLeaderElectionEnable bool
	// ProducerIDBlockSize defaults to DefaultProducerIDBlockSize.
	ProducerIDBlockSize int64
	// NewUUID makes topic ids; nil means NewUUID. Tests make it deterministic.
	NewUUID func() UUID
	// EligibleLeaderReplicasVersion is eligible.leader.replicas.version:
	// 1 keeps KIP-966's eligible leader replicas (elr.go), 0 the earlier
	// rules (the ISR keeps its last member, stale after an unclean restart).
	EligibleLeaderReplicasVersion int
	// MinInsyncReplicas is the broker default of min.insync.replicas
	// (0 counts as 1); a topic config overrides it. The ELR follows it.
	MinInsyncReplicas int
}

// Plan validates cmd against the image and returns the records that carry
// it out and the command's reply. It does not change the image: the records
// do, when replayed (through Raft, on every node). A rejected command returns
// an error wrapping a kerr value. Plan is pure given pol.NewUUID.
func Plan(im *Image, pol Policy, cmd Command) ([]Record, any, error) {
	p := planner{im: im, pol: pol}
	switch c := cmd.(type) {
	case *SetClusterID:
		if im.ClusterID == c.ClusterID {
			return nil, nil, nil
		}
		if im.ClusterID != "" {
			return nil, nil, kerrf(kerr.InconsistentClusterID, "cluster id is %s, not %s", im.ClusterID, c.ClusterID)
		}
		scram, err := bootstrapScram(c.Scram)
		if err != nil {
			return nil, nil, err
		}
		features, err := bootstrapFeatures(c.Features)
		if err != nil {
			return nil, nil, err
		}
		return append(append([]Record{&ClusterIDRecord{ClusterID: c.ClusterID}}, scram...), features...), nil, nil
	case *RegisterBroker:
		return p.registerBroker(c)
	case *FenceBroker:
		return p.fenceBroker(c)
	case *UnfenceBroker:
		return p.unfenceBroker(c)
	case *ControlledShutdown:
		return p.controlledShutdown(c)
	case *CreateTopics:
		return p.createTopics(c)
	case *DeleteTopics:
		return p.deleteTopics(c)
	case *AlterConfigs:
		return p.alterConfigs(c)
	case *AlterPartition:
		return p.alterPartition(c)
	case *AlterPartitions:
		return p.alterPartitions(c)
	case *ElectLeaders:
		return p.electLeaders(c)
	case *CreatePartitions:
		return p.createPartitions(c)
	case *LogDirOffline:
		return p.logDirOffline(c)
	case *AlterScramCredentials:
		return p.alterScram(c)
	case *AlterClientQuotas:
		return p.alterClientQuotas(c)
	case *CreateACLs:
		return p.createACLs(c)
	case *DeleteACLs:
		return p.deleteACLs(c)
	case *AlterPartitionReassignments:
		return p.alterReassignments(c)
	case *UnregisterBroker:
		return p.unregisterBroker(c)
	case *AlterBrokerConfigs:
		return p.alterBrokerConfigs(c)
	case *UpdateFeatures:
		return p.updateFeatures(c)
	case *AllocateProducerIDs:
		b, err := p.broker(c.BrokerID, c.BrokerEpoch)
		if err != nil {
			return nil, nil, err
		}
		size := pol.ProducerIDBlockSize
		if size <= 0 {
			size = DefaultProducerIDBlockSize
		}
		rec := &ProducerIDsRecord{BrokerID: b.ID, BrokerEpoch: b.Epoch, Start: im.NextProducerID, Len: size}
		return []Record{rec}, &ProducerIDBlock{BrokerID: b.ID, Start: rec.Start, Len: size}, nil
	}
	return nil, nil, fmt.Errorf("%w: %T", ErrUnknownCommand, cmd)
}

type planner struct {
	im  *Image
	pol Policy
}

func kerrf(e *kerr.Error, format string, args ...any) error {
	return fmt.Errorf("%w: %s", e, fmt.Sprintf(format, args...))
}

// ErrorCode returns the Kafka error code of err: 0 for nil, the kerr code
// for an error wrapping a kerr value, UNKNOWN_SERVER_ERROR otherwise. It is
// the one mapper: node/kafka answers clients with it too.
func ErrorCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}

func (p *planner) broker(id int32, epoch int64) (*Broker, error) {
	b := p.im.Brokers[id]
	if b == nil {
		return nil, kerrf(kerr.BrokerIDNotRegistered, "broker %d", id)
	}
	if epoch != AnyEpoch && b.Epoch != epoch {
		return nil, kerrf(kerr.StaleBrokerEpoch, "broker %d has epoch %d, not %d", id, b.Epoch, epoch)
	}
	return b, nil
}

// ConfigDurability is the topic config partition.ConfigDurability
// (sluice.durability); the value "sync" means every replica counted towards
// the high watermark only with what it had fsynced.
const ConfigDurability = "sluice.durability"

// syncDurable says whether the topic acknowledges only fsynced records.
func syncDurable(t *Topic) bool { return t.Configs[ConfigDurability] == "sync" }

// uncleanAllowed resolves unclean.leader.election.enable for a topic.
func (p *planner) uncleanAllowed(t *Topic) bool {
	if v, ok := t.Configs[ConfigUncleanLeaderElection]; ok {
		b, err := strconv.ParseBool(v)
		return err == nil && b
	}
	return p.pol.UncleanLeaderElectionEnable
}

// minISR resolves min.insync.replicas for a topic.
func (p *planner) minISR(t *Topic) int {
	if v, ok := t.Configs[ConfigMinInsyncReplicas]; ok {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			return n
		}
	}
	return max(p.pol.MinInsyncReplicas, 1)
}

// change starts a PartitionChange of partition i of t, with the election
// its topic allows by config and the eligible leader replicas' settings.
func (p *planner) change(t *Topic, i int32, part Partition, ok func(int32) bool) PartitionChange {
	el := ElectClean
	if p.uncleanAllowed(t) {
		el = ElectUnclean
	}
	return PartitionChange{
		TopicID: t.ID, Partition: i, Current: part, Acceptable: ok, Election: el,
		ELR: p.pol.EligibleLeaderReplicasVersion >= 1, MinISR: p.minISR(t),
	}
}

// acceptable returns the leader-acceptability test of the image, with one
// broker forced out (out >= 0) or in (in >= 0).
func (p *planner) acceptable(out, in int32) func(int32) bool {
	return func(id int32) bool {
		if id == out {
			return false
		}
		b := p.im.Brokers[id]
		if id == in {
			return b != nil && !b.ShuttingDown && len(b.OfflineLogDirs) == 0
		}
		return b.Alive()
	}
}

// forEachPartition visits partitions in topic-name order.
func (p *planner) forEachPartition(fn func(t *Topic, i int32, part *Partition)) {
	for _, name := range p.im.SortedTopics() {
		t := p.im.Topics[name]
		for i := range t.Partitions {
			fn(t, int32(i), &t.Partitions[i])
		}
	}
}

// moveOff removes a broker from every ISR and moves its leaderships
// elsewhere. Without ELR it stays the last member of an otherwise empty
// ISR, marked stale when unclean; with ELR it may join the ELR, or, when
// unclean, leaves it for the last-known ELR.
func (p *planner) moveOff(id int32, unclean bool) []Record {
	recs := make([]Record, 0, p.im.PartitionsOn(id))
	ok := p.acceptable(id, -1)
	// Only partitions naming the broker can have it as leader, in the
	// ISR or in the ELR: the index (index.go) spares a scan of every
	// partition.
	p.im.sorted(p.im.idx.hosts[id], func(t *Topic, i int32, part *Partition) {
		if part.Leader != id && !slices.Contains(part.ISR, id) && !(unclean && slices.Contains(part.ELR, id)) {
			return
		}
		isr := slices.DeleteFunc(slices.Clone(part.ISR), func(r int32) bool { return r == id })
		c := p.change(t, i, *part, ok)
		c.TargetISR = isr
		// With sync durability an unclean shutdown loses nothing
		// acknowledged (every ack waited for the fsync), so the replica
		// stays electable.
		if unclean && !syncDurable(t) {
			c.StaleIfKept, c.UncleanShutdown = true, []int32{id}
		}
		if rec, changed := c.Build(); changed {
			recs = append(recs, rec)
		}
	})
	return recs
}

func (p *planner) registerBroker(c *RegisterBroker) ([]Record, any, error) {
	if c.ID < 0 {
		return nil, nil, kerrf(kerr.InvalidRequest, "broker id %d", c.ID)
	}
	if c.ClusterID != "" && p.im.ClusterID != "" && c.ClusterID != p.im.ClusterID {
		return nil, nil, kerrf(kerr.InconsistentClusterID, "broker %d has cluster id %s, the quorum %s", c.ID, c.ClusterID, p.im.ClusterID)
	}
	var recs []Record
	clean := c.CleanShutdown
	if b, ok := p.im.Brokers[c.ID]; ok {
		if c.PreviousBrokerEpoch != 0 {
			clean = c.PreviousBrokerEpoch == b.Epoch
		}
		recs = p.moveOff(c.ID, !clean)
	}
	epoch := p.im.LastBrokerEpoch + 1
	recs = append(recs, &RegisterBrokerRecord{
		ID: c.ID, Epoch: epoch, Endpoints: slices.Clone(c.Endpoints), Rack: c.Rack, CleanShutdown: clean,
	})
	return recs, &RegisterBrokerReply{Epoch: epoch}, nil
}

func (p *planner) fenceBroker(c *FenceBroker) ([]Record, any, error) {
	b, err := p.broker(c.ID, c.Epoch)
	if err != nil || b.Fenced {
		return nil, nil, err
	}
	recs := []Record{&FenceBrokerRecord{ID: b.ID, Epoch: b.Epoch}}
	return append(recs, p.moveOff(b.ID, false)...), nil, nil
}

func (p *planner) controlledShutdown(c *ControlledShutdown) ([]Record, any, error) {
	b, err := p.broker(c.ID, c.Epoch)
	if err != nil || b.ShuttingDown {
		return nil, nil, err
	}
	recs := []Record{&BrokerShutdownRecord{ID: b.ID, Epoch: b.Epoch}}
	return append(recs, p.moveOff(b.ID, false)...), nil, nil
}

func (p *planner) unfenceBroker(c *UnfenceBroker) ([]Record, any, error) {
	b, err := p.broker(c.ID, c.Epoch)
	if err != nil || !b.Fenced {
		return nil, nil, err
	}
	recs := []Record{&UnfenceBrokerRecord{ID: b.ID, Epoch: b.Epoch}}
	ok := p.acceptable(-1, b.ID)
	// Only partitions without a leader are elected here: the offline
	// index (index.go) spares a scan of every partition.
	p.im.sorted(p.im.idx.offline, func(t *Topic, i int32, part *Partition) {
		if part.Leader != NoLeader || !slices.Contains(part.Replicas, b.ID) {
			return
		}
		pc := p.change(t, i, *part, ok)
		if rec, changed := pc.Build(); changed {
			recs = append(recs, rec)
		}
	})
	return recs, nil, nil
}

func (p *planner) alterPartition(c *AlterPartition) ([]Record, any, error) {
	t := p.im.TopicByID(c.TopicID)
	if t == nil {
		return nil, nil, kerrf(kerr.UnknownTopicID, "topic id %s", c.TopicID)
	}
	if c.Partition < 0 || int(c.Partition) >= len(t.Partitions) {
		return nil, nil, kerrf(kerr.UnknownTopicOrPartition, "%s/%d", t.Name, c.Partition)
	}
	if _, err := p.broker(c.BrokerID, c.BrokerEpoch); err != nil {
		return nil, nil, err
	}
	part := t.Partitions[c.Partition]
	where := fmt.Sprintf("%s/%d", t.Name, c.Partition)
	if c.LeaderEpoch != part.LeaderEpoch {
		return nil, nil, kerrf(kerr.FencedLeaderEpoch, "%s: leader epoch %d, current %d", where, c.LeaderEpoch, part.LeaderEpoch)
	}
	if part.Leader != c.BrokerID {
		return nil, nil, kerrf(kerr.NotLeaderForPartition, "%s: broker %d is not the leader (%d is)", where, c.BrokerID, part.Leader)
	}
	if c.PartitionEpoch != part.PartitionEpoch {
		return nil, nil, kerrf(kerr.InvalidUpdateVersion, "%s: partition epoch %d, current %d", where, c.PartitionEpoch, part.PartitionEpoch)
	}
	isr := make([]int32, 0, len(c.NewISR))
	for _, m := range c.NewISR {
		if !slices.Contains(part.Replicas, m.ID) || slices.Contains(isr, m.ID) {
			return nil, nil, kerrf(kerr.InvalidRequest, "%s: ISR member %d is not a replica or is repeated", where, m.ID)
		}
		b := p.im.Brokers[m.ID]
		switch {
		case b == nil:
			return nil, nil, kerrf(kerr.IneligibleReplica, "%s: replica %d is not registered", where, m.ID)
		case b.Fenced:
			return nil, nil, kerrf(kerr.IneligibleReplica, "%s: replica %d is fenced", where, m.ID)
		case b.ShuttingDown:
			return nil, nil, kerrf(kerr.IneligibleReplica, "%s: replica %d is shutting down", where, m.ID)
		case len(b.OfflineLogDirs) > 0:
			return nil, nil, kerrf(kerr.IneligibleReplica, "%s: replica %d has its log dir offline", where, m.ID)
		case m.Epoch != AnyEpoch && m.Epoch != b.Epoch:
			return nil, nil, kerrf(kerr.IneligibleReplica, "%s: replica %d has broker epoch %d, not %d", where, m.ID, b.Epoch, m.Epoch)
		}
		isr = append(isr, m.ID)
	}
	// A leader may leave the ISR only by handing leadership to another
	// member (beyond Kafka: its log is damaged, node/replica/scrub.go); the builder
	// elects it from what remains.
	leaving := !slices.Contains(isr, c.BrokerID)
	pc := p.change(t, c.Partition, part, p.acceptable(-1, -1))
	pc.Election, pc.TargetISR = ElectClean, isr
	rec, changed := pc.Build()
	if leaving && (len(isr) == 0 || !changed || rec.Leader == NoLeader) {
		return nil, nil, kerrf(kerr.InvalidRequest, "%s: the leader %d must stay in the ISR unless another member can lead", where, c.BrokerID)
	}
	if !changed {
		res := part.clone()
		return nil, &res, nil
	}
	res := part.clone()
	res.apply(rec)
	return []Record{rec}, &res, nil
}

func (p *planner) alterPartitions(c *AlterPartitions) ([]Record, any, error) {
	if _, err := p.broker(c.BrokerID, c.BrokerEpoch); err != nil {
		return nil, nil, err
	}
	var recs []Record
	reply := &AlterPartitionsReply{}
	seen := map[PartitionRef]bool{}
	for _, it := range c.Partitions {
		res := AlterPartitionResult{TopicID: it.TopicID, Partition: it.Partition}
		ref := PartitionRef{TopicID: it.TopicID, Partition: it.Partition}
		var err error
		var state any
		var rs []Record
		if seen[ref] {
			err = kerrf(kerr.InvalidRequest, "partition %s/%d repeated", it.TopicID, it.Partition)
		} else {
			rs, state, err = p.alterPartition(&AlterPartition{
				BrokerID: c.BrokerID, BrokerEpoch: c.BrokerEpoch, TopicID: it.TopicID, Partition: it.Partition,
				LeaderEpoch: it.LeaderEpoch, PartitionEpoch: it.PartitionEpoch, NewISR: it.NewISR,
			})
		}
		seen[ref] = true
		if err != nil {
			res.Code, res.Message = ErrorCode(err), err.Error()
		} else {
			res.State = state.(*Partition)
			recs = append(recs, rs...)
		}
		reply.Partitions = append(reply.Partitions, res)
	}
	return recs, reply, nil
}

func (p *planner) electLeaders(c *ElectLeaders) ([]Record, any, error) {
	if c.Election != ElectPreferred && c.Election != ElectUnclean {
		return nil, nil, kerrf(kerr.InvalidRequest, "election type %d", c.Election)
	}
	tps := c.Partitions
	if len(tps) == 0 {
		p.forEachPartition(func(t *Topic, i int32, _ *Partition) {
			tps = append(tps, TopicPartition{Topic: t.Name, Partition: i})
		})
	}
	var recs []Record
	reply := &ElectLeadersReply{}
	seen := map[TopicPartition]bool{}
	ok := p.acceptable(-1, -1)
	for _, tp := range tps {
		if seen[tp] {
			continue
		}
		seen[tp] = true
		res := ElectResult{TopicPartition: tp}
		var err error
		t := p.im.Topics[tp.Topic]
		switch {
		case t == nil || tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions):
			err = kerrf(kerr.UnknownTopicOrPartition, "%s/%d", tp.Topic, tp.Partition)
		case c.Election == ElectPreferred && len(t.Partitions[tp.Partition].Replicas) > 0 &&
			t.Partitions[tp.Partition].Leader == t.Partitions[tp.Partition].Replicas[0]:
			err = kerrf(kerr.ElectionNotNeeded, "preferred replica leads")
		case c.Election == ElectUnclean && t.Partitions[tp.Partition].Leader != NoLeader:
			err = kerrf(kerr.ElectionNotNeeded, "partition has a leader")
		default:
			part := t.Partitions[tp.Partition]
			pc := p.change(t, tp.Partition, part, ok)
			pc.Election = c.Election
			rec, changed := pc.Build()
			switch {
			case c.Election == ElectPreferred && (!changed || rec.Leader != part.Replicas[0]):
				err = kerrf(kerr.PreferredLeaderNotAvailable, "replica %d is not alive or not in the ISR", part.Replicas[0])
			case !changed || rec.Leader == NoLeader:
				err = kerrf(kerr.EligibleLeadersNotAvailable, "no replica is alive")
			default:
				recs = append(recs, rec)
			}
		}
		if err != nil {
			res.Code, res.Message = ErrorCode(err), err.Error()
		}
		reply.Partitions = append(reply.Partitions, res)
	}
	return recs, reply, nil
}

func (p *planner) deleteTopics(c *DeleteTopics) ([]Record, any, error) {
	var recs []Record
	reply := &TopicsReply{}
	seen := map[string]bool{}
	for _, name := range c.Names {
		res := TopicResult{Name: name}
		if t := p.im.Topics[name]; t == nil || seen[name] {
			res.Code = kerr.UnknownTopicOrPartition.Code
			res.Message = "no topic " + strconv.Quote(name)
		} else {
			res.ID = t.ID
			recs = append(recs, &RemoveTopicRecord{Name: name, ID: t.ID})
		}
		seen[name] = true
		reply.Topics = append(reply.Topics, res)
	}
	return recs, reply, nil
}

func (p *planner) alterConfigs(c *AlterConfigs) ([]Record, any, error) {
	t := p.im.Topics[c.Topic]
	if t == nil {
		return nil, nil, kerrf(kerr.UnknownTopicOrPartition, "no topic %q", c.Topic)
	}
	if err := validateConfigs(c.Set); err != nil {
		return nil, nil, err
	}
	recs := []Record{&TopicConfigRecord{TopicID: t.ID, Set: c.Set, Delete: c.Delete}}
	// Turning unclean election on elects leaders of offline partitions now.
	after := &Topic{Configs: map[string]string{}}
	for k, v := range t.Configs {
		after.Configs[k] = v
	}
	for k, v := range c.Set {
		after.Configs[k] = v
	}
	for _, k := range c.Delete {
		delete(after.Configs, k)
	}
	if p.uncleanAllowed(after) {
		ok := p.acceptable(-1, -1)
		for i := range t.Partitions {
			if t.Partitions[i].Leader != NoLeader {
				continue
			}
			pc := p.change(t, int32(i), t.Partitions[i], ok)
			pc.Election = ElectUnclean
			if rec, changed := pc.Build(); changed {
				recs = append(recs, rec)
			}
		}
	}
	return recs, nil, nil
}

func validateConfigs(m map[string]string) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := m[k]
		switch k {
		case ConfigUncleanLeaderElection:
			if _, err := strconv.ParseBool(v); err != nil {
				return kerrf(kerr.InvalidConfig, "%s=%q is not a boolean", k, v)
			}
		case ConfigMinInsyncReplicas:
			if n, err := strconv.Atoi(v); err != nil || n < 1 {
				return kerrf(kerr.InvalidConfig, "%s=%q is not a positive integer", k, v)
			}
		}
	}
	return nil
}
