package quorum

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// setup replays a list of commands into a fresh harness image.
func setup(t *testing.T, cmds ...Command) *harness {
	t.Helper()
	h := newHarness()
	for _, cmd := range cmds {
		recs, _, err := Plan(h.im, h.pol, cmd)
		if err != nil {
			t.Fatalf("%T: %v", cmd, err)
		}
		for _, r := range recs {
			if err := h.im.Replay(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	return h
}

func TestAlterPartitionsBatch(t *testing.T) {
	h := setup(t,
		&RegisterBroker{ID: 1}, &RegisterBroker{ID: 2}, &RegisterBroker{ID: 3},
		&UnfenceBroker{ID: 1, Epoch: AnyEpoch}, &UnfenceBroker{ID: 2, Epoch: AnyEpoch}, &UnfenceBroker{ID: 3, Epoch: AnyEpoch},
		&CreateTopics{Topics: []TopicSpec{{Name: "t", Assignments: [][]int32{{1, 2, 3}, {1, 3, 2}, {2, 1, 3}}}}},
	)
	id := h.im.Topics["t"].ID
	isr := func(ids ...int32) []ISRMember {
		var m []ISRMember
		for _, i := range ids {
			m = append(m, ISRMember{ID: i, Epoch: AnyEpoch})
		}
		return m
	}
	cmd := &AlterPartitions{BrokerID: 1, BrokerEpoch: 1, Partitions: []AlterPartitionItem{
		{TopicID: id, Partition: 0, NewISR: isr(1, 2)},
		{TopicID: id, Partition: 1, NewISR: isr(1)},
		{TopicID: id, Partition: 2, NewISR: isr(2, 1)},  // 1 does not lead it
		{TopicID: id, Partition: 0, NewISR: isr(1)},     // repeated
		{TopicID: id, Partition: 9, NewISR: isr(1)},     // unknown
		{TopicID: NewUUID(), Partition: 0, NewISR: nil}, // unknown topic
	}}
	recs, reply, err := Plan(h.im, h.pol, cmd)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 {
		t.Fatalf("%d records: %v", len(recs), recs)
	}
	want := []int16{0, 0, kerr.NotLeaderForPartition.Code, kerr.InvalidRequest.Code, kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicID.Code}
	for i, r := range reply.(*AlterPartitionsReply).Partitions {
		if r.Code != want[i] {
			t.Errorf("item %d: code %d (%s), want %d", i, r.Code, r.Message, want[i])
		}
	}
	if st := reply.(*AlterPartitionsReply).Partitions[1].State; st == nil || st.PartitionEpoch != 1 || len(st.ISR) != 1 {
		t.Fatalf("state %+v", st)
	}
	// A stale sender epoch fails the whole command.
	cmd.BrokerEpoch = 7
	if _, _, err := Plan(h.im, h.pol, cmd); !errors.Is(err, kerr.StaleBrokerEpoch) {
		t.Fatalf("stale sender: %v", err)
	}
}

// TestPartitionsPerRequestCap: CreateTopics, like CreatePartitions, refuses
// a command that adds more than MaxNewPartitionsPerRequest partitions in
// all, every topic with POLICY_VIOLATION and nothing written; one at the
// limit is planned.
func TestPartitionsPerRequestCap(t *testing.T) {
	h := setup(t, &RegisterBroker{ID: 1}, &UnfenceBroker{ID: 1, Epoch: AnyEpoch})
	half := int32(MaxNewPartitionsPerRequest / 2)
	over := &CreateTopics{Topics: []TopicSpec{{Name: "a", Partitions: half, ReplicationFactor: 1}, {Name: "b", Partitions: half + 1, ReplicationFactor: 1}}}
	recs, reply, err := Plan(h.im, h.pol, over)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 0 {
		t.Fatalf("%d records planned for %d partitions", len(recs), 2*half+1)
	}
	for _, r := range reply.(*TopicsReply).Topics {
		if r.Code != kerr.PolicyViolation.Code {
			t.Errorf("topic %s: code %d (%s), want POLICY_VIOLATION", r.Name, r.Code, r.Message)
		}
	}
	at := &CreateTopics{Topics: []TopicSpec{{Name: "a", Partitions: half, ReplicationFactor: 1}, {Name: "b", Partitions: half, ReplicationFactor: 1}}}
	if recs, _, err := Plan(h.im, h.pol, at); err != nil || len(recs) != 2 {
		t.Fatalf("at the limit: %d records, %v", len(recs), err)
	}
}
