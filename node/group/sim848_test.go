package group

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The KIP-848 part of TestRandom: four consumer protocol clients, three
// in group g2 and one in g0 (where classic clients are: one group id is
// one type), heartbeating with their epochs and what they own (sometimes
// a wrong epoch), leaving (static ones sometimes for a restart), while
// topics come, grow and go. Every answer is checked against the
// shard's invariants (one owner per partition, ordered epochs), and in
// the runs where every write succeeds the replayed consumer groups must
// equal the live ones.

var simTopics = []map[string]TopicInfo{
	{"t": {ID: [16]byte{1}, Partitions: 3}, "u": {ID: [16]byte{2}, Partitions: 2}},
	{"t": {ID: [16]byte{1}, Partitions: 5}, "u": {ID: [16]byte{2}, Partitions: 2}, "v": {ID: [16]byte{3}, Partitions: 4}},
	{"t": {ID: [16]byte{1}, Partitions: 5}},
}

func (x *sim) add848Clients() {
	x.s.SetTopics(x.now, simTopics[0])
	for i := range 4 {
		c := &simClient{name: fmt.Sprintf("k%d", i), group: "g2", kip848: true, member: fmt.Sprintf("k%d-id", i), owned: tps{},
			version: 1}
		if i == 3 {
			c.group = "g0"
		}
		if i%2 == 0 {
			inst := fmt.Sprintf("ki%d", i)
			c.instance = &inst
		}
		x.clients = append(x.clients, c)
	}
}

func (x *sim) step848(c *simClient) {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version, req.Group, req.MemberID, req.MemberEpoch = c.version, c.group, c.member, c.epoch
	req.InstanceID = c.instance
	req.RebalanceTimeoutMillis = -1
	switch n := x.pick(100); {
	case n < 6:
		req.MemberEpoch = -1
	case n < 10 && c.instance != nil:
		req.MemberEpoch = -2
	case n < 14:
		req.MemberEpoch += int32(x.pick(3)) - 1 // a stale, right or future epoch
	case n < 18:
		x.s.SetTopics(x.now, simTopics[x.pick(len(simTopics))])
		x.trace = append(x.trace, fmt.Sprintf("%s topics set", x.now.Sub(t0)))
		x.drain()
		return
	case n < 22:
		d := kmsg.NewPtrConsumerGroupDescribeRequest()
		d.Groups = []string{c.group, "g1"}
		x.step(c, d)
		return
	}
	if req.MemberEpoch == 0 {
		req.RebalanceTimeoutMillis = int32(3000 + x.pick(10000))
		if x.pick(3) == 0 {
			re := []string{"t|v", "u.*", ".*"}[x.pick(3)]
			req.SubscribedTopicRegex = &re
		} else {
			req.SubscribedTopicNames = []string{"t", "u", "v"}[:1+x.pick(3)]
		}
		if x.pick(2) == 0 {
			a := []string{"uniform", "range"}[x.pick(2)]
			req.ServerAssignor = &a
		}
	} else if req.MemberEpoch > 0 {
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		for _, id := range sortedIDs(c.owned) {
			t := kmsg.NewConsumerGroupHeartbeatRequestTopic()
			t.TopicID, t.Partitions = id, c.owned[id]
			req.Topics = append(req.Topics, t)
		}
	}
	x.step(c, req)
}

// learn848: the client owns what it is assigned at once (it revokes as
// soon as told), rejoins with epoch 0 when fenced or unknown.
func (x *sim) learn848(req *kmsg.ConsumerGroupHeartbeatRequest, resp *kmsg.ConsumerGroupHeartbeatResponse) {
	var c *simClient
	for _, k := range x.clients {
		if k.kip848 && k.group == req.Group && k.member == req.MemberID {
			c = k
		}
	}
	if c == nil {
		return
	}
	switch resp.ErrorCode {
	case 0:
		if req.MemberEpoch < 0 {
			c.epoch, c.owned = 0, tps{}
			return
		}
		c.epoch = resp.MemberEpoch
		if resp.Assignment != nil {
			c.owned = tps{}
			for _, t := range resp.Assignment.Topics {
				c.owned[t.TopicID] = t.Partitions
			}
		}
	case codeUnknownMember, codeFencedEpoch:
		c.epoch, c.owned = 0, tps{}
	}
}

// consumerState is every consumer group as its records keep it.
func consumerState(s *Shard) string {
	var b strings.Builder
	for _, id := range sortedKeys(s.groups) {
		if g := s.groups[id]; g.consumer != nil {
			fmt.Fprintf(&b, "%s:\n", id)
			dumpConsumer(&b, g.consumer, nil)
		}
	}
	return b.String()
}
