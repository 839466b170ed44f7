package group

// ConsumerGroupDescribe (versions 0-1), and how the classic APIs see a
// consumer group.
//
// Behavior:
//   - ConsumerGroupDescribe: GROUP_ID_NOT_FOUND for an unknown group or a
//     classic one; else the group epoch, assignment epoch, state (Empty,
//     Assigning, Reconciling, Stable), the assignor last used, and each
//     member's epoch, subscription, current and target assignment (topic
//     names from SetTopics). v1 adds the member type (1: consumer).
//   - DescribeGroups answers a consumer group in the classic shape with
//     protocol type "consumer", no protocol and the members' ids, client
//     ids and hosts, as Kafka does; ListGroups gives its type "consumer"
//     and its consumer state.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (s *Shard) consumerDescribe(r Request, req *kmsg.ConsumerGroupDescribeRequest) {
	resp := kmsg.NewPtrConsumerGroupDescribeResponse()
	resp.Version = req.Version
	for _, id := range req.Groups {
		rg := kmsg.NewConsumerGroupDescribeResponseGroup()
		rg.Group = id
		rg.AuthorizedOperations = -2147483648
		g := s.groups[id]
		switch {
		case !s.loaded:
			rg.ErrorCode = codeLoading
		case id == "":
			rg.ErrorCode = codeInvalidGroupID
		case g == nil || g.consumer == nil:
			rg.ErrorCode = codeGroupNotFound
			if g == nil {
				rg.ErrorMessage = strp("Group " + id + " not found.")
			} else {
				rg.ErrorMessage = strp("Group " + id + " is not a consumer group.")
			}
		default:
			c := g.consumer
			rg.State, rg.Epoch, rg.AssignmentEpoch, rg.AssignorName = c.stateName(), c.epoch, c.assignmentEpoch, c.assignorUsed
			for _, m := range c.sortedMembers() {
				rm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
				rm.MemberID, rm.InstanceID, rm.RackID = m.id, nilIfEmpty(m.instanceID), nilIfEmpty(m.rackID)
				rm.MemberEpoch, rm.ClientID, rm.ClientHost = m.epoch, m.clientID, m.clientHost
				rm.SubscribedTopics = append([]string{}, m.topicNames...)
				rm.SubscribedTopicRegex = nilIfEmpty(m.regex)
				rm.Assignment = s.describeAssignment(m.assigned)
				rm.TargetAssignment = s.describeAssignment(c.target[m.id])
				rm.MemberType = 1
				if m.classic != nil {
					rm.MemberType = 0
				}
				rg.Members = append(rg.Members, rm)
			}
		}
		resp.Groups = append(resp.Groups, rg)
	}
	s.respond(r.ID, resp)
}

func (s *Shard) describeAssignment(m tps) kmsg.Assignment {
	a := kmsg.NewAssignment()
	for _, id := range sortedIDs(m) {
		if _, ok := s.topicNames[id]; !ok {
			continue // a deleted topic, still being revoked
		}
		tp := kmsg.NewAssignmentTopicPartition()
		tp.TopicID, tp.Topic, tp.Partitions = id, s.topicNames[id], append([]int32{}, m[id]...)
		a.TopicPartitions = append(a.TopicPartitions, tp)
	}
	return a
}

// describeConsumer fills a DescribeGroups answer for a consumer group:
// each member's subscription (the topics it resolves to) and current
// assignment in the consumer protocol's encodings (version 0), as
// kafka-consumer-groups and kadm read them.
func (s *Shard) describeConsumer(g *group, rg *kmsg.DescribeGroupsResponseGroup) {
	c := g.consumer
	rg.State, rg.ProtocolType = c.stateName(), "consumer"
	for _, m := range c.sortedMembers() {
		rm := kmsg.NewDescribeGroupsResponseGroupMember()
		rm.MemberID, rm.ClientID, rm.ClientHost = m.id, m.clientID, m.clientHost
		rm.InstanceID = nilIfEmpty(m.instanceID)
		meta := kmsg.NewConsumerMemberMetadata()
		meta.Version, meta.Topics = 0, s.resolve(m)
		if meta.Topics == nil {
			meta.Topics = []string{}
		}
		rm.ProtocolMetadata = meta.AppendTo(nil)
		a := kmsg.NewConsumerMemberAssignment()
		a.Version = 0
		for _, id := range sortedIDs(m.assigned) {
			if name, ok := s.topicNames[id]; ok {
				t := kmsg.NewConsumerMemberAssignmentTopic()
				t.Topic, t.Partitions = name, append([]int32{}, m.assigned[id]...)
				a.Topics = append(a.Topics, t)
			}
		}
		rm.MemberAssignment = a.AppendTo(nil)
		rg.Members = append(rg.Members, rm)
	}
}

