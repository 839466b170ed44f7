package kafka

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeGroups places a group in the shard named by its first byte and
// leads the shards in led; Coordinate answers what the real shard would
// shape (every group or partition it was given, code 0) and records the
// groups each call carried.
type fakeGroups struct {
	*fakeBroker
	led map[int32]bool

	mu    sync.Mutex
	calls map[int32][][]string
}

func (f *fakeGroups) FindGroupCoordinator(_ context.Context, _ string, group string) (BrokerInfo, error) {
	if shard, _ := f.GroupShard(group); !f.led[shard] {
		return BrokerInfo{}, kerr.CoordinatorNotAvailable
	}
	return BrokerInfo{NodeID: 7, Host: "h7", Port: 9097}, nil
}

func (f *fakeGroups) GroupShard(group string) (int32, bool) {
	if group == "" {
		return 'a', true
	}
	return int32(group[0]), true
}

func (f *fakeGroups) PartitionExists(topic string, p int32) bool { return topic == "t" && p < 2 }

func (f *fakeGroups) ListGroups(context.Context, []string, []string) ([]kmsg.ListGroupsResponseGroup, error) {
	g := kmsg.NewListGroupsResponseGroup()
	g.Group = "a"
	return []kmsg.ListGroupsResponseGroup{g}, nil
}

func (f *fakeGroups) Coordinate(_ context.Context, shard int32, req GroupRequest) (kmsg.Response, error) {
	var names []string
	resp := req.Body.ResponseKind()
	switch b := req.Body.(type) {
	case *kmsg.DescribeGroupsRequest:
		names = b.Groups
		r := resp.(*kmsg.DescribeGroupsResponse)
		for _, g := range b.Groups {
			rg := kmsg.NewDescribeGroupsResponseGroup()
			rg.Group, rg.State = g, "Stable"
			r.Groups = append(r.Groups, rg)
		}
	case *kmsg.ConsumerGroupDescribeRequest:
		names = b.Groups
		r := resp.(*kmsg.ConsumerGroupDescribeResponse)
		for _, g := range b.Groups {
			rg := kmsg.NewConsumerGroupDescribeResponseGroup()
			rg.Group, rg.State = g, "Stable"
			r.Groups = append(r.Groups, rg)
		}
	case *kmsg.OffsetFetchRequest:
		r := resp.(*kmsg.OffsetFetchResponse)
		for _, g := range b.Groups {
			names = append(names, g.Group)
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group = g.Group
			r.Groups = append(r.Groups, rg)
		}
	case *kmsg.TxnOffsetCommitRequest:
		names = []string{b.Group}
		r := resp.(*kmsg.TxnOffsetCommitResponse)
		for _, t := range b.Topics {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition = p.Partition
				rt.Partitions = append(rt.Partitions, rp)
			}
			r.Topics = append(r.Topics, rt)
		}
	case *kmsg.OffsetCommitRequest:
		names = []string{b.Group}
		r := resp.(*kmsg.OffsetCommitResponse)
		for _, t := range b.Topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition = p.Partition
				rt.Partitions = append(rt.Partitions, rp)
			}
			r.Topics = append(r.Topics, rt)
		}
	}
	f.mu.Lock()
	f.calls[shard] = append(f.calls[shard], names)
	f.mu.Unlock()
	if !f.led[shard] {
		return nil, kerr.NotCoordinator
	}
	resp.SetVersion(req.Body.GetVersion())
	return resp, nil
}

func startGroupsServer(t *testing.T) (*testServer, *fakeGroups) {
	t.Helper()
	var fg *fakeGroups
	ts := startServerWith(t, Options{}, func(fb *fakeBroker) Broker {
		fg = &fakeGroups{fakeBroker: fb, led: map[int32]bool{'a': true, 'b': true}, calls: map[int32][][]string{}}
		return fg
	})
	return ts, fg
}

