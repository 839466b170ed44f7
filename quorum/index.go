package quorum

import (
	"fmt"
	"math/bits"
	"slices"
	"strings"
)

// The image's partition indexes: for each broker the partitions that
// name it among their replicas and those it leads, and the partitions
// without a leader. Fencing, unfencing, shutting down or re-registering
// a broker, unregistering it, and "partitions led by broker X" then cost
// the partitions concerned, not a scan of every partition of every topic
// (a million at KRaft scale). Replay keeps the indexes (the only writer
// of an Image); reindex rebuilds them after a snapshot is read; under
// -tags invariants CheckInvariants compares them with a full scan after
// every entry.
//
// A set of partitions is, per topic (by the topic's sequence number in
// this image, Topic.seq, handed out when the topic enters it and never
// written anywhere), a bitset of partition numbers: a million partitions
// of 10,000 topics on 3 brokers are 30,000 small bitsets, not 3 million
// map entries, so replaying, cloning and rebuilding the index stay cheap.

// topicBits is the partitions of one topic in a set.
type topicBits struct {
	w []uint64 // bit i%64 of w[i/64] is partition i
	n int      // bits set
}

// partSet is a set of partitions, by topic seq; the nil set is empty.
type partSet struct {
	topics map[uint32]*topicBits
	n      int
}

func (s *partSet) add(seq uint32, i int32) {
	if s.topics == nil {
		s.topics = map[uint32]*topicBits{}
	}
	tb := s.topics[seq]
	if tb == nil {
		tb = &topicBits{}
		s.topics[seq] = tb
	}
	word, bit := int(i/64), uint64(1)<<(i%64)
	if word >= len(tb.w) {
		tb.w = append(tb.w, make([]uint64, word+1-len(tb.w))...)
	}
	if tb.w[word]&bit == 0 {
		tb.w[word] |= bit
		tb.n++
		s.n++
	}
}

func (s *partSet) remove(seq uint32, i int32) {
	tb := s.topics[seq]
	word, bit := int(i/64), uint64(1)<<(i%64)
	if tb == nil || word >= len(tb.w) || tb.w[word]&bit == 0 {
		return
	}
	tb.w[word] &^= bit
	tb.n--
	s.n--
	if tb.n == 0 {
		delete(s.topics, seq)
	}
}

func (s *partSet) len() int {
	if s == nil {
		return 0
	}
	return s.n
}

func (s *partSet) clone() *partSet {
	c := &partSet{topics: make(map[uint32]*topicBits, len(s.topics)), n: s.n}
	for seq, tb := range s.topics {
		c.topics[seq] = &topicBits{w: slices.Clone(tb.w), n: tb.n}
	}
	return c
}

// equal compares two sets (nil is empty).
func (s *partSet) equal(o *partSet) bool {
	if s.len() != o.len() {
		return false
	}
	if s.len() == 0 {
		return true
	}
	for seq, tb := range s.topics {
		ob := o.topics[seq]
		if ob == nil || ob.n != tb.n {
			return false
		}
		for i := range max(len(tb.w), len(ob.w)) {
			var a, b uint64
			if i < len(tb.w) {
				a = tb.w[i]
			}
			if i < len(ob.w) {
				b = ob.w[i]
			}
			if a != b {
				return false
			}
		}
	}
	return true
}

// eachIn calls fn for the partitions of tb in order.
func eachIn(tb *topicBits, fn func(i int32)) {
	for wi, w := range tb.w {
		for w != 0 {
			b := bits.TrailingZeros64(w)
			w &^= 1 << b
			fn(int32(wi*64 + b))
		}
	}
}

// partIndex is the image's partition index; the zero value is not ready
// (newPartIndex).
type partIndex struct {
	lastSeq uint32
	bySeq   map[uint32]*Topic
	hosts   map[int32]*partSet // broker -> partitions naming it among their replicas
	leads   map[int32]*partSet // broker -> partitions it leads
	offline *partSet           // partitions without a leader
}

func newPartIndex() partIndex {
	return partIndex{bySeq: map[uint32]*Topic{}, hosts: map[int32]*partSet{}, leads: map[int32]*partSet{}, offline: &partSet{}}
}

// clone copies the index for an image whose topics are topics (the
// clones of the indexed ones, with the same seq).
func (x *partIndex) clone(topics map[string]*Topic) partIndex {
	c := partIndex{lastSeq: x.lastSeq, bySeq: make(map[uint32]*Topic, len(x.bySeq)),
		hosts: make(map[int32]*partSet, len(x.hosts)), leads: make(map[int32]*partSet, len(x.leads)), offline: x.offline.clone()}
	for _, t := range topics {
		c.bySeq[t.seq] = t
	}
	for b, s := range x.hosts {
		c.hosts[b] = s.clone()
	}
	for b, s := range x.leads {
		c.leads[b] = s.clone()
	}
	return c
}

// addTopic numbers a topic new to the image and indexes its partitions.
func (x *partIndex) addTopic(t *Topic) {
	x.lastSeq++
	t.seq = x.lastSeq
	x.bySeq[t.seq] = t
	for i := range t.Partitions {
		x.add(t, int32(i))
	}
}

