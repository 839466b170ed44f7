package group

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The scripts' commands for KIP-848 consumer groups:
//
//	topics t=3 u=2            SetTopics (a topic's id is its name, padded)
//	hb member=a epoch=0 topics=t,u regex=re assignor=range instance=i
//	   owned=t/0,t/1 rebalance=30s v=1 g=g regex-size=N rack=r
//	racks t=a/b,b,c           SetTopics again, partition 0 of t in racks a and b, …
//	cg-describe groups=g
func (h *harness) runConsumer() bool {
	switch h.d.Cmd {
	case "topics":
		m := map[string]TopicInfo{}
		for _, a := range h.d.CmdArgs {
			n, _ := strconv.Atoi(strings.Join(a.Vals, ""))
			m[a.Key] = TopicInfo{ID: topicID(a.Key), Partitions: int32(n)}
		}
		h.topicSet = m
		h.s.SetTopics(h.now, m)
		h.printf("topics set")
		h.drain()
	case "racks":
		// racks t=a/b,b,c: partition 0 of t has replicas in racks a and
		// b, 1 in b, 2 in c (the last topics command's topics).
		for _, a := range h.d.CmdArgs {
			ti := h.topicSet[a.Key]
			ti.Racks = nil
			for _, v := range strings.Split(strings.Join(a.Vals, ","), ",") {
				rs := strings.Split(v, "/")
				slices.Sort(rs)
				ti.Racks = append(ti.Racks, rs)
			}
			h.topicSet[a.Key] = ti
		}
		h.s.SetTopics(h.now, h.topicSet)
		h.printf("racks set")
		h.drain()
	case "hb":
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version = int16(h.int("v", 1))
		req.Group, req.MemberID, req.MemberEpoch = h.str("g", "g"), h.str("member", ""), int32(h.int("epoch", 0))
		req.InstanceID = h.strp("instance")
		req.RebalanceTimeoutMillis = -1
		if req.MemberEpoch == 0 {
			req.RebalanceTimeoutMillis = int32(h.dur("rebalance", 30*time.Second) / time.Millisecond)
		}
		if _, ok := h.arg("topics"); ok {
			req.SubscribedTopicNames = h.list("topics")
			if req.SubscribedTopicNames == nil {
				req.SubscribedTopicNames = []string{}
			}
		}
		req.SubscribedTopicRegex = h.strp("regex")
		if n := h.int("regex-size", -1); n >= 0 {
			re := strings.Repeat("a", int(n))
			req.SubscribedTopicRegex = &re
		}
		req.ServerAssignor = h.strp("assignor")
		req.RackID = h.strp("rack")
		if _, ok := h.arg("owned"); ok {
			req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			parts := h.partitions("owned")
			for _, t := range sortedKeys(parts) {
				if t == "" {
					continue
				}
				rt := kmsg.NewConsumerGroupHeartbeatRequestTopic()
				rt.TopicID, rt.Partitions = topicID(t), parts[t]
				req.Topics = append(req.Topics, rt)
			}
		}
		h.step(req)
	case "cg-describe":
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Version = int16(h.int("v", 1))
		req.Groups = h.list("groups")
		h.step(req)
	default:
		return false
	}
	return true
}

func topicID(name string) [16]byte {
	var id [16]byte
	copy(id[:], name)
	return id
}

func topicName(id [16]byte) string { return strings.TrimRight(string(id[:]), "\x00") }

// fmtTPs shows partitions by topic as t/0,1;u/2.
func fmtTPs(m tps) string {
	var parts []string
	for _, id := range sortedIDs(m) {
		var ps []string
		for _, p := range m[id] {
			ps = append(ps, strconv.Itoa(int(p)))
		}
		parts = append(parts, topicName(id)+"/"+strings.Join(ps, ","))
	}
	if len(parts) == 0 {
		return "-"
	}
	slices.Sort(parts)
	return strings.Join(parts, ";")
}

func fmtConsumerResponse(body kmsg.Response) (string, bool) {
	var b strings.Builder
	switch r := body.(type) {
	case *kmsg.ConsumerGroupHeartbeatResponse:
		fmt.Fprintf(&b, "ConsumerGroupHeartbeat %s member=%s epoch=%d interval=%dms", errName(r.ErrorCode), short(deref(r.MemberID)),
			r.MemberEpoch, r.HeartbeatIntervalMillis)
		if r.ErrorMessage != nil {
			fmt.Fprintf(&b, " msg=%q", *r.ErrorMessage)
		}
		if r.Assignment != nil {
			m := tps{}
			for _, t := range r.Assignment.Topics {
				m[t.TopicID] = t.Partitions
			}
			fmt.Fprintf(&b, " assignment=%s", fmtTPs(m))
		}
	case *kmsg.ConsumerGroupDescribeResponse:
		b.WriteString("ConsumerGroupDescribe")
		for _, g := range r.Groups {
			fmt.Fprintf(&b, "\n    %s %s state=%s epoch=%d assignment-epoch=%d assignor=%s", g.Group, errName(g.ErrorCode), g.State,
				g.Epoch, g.AssignmentEpoch, g.AssignorName)
			if g.ErrorMessage != nil {
				fmt.Fprintf(&b, " msg=%q", *g.ErrorMessage)
			}
			for _, m := range g.Members {
				fmt.Fprintf(&b, "\n      %s epoch=%d instance=%s client=%s subscribed=%s regex=%s owns=%s target=%s", short(m.MemberID),
					m.MemberEpoch, deref(m.InstanceID), m.ClientID, strings.Join(m.SubscribedTopics, ","), deref(m.SubscribedTopicRegex),
					fmtAssignment(m.Assignment), fmtAssignment(m.TargetAssignment))
			}
		}
	default:
		return "", false
	}
	return b.String(), true
}

