package kafka

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// fakeAdmin is a FAKE TopicAdmin over fakeBroker's in-memory metadata (the
// controller does not exist yet): it creates topics with every partition
// led by broker 1 and deletes them, refusing what a controller would
// (existing names, more replicas than brokers, unknown topics), and records
// what the server passed it.
type fakeAdmin struct {
	*fakeBroker
	created [][]NewTopic
	deleted [][]TopicRef
	nextID  byte
}

func (f *fakeAdmin) CreateTopics(_ context.Context, topics []NewTopic, validateOnly bool) ([]CreatedTopic, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.created = append(f.created, topics)
	out := make([]CreatedTopic, len(topics))
	for i, nt := range topics {
		res := &out[i]
		res.NumPartitions, res.ReplicationFactor = -1, -1
		if f.topicLocked(TopicRef{Name: nt.Name}) != nil {
			res.Err, res.ErrMessage = kerr.TopicAlreadyExists, fmt.Sprintf("Topic '%s' already exists.", nt.Name)
			continue
		}
		parts, rf := nt.NumPartitions, int(nt.ReplicationFactor)
		if parts == -1 {
			parts = 1
		}
		if rf == -1 {
			rf = 1
		}
		if nt.Assignment != nil {
			parts, rf = int32(len(nt.Assignment)), len(nt.Assignment[0])
		}
		if parts > 10_000 {
			// Kafka's controller refuses more than 10,000 records per
			// request (MAX_RECORDS_PER_USER_OP); so does the fake.
			res.Err, res.ErrMessage = kerr.PolicyViolation, "Excessively large number of partitions per request."
			continue
		}
		if rf > len(f.md.Brokers) {
			res.Err = kerr.InvalidReplicationFactor
			res.ErrMessage = fmt.Sprintf("Unable to replicate the partition %d time(s): The target replication factor of %d cannot be reached because only %d broker(s) are registered.", rf, rf, len(f.md.Brokers))
			continue
		}
		f.nextID++
		res.ID = TopicID{0xc0, f.nextID}
		res.NumPartitions, res.ReplicationFactor = parts, int16(rf)
		if validateOnly {
			continue
		}
		t := TopicMetadata{Name: nt.Name, ID: res.ID}
		for p := int32(0); p < parts; p++ {
			replicas := []int32{1, 2}[:rf]
			t.Partitions = append(t.Partitions, PartitionMetadata{Partition: p, Leader: 1, Replicas: replicas, ISR: replicas})
		}
		f.md.Topics = append(f.md.Topics, t)
	}
	return out, nil
}

func (f *fakeAdmin) DeleteTopics(_ context.Context, refs []TopicRef) ([]DeletedTopic, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleted = append(f.deleted, refs)
	out := make([]DeletedTopic, len(refs))
	for i, ref := range refs {
		t := f.topicLocked(ref)
		switch {
		case t == nil && ref.ID != (TopicID{}):
			out[i] = DeletedTopic{ID: ref.ID, Err: kerr.UnknownTopicID}
		case t == nil:
			out[i] = DeletedTopic{Name: ref.Name, Err: kerr.UnknownTopicOrPartition}
		default:
			out[i] = DeletedTopic{Name: t.Name, ID: t.ID}
			name := t.Name
			kept := f.md.Topics[:0:0]
			for _, mt := range f.md.Topics {
				if mt.Name != name {
					kept = append(kept, mt)
				}
			}
			f.md.Topics = kept
		}
	}
	return out, nil
}

func (f *fakeAdmin) topicLocked(ref TopicRef) *TopicMetadata {
	for i := range f.md.Topics {
		t := &f.md.Topics[i]
		if ref.ID != (TopicID{}) && t.ID == ref.ID || ref.ID == (TopicID{}) && t.Name == ref.Name {
			return t
		}
	}
	return nil
}

func startAdminServer(t *testing.T, opts Options) (*testServer, *fakeAdmin) {
	t.Helper()
	var admin *fakeAdmin
	ts := startServerWith(t, opts, func(fb *fakeBroker) Broker {
		admin = &fakeAdmin{fakeBroker: fb}
		return admin
	})
	return ts, admin
}