// TestGroupsFindCoordinator: the coordinator of a led group at every
// version, an empty key like any other; an unplaceable group the
// capability's retriable error; transactional ids are still refused.
func TestGroupsFindCoordinator(t *testing.T) {
	ts, _ := startGroupsServer(t)
	c := dial(t, ts.addr)
	for v := int16(0); v <= 6; v++ {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version, req.CoordinatorKey, req.CoordinatorKeys = v, "a1", []string{"a1", "", "z1"}
		resp := c.roundTrip(req).(*kmsg.FindCoordinatorResponse)
		if v < 4 {
			if resp.ErrorCode != 0 || resp.NodeID != 7 || resp.Host != "h7" || resp.Port != 9097 {
				t.Errorf("v%d: %+v, want node 7 at h7:9097", v, resp)
			}
			continue
		}
		want := []int16{0, 0, kerr.CoordinatorNotAvailable.Code}
		if len(resp.Coordinators) != 3 {
			t.Fatalf("v%d: %d coordinators for 3 keys", v, len(resp.Coordinators))
		}
		for i, co := range resp.Coordinators {
			if co.Key != req.CoordinatorKeys[i] || co.ErrorCode != want[i] || (want[i] == 0) != (co.NodeID == 7) {
				t.Errorf("v%d key %q: %+v, want code %d", v, req.CoordinatorKeys[i], co, want[i])
			}
		}
	}
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.Version, req.CoordinatorType, req.CoordinatorKey = 3, 1, "tx"
	if resp := c.roundTrip(req).(*kmsg.FindCoordinatorResponse); resp.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Errorf("transactional id: code %d", resp.ErrorCode)
	}
}

// TestGroupsSplitMerge: a multi-group request is split by shard, each shard
// asked once with only its groups, and the answers merged in request
// order; a shard not led here answers NOT_COORDINATOR for its groups only.
func TestGroupsSplitMerge(t *testing.T) {
	ts, fg := startGroupsServer(t)
	c := dial(t, ts.addr)
	groups := []string{"a1", "c1", "b1", "a2", "c2"}

	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Version, dg.Groups = 5, groups
	resp := c.roundTrip(dg).(*kmsg.DescribeGroupsResponse)
	if len(resp.Groups) != len(groups) {
		t.Fatalf("%d groups answered for %d", len(resp.Groups), len(groups))
	}
	for i, g := range resp.Groups {
		led := groups[i][0] != 'c'
		if g.Group != groups[i] || led != (g.ErrorCode == 0) || led != (g.State == "Stable") ||
			(!led && g.ErrorCode != kerr.NotCoordinator.Code) {
			t.Errorf("group %d: %+v", i, g)
		}
	}
	fg.mu.Lock()
	if got := fg.calls['a']; len(got) != 1 || !slices.Equal(got[0], []string{"a1", "a2"}) {
		t.Errorf("shard a asked %v, want once for a1, a2", got)
	}
	if got := fg.calls['c']; len(got) != 1 || !slices.Equal(got[0], []string{"c1", "c2"}) {
		t.Errorf("shard c asked %v, want once for c1, c2", got)
	}
	fg.mu.Unlock()

	of := kmsg.NewPtrOffsetFetchRequest()
	of.Version = 8
	for _, g := range groups {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = g
		of.Groups = append(of.Groups, rg)
	}
	fresp := c.roundTrip(of).(*kmsg.OffsetFetchResponse)
	for i, g := range fresp.Groups {
		led := groups[i][0] != 'c'
		if g.Group != groups[i] || led != (g.ErrorCode == 0) {
			t.Errorf("offset fetch group %d: %+v", i, g)
		}
	}

	// v7: one group, top-level error from a shard not led here.
	of = kmsg.NewPtrOffsetFetchRequest()
	of.Version, of.Group = 7, "c9"
	if r := c.roundTrip(of).(*kmsg.OffsetFetchResponse); r.ErrorCode != kerr.NotCoordinator.Code {
		t.Errorf("v7 offset fetch of a group not coordinated here: code %d", r.ErrorCode)
	}
}

