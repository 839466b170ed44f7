package quorum

import "testing"

// TestPreferredReadReplica: KIP-392's rack-aware selection over the
// image — the leader unless another alive in-sync replica is in the
// consumer's rack.
func TestPreferredReadReplica(t *testing.T) {
	im := NewImage()
	for id, rack := range map[int32]string{1: "a", 2: "b", 3: "c", 4: "c", 5: ""} {
		im.Brokers[id] = &Broker{ID: id, Rack: rack}
	}
	im.Brokers[4].Fenced = true
	for _, tc := range []struct {
		name string
		part Partition
		rack string
		want int32
	}{
		{name: "no client rack", part: Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1}, rack: "", want: 1},
		{name: "leader in the rack", part: Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1}, rack: "a", want: 1},
		{name: "follower in the rack", part: Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1}, rack: "b", want: 2},
		{name: "follower out of the ISR", part: Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 3}, Leader: 1}, rack: "b", want: 1},
		{name: "fenced follower skipped", part: Partition{Replicas: []int32{1, 4, 3}, ISR: []int32{1, 4, 3}, Leader: 1}, rack: "c", want: 3},
		{name: "no replica in the rack", part: Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 2}, rack: "z", want: 2},
		{name: "offline partition", part: Partition{Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: NoLeader}, rack: "b", want: NoLeader},
		{name: "unregistered replica", part: Partition{Replicas: []int32{1, 9}, ISR: []int32{1, 9}, Leader: 1}, rack: "", want: 1},
	} {
		if got := im.PreferredReadReplica(&tc.part, tc.rack); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	if im.BrokerRack(2) != "b" || im.BrokerRack(5) != "" || im.BrokerRack(9) != "" {
		t.Error("BrokerRack")
	}
}
