package group

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// benchShard is a loaded shard with n groups of members members each
// (Stable), every group with offsets for 6 partitions of one topic.
func benchShard(b testing.TB, n, members int) (*Shard, [][]string) {
	s := NewShard(0, testConfig())
	s.LoadDone(t0)
	ids := make([][]string, n)
	for i := range n {
		g := fmt.Sprintf("group-%05d", i)
		for j := range members {
			req := kmsg.NewPtrJoinGroupRequest()
			req.Version, req.Group, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 3, g, 30000, 30000
			req.ProtocolType = "consumer"
			meta := kmsg.NewConsumerMemberMetadata()
			meta.Topics = []string{"topic"}
			p := kmsg.NewJoinGroupRequestProtocol()
			p.Name, p.Metadata = "range", meta.AppendTo(nil)
			req.Protocols = append(req.Protocols, p)
			s.Step(t0, Request{ID: 1, ClientID: fmt.Sprintf("c%d", j), Body: req})
		}
		rd := s.Ready()
		var leader string
		for _, r := range rd.Responses {
			jr := r.Body.(*kmsg.JoinGroupResponse)
			ids[i] = append(ids[i], jr.MemberID)
			leader = jr.LeaderID
		}
		if len(ids[i]) != members {
			// The first member completes its own generation at once; the
			// others join the next: rejoin everyone.
			ids[i] = ids[i][:0]
			for _, id := range s.groups[g].sortedMembers() {
				req := kmsg.NewPtrJoinGroupRequest()
				req.Version, req.Group, req.MemberID, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 3, g, id.id, 30000, 30000
				req.ProtocolType, req.Protocols = "consumer", []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: id.metadata("range")}}
				s.Step(t0, Request{ID: 1, Body: req})
				ids[i] = append(ids[i], id.id)
			}
			leader = s.groups[g].leader
			s.Ready()
		}
		sync := kmsg.NewPtrSyncGroupRequest()
		sync.Group, sync.MemberID, sync.Generation = g, leader, s.groups[g].generation
		for _, id := range ids[i] {
			sync.GroupAssignment = append(sync.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: id, MemberAssignment: []byte("assignment")})
		}
		s.Step(t0, Request{ID: 2, Body: sync})
		for _, a := range s.Ready().Appends {
			s.Appended(t0, a.ID, nil)
		}
		s.Ready()
		commit := kmsg.NewPtrOffsetCommitRequest()
		commit.Version, commit.Group, commit.MemberID, commit.Generation = 9, g, leader, s.groups[g].generation
		t := kmsg.NewOffsetCommitRequestTopic()
		t.Topic = "topic"
		for p := range int32(6) {
			t.Partitions = append(t.Partitions, kmsg.OffsetCommitRequestTopicPartition{Partition: p, Offset: 100})
		}
		commit.Topics = append(commit.Topics, t)
		s.Step(t0, Request{ID: 3, Body: commit})
		for _, a := range s.Ready().Appends {
			s.Appended(t0, a.ID, nil)
		}
		s.Ready()
		if s.groups[g].state != stateStable {
			b.Fatalf("group %s is %s", g, s.groups[g].state)
		}
	}
	return s, ids
}

// BenchmarkCommit is one member's OffsetCommit of one partition, with its
// Append Appended, among 10,000 Stable groups of 3 members.
// benchGroups is how many groups the benchmarks load: 10,000, or 100
// under the invariants tag (make test runs each benchmark once to see it
// works, and the shard's self-checks scan every group after each event:
// 10,000 groups took over ten minutes there).
var benchGroups = map[bool]int{false: 10000, true: 100}[invariantsOn]

func BenchmarkCommit(b *testing.B) {
	s, ids := benchShard(b, benchGroups, 3)
	b.ReportAllocs()
	b.ResetTimer()
	now := t0
	for i := 0; b.Loop(); i++ {
		g := i % len(ids)
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version, req.Group, req.MemberID, req.Generation = 9, fmt.Sprintf("group-%05d", g), ids[g][0], s.groups[fmt.Sprintf("group-%05d", g)].generation
		req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "topic", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: int32(i % 6), Offset: int64(i)}}}}
		s.Step(now, Request{ID: uint64(i), Body: req})
		rd := s.Ready()
		s.Appended(now, rd.Appends[0].ID, nil)
		s.Ready()
	}
}

// BenchmarkHeartbeat is one member's Heartbeat and the NextDue the driver
// asks after it, among 10,000 Stable groups of 3 members.
func BenchmarkHeartbeat(b *testing.B) {
	s, ids := benchShard(b, benchGroups, 3)
	b.ReportAllocs()
	b.ResetTimer()
	now := t0
	for i := 0; b.Loop(); i++ {
		g := i % len(ids)
		name := fmt.Sprintf("group-%05d", g)
		req := kmsg.NewPtrHeartbeatRequest()
		req.Group, req.MemberID, req.Generation = name, ids[g][i%3], s.groups[name].generation
		if i%len(ids) == 0 {
			now = now.Add(time.Second)
			s.TickTo(now)
		}
		s.Step(now, Request{ID: uint64(i), Body: req})
		s.Ready()
		_ = s.NextDue()
	}
}

// TestMemoryPerGroup reports what a Stable group of 3 members with 6
// committed offsets costs the shard (run with -v).
func TestMemoryPerGroup(t *testing.T) {
	if testing.Short() || invariantsOn {
		t.Skip("10,000 groups (and the invariant checks scan them all after every event)")
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s, _ := benchShard(t, 10000, 3)
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(after.HeapAlloc-before.HeapAlloc) / 10000
	t.Logf("10,000 groups (3 members, 6 offsets each): %.0f bytes per group, %d timers", per, len(s.timers))
	if per > 64<<10 {
		t.Errorf("a group costs %.0f bytes", per)
	}
}

// BenchmarkNextDueScan is the baseline the timer heap replaces: NextDue
// as a scan of every group's deadlines (10,000 Stable groups of 3).
func BenchmarkNextDueScan(b *testing.B) {
	s, _ := benchShard(b, benchGroups, 3)
	b.ResetTimer()
	for b.Loop() {
		var d time.Time
		for _, g := range s.groups {
			d = earliest(d, g.due())
		}
		_ = d
	}
}
