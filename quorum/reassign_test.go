package quorum

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestReassignmentOldRecordsLoad: entries and snapshots written before
// reassignment (no assignment, no adding or removing replicas) decode and
// replay as before, keeping the replicas.
func TestReassignmentOldRecordsLoad(t *testing.T) {
	h := setup(t, &RegisterBroker{ID: 1}, &UnfenceBroker{ID: 1, Epoch: AnyEpoch},
		&CreateTopics{Topics: []TopicSpec{{Name: "t", Assignments: [][]int32{{1}}}}})
	id := h.im.Topics["t"].ID
	old := `{"v":1,"records":[{"type":"partition_change","data":{"topic_id":"` + id.String() +
		`","partition":0,"leader":1,"isr":[1],"leader_epoch":1,"partition_epoch":1}}]}`
	recs, err := DecodeEntry([]byte(old))
	if err != nil {
		t.Fatal(err)
	}
	if a := recs[0].(*PartitionChangeRecord).Assignment; a != nil {
		t.Fatalf("old record decoded with an assignment %v", a)
	}
	if err := h.im.Replay(recs[0]); err != nil {
		t.Fatal(err)
	}
	p := h.im.Topics["t"].Partitions[0]
	if !slices.Equal(p.Replicas, []int32{1}) || p.Reassigning() {
		t.Fatalf("partition after an old record: %s", p)
	}
	snap := `{"replicas":[1,2],"isr":[1],"leader":1,"leader_epoch":0,"partition_epoch":0}`
	var q Partition
	if err := json.Unmarshal([]byte(snap), &q); err != nil {
		t.Fatal(err)
	}
	if q.Reassigning() || !slices.Equal(q.TargetReplicas(), []int32{1, 2}) || q.check() != nil {
		t.Fatalf("old snapshot partition: %s", q)
	}
}
