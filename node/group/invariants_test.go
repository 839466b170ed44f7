package group

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// validShard is a shard with a Stable group of two members (one static)
// and a commit in flight.
func validShard(t *testing.T) *Shard {
	s := NewShard(0, testConfig())
	s.LoadDone(t0)
	join := func(member string, instance *string) *kmsg.JoinGroupResponse {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Version, req.Group, req.MemberID, req.InstanceID = 3, "g", member, instance
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis, req.ProtocolType = 10000, 10000, "consumer"
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name = "range"
		req.Protocols = append(req.Protocols, p)
		s.Step(t0, Request{ID: 1, Body: req})
		for _, r := range s.Ready().Responses {
			if jr := r.Body.(*kmsg.JoinGroupResponse); jr.MemberID != "" && (member == "" || jr.MemberID == member) {
				return jr
			}
		}
		return nil
	}
	inst := "i"
	a := join("", &inst)
	s.Step(t0, Request{ID: 2, Body: &kmsg.SyncGroupRequest{Group: "g", MemberID: a.MemberID, Generation: 1, InstanceID: &inst}})
	s.Appended(t0, s.Ready().Appends[0].ID, nil)
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.MemberID, commit.Generation = "g", a.MemberID, 1
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}}}
	s.Step(t0, Request{ID: 3, Body: commit})
	s.Ready()
	if err := s.checkInvariants(); err != nil {
		t.Fatalf("a valid shard: %v", err)
	}
	if g := s.groups["g"]; g == nil || g.state != stateStable || len(g.members) != 1 {
		t.Fatalf("not the shard the cases expect: %s", persistedState(s))
	}
	return s
}

// The invariant checker must report a broken state, not just pass good
// ones: each case breaks one invariant of a valid shard.
func TestCheckInvariantsReportsBadStates(t *testing.T) {
	one := func(g *group) *member { return g.sortedMembers()[0] }
	for _, c := range []struct {
		name string
		bad  func(s *Shard, g *group)
		want string
	}{
		{"wrong id", func(s *Shard, g *group) { g.id = "h" }, "filed under another id"},
		{"dead in map", func(s *Shard, g *group) { g.state = stateDead }, "dead but in the map"},
		{"leader gone", func(s *Shard, g *group) { g.leader = "x" }, "is not a member"},
		{"empty with members", func(s *Shard, g *group) { g.state = stateEmpty }, "empty with"},
		{"join phase without deadline", func(s *Shard, g *group) { g.state = statePreparing }, "without deadline"},
		{"static map", func(s *Shard, g *group) { g.static["i"] = "x" }, "static i"},
		{"pending sync", func(s *Shard, g *group) { g.pendingSync["x"] = true }, "pending sync x"},
		{"join waiter", func(s *Shard, g *group) { one(g).join = &waiter{} }, "waits for its join"},
		{"sync waiter", func(s *Shard, g *group) { one(g).sync = &waiter{} }, "waits for its sync"},
		{"no session", func(s *Shard, g *group) { one(g).deadline = time.Time{} }, "no session deadline"},
		{"no timer", func(s *Shard, g *group) { s.timers = nil }, "has no timer"},
		{"late timer", func(s *Shard, g *group) { g.heapAt = g.heapAt.Add(time.Hour) }, "has no timer"},
		{"inflight count", func(s *Shard, g *group) { g.addInflight("t", 0, 1) }, "commits in flight"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := validShard(t)
			c.bad(s, s.groups["g"])
			err := s.checkInvariants()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
}
