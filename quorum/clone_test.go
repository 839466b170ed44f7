package quorum

import "testing"

// TestTopicCloneSharesNothing: a reader copies a topic out of View with
// Topic.Clone and keeps it while Replay changes the image.
func TestTopicCloneSharesNothing(t *testing.T) {
	orig := &Topic{Name: "t", ID: NewUUID(), Configs: map[string]string{"k": "v"}, Partitions: []Partition{{
		Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1, AddingReplicas: []int32{2}, RemovingReplicas: []int32{3},
		UncleanElections: []UncleanElection{{LeaderEpoch: 1, Leader: 2, LostISR: []int32{1}}},
	}}}
	c := orig.Clone()
	orig.Configs["k"] = "changed"
	p := &orig.Partitions[0]
	p.Replicas[0], p.ISR[0], p.AddingReplicas[0], p.RemovingReplicas[0] = 9, 9, 9, 9
	p.UncleanElections[0].LostISR[0] = 9
	orig.Partitions[0].Leader = 9
	q := c.Partitions[0]
	if c.Configs["k"] != "v" || q.Replicas[0] != 1 || q.ISR[0] != 1 || q.AddingReplicas[0] != 2 ||
		q.RemovingReplicas[0] != 3 || q.UncleanElections[0].LostISR[0] != 1 || q.Leader != 1 || c.Name != "t" || c.ID != orig.ID {
		t.Fatalf("the clone shares state with the original: %+v", c)
	}
}
