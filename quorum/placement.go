package quorum

import (
	"hash/fnv"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
)

// MaxTopicNameLen is Kafka's limit on topic name length.
const MaxTopicNameLen = 249

func (p *planner) createTopics(c *CreateTopics) ([]Record, any, error) {
	var recs []Record
	reply := &TopicsReply{}
	created := map[string]bool{}
	usedIDs := map[UUID]bool{}
	total := 0
	for _, spec := range c.Topics {
		if spec.Assignments != nil {
			total += len(spec.Assignments)
		} else if spec.Partitions > 0 {
			total += int(spec.Partitions)
		}
	}
	for _, spec := range c.Topics {
		res := TopicResult{Name: spec.Name}
		var rec *CreateTopicRecord
		var err error
		if total > MaxNewPartitionsPerRequest {
			err = tooManyPartitions(total, MaxNewPartitionsPerRequest)
		} else {
			rec, err = p.createTopic(spec, created, usedIDs)
		}
		if err != nil {
			res.Code, res.Message = ErrorCode(err), err.Error()
		} else {
			res.ID = rec.ID
			created[spec.Name] = true
			usedIDs[rec.ID] = true
			recs = append(recs, rec)
		}
		reply.Topics = append(reply.Topics, res)
	}
	return recs, reply, nil
}

func (p *planner) createTopic(spec TopicSpec, created map[string]bool, usedIDs map[UUID]bool) (*CreateTopicRecord, error) {
	if err := validateTopicName(spec.Name); err != nil {
		return nil, err
	}
	if _, ok := p.im.Topics[spec.Name]; ok || created[spec.Name] {
		return nil, kerrf(kerr.TopicAlreadyExists, "topic %q", spec.Name)
	}
	if err := validateConfigs(spec.Configs); err != nil {
		return nil, err
	}
	assign := spec.Assignments
	if assign == nil {
		var err error
		if assign, err = p.place(spec); err != nil {
			return nil, err
		}
	}
	parts := make([]Partition, len(assign))
	for i, reps := range assign {
		part, err := p.initialPartition(reps)
		if err != nil {
			return nil, err
		}
		parts[i] = part
	}
	newID := p.pol.NewUUID
	if newID == nil {
		newID = NewUUID
	}
	id := newID()
	for id == (UUID{}) || p.im.TopicByID(id) != nil || usedIDs[id] {
		id = NewUUID()
	}
	var configs map[string]string
	if len(spec.Configs) > 0 {
		configs = make(map[string]string, len(spec.Configs))
		for k, v := range spec.Configs {
			configs[k] = v
		}
	}
	return &CreateTopicRecord{Name: spec.Name, ID: id, Configs: configs, Partitions: parts}, nil
}

// initialPartition checks a manual or computed assignment: every replica is
// registered, none is repeated, and at least one is alive to lead.
func (p *planner) initialPartition(reps []int32) (Partition, error) {
	if len(reps) == 0 {
		return Partition{}, kerrf(kerr.InvalidReplicaAssignment, "a partition has no replicas")
	}
	part := Partition{Replicas: slices.Clone(reps), Leader: NoLeader}
	for i, r := range reps {
		if p.im.Brokers[r] == nil {
			return part, kerrf(kerr.InvalidReplicaAssignment, "broker %d is not registered", r)
		}
		if slices.Contains(reps[:i], r) {
			return part, kerrf(kerr.InvalidReplicaAssignment, "broker %d is repeated in %v", r, reps)
		}
		if p.im.Brokers[r].Alive() {
			part.ISR = append(part.ISR, r)
		}
	}
	if len(part.ISR) == 0 {
		return part, kerrf(kerr.InvalidReplicaAssignment, "every replica of %v is fenced or shutting down", reps)
	}
	part.Leader = part.ISR[0]
	return part, nil
}

// place spreads replicas over the alive brokers: brokers are listed
// alternating racks (rack a's first, rack b's first, ..., rack a's second),
// partition i's leader is the broker at (seed+i) in that list, and its
// followers are taken walking the list from there, preferring brokers on
// racks the partition does not use yet. The seed is a hash of the topic name,
// so leaders of different topics start on different brokers, and placement is
// deterministic (and testable) for a given image.
func (p *planner) place(spec TopicSpec) ([][]int32, error) {
	if spec.Partitions < 1 {
		return nil, kerrf(kerr.InvalidPartitions, "%d partitions", spec.Partitions)
	}
	alive := rackAlternated(p.im)
	rf := int(spec.ReplicationFactor)
	if rf < 1 || rf > len(alive) {
		return nil, kerrf(kerr.InvalidReplicationFactor, "replication factor %d with %d alive brokers", rf, len(alive))
	}
	h := fnv.New32a()
	h.Write([]byte(spec.Name))
	seed := int(h.Sum32() % uint32(len(alive)))
	n := len(alive)
	out := make([][]int32, spec.Partitions)
	for i := range out {
		start := (seed + i) % n
		shift := 0
		if n > 1 {
			shift = (i / n) % (n - 1)
		}
		reps := []int32{alive[start].ID}
		racks := map[string]bool{alive[start].Rack: true}
		// Two passes over the walk: new racks first, then anyone unused.
		for pass := 0; pass < 2 && len(reps) < rf; pass++ {
			for k := 1; k < n && len(reps) < rf; k++ {
				b := alive[(start+1+(shift+k-1)%(n-1))%n]
				if slices.Contains(reps, b.ID) || (pass == 0 && racks[b.Rack]) {
					continue
				}
				reps = append(reps, b.ID)
				racks[b.Rack] = true
			}
		}
		out[i] = reps
	}
	return out, nil
}

// rackAlternated lists the alive brokers alternating between racks (sorted
// by rack name, brokers by id within a rack; no rack counts as rack "").
func rackAlternated(im *Image) []*Broker {
	byRack := map[string][]*Broker{}
	var racks []string
	for _, id := range im.SortedBrokers() {
		b := im.Brokers[id]
		if !b.Alive() {
			continue
		}
		if _, ok := byRack[b.Rack]; !ok {
			racks = append(racks, b.Rack)
		}
		byRack[b.Rack] = append(byRack[b.Rack], b)
	}
	sort.Strings(racks)
	var out []*Broker
	for i := 0; ; i++ {
		added := false
		for _, r := range racks {
			if i < len(byRack[r]) {
				out = append(out, byRack[r][i])
				added = true
			}
		}
		if !added {
			return out
		}
	}
}

func validateTopicName(name string) error {
	if name == "" || name == "." || name == ".." || len(name) > MaxTopicNameLen {
		return kerrf(kerr.InvalidTopicException, "topic name %q", name)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return kerrf(kerr.InvalidTopicException, "topic name %q: only [a-zA-Z0-9._-]", name)
		}
	}
	return nil
}
