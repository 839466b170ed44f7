package quorum

import (
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// MaxNewPartitionsPerRequest bounds the partitions one CreateTopics or
// CreatePartitions command may add in all (Kafka's controller refuses more
// records per user operation than this with POLICY_VIOLATION). A node may
// set a lower bound (sluice.max.partitions.per.request).
const MaxNewPartitionsPerRequest = 10000

// CmdCreatePartitions names CreatePartitions on the wire.
const CmdCreatePartitions CommandType = "create_partitions"

// TypeAddPartitions is the record of CreatePartitions; part of the on-disk
// format.
const TypeAddPartitions RecordType = "add_partitions"

// PartitionsSpec asks for a topic to have Count partitions in all. With
// Assignments, it lists the replicas of each new partition (Count minus the
// current count of them, each as long as the topic's replication factor);
// without, the controller places them over the alive brokers as
// CreateTopics does.
type PartitionsSpec struct {
	Name        string    `json:"name"`
	Count       int32     `json:"count"`
	Assignments [][]int32 `json:"assignments,omitempty"`
}

// CreatePartitions adds partitions to existing topics (Kafka's
// CreatePartitions: the count only grows). Each topic succeeds or fails on
// its own. Reply: *TopicsReply.
type CreatePartitions struct {
	Topics []PartitionsSpec `json:"topics"`
}

func (*CreatePartitions) CommandType() CommandType { return CmdCreatePartitions }
func (*CreatePartitions) newReply() any            { return &TopicsReply{} }

// AddPartitionsRecord appends partitions First, First+1, ... to a topic.
// First must be the topic's current partition count, so a duplicated or
// stale record does not replay.
type AddPartitionsRecord struct {
	TopicID    UUID        `json:"topic_id"`
	First      int32       `json:"first"`
	Partitions []Partition `json:"partitions"`
}

func (*AddPartitionsRecord) Type() RecordType { return TypeAddPartitions }

func (r *AddPartitionsRecord) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "add-partitions %s first=%d count=%d", r.TopicID, r.First, len(r.Partitions))
	for i, p := range r.Partitions {
		fmt.Fprintf(&b, "\n  %d: %s", int(r.First)+i, p.String())
	}
	return b.String()
}

// replayAddPartitions applies an AddPartitionsRecord (called by Replay).
func (im *Image) replayAddPartitions(r *AddPartitionsRecord) error {
	t := im.TopicByID(r.TopicID)
	if t == nil {
		return stale(r, "no topic id %s", r.TopicID)
	}
	if int(r.First) != len(t.Partitions) {
		return stale(r, "topic %s has %d partitions, the record adds from %d", t.Name, len(t.Partitions), r.First)
	}
	for _, p := range r.Partitions {
		t.Partitions = append(t.Partitions, p.clone())
		im.idx.add(t, int32(len(t.Partitions)-1))
	}
	return nil
}

func (p *planner) createPartitions(c *CreatePartitions) ([]Record, any, error) {
	total := 0
	for _, s := range c.Topics {
		if t := p.im.Topics[s.Name]; t != nil && int(s.Count) > len(t.Partitions) {
			total += int(s.Count) - len(t.Partitions)
		}
	}
	reply := &TopicsReply{}
	var recs []Record
	seen := map[string]bool{}
	for _, s := range c.Topics {
		res := TopicResult{Name: s.Name}
		var rec *AddPartitionsRecord
		var err error
		switch {
		case seen[s.Name]:
			err = kerrf(kerr.InvalidRequest, "topic %q is named twice", s.Name)
		case total > MaxNewPartitionsPerRequest:
			err = tooManyPartitions(total, MaxNewPartitionsPerRequest)
		default:
			rec, err = p.addPartitions(s)
		}
		seen[s.Name] = true
		if t := p.im.Topics[s.Name]; t != nil {
			res.ID = t.ID
		}
		if err != nil {
			res.Code, res.Message = ErrorCode(err), err.Error()
		} else {
			recs = append(recs, rec)
		}
		reply.Topics = append(reply.Topics, res)
	}
	return recs, reply, nil
}

// tooManyPartitions is the POLICY_VIOLATION of a request that adds total
// partitions, more than limit; the message says what to do instead.
func tooManyPartitions(total, limit int) error {
	return kerrf(kerr.PolicyViolation, "the request adds %d partitions in all, more than the %d allowed in one request: "+
		"create fewer topics per request, or create a bigger topic with at most %d partitions and grow it with CreatePartitions "+
		"(sluice topics alter --partitions) in steps of at most %d", total, limit, limit, limit)
}

func (p *planner) addPartitions(s PartitionsSpec) (*AddPartitionsRecord, error) {
	t := p.im.Topics[s.Name]
	if t == nil {
		return nil, kerrf(kerr.UnknownTopicOrPartition, "topic %q does not exist", s.Name)
	}
	have := int32(len(t.Partitions))
	switch {
	case s.Count < have:
		return nil, kerrf(kerr.InvalidPartitions, "topic %s has %d partitions, more than the %d asked for: partitions can only be added", s.Name, have, s.Count)
	case s.Count == have:
		return nil, kerrf(kerr.InvalidPartitions, "topic %s already has %d partitions", s.Name, have)
	}
	rf := 1
	if have > 0 {
		rf = len(t.Partitions[0].Replicas)
	}
	assign := s.Assignments
	if assign != nil {
		if len(assign) != int(s.Count-have) {
			return nil, kerrf(kerr.InvalidReplicaAssignment, "%d assignments for %d new partitions of %s", len(assign), s.Count-have, s.Name)
		}
		for i, reps := range assign {
			if len(reps) != rf {
				return nil, kerrf(kerr.InvalidReplicaAssignment, "new partition %d of %s has %d replicas, the topic's replication factor is %d", int(have)+i, s.Name, len(reps), rf)
			}
		}
	} else {
		// Place the whole topic as CreateTopics would and keep the new
		// tail: with the same brokers alive, the new partitions continue
		// the topic's rotation of leaders.
		all, err := p.place(TopicSpec{Name: s.Name, Partitions: s.Count, ReplicationFactor: int16(rf)})
		if err != nil {
			return nil, err
		}
		assign = all[have:]
	}
	rec := &AddPartitionsRecord{TopicID: t.ID, First: have}
	for _, reps := range assign {
		part, err := p.initialPartition(slices.Clone(reps))
		if err != nil {
			return nil, err
		}
		rec.Partitions = append(rec.Partitions, part)
	}
	return rec, nil
}
