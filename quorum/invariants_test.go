package quorum

import (
	"slices"
	"strings"
	"testing"
)

// CheckInvariants must report a broken image, not just pass good ones:
// each case takes a valid image (brokers 1–3, topic t with one partition:
// replicas 1,2,3, ISR 1,2, leader 1), breaks one invariant and expects its
// report.
func TestCheckInvariantsReportsBadImages(t *testing.T) {
	id := UUID{1}
	valid := func() *Image {
		im := NewImage()
		for b := int32(1); b <= 3; b++ {
			im.Brokers[b] = &Broker{ID: b, Epoch: int64(b)}
		}
		im.LastBrokerEpoch = 3
		im.Topics["t"] = &Topic{Name: "t", ID: id, Partitions: []Partition{
			{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 1, PartitionEpoch: 2},
		}}
		im.reindex()
		return im
	}
	if err := valid().CheckInvariants(); err != nil {
		t.Fatalf("a valid image: %v", err)
	}
	part := func(im *Image) *Partition { return &im.Topics["t"].Partitions[0] }
	for _, c := range []struct {
		name string
		bad  func(im *Image)
		want string
	}{
		{"topic id index out of step", func(im *Image) { delete(im.topicsByID, id) }, "topic ids for"},
		{"topic id of another name", func(im *Image) { im.topicsByID = map[UUID]string{id: "u"} }, `topic "t"`},
		{"zero topic id", func(im *Image) { im.Topics["t"].ID = UUID{}; im.topicsByID = map[UUID]string{{}: "t"} }, `topic "t"`},
		{"broker under another id", func(im *Image) { im.Brokers[2].ID = 5 }, "broker 2"},
		{"broker epoch past the last", func(im *Image) { im.Brokers[3].Epoch = 4 }, "broker 3"},
		{"broker epoch zero", func(im *Image) { im.Brokers[1].Epoch = 0 }, "broker 1"},
		{"empty isr with a leader", func(im *Image) { part(im).ISR = nil }, "empty ISR with leader"},
		{"empty replicas", func(im *Image) { part(im).Replicas = nil }, "empty replicas"},
		{"elr member in the isr", func(im *Image) { part(im).ELR = []int32{2} }, "ELR member 2"},
		{"elr member not a replica", func(im *Image) { part(im).ELR = []int32{4} }, "ELR member 4"},
		{"last-known elr member in the elr", func(im *Image) {
			p := part(im)
			p.ISR, p.ELR, p.LastKnownELR = []int32{1}, []int32{2}, []int32{2}
		}, "last-known ELR member 2"},
		{"repeated replica", func(im *Image) { part(im).Replicas = []int32{1, 2, 2} }, "replica 2 repeated"},
		{"isr member not a replica", func(im *Image) { part(im).ISR = []int32{1, 4} }, "ISR member 4"},
		{"repeated isr member", func(im *Image) { part(im).ISR = []int32{1, 1} }, "ISR member 1"},
		{"leader outside the isr", func(im *Image) { part(im).Leader = 3 }, "leader 3 not in ISR"},
		{"stale isr with a leader", func(im *Image) { part(im).StaleISR, part(im).ISR = true, []int32{1} }, "stale ISR"},
		{"replica index out of step", func(im *Image) { delete(im.idx.hosts, 3) }, "index of replicas"},
		{"leader index out of step", func(im *Image) { part(im).Leader = 2 }, "index of leaders"},
		{"offline index out of step", func(im *Image) { im.idx.offline.add(1, 0) }, "offline partitions"},
		{"topic numbered twice", func(im *Image) { im.idx.bySeq[2] = im.Topics["t"] }, "topics indexed"},
		{"partition epoch below leader epoch", func(im *Image) { part(im).PartitionEpoch = 0 }, "epochs"},
	} {
		t.Run(c.name, func(t *testing.T) {
			im := valid()
			c.bad(im)
			if err := im.CheckInvariants(); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("CheckInvariants = %v, want an error containing %q", err, c.want)
			}
		})
	}
}

