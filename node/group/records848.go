package group

// The KIP-848 consumer group records of __consumer_offsets, in Kafka 4.1's
// group-coordinator schemas (kmsg has no types for them; they are coded
// here with kbin). A key is the int16 record type and the key struct at
// version 0, not flexible (int16-length strings); a value is the int16
// value version 0 and the struct in the flexible encoding (compact strings
// and arrays, tagged fields after each struct):
//
//	type key                              value v0 (nil: tombstone)
//	3    ConsumerGroupMetadataKey{group}   ConsumerGroupMetadataValue{epoch,
//	                                         tag0 metadataHash int64}
//	4    ConsumerGroupPartitionMetadataKey (Kafka before 4.1; read, skipped)
//	5    ConsumerGroupMemberMetadataKey    ConsumerGroupMemberMetadataValue{
//	       {group, member}                   instanceId?, rackId?, clientId,
//	                                         clientHost, subscribedTopicNames[],
//	                                         subscribedTopicRegex?,
//	                                         rebalanceTimeoutMs, serverAssignor?,
//	                                         tag0 classicMemberMetadata?{
//	                                           sessionTimeoutMs, supportedProtocols[
//	                                           name, metadata bytes]}}
//	6    ConsumerGroupTargetAssignmentMetadataKey{group}
//	                                       …Value{assignmentEpoch}
//	7    ConsumerGroupTargetAssignmentMemberKey{group, member}
//	                                       …Value{topicPartitions[topicId uuid,
//	                                         partitions[]int32]}
//	8    ConsumerGroupCurrentMemberAssignmentKey{group, member}
//	                                       …Value{memberEpoch, previousMemberEpoch,
//	                                         state int8, assignedPartitions[],
//	                                         partitionsPendingRevocation[]}
//
// Unknown tagged fields are skipped on read. The metadata hash is ours
// (FNV-64a over the subscribed topics' names, ids and partition counts, not
// Kafka's Murmur3): a Kafka coordinator that loads these records only sees
// a changed hash and computes the assignment again.

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kbin"
)

const (
	recConsumerGroup     = 3
	recPartitionMetadata = 4
	recMember            = 5
	recTargetMetadata    = 6
	recTargetMember      = 7
	recCurrentAssignment = 8
)

// tps is partitions by topic id, each list sorted.
type tps map[[16]byte][]int32

func cgKey(typ int16, group string, member *string) []byte {
	b := kbin.AppendInt16(nil, typ)
	b = kbin.AppendString(b, group)
	if member != nil {
		b = kbin.AppendString(b, *member)
	}
	return b
}

func value0() []byte { return kbin.AppendInt16(nil, 0) }

func endStruct(b []byte) []byte { return kbin.AppendUvarint(b, 0) }

func appendTPs(b []byte, m tps) []byte {
	ids := make([][16]byte, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b [16]byte) int { return slices.Compare(a[:], b[:]) })
	b = kbin.AppendCompactArrayLen(b, len(ids))
	for _, id := range ids {
		b = kbin.AppendUuid(b, id)
		b = kbin.AppendCompactArrayLen(b, len(m[id]))
		for _, p := range m[id] {
			b = kbin.AppendInt32(b, p)
		}
		b = endStruct(b)
	}
	return b
}

func cgMetadataRecord(g *cgroup) Record {
	v := kbin.AppendInt32(value0(), g.epoch)
	v = kbin.AppendUvarint(v, 1) // one tagged field: the metadata hash
	v = kbin.AppendUvarint(v, 0)
	v = kbin.AppendUvarint(v, 8)
	v = kbin.AppendInt64(v, g.metadataHash)
	return Record{Key: cgKey(recConsumerGroup, g.id, nil), Value: v}
}

func cgMemberRecord(g *cgroup, m *cmember) Record {
	v := value0()
	v = kbin.AppendCompactNullableString(v, nilIfEmpty(m.instanceID))
	v = kbin.AppendCompactNullableString(v, nilIfEmpty(m.rackID))
	v = kbin.AppendCompactString(v, m.clientID)
	v = kbin.AppendCompactString(v, m.clientHost)
	v = kbin.AppendCompactArrayLen(v, len(m.topicNames))
	for _, t := range m.topicNames {
		v = kbin.AppendCompactString(v, t)
	}
	v = kbin.AppendCompactNullableString(v, nilIfEmpty(m.regex))
	v = kbin.AppendInt32(v, ms(m.rebalance))
	v = kbin.AppendCompactNullableString(v, nilIfEmpty(m.assignor))
	if m.classic == nil {
		v = endStruct(v)
	} else {
		cm := appendClassicMeta(nil, m.classic)
		v = kbin.AppendUvarint(v, 1) // one tagged field: ClassicMemberMetadata
		v = kbin.AppendUvarint(v, 0)
		v = kbin.AppendUvarint(v, uint32(len(cm)))
		v = append(v, cm...)
	}
	return Record{Key: cgKey(recMember, g.id, &m.id), Value: v}
}