// consumerTombstones delete an empty consumer group: its target
// assignment metadata and its group record.
func consumerTombstones(g *group) []Record {
	return []Record{{Key: cgKey(recTargetMetadata, g.id, nil)}, {Key: cgKey(recConsumerGroup, g.id, nil)}}
}

// validateOffsetCommit is Kafka's ConsumerGroup.validateOffsetCommit: a
// commit without a member epoch is taken when the group has no members;
// a member's must come with its epoch (STALE_MEMBER_EPOCH for an older
// one, FENCED_MEMBER_EPOCH for a newer) over OffsetCommit v9+.
func (c *cgroup) validateOffsetCommit(memberID string, epoch int32, version int16) int16 {
	if epoch < 0 && len(c.members) == 0 {
		return 0
	}
	m := c.members[memberID]
	switch {
	case m == nil:
		return codeUnknownMember
	case m.classic != nil: // a classic member commits with its generation
		if epoch != m.epoch {
			return codeIllegalGen
		}
		return 0
	case version < 9:
		return codeUnsupportedVersion
	case epoch > m.epoch:
		return codeFencedEpoch
	case epoch < m.epoch:
		return codeStaleEpoch
	}
	return 0
}

// validateOffsetFetch is Kafka's ConsumerGroup.validateOffsetFetch: a
// fetch with a member id must come from a member at its epoch.
func (c *cgroup) validateOffsetFetch(memberID *string, epoch int32) int16 {
	if memberID == nil || (*memberID == "" && epoch < 0) {
		return 0
	}
	m := c.members[*memberID]
	switch {
	case m == nil:
		return codeUnknownMember
	case epoch != m.epoch:
		return codeStaleEpoch
	}
	return 0
}

// checkInvariants (under the invariants tag): no partition has two
// owners, epochs are ordered, revoking members are in UNREVOKED, the
// static index names members with that instance, no classic members.
func (c *cgroup) checkInvariants(g *group) error {
	if len(g.members) > 0 || len(g.pending) > 0 {
		return fmt.Errorf("consumer group with %d classic members", len(g.members))
	}
	if c.assignmentEpoch > c.epoch {
		return fmt.Errorf("assignment epoch %d ahead of group epoch %d", c.assignmentEpoch, c.epoch)
	}
	owner := map[tpID]string{}
	for _, m := range c.sortedMembers() {
		if m.epoch > c.assignmentEpoch {
			return fmt.Errorf("member %s at epoch %d, assignment epoch %d", m.id, m.epoch, c.assignmentEpoch)
		}
		if (m.state == mUnrevoked) != (len(sortedIDs(m.revoking)) > 0) {
			return fmt.Errorf("member %s in state %d revoking %v", m.id, m.state, m.revoking)
		}
		for _, set := range []tps{m.assigned, m.revoking} {
			for id, ps := range set {
				for _, p := range ps {
					if o, ok := owner[tpID{id, p}]; ok {
						return fmt.Errorf("partition %x/%d owned by %s and %s", id[:4], p, o, m.id)
					}
					owner[tpID{id, p}] = m.id
				}
			}
		}
		if m.instanceID != "" && c.static[m.instanceID] != m.id {
			return fmt.Errorf("member %s of instance %s not in the static index", m.id, m.instanceID)
		}
	}
	for inst, id := range c.static {
		if m := c.members[id]; m == nil || m.instanceID != inst {
			return fmt.Errorf("static index %s → %s names no such member", inst, id)
		}
	}
	return nil
}
