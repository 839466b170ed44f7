package quorum

import (
	"fmt"
	"slices"
	"testing"
)

func TestPartitionChangeBuild(t *testing.T) {
	alive := func(ids ...int32) func(int32) bool {
		return func(id int32) bool { return slices.Contains(ids, id) }
	}
	cur := Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1, LeaderEpoch: 5, PartitionEpoch: 9}
	tests := []struct {
		name     string
		cur      Partition
		alive    func(int32) bool
		isr      []int32
		election Election
		want     string // "" means no change
		stale    bool   // StaleIfKept
	}{
		{"nothing changes", cur, alive(1, 2, 3), nil, ElectClean, "", false},
		{"same ISR given", cur, alive(1, 2, 3), []int32{1, 2, 3}, ElectClean, "", false},
		{"shrink keeps leader", cur, alive(1, 2, 3), []int32{1, 3}, ElectClean,
			"leader=1 isr=[1 3] leader-epoch=5 partition-epoch=10", false},
		{"leader not alive moves in replica order", cur, alive(2, 3), []int32{3, 2}, ElectClean,
			"leader=2 isr=[3 2] leader-epoch=6 partition-epoch=10", false},
		{"leader removed from ISR", cur, alive(1, 2, 3), []int32{3, 2}, ElectClean,
			"leader=2 isr=[3 2] leader-epoch=6 partition-epoch=10", false},
		{"no alive ISR member: offline", cur, alive(), []int32{1}, ElectClean,
			"leader=-1 isr=[1] leader-epoch=6 partition-epoch=10", false},
		{"empty target keeps the ISR", Partition{Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 2, PartitionEpoch: 3},
			alive(2), []int32{}, ElectClean, "leader=-1 isr=[1] leader-epoch=3 partition-epoch=4", false},
		{"unclean picks an alive replica outside the ISR", Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{1}, Leader: NoLeader, LeaderEpoch: 2, PartitionEpoch: 3},
			alive(3), nil, ElectUnclean, "leader=3 isr=[3] leader-epoch=3 partition-epoch=4 UNCLEAN(lost-isr=[1])", false},
		{"unclean prefers a clean choice", Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{2, 3}, Leader: NoLeader, LeaderEpoch: 2, PartitionEpoch: 3},
			alive(1, 3), nil, ElectUnclean, "leader=3 isr=[2 3] leader-epoch=3 partition-epoch=4", false},
		{"unclean with nobody alive", Partition{Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: NoLeader, LeaderEpoch: 2, PartitionEpoch: 3},
			alive(), nil, ElectUnclean, "", false},
		{"preferred moves to the first replica", Partition{Replicas: []int32{1, 2}, ISR: []int32{2, 1}, Leader: 2, LeaderEpoch: 2, PartitionEpoch: 3},
			alive(1, 2), nil, ElectPreferred, "leader=1 isr=[2 1] leader-epoch=3 partition-epoch=4", false},
		{"preferred not in ISR keeps the leader", Partition{Replicas: []int32{1, 2}, ISR: []int32{2}, Leader: 2, LeaderEpoch: 2, PartitionEpoch: 3},
			alive(1, 2), nil, ElectPreferred, "", false},
		{"clean does not move to the preferred", Partition{Replicas: []int32{1, 2}, ISR: []int32{2, 1}, Leader: 2, LeaderEpoch: 2, PartitionEpoch: 3},
			alive(1, 2), nil, ElectClean, "", false},
		{"unclean restart of the last member: stale ISR", Partition{Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 2, PartitionEpoch: 3},
			alive(2), []int32{}, ElectClean, "leader=-1 isr=[1] leader-epoch=3 partition-epoch=4 stale", true},
		{"stale ISR is not elected cleanly", Partition{Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: NoLeader, LeaderEpoch: 2, PartitionEpoch: 3, StaleISR: true},
			alive(1, 2), nil, ElectClean, "", false},
		{"stale ISR: unclean election", Partition{Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: NoLeader, LeaderEpoch: 2, PartitionEpoch: 3, StaleISR: true},
			alive(1, 2), nil, ElectUnclean, "leader=1 isr=[1] leader-epoch=3 partition-epoch=4 UNCLEAN(lost-isr=[1])", false},
		{"stale flag is not set when others stay", cur, alive(2, 3), []int32{2, 3}, ElectClean,
			"leader=2 isr=[2 3] leader-epoch=6 partition-epoch=10", true},
		{"a leader whose log dir went offline is not acceptable: leadership moves in the ISR", cur, alive(2, 3), []int32{2, 3}, ElectClean,
			"leader=2 isr=[2 3] leader-epoch=6 partition-epoch=10", false},
		{"a last ISR member with its log dir offline keeps the ISR, no leader", Partition{Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 2, PartitionEpoch: 3},
			alive(2), []int32{}, ElectClean, "leader=-1 isr=[1] leader-epoch=3 partition-epoch=4", false},
		{"offline partition comes back", Partition{Replicas: []int32{1, 2}, ISR: []int32{2}, Leader: NoLeader, LeaderEpoch: 2, PartitionEpoch: 3},
			alive(1, 2), nil, ElectClean, "leader=2 isr=[2] leader-epoch=3 partition-epoch=4", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.cur.clone()
			rec, changed := PartitionChange{Current: tc.cur, Acceptable: tc.alive, TargetISR: tc.isr, Election: tc.election, StaleIfKept: tc.stale}.Build()
			got := ""
			if changed {
				got = fmt.Sprintf("leader=%d isr=%v leader-epoch=%d partition-epoch=%d", rec.Leader, rec.ISR, rec.LeaderEpoch, rec.PartitionEpoch)
				if rec.StaleISR {
					got += " stale"
				}
				if rec.Unclean != nil {
					got += fmt.Sprintf(" UNCLEAN(lost-isr=%v)", rec.Unclean.LostISR)
				}
				next := tc.cur.clone()
				next.Leader, next.ISR, next.LeaderEpoch, next.PartitionEpoch, next.StaleISR = rec.Leader, rec.ISR, rec.LeaderEpoch, rec.PartitionEpoch, rec.StaleISR
				if err := next.check(); err != nil {
					t.Fatalf("result breaks an invariant: %v", err)
				}
			}
			if got != tc.want {
				t.Fatalf("got  %q\nwant %q", got, tc.want)
			}
			if fmt.Sprint(before) != fmt.Sprint(tc.cur) {
				t.Fatalf("Build changed its input")
			}
		})
	}
}

