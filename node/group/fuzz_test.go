package group

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fuzzSeeds are records of every kind the shard writes.
func fuzzSeeds() [][2][]byte {
	g := newGroup("g", t0)
	g.protocolType, g.protocol, g.generation, g.leader = "consumer", "range", 3, "m1"
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = []string{"t"}
	g.members["m1"] = &member{id: "m1", instanceID: "i1", clientID: "c", clientHost: "h", session: 10 * time.Second,
		rebalance: time.Minute, protocols: []protocol{{"range", meta.AppendTo(nil)}}, assignment: []byte{1}}
	gr := groupRecord(g)
	empty := groupRecord(newGroup("e", t0))
	or := offsetRecord("g", "t", 1, offset{offset: 42, leaderEpoch: 3, metadata: "m", commitMs: 5})
	seeds := [][2][]byte{{gr.Key, gr.Value}, {empty.Key, empty.Value}, {or.Key, or.Value}, {or.Key, nil}, {gr.Key, nil}}
	// KIP-848 records: every type, and tombstones.
	cg := newGroup("cg", t0)
	cg.makeConsumer()
	c := cg.consumer
	c.epoch, c.assignmentEpoch, c.metadataHash = 4, 3, 77
	m := c.member("m1")
	m.instanceID, m.rackID, m.clientID, m.clientHost, m.topicNames, m.regex, m.assignor = "i1", "r", "c", "h", []string{"t"}, "t.*", "range"
	m.rebalance, m.epoch, m.prevEpoch, m.state = time.Minute, 3, 2, mUnrevoked
	m.assigned, m.revoking = tps{{1}: {0, 1}}, tps{{1}: {2}}
	c.target["m1"] = tps{{1}: {0, 1}}
	// A classic member of the consumer group (mixed.go).
	m2 := c.member("m2")
	m2.topicNames, m2.epoch, m2.prevEpoch, m2.rebalance = []string{"t"}, 3, 3, time.Minute
	m2.classic = &classicMeta{session: 10 * time.Second, protocols: []protocol{{"range", meta.AppendTo(nil)}, {"sticky", []byte{}}}}
	for _, r := range cgRecords(c) {
		seeds = append(seeds, [2][]byte{r.Key, r.Value})
	}
	for _, r := range append(cgMemberTombstones(c, "m1"), consumerTombstones(cg)...) {
		seeds = append(seeds, [2][]byte{r.Key, nil})
	}
	return seeds
}