func fmtAssignment(a kmsg.Assignment) string {
	var parts []string
	for _, t := range a.TopicPartitions {
		var ps []string
		for _, p := range t.Partitions {
			ps = append(ps, strconv.Itoa(int(p)))
		}
		parts = append(parts, t.Topic+"/"+strings.Join(ps, ","))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ";")
}

var cgRecordNames = map[int16]string{3: "cg-metadata", 4: "cg-partition-metadata", 5: "cg-member", 6: "cg-target-metadata",
	7: "cg-target", 8: "cg-current"}

// fmtConsumerRecord shows a record of types 3-8 by decoding it into a
// fresh shard (so the scripts also check the decoders).
func fmtConsumerRecord(r Record) string {
	kr := kbin.Reader{Src: r.Key}
	typ := kr.Int16()
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", cgRecordNames[typ], kr.String())
	if len(kr.Src) > 0 {
		fmt.Fprintf(&b, "/%s", short(kr.String()))
	}
	if r.Value == nil {
		return b.String() + " = tombstone"
	}
	apply, err := decodeConsumerValue(typ, "m", r.Value[2:])
	if err != nil {
		return b.String() + " = " + err.Error()
	}
	c := &cgroup{members: map[string]*cmember{}, static: map[string]string{}, target: map[string]tps{}}
	apply(c)
	m := c.members["m"]
	switch typ {
	case recConsumerGroup:
		fmt.Fprintf(&b, " = epoch=%d", c.epoch)
	case recMember:
		fmt.Fprintf(&b, " = instance=%s client=%s topics=%s regex=%q rebalance=%s assignor=%q", m.instanceID, m.clientID,
			strings.Join(m.topicNames, ","), m.regex, m.rebalance, m.assignor)
		if m.classic != nil {
			fmt.Fprintf(&b, " classic(session=%s protocols=%d)", m.classic.session, len(m.classic.protocols))
		}
		if m.rackID != "" {
			fmt.Fprintf(&b, " rack=%s", m.rackID)
		}
	case recTargetMetadata:
		fmt.Fprintf(&b, " = assignment-epoch=%d", c.assignmentEpoch)
	case recTargetMember:
		fmt.Fprintf(&b, " = %s", fmtTPs(c.target["m"]))
	case recCurrentAssignment:
		fmt.Fprintf(&b, " = epoch=%d prev=%d state=%d assigned=%s revoking=%s", m.epoch, m.prevEpoch, m.state,
			fmtTPs(m.assigned), fmtTPs(m.revoking))
	}
	return b.String()
}

// dumpConsumer is a consumer group's state for scripts (persisted:
// without the deadlines, which a new coordinator restarts).
func dumpConsumer(b *strings.Builder, c *cgroup, since func(time.Time) string) {
	fmt.Fprintf(b, "  consumer epoch=%d assignment-epoch=%d state=%s\n", c.epoch, c.assignmentEpoch, c.stateName())
	for _, m := range c.sortedMembers() {
		fmt.Fprintf(b, "  %s epoch=%d prev=%d state=%d owns=%s revoking=%s target=%s", short(m.id), m.epoch, m.prevEpoch, m.state,
			fmtTPs(m.assigned), fmtTPs(m.revoking), fmtTPs(c.target[m.id]))
		if m.instanceID != "" {
			fmt.Fprintf(b, " instance=%s", m.instanceID)
		}
		if m.classic != nil {
			fmt.Fprintf(b, " classic(session=%s protocols=%d)", m.classic.session, len(m.classic.protocols))
		}
		if m.rackID != "" {
			fmt.Fprintf(b, " rack=%s", m.rackID)
		}
		fmt.Fprintf(b, " topics=%s", strings.Join(m.topicNames, ","))
		if m.regex != "" {
			fmt.Fprintf(b, " regex=%s", m.regex)
		}
		if since != nil {
			fmt.Fprintf(b, " session-until=%s", since(m.deadline))
			if m.state == mUnrevoked {
				fmt.Fprintf(b, " revoke-until=%s", since(m.revokeDeadline))
			}
		}
		b.WriteString("\n")
	}
}
