package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestConsumerGroupAPIs: ConsumerGroupDescribe is split by shard and
// merged in request order (NOT_COORDINATOR for a shard not led here);
// ConsumerGroupHeartbeat with an empty group id is INVALID_REQUEST, for a
// group of a shard not led here NOT_COORDINATOR with member epoch -1.
func TestConsumerGroupAPIs(t *testing.T) {
	ts, _ := startGroupsServer(t)
	c := dial(t, ts.addr)
	groups := []string{"a1", "c1", "b1", "a2"}
	d := kmsg.NewPtrConsumerGroupDescribeRequest()
	d.Version, d.Groups = 1, groups
	resp := c.roundTrip(d).(*kmsg.ConsumerGroupDescribeResponse)
	if len(resp.Groups) != len(groups) {
		t.Fatalf("%d groups answered for %d", len(resp.Groups), len(groups))
	}
	for i, g := range resp.Groups {
		led := groups[i][0] != 'c'
		if g.Group != groups[i] || led != (g.ErrorCode == 0) || (!led && g.ErrorCode != kerr.NotCoordinator.Code) {
			t.Errorf("group %d: %+v", i, g)
		}
	}

	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Version, hb.MemberID = 1, "m"
	if r := c.roundTrip(hb).(*kmsg.ConsumerGroupHeartbeatResponse); r.ErrorCode != kerr.InvalidRequest.Code || r.MemberEpoch != -1 {
		t.Errorf("empty group id: %+v", r)
	}
	hb.Group = "c7"
	if r := c.roundTrip(hb).(*kmsg.ConsumerGroupHeartbeatResponse); r.ErrorCode != kerr.NotCoordinator.Code || r.MemberEpoch != -1 {
		t.Errorf("a group not coordinated here: %+v", r)
	}
}