// TestGroupsOffsetCommitValidation: partitions of unknown topics (or past
// a topic's end) answer UNKNOWN_TOPIC_OR_PARTITION while the rest commit,
// in request order; an empty group id is INVALID_GROUP_ID everywhere.
func TestGroupsOffsetCommitValidation(t *testing.T) {
	ts, fg := startGroupsServer(t)
	c := dial(t, ts.addr)
	commit := func(group string) *kmsg.OffsetCommitResponse {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version, req.Group, req.Generation = 9, group, -1
		for _, topic := range []string{"nope", "t"} {
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic = topic
			for _, p := range []int32{0, 5, 1} {
				rp := kmsg.NewOffsetCommitRequestTopicPartition()
				rp.Partition, rp.Offset = p, 10
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
		}
		return c.roundTrip(req).(*kmsg.OffsetCommitResponse)
	}
	resp := commit("a1")
	unknown := kerr.UnknownTopicOrPartition.Code
	want := map[string][]int16{"nope": {unknown, unknown, unknown}, "t": {0, unknown, 0}}
	for _, rt := range resp.Topics {
		var got []int16
		for _, p := range rt.Partitions {
			got = append(got, p.ErrorCode)
		}
		if !slices.Equal(got, want[rt.Topic]) {
			t.Errorf("topic %s: codes %v, want %v", rt.Topic, got, want[rt.Topic])
		}
	}
	if len(resp.Topics) != 2 || resp.Topics[0].Topic != "nope" || resp.Topics[1].Partitions[2].Partition != 1 {
		t.Errorf("answer out of request order: %+v", resp.Topics)
	}
	fg.mu.Lock()
	calls := len(fg.calls['a'])
	fg.mu.Unlock()
	if calls != 1 {
		t.Errorf("shard asked %d times, want once", calls)
	}
	for _, rt := range commit("").Topics {
		for _, p := range rt.Partitions {
			if p.ErrorCode != kerr.InvalidGroupID.Code {
				t.Errorf("empty group, %s/%d: code %d", rt.Topic, p.Partition, p.ErrorCode)
			}
		}
	}
	for _, v := range []int16{2, 5} {
		jg := kmsg.NewPtrJoinGroupRequest()
		jg.Version, jg.ProtocolType, jg.SessionTimeoutMillis = v, "consumer", 6000
		if r := c.roundTrip(jg).(*kmsg.JoinGroupResponse); r.ErrorCode != kerr.InvalidGroupID.Code || r.Generation != -1 {
			t.Errorf("JoinGroup v%d with an empty group: %+v", v, r)
		}
	}
	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.Version, dg.Groups = 2, []string{"", "c1"}
	r := c.roundTrip(dg).(*kmsg.DeleteGroupsResponse)
	if len(r.Groups) != 2 || r.Groups[0].ErrorCode != kerr.InvalidGroupID.Code || r.Groups[1].ErrorCode != kerr.NotCoordinator.Code {
		t.Errorf("DeleteGroups: %+v", r.Groups)
	}
}

// TestGroupsTxnOffsetCommit: TxnOffsetCommit at every version goes to
// the group's shard with the partitions that exist (the others
// UNKNOWN_TOPIC_OR_PARTITION), answered in request order; an empty group
// id is INVALID_GROUP_ID for every partition; a shard not led here gives
// NOT_COORDINATOR to every partition it was asked about.
func TestGroupsTxnOffsetCommit(t *testing.T) {
	ts, fg := startGroupsServer(t)
	c := dial(t, ts.addr)
	commit := func(v int16, group string) [][]int16 {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.Version, req.Group, req.TransactionalID, req.ProducerID = v, group, "tx", 3
		for _, topic := range []string{"nope", "t"} {
			rt := kmsg.NewTxnOffsetCommitRequestTopic()
			rt.Topic = topic
			for _, p := range []int32{0, 5, 1} {
				rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
				rp.Partition, rp.Offset = p, 10
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
		}
		resp := c.roundTrip(req).(*kmsg.TxnOffsetCommitResponse)
		var out [][]int16
		for i, rt := range resp.Topics {
			if rt.Topic != req.Topics[i].Topic {
				t.Errorf("v%d: topic %d is %s, want %s", v, i, rt.Topic, req.Topics[i].Topic)
			}
			var codes []int16
			for _, p := range rt.Partitions {
				codes = append(codes, p.ErrorCode)
			}
			out = append(out, codes)
		}
		return out
	}
	u, ig, nc := kerr.UnknownTopicOrPartition.Code, kerr.InvalidGroupID.Code, kerr.NotCoordinator.Code
	for v := int16(0); v <= 5; v++ {
		if got := commit(v, "a1"); !slices.Equal(got[0], []int16{u, u, u}) || !slices.Equal(got[1], []int16{0, u, 0}) {
			t.Errorf("v%d: codes %v", v, got)
		}
	}
	fg.mu.Lock()
	calls := len(fg.calls['a'])
	fg.mu.Unlock()
	if calls != 6 {
		t.Errorf("shard asked %d times, want once per request (6)", calls)
	}
	if got := commit(5, ""); !slices.Equal(got[1], []int16{ig, ig, ig}) {
		t.Errorf("empty group id: %v", got)
	}
	if got := commit(5, "z1"); !slices.Equal(got[1], []int16{nc, u, nc}) {
		t.Errorf("shard not led: %v", got)
	}
}