func TestEntryRoundTrip(t *testing.T) {
	recs := []Record{
		&ClusterIDRecord{ClusterID: "c"},
		&RegisterBrokerRecord{ID: 1, Epoch: 2, Endpoints: []Endpoint{{Name: "PLAINTEXT", Host: "h", Port: 9092}}, Rack: "r"},
		&CreateTopicRecord{Name: "t", ID: NewUUID(), Partitions: []Partition{{Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}}},
		&PartitionChangeRecord{TopicID: NewUUID(), Leader: NoLeader, ISR: []int32{1}, Unclean: &UncleanElection{Leader: 2}},
		&ProducerIDsRecord{BrokerID: 1, Start: 5, Len: 7},
	}
	b, err := EncodeEntry(recs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeEntry(b)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(recs) {
		t.Fatalf("round trip:\n%v\n%v", got, recs)
	}
	for _, bad := range []string{`{"v":2,"records":[]}`, `{"v":1,"records":[{"type":"nope","data":{}}]}`, `xx`} {
		if _, err := DecodeEntry([]byte(bad)); err == nil {
			t.Errorf("%s decoded", bad)
		}
	}
	u := NewUUID()
	if v, err := ParseUUID(u.String()); err != nil || v != u {
		t.Fatalf("uuid round trip %v %v", v, err)
	}
}

func TestChangeTouched(t *testing.T) {
	a, b := NewUUID(), NewUUID()
	ch := Change{Records: []Record{
		&CreateTopicRecord{Name: "a", ID: a, Partitions: make([]Partition, 2)},
		&FenceBrokerRecord{ID: 1},
		&PartitionChangeRecord{TopicID: b, Partition: 3},
		&RemoveTopicRecord{Name: "b", ID: b},
	}}
	parts, removed := ch.Touched()
	want := []PartitionRef{{a, 0}, {a, 1}, {b, 3}}
	if !slices.Equal(parts, want) || !slices.Equal(removed, []UUID{b}) {
		t.Fatalf("%v %v", parts, removed)
	}
}

// TestPartitionChangeReassignment covers the reassignment rules of the
// builder: a new assignment, completion when the adding replicas are in
// the ISR, the leader moving off a removed replica, cancellation.
func TestPartitionChangeReassignment(t *testing.T) {
	all := func(int32) bool { return true }
	moving := Partition{Replicas: []int32{2, 3, 4, 1}, AddingReplicas: []int32{4}, RemovingReplicas: []int32{1},
		ISR: []int32{1, 2, 3}, Leader: 1, LeaderEpoch: 5, PartitionEpoch: 9}
	tests := []struct {
		name string
		pc   PartitionChange
		want string // "" means no change
	}{
		{"start: replicas are the target then the removing",
			PartitionChange{Current: Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1, LeaderEpoch: 5, PartitionEpoch: 9},
				Acceptable: all, Assignment: reassignment([]int32{1, 2, 3}, []int32{2, 3, 4})},
			"leader=1 isr=[1 2 3] epochs=5/10 replicas=[2 3 4 1] adding=[4] removing=[1]"},
		{"an ISR change without the adding replica does not complete",
			PartitionChange{Current: moving, Acceptable: all, TargetISR: []int32{1, 2}},
			"leader=1 isr=[1 2] epochs=5/10"},
		{"the adding replica joins: complete, leader off the removed replica",
			PartitionChange{Current: moving, Acceptable: all, TargetISR: []int32{1, 2, 3, 4}},
			"leader=2 isr=[2 3 4] epochs=6/10 replicas=[2 3 4]"},
		{"completion elects in target order among acceptable ISR members",
			PartitionChange{Current: moving, Acceptable: func(id int32) bool { return id != 2 }, TargetISR: []int32{1, 2, 3, 4}},
			"leader=3 isr=[2 3 4] epochs=6/10 replicas=[2 3 4]"},
		{"an ISR of only removing replicas does not complete",
			PartitionChange{Current: Partition{Replicas: []int32{2, 1}, AddingReplicas: []int32{2}, RemovingReplicas: []int32{1},
				ISR: []int32{1}, Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1}, Acceptable: all, TargetISR: []int32{1}},
			""},
		{"cancel: the original set, adding replicas out of the ISR",
			PartitionChange{Current: Partition{Replicas: []int32{2, 3, 4, 1}, AddingReplicas: []int32{4}, RemovingReplicas: []int32{1},
				ISR: []int32{4, 1, 2}, Leader: 4, LeaderEpoch: 5, PartitionEpoch: 9},
				Acceptable: all, Assignment: &Assignment{Replicas: []int32{1, 2, 3}}},
			"leader=1 isr=[1 2] epochs=6/10 replicas=[1 2 3]"},
		{"a fence during the move keeps the reassignment",
			PartitionChange{Current: moving, Acceptable: func(id int32) bool { return id != 1 }, TargetISR: []int32{2, 3}},
			"leader=2 isr=[2 3] epochs=6/10"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec, changed := tc.pc.Build()
			got := ""
			if changed {
				got = fmt.Sprintf("leader=%d isr=%v epochs=%d/%d", rec.Leader, rec.ISR, rec.LeaderEpoch, rec.PartitionEpoch)
				if rec.Assignment != nil {
					got += " " + rec.Assignment.String()
				}
				next := tc.pc.Current.clone()
				next.apply(rec)
				if err := next.check(); err != nil {
					t.Fatalf("result breaks an invariant: %v: %s", err, next)
				}
			}
			if got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}
