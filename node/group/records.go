package group

// The records of __consumer_offsets, in Kafka's schemas, as Kafka 4
// writes them:
//
//	key   int16 version, then                        value (nil: tombstone)
//	  0-1 OffsetCommitKey{group, topic, partition}     OffsetCommitValue v3
//	                                                   {offset, leaderEpoch,
//	                                                    metadata, commitTimestamp}
//	  2   GroupMetadataKey{group}                      GroupMetadataValue v3
//	                                                   {protocolType, generation,
//	                                                    protocol, leader,
//	                                                    currentStateTimestamp,
//	                                                    members[id, instanceId,
//	                                                    clientId, clientHost,
//	                                                    rebalanceTimeout,
//	                                                    sessionTimeout,
//	                                                    subscription, assignment]}
//	  3-8 KIP-848 consumer groups: records848.go
//	  9+  Kafka 4's other coordinator records (share and streams
//	      groups): not kept here (ErrUnsupportedRecord)
//
// A group metadata record is the whole group: written when the leader's
// assignment makes a generation (SyncGroup), when a generation ends with
// no members (Empty), and when a static member is replaced without a
// rebalance. Replay makes a group with members Stable and one without
// Empty, as Kafka's loader does; the members' sessions start at LoadDone.

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	offsetKeyVersion   = 1
	offsetValueVersion = 3
	groupKeyVersion    = 2
	groupValueVersion  = 3
)

func offsetKey(group, topic string, p int32) []byte {
	k := kmsg.NewOffsetCommitKey()
	k.Version, k.Group, k.Topic, k.Partition = offsetKeyVersion, group, topic, p
	return k.AppendTo(nil)
}

func offsetRecord(group, topic string, p int32, o offset) Record {
	v := kmsg.NewOffsetCommitValue()
	v.Version = offsetValueVersion
	v.Offset, v.LeaderEpoch, v.Metadata, v.CommitTimestamp = o.offset, o.leaderEpoch, o.metadata, o.commitMs
	return Record{Key: offsetKey(group, topic, p), Value: v.AppendTo(nil)}
}

func offsetTombstone(group, topic string, p int32) Record {
	return Record{Key: offsetKey(group, topic, p)}
}

func groupKey(group string) []byte {
	k := kmsg.NewGroupMetadataKey()
	k.Version, k.Group = groupKeyVersion, group
	return k.AppendTo(nil)
}

func groupTombstone(group string) Record { return Record{Key: groupKey(group)} }

func nilIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// groupRecord is g as it stands, with each member's assignment.
func groupRecord(g *group) Record {
	v := kmsg.NewGroupMetadataValue()
	v.Version = groupValueVersion
	v.ProtocolType = g.protocolType
	v.Generation = g.generation
	v.Protocol = nilIfEmpty(g.protocol)
	v.Leader = nilIfEmpty(g.leader)
	v.CurrentStateTimestamp = -1
	if !g.stateTime.IsZero() {
		v.CurrentStateTimestamp = g.stateTime.UnixMilli()
	}
	for _, m := range g.sortedMembers() {
		vm := kmsg.NewGroupMetadataValueMember()
		vm.MemberID, vm.InstanceID = m.id, nilIfEmpty(m.instanceID)
		vm.ClientID, vm.ClientHost = m.clientID, m.clientHost
		vm.RebalanceTimeoutMillis, vm.SessionTimeoutMillis = ms(m.rebalance), ms(m.session)
		vm.Subscription = m.metadata(g.protocol)
		if vm.Subscription == nil {
			vm.Subscription = []byte{}
		}
		vm.Assignment = m.assignment
		if vm.Assignment == nil {
			vm.Assignment = []byte{}
		}
		v.Members = append(v.Members, vm)
	}
	return Record{Key: groupKey(g.id), Value: v.AppendTo(nil)}
}

// replay applies the record at offset; pid is the producer of its
// transactional batch (-1: not transactional).
func (s *Shard) replay(offset, pid int64, key, value []byte) error {
	if s.loaded {
		return fmt.Errorf("%w: Replay after LoadDone", ErrUnsupportedRecord)
	}
	s.nextOrder = max(s.nextOrder, offset)
	if len(key) < 2 {
		return fmt.Errorf("%w: key of %d bytes", ErrCorruptRecord, len(key))
	}
	switch kv := int16(binary.BigEndian.Uint16(key)); kv {
	case 0, 1:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(key); err != nil {
			return fmt.Errorf("%w: offset commit key: %v", ErrCorruptRecord, err)
		}
		return s.replayOffset(k, value, offset, pid)
	case 2:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(key); err != nil {
			return fmt.Errorf("%w: group metadata key: %v", ErrCorruptRecord, err)
		}
		return s.replayGroup(k.Group, value)
	case recConsumerGroup, recPartitionMetadata, recMember, recTargetMetadata, recTargetMember, recCurrentAssignment:
		return s.replayConsumer(kv, key, value)
	default:
		return fmt.Errorf("%w: key version %d", ErrUnsupportedRecord, kv)
	}
}