// FuzzReplay feeds Replay any key and value (or a tombstone): it never panics; a record it
// takes comes back the same when the shard writes it again; and the
// loaded shard serves requests and runs its clock without panicking.
func FuzzReplay(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s[0], s[1], s[1] == nil)
	}
	f.Fuzz(func(t *testing.T, key, value []byte, tombstone bool) {
		if tombstone {
			value = nil
		}
		s := NewShard(0, DefaultConfig())
		if err := s.Replay(0, key, value); err != nil {
			return
		}
		// What was taken round-trips through the shard's own records.
		again := NewShard(0, DefaultConfig())
		for _, id := range sortedKeys(s.groups) {
			g := s.groups[id]
			recs := []Record{}
			if g.consumer != nil {
				recs = append(recs, cgRecords(g.consumer)...)
			} else if len(g.members) > 0 || g.protocolType != "" || g.generation != 0 {
				recs = append(recs, groupRecord(g))
			}
			for _, tp := range sortedKeys(g.offsets) {
				for _, p := range sortedKeys(g.offsets[tp]) {
					recs = append(recs, offsetRecord(id, tp, p, g.offsets[tp][p]))
				}
			}
			for _, r := range recs {
				if err := again.Replay(0, r.Key, r.Value); err != nil {
					t.Fatalf("own record does not replay: %v", err)
				}
			}
		}
		if a, b := persistedState(s), persistedState(again); a != b {
			t.Fatalf("round trip differs:\n%s\n---\n%s", a, b)
		}
		s.LoadDone(t0)
		s.SetTopics(t0, map[string]TopicInfo{"t": {ID: [16]byte{1}, Partitions: 3}})
		for _, id := range sortedKeys(s.groups) {
			g := s.groups[id]
			for _, m := range g.sortedMembers() {
				hb := kmsg.NewPtrHeartbeatRequest()
				hb.Group, hb.MemberID, hb.Generation = id, m.id, g.generation
				s.Step(t0, Request{ID: 1, Body: hb})
				j := kmsg.NewPtrJoinGroupRequest()
				j.Version, j.Group, j.SessionTimeoutMillis, j.RebalanceTimeoutMillis = 9, id, 10000, 10000
				j.InstanceID = &m.instanceID
				j.ProtocolType = g.protocolType
				jp := kmsg.NewJoinGroupRequestProtocol()
				jp.Name, jp.Metadata = g.protocol, m.metadata(g.protocol)
				j.Protocols = append(j.Protocols, jp)
				s.Step(t0, Request{ID: 2, Body: j})
			}
			if c := g.consumer; c != nil {
				for _, m := range c.sortedMembers() {
					hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
					hb.Version, hb.Group, hb.MemberID, hb.MemberEpoch = 1, id, m.id, m.epoch
					hb.InstanceID = nilIfEmpty(m.instanceID)
					hb.RebalanceTimeoutMillis = -1
					hb.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
					s.Step(t0, Request{ID: 4, Body: hb})
				}
				cd := kmsg.NewPtrConsumerGroupDescribeRequest()
				cd.Groups = []string{id}
				s.Step(t0, Request{ID: 5, Body: cd})
			}
			d := kmsg.NewPtrDescribeGroupsRequest()
			d.Groups = []string{id}
			s.Step(t0, Request{ID: 3, Body: d})
		}
		for _, a := range s.Ready().Appends {
			s.Appended(t0, a.ID, nil)
		}
		for i := 0; i < 100; i++ {
			due := s.NextDue()
			if due.IsZero() {
				break
			}
			s.TickTo(due)
			for _, a := range s.Ready().Appends {
				s.Appended(due, a.ID, nil)
			}
		}
	})
}

// FuzzReplayTxn feeds ReplayTxn any record of a transactional batch,
// then its producer's marker: it never panics; no pending offset is left
// after the marker; a committed transaction leaves what the same record
// replayed outside a transaction leaves, an aborted one no offset; and
// OffsetFetch with require_stable answers on the loaded shard.
func FuzzReplayTxn(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s[0], s[1], s[1] == nil, true)
		f.Add(s[0], s[1], s[1] == nil, false)
	}
	f.Fuzz(func(t *testing.T, key, value []byte, tombstone, commit bool) {
		if tombstone {
			value = nil
		}
		s := NewShard(0, DefaultConfig())
		if err := s.ReplayTxn(0, 5, key, value); err != nil {
			return
		}
		s.ReplayMarker(5, commit)
		for id, g := range s.groups {
			if len(g.txns) > 0 {
				t.Fatalf("group %q keeps pending offsets after the marker", id)
			}
		}
		plain := NewShard(0, DefaultConfig())
		if err := plain.Replay(0, key, value); err != nil {
			t.Fatalf("the record replays in a transaction but not outside one: %v", err)
		}
		if commit {
			if a, b := persistedState(s), persistedState(plain); a != b {
				t.Fatalf("committed transaction differs from a plain replay:\n%s\n---\n%s", a, b)
			}
		} else if n := len(s.Stats().Offsets); n != 0 {
			t.Fatalf("an aborted transaction left offsets of %d groups", n)
		}
		s.LoadDone(t0)
		for _, id := range sortedKeys(s.groups) {
			req := kmsg.NewPtrOffsetFetchRequest()
			req.Version, req.RequireStable = 8, true
			rg := kmsg.NewOffsetFetchRequestGroup()
			rg.Group = id
			req.Groups = append(req.Groups, rg)
			s.Step(t0, Request{ID: 1, Body: req})
		}
		_ = s.Ready()
	})
}

