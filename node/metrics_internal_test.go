package node

import (
	"testing"

	"github.com/sluice-log/sluice/quorum"
)

// TestISRChanges: only changes that keep this node as leader count; a
// restored image resets the baseline; a removed topic is forgotten.
func TestISRChanges(t *testing.T) {
	const self = 1
	id := quorum.UUID{7}
	var c isrChanges
	step := func(rs ...quorum.Record) { c.apply(quorum.Change{Records: rs}, self) }
	change := func(leader int32, isr ...int32) *quorum.PartitionChangeRecord {
		return &quorum.PartitionChangeRecord{TopicID: id, Partition: 0, Leader: leader, ISR: isr}
	}
	step(&quorum.CreateTopicRecord{Name: "t", ID: id, Partitions: []quorum.Partition{{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1}}})
	step(change(1, 1, 2))    // shrink, led here
	step(change(1, 1))       // shrink
	step(change(1, 1, 3))    // expand
	step(change(2, 2, 3))    // leader moves away: not ours
	step(change(2, 2))       // shrink on another leader
	step(change(1, 1, 2))    // leadership comes back: not an ISR change of ours
	step(change(1, 1, 2, 3)) // expand
	if s, e := c.counts(); s != 2 || e != 2 {
		t.Fatalf("shrinks, expands = %d, %d; want 2, 2", s, e)
	}
	im := quorum.NewImage()
	im.Topics["t"] = &quorum.Topic{Name: "t", ID: id, Partitions: []quorum.Partition{{Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: 1}}}
	c.apply(quorum.Change{Restored: true, Image: im}, self)
	step(change(1, 1, 2)) // expand from the restored ISR of 1
	step(&quorum.RemoveTopicRecord{Name: "t", ID: id})
	step(change(1, 1)) // unknown partition now: no baseline, no count
	if s, e := c.counts(); s != 2 || e != 3 {
		t.Fatalf("after restore and removal: shrinks, expands = %d, %d; want 2, 3", s, e)
	}
}