func valueVersion(value []byte, maxVersion int16) error {
	if len(value) < 2 {
		return fmt.Errorf("%w: value of %d bytes", ErrCorruptRecord, len(value))
	}
	if v := int16(binary.BigEndian.Uint16(value)); v < 0 || v > maxVersion {
		return fmt.Errorf("%w: value version %d", ErrUnsupportedRecord, v)
	}
	return nil
}

func (s *Shard) replayOffset(k kmsg.OffsetCommitKey, value []byte, at, pid int64) error {
	g := s.groups[k.Group]
	if value == nil {
		if g != nil {
			g.deleteOffset(k.Topic, k.Partition)
			g.dropPending(k.Topic, k.Partition)
			s.maybeDropEmpty(g)
		}
		return nil
	}
	if err := valueVersion(value, 4); err != nil {
		return err
	}
	var v kmsg.OffsetCommitValue
	if err := v.ReadFrom(value); err != nil {
		return fmt.Errorf("%w: offset commit value: %v", ErrCorruptRecord, err)
	}
	if v.Version < 3 {
		v.LeaderEpoch = -1
	}
	if g == nil {
		g = newGroup(k.Group, time.Time{})
		s.groups[g.id] = g
	}
	o := offset{offset: v.Offset, leaderEpoch: v.LeaderEpoch, metadata: v.Metadata, commitMs: v.CommitTimestamp, order: at}
	if pid >= 0 {
		s.addPending(g, pid, tp{k.Topic, k.Partition}, o)
		return nil
	}
	g.setOffset(k.Topic, k.Partition, o)
	return nil
}

func (s *Shard) replayGroup(id string, value []byte) error {
	g := s.groups[id]
	if value == nil {
		if g != nil {
			offsets, txns := g.offsets, g.txns
			g = newGroup(id, time.Time{})
			g.offsets, g.txns = offsets, txns
			s.groups[id] = g
			s.maybeDropEmpty(g)
		}
		return nil
	}
	if err := valueVersion(value, 4); err != nil {
		return err
	}
	var v kmsg.GroupMetadataValue
	if err := v.ReadFrom(value); err != nil {
		return fmt.Errorf("%w: group metadata value: %v", ErrCorruptRecord, err)
	}
	var since time.Time // none before v2: offsets expire from their commits
	if v.CurrentStateTimestamp >= 0 {
		since = time.UnixMilli(v.CurrentStateTimestamp)
	}
	ng := newGroup(id, since)
	if g != nil {
		ng.offsets, ng.txns = g.offsets, g.txns
	}
	ng.protocolType, ng.generation = v.ProtocolType, v.Generation
	if v.Protocol != nil {
		ng.protocol = *v.Protocol
	}
	for _, vm := range v.Members {
		m := &member{
			id: vm.MemberID, clientID: vm.ClientID, clientHost: vm.ClientHost,
			session: durMs(vm.SessionTimeoutMillis), rebalance: durMs(vm.RebalanceTimeoutMillis),
			protocols:  []protocol{{name: ng.protocol, metadata: vm.Subscription}},
			assignment: vm.Assignment,
		}
		if vm.RebalanceTimeoutMillis == -1 { // v0 has none: the session timeout serves
			m.rebalance = m.session
		}
		if vm.InstanceID != nil && *vm.InstanceID != "" {
			m.instanceID = *vm.InstanceID
			ng.static[m.instanceID] = m.id
		}
		ng.members[m.id] = m
	}
	if len(ng.members) > 0 {
		ng.state, ng.prevState = stateStable, stateStable
		if v.Leader != nil && ng.members[*v.Leader] != nil {
			ng.leader = *v.Leader
		} else {
			ng.leader = ng.sortedMembers()[0].id
		}
	}
	s.groups[id] = ng
	s.maybeDropEmpty(ng)
	return nil
}