// FuzzMixedJoin feeds a classic member's subscription (JoinGroup protocol
// metadata) into a consumer group with a KIP-848 member, and a classic
// leader's assignment into a group a ConsumerGroupHeartbeat then
// upgrades: whatever the bytes, the shard neither panics nor breaks its
// invariants (one owner per partition, epochs in order), and its records
// replay to the same state.
func FuzzMixedJoin(f *testing.F) {
	sub := kmsg.NewConsumerMemberMetadata()
	sub.Version, sub.Topics = 1, []string{"t"}
	op := kmsg.NewConsumerMemberMetadataOwnedPartition()
	op.Topic, op.Partitions = "t", []int32{0, 3, 9}
	sub.OwnedPartitions = []kmsg.ConsumerMemberMetadataOwnedPartition{op}
	asg := kmsg.NewConsumerMemberAssignment()
	at := kmsg.NewConsumerMemberAssignmentTopic()
	at.Topic, at.Partitions = "t", []int32{0, 1, 2, 3, -1, 7}
	asg.Topics = []kmsg.ConsumerMemberAssignmentTopic{at}
	f.Add(sub.AppendTo(nil), asg.AppendTo(nil))
	f.Add([]byte{0, 3, 0, 0, 0, 1}, []byte{0, 0})
	f.Fuzz(func(t *testing.T, subscription, assignment []byte) {
		now := t0
		s := NewShard(0, testConfig())
		var log []Record
		id := uint64(0)
		step := func(body kmsg.Request) {
			id++
			s.Step(now, Request{ID: id, ClientID: "c", ClientHost: "h", Body: body})
			for {
				rd := s.Ready()
				if len(rd.Appends) == 0 {
					break
				}
				for _, a := range rd.Appends {
					log = append(log, a.Records...)
					s.Appended(now, a.ID, nil)
				}
			}
			if err := s.checkInvariants(); err != nil {
				t.Fatal(err)
			}
		}
		s.LoadDone(now)
		s.SetTopics(now, map[string]TopicInfo{"t": {ID: [16]byte{1}, Partitions: 4}})
		hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		hb.Version, hb.Group, hb.MemberID, hb.RebalanceTimeoutMillis, hb.SubscribedTopicNames = 1, "mixed", "k", 30000, []string{"t"}
		step(hb)
		join := func(group string, meta []byte) {
			j := kmsg.NewPtrJoinGroupRequest()
			j.Version, j.Group, j.SessionTimeoutMillis, j.RebalanceTimeoutMillis, j.ProtocolType = 3, group, 10000, 10000, "consumer"
			p := kmsg.NewJoinGroupRequestProtocol()
			p.Name, p.Metadata = "range", meta
			j.Protocols = []kmsg.JoinGroupRequestProtocol{p}
			step(j)
		}
		join("mixed", subscription)
		join("classic", subscription)
		for _, g := range []string{"mixed", "classic"} {
			for mid := range s.groups[g].members {
				sg := kmsg.NewPtrSyncGroupRequest()
				sg.Version, sg.Group, sg.MemberID, sg.Generation = 5, g, mid, s.groups[g].generation
				ga := kmsg.NewSyncGroupRequestGroupAssignment()
				ga.MemberID, ga.MemberAssignment = mid, assignment
				sg.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{ga}
				step(sg)
			}
		}
		hb2 := *hb
		hb2.Group, hb2.MemberID = "classic", "k2"
		step(&hb2)
		again := NewShard(0, testConfig())
		for i, r := range log {
			if err := again.Replay(int64(i), r.Key, r.Value); err != nil {
				t.Fatalf("own record does not replay: %v", err)
			}
		}
		if a, b := persistedState(s), persistedState(again); a != b {
			t.Fatalf("replay differs:\n%s\n---\n%s", a, b)
		}
	})
}