// appendClassicMeta is ClassicMemberMetadata{sessionTimeoutMs int32,
// supportedProtocols[name string, metadata bytes]}, flexible.
func appendClassicMeta(b []byte, c *classicMeta) []byte {
	b = kbin.AppendInt32(b, ms(c.session))
	b = kbin.AppendCompactArrayLen(b, len(c.protocols))
	for _, p := range c.protocols {
		b = kbin.AppendCompactString(b, p.name)
		b = kbin.AppendCompactBytes(b, p.metadata)
		b = endStruct(b)
	}
	return endStruct(b)
}

func readClassicMeta(b []byte) (*classicMeta, error) {
	r := reader{kbin.Reader{Src: b}}
	c := &classicMeta{session: durMs(r.Int32())}
	n := r.CompactArrayLen()
	if n < 0 || int(n) > len(r.Src) {
		return nil, fmt.Errorf("%w: classic member metadata: %d protocols", ErrCorruptRecord, n)
	}
	for i := int32(0); i < n && r.Ok(); i++ {
		name := r.CompactString()
		meta := slices.Clone(r.CompactBytes())
		if meta == nil {
			meta = []byte{}
		}
		r.skipTags()
		c.protocols = append(c.protocols, protocol{name: name, metadata: meta})
	}
	r.skipTags()
	return c, r.done("classic member metadata")
}

func cgTargetMetadataRecord(g *cgroup) Record {
	v := endStruct(kbin.AppendInt32(value0(), g.assignmentEpoch))
	return Record{Key: cgKey(recTargetMetadata, g.id, nil), Value: v}
}

func cgTargetMemberRecord(g *cgroup, id string) Record {
	v := endStruct(appendTPs(value0(), g.target[id]))
	return Record{Key: cgKey(recTargetMember, g.id, &id), Value: v}
}

func cgCurrentRecord(g *cgroup, m *cmember) Record {
	v := value0()
	v = kbin.AppendInt32(v, m.epoch)
	v = kbin.AppendInt32(v, m.prevEpoch)
	v = kbin.AppendInt8(v, int8(m.state))
	v = appendTPs(v, m.assigned)
	v = appendTPs(v, m.revoking)
	v = endStruct(v)
	return Record{Key: cgKey(recCurrentAssignment, g.id, &m.id), Value: v}
}

// cgMemberTombstones remove a member: its current assignment, target
// assignment and metadata, in Kafka's order.
func cgMemberTombstones(g *cgroup, id string) []Record {
	return []Record{{Key: cgKey(recCurrentAssignment, g.id, &id)}, {Key: cgKey(recTargetMember, g.id, &id)},
		{Key: cgKey(recMember, g.id, &id)}}
}

// cgRecords is the whole group as records (what a failed write is
// repaired with).
func cgRecords(g *cgroup) []Record {
	recs := []Record{cgMetadataRecord(g)}
	for _, m := range g.sortedMembers() {
		recs = append(recs, cgMemberRecord(g, m))
	}
	for _, id := range sortedKeys(g.target) {
		recs = append(recs, cgTargetMemberRecord(g, id))
	}
	recs = append(recs, cgTargetMetadataRecord(g))
	for _, m := range g.sortedMembers() {
		recs = append(recs, cgCurrentRecord(g, m))
	}
	return recs
}

// reader wraps kbin.Reader with the flexible-struct helpers.
type reader struct{ kbin.Reader }

func (r *reader) skipTags() {
	n := r.Uvarint()
	for i := uint32(0); i < n && r.Ok(); i++ {
		r.Uvarint()
		r.Span(int(r.Uvarint()))
	}
}

func (r *reader) tps() tps {
	n := r.CompactArrayLen()
	if n < 0 || int(n) > len(r.Src) {
		r.Span(len(r.Src) + 1) // fail the reader
		return nil
	}
	m := tps{}
	for i := int32(0); i < n && r.Ok(); i++ {
		id := r.Uuid()
		np := r.CompactArrayLen()
		if np < 0 || int(np) > len(r.Src) {
			r.Span(len(r.Src) + 1)
			return nil
		}
		ps := make([]int32, 0, np)
		for j := int32(0); j < np && r.Ok(); j++ {
			ps = append(ps, r.Int32())
		}
		r.skipTags()
		slices.Sort(ps)
		m[id] = slices.Compact(append(m[id], ps...))
	}
	return m
}

func (r *reader) done(what string) error {
	if err := r.Complete(); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrCorruptRecord, what, err)
	}
	return nil
}

