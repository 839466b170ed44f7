package partition

import "testing"

// BenchmarkLeaderRound is the leader's hot path for one produce batch with
// RF=3 and acks=all: LocalAppend, two follower fetches that acknowledge it,
// and the Ready/Advance that completes it.
func BenchmarkLeaderRound(b *testing.B) {
	l := &fakeLog{}
	r, err := New(Config{ID: 1, MinInsyncReplicas: 2, LagTicks: 100}, l, LogState{})
	if err != nil {
		b.Fatal(err)
	}
	if err := r.Step(BecomeLeader{LeaderEpoch: 1, ISR: []int32{1, 2, 3}, Replicas: []int32{1, 2, 3}}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		off := int64(i)
		_ = r.Step(LocalAppend{ReqID: uint64(i), LastOffset: off, Acks: AcksAll, Deadline: 1 << 40})
		for _, id := range []int32{2, 3} {
			_ = r.Step(FollowerFetch{ReqID: uint64(i), Replica: id, BrokerEpoch: 1, FetchOffset: off + 1, LastFetchedEpoch: UndefinedEpoch, CurrentLeaderEpoch: 1})
		}
		rd := r.Ready()
		if len(rd.Completed) != 1 {
			b.Fatalf("round %d: %+v", i, rd)
		}
		r.Advance(rd)
	}
}