// TestIndexFollowsChanges: through creates, fences, unfences,
// reassignments, added partitions, deletes and clones, the partition
// indexes agree with a scan (CheckInvariants), and the accessors count
// what a scan counts.
func TestIndexFollowsChanges(t *testing.T) {
	h := newHarness()
	planEntries(h, []Command{
		&RegisterBroker{ID: 1}, &RegisterBroker{ID: 2}, &RegisterBroker{ID: 3}, &RegisterBroker{ID: 4},
		&UnfenceBroker{ID: 1, Epoch: AnyEpoch}, &UnfenceBroker{ID: 2, Epoch: AnyEpoch},
		&UnfenceBroker{ID: 3, Epoch: AnyEpoch}, &UnfenceBroker{ID: 4, Epoch: AnyEpoch},
		&CreateTopics{Topics: []TopicSpec{{Name: "a", Partitions: 8, ReplicationFactor: 3}, {Name: "b", Partitions: 5, ReplicationFactor: 1}}},
	})
	check := func(step string, im *Image) {
		t.Helper()
		if err := im.CheckInvariants(); err != nil {
			t.Fatalf("after %s: %v", step, err)
		}
		for _, b := range []int32{1, 2, 3, 4, 5} {
			on, led, seen := 0, 0, 0
			for _, tp := range im.Topics {
				for _, p := range tp.Partitions {
					if slices.Contains(p.Replicas, b) {
						on++
					}
					if p.Leader == b {
						led++
					}
				}
			}
			im.EachPartitionLedBy(b, func(_ *Topic, _ int32, p *Partition) {
				if p.Leader != b {
					t.Fatalf("after %s: broker %d listed as the leader of %s", step, b, p)
				}
				seen++
			})
			if on != im.PartitionsOn(b) || led != im.PartitionsLedBy(b) || seen != led {
				t.Fatalf("after %s: broker %d hosts %d (index %d), leads %d (index %d, listed %d)", step, b, on, im.PartitionsOn(b), led, im.PartitionsLedBy(b), seen)
			}
		}
	}
	check("create", h.im)
	steps := []struct {
		name string
		cmd  Command
	}{
		{"fence 1", &FenceBroker{ID: 1, Epoch: AnyEpoch}},
		{"fence 2", &FenceBroker{ID: 2, Epoch: AnyEpoch}},
		{"reassign", &AlterPartitionReassignments{Partitions: []ReassignmentSpec{{Topic: "b", Partition: 0, Replicas: []int32{3, 4}}}}},
		{"add partitions", &CreatePartitions{Topics: []PartitionsSpec{{Name: "a", Count: 12}}}},
		{"unfence 1", &UnfenceBroker{ID: 1, Epoch: AnyEpoch}},
		{"shutdown 3", &ControlledShutdown{ID: 3, Epoch: AnyEpoch}},
		{"re-register 2", &RegisterBroker{ID: 2}},
		{"unfence 2", &UnfenceBroker{ID: 2, Epoch: AnyEpoch}},
		{"delete b", &DeleteTopics{Names: []string{"b"}}},
		{"recreate b", &CreateTopics{Topics: []TopicSpec{{Name: "b", Partitions: 3, ReplicationFactor: 2}}}},
	}
	for _, s := range steps {
		before := h.im.Clone()
		planEntries(h, []Command{s.cmd})
		check(s.name, h.im)
		check(s.name+" (the clone taken before)", before)
	}
	offline := 0
	for _, tp := range h.im.Topics {
		for _, p := range tp.Partitions {
			if p.Leader == NoLeader {
				offline++
			}
		}
	}
	if offline == 0 || h.im.OfflinePartitions() != offline {
		t.Fatalf("%d offline partitions indexed, %d in a scan (the shut down broker 3 leaves some)", h.im.OfflinePartitions(), offline)
	}
}