// replayConsumer applies a record of types 3-8.
func (s *Shard) replayConsumer(typ int16, key, value []byte) error {
	kr := reader{kbin.Reader{Src: key[2:]}}
	groupID := kr.String()
	var memberID string
	if typ != recConsumerGroup && typ != recTargetMetadata {
		memberID = kr.String()
	}
	if err := kr.done("consumer group key"); err != nil {
		return err
	}
	if value != nil {
		if len(value) < 2 {
			return fmt.Errorf("%w: value of %d bytes", ErrCorruptRecord, len(value))
		}
		if v := int16(binary.BigEndian.Uint16(value)); v != 0 {
			return fmt.Errorf("%w: consumer group value version %d", ErrUnsupportedRecord, v)
		}
	}
	if typ == recPartitionMetadata {
		return nil // Kafka before 4.1 kept topic metadata here; ours comes from SetTopics
	}
	if value == nil {
		g := s.replayGroupFor(groupID, false)
		if g == nil {
			return nil // a tombstone for a group we do not have
		}
		c := g.consumer
		switch typ {
		case recConsumerGroup:
			if len(c.members) == 0 {
				s.dropConsumer(g)
			}
		case recTargetMetadata:
			c.assignmentEpoch = 0
		case recMember:
			c.removeMember(memberID)
		case recTargetMember:
			delete(c.target, memberID)
		case recCurrentAssignment:
			if m := c.members[memberID]; m != nil {
				m.epoch, m.prevEpoch, m.state, m.assigned, m.revoking = 0, 0, 0, tps{}, tps{}
			}
		}
		return nil
	}
	apply, err := decodeConsumerValue(typ, memberID, value[2:])
	if err != nil {
		return err
	}
	apply(s.replayGroupFor(groupID, true).consumer)
	return nil
}

// decodeConsumerValue decodes a value of type typ; what it returns applies
// it to a group.
func decodeConsumerValue(typ int16, memberID string, b []byte) (func(*cgroup), error) {
	r := reader{kbin.Reader{Src: b}}
	switch typ {
	case recConsumerGroup:
		epoch := r.Int32()
		var hash int64
		n := r.Uvarint()
		for i := uint32(0); i < n && r.Ok(); i++ {
			tag, size := r.Uvarint(), int(r.Uvarint())
			b := r.Span(size)
			if tag == 0 && len(b) == 8 {
				hash = int64(binary.BigEndian.Uint64(b))
			}
		}
		return func(c *cgroup) { c.epoch, c.metadataHash = epoch, hash }, r.done("consumer group metadata")
	case recMember:
		var v cmember
		if p := r.CompactNullableString(); p != nil {
			v.instanceID = *p
		}
		if p := r.CompactNullableString(); p != nil {
			v.rackID = *p
		}
		v.clientID, v.clientHost = r.CompactString(), r.CompactString()
		n := r.CompactArrayLen()
		if n < 0 || int(n) > len(r.Src) {
			return nil, fmt.Errorf("%w: member metadata: %d topics", ErrCorruptRecord, n)
		}
		for i := int32(0); i < n && r.Ok(); i++ {
			v.topicNames = append(v.topicNames, r.CompactString())
		}
		slices.Sort(v.topicNames)
		v.topicNames = slices.Compact(v.topicNames)
		if p := r.CompactNullableString(); p != nil {
			v.regex = *p
		}
		v.rebalance = durMs(r.Int32())
		if p := r.CompactNullableString(); p != nil {
			v.assignor = *p
		}
		var classicErr error
		n = int32(r.Uvarint())
		for i := int32(0); i < n && r.Ok(); i++ {
			tag, size := r.Uvarint(), int(r.Uvarint())
			b := r.Span(size)
			if tag == 0 && r.Ok() {
				v.classic, classicErr = readClassicMeta(b)
			}
		}
		if classicErr != nil {
			return nil, classicErr
		}
		return func(c *cgroup) {
			m := c.member(memberID)
			m.instanceID, m.rackID, m.clientID, m.clientHost = v.instanceID, v.rackID, v.clientID, v.clientHost
			m.topicNames, m.regex, m.rebalance, m.assignor = v.topicNames, v.regex, v.rebalance, v.assignor
			m.classic = v.classic
			c.indexStatic()
		}, r.done("member metadata")
	case recTargetMetadata:
		epoch := r.Int32()
		r.skipTags()
		return func(c *cgroup) { c.assignmentEpoch = epoch }, r.done("target assignment metadata")
	case recTargetMember:
		t := r.tps()
		r.skipTags()
		return func(c *cgroup) { c.target[memberID] = t }, r.done("target assignment")
	case recCurrentAssignment:
		epoch, prev, st := r.Int32(), r.Int32(), memberState(r.Int8())
		assigned, revoking := r.tps(), r.tps()
		r.skipTags()
		return func(c *cgroup) {
			m := c.member(memberID)
			m.epoch, m.prevEpoch, m.state, m.assigned, m.revoking = epoch, prev, st, assigned, revoking
		}, r.done("current assignment")
	}
	return nil, fmt.Errorf("%w: key version %d", ErrUnsupportedRecord, typ)
}

// replayGroupFor is the group a consumer group record is for, made a
// consumer group if create (nil if there is none and !create).
func (s *Shard) replayGroupFor(id string, create bool) *group {
	g := s.groups[id]
	if g == nil {
		if !create {
			return nil
		}
		g = newGroup(id, zeroTime)
		s.groups[id] = g
	}
	if g.consumer == nil {
		if !create {
			return nil
		}
		g.makeConsumer()
	}
	return g
}