func (x *partIndex) removeTopic(t *Topic) {
	for i := range t.Partitions {
		x.remove(t, int32(i))
	}
	delete(x.bySeq, t.seq)
}

func setOf(m map[int32]*partSet, b int32) *partSet {
	s := m[b]
	if s == nil {
		s = &partSet{}
		m[b] = s
	}
	return s
}

// add indexes partition i of t as it is now; remove forgets it (call
// remove before changing a partition and add after).
func (x *partIndex) add(t *Topic, i int32) {
	p := &t.Partitions[i]
	for _, r := range p.Replicas {
		setOf(x.hosts, r).add(t.seq, i)
	}
	if p.Leader == NoLeader {
		x.offline.add(t.seq, i)
		return
	}
	setOf(x.leads, p.Leader).add(t.seq, i)
}

func (x *partIndex) remove(t *Topic, i int32) {
	p := &t.Partitions[i]
	drop := func(m map[int32]*partSet, b int32) {
		if s := m[b]; s != nil {
			s.remove(t.seq, i)
			if s.n == 0 {
				delete(m, b)
			}
		}
	}
	for _, r := range p.Replicas {
		drop(x.hosts, r)
	}
	if p.Leader == NoLeader {
		x.offline.remove(t.seq, i)
		return
	}
	drop(x.leads, p.Leader)
}

// each calls fn for the partitions of s in no particular order.
func (im *Image) each(s *partSet, fn func(t *Topic, partition int32, p *Partition)) {
	if s == nil {
		return
	}
	for seq, tb := range s.topics {
		t := im.idx.bySeq[seq]
		eachIn(tb, func(i int32) { fn(t, i, &t.Partitions[i]) })
	}
}

// sorted calls fn for the partitions of s in topic-name, then partition
// order: the order in which a scan of every partition met them, so that
// plans (and their records) come out the same.
func (im *Image) sorted(s *partSet, fn func(t *Topic, partition int32, p *Partition)) {
	if s.len() == 0 {
		return
	}
	ts := make([]*Topic, 0, len(s.topics))
	for seq := range s.topics {
		ts = append(ts, im.idx.bySeq[seq])
	}
	slices.SortFunc(ts, func(a, b *Topic) int { return strings.Compare(a.Name, b.Name) })
	for _, t := range ts {
		eachIn(s.topics[t.seq], func(i int32) { fn(t, i, &t.Partitions[i]) })
	}
}

// EachPartitionOn calls fn, in no particular order, for every partition
// that names broker among its replicas (a reassignment's adding and
// removing replicas included). fn must not change the image.
func (im *Image) EachPartitionOn(broker int32, fn func(t *Topic, partition int32, p *Partition)) {
	im.each(im.idx.hosts[broker], fn)
}

// EachPartitionLedBy calls fn, in no particular order, for every
// partition broker leads. fn must not change the image.
func (im *Image) EachPartitionLedBy(broker int32, fn func(t *Topic, partition int32, p *Partition)) {
	im.each(im.idx.leads[broker], fn)
}

// PartitionsOn returns how many partitions name broker among their replicas.
func (im *Image) PartitionsOn(broker int32) int { return im.idx.hosts[broker].len() }

// PartitionsLedBy returns how many partitions broker leads.
func (im *Image) PartitionsLedBy(broker int32) int { return im.idx.leads[broker].len() }

// OfflinePartitions returns how many partitions have no leader.
func (im *Image) OfflinePartitions() int { return im.idx.offline.len() }

// checkIndex compares the indexes with a scan of every partition.
func (im *Image) checkIndex() error {
	want := newPartIndex()
	seen := map[uint32]bool{}
	for name, t := range im.Topics {
		if t.seq == 0 || t.seq > im.idx.lastSeq || seen[t.seq] || im.idx.bySeq[t.seq] != t {
			return fmt.Errorf("quorum invariant: topic %s has index number %d (last %d), indexed as %p, is %p", name, t.seq, im.idx.lastSeq, im.idx.bySeq[t.seq], t)
		}
		seen[t.seq] = true
		for i := range t.Partitions {
			want.add(t, int32(i))
		}
	}
	if len(im.idx.bySeq) != len(im.Topics) {
		return fmt.Errorf("quorum invariant: %d topics indexed, %d in the image", len(im.idx.bySeq), len(im.Topics))
	}
	same := func(what string, a, b map[int32]*partSet) error {
		if len(a) != len(b) {
			return fmt.Errorf("quorum invariant: index of %s covers %d brokers, a scan %d", what, len(a), len(b))
		}
		for id, s := range b {
			if !a[id].equal(s) {
				return fmt.Errorf("quorum invariant: index of %s of broker %d has %d partitions, a scan %d", what, id, a[id].len(), s.len())
			}
		}
		return nil
	}
	if err := same("replicas", im.idx.hosts, want.hosts); err != nil {
		return err
	}
	if err := same("leaders", im.idx.leads, want.leads); err != nil {
		return err
	}
	if !im.idx.offline.equal(want.offline) {
		return fmt.Errorf("quorum invariant: %d offline partitions indexed, a scan finds %d", im.idx.offline.len(), want.offline.len())
	}
	return nil
}
