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
