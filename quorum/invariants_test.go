package quorum

import (
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
		im.topicsByID[id] = "t"
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
