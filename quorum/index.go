package quorum

import (
	"fmt"
	"maps"
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
// A partition is named in the indexes by a partKey: the topic's sequence
// number in this image (Topic.seq, handed out when the topic enters it;
// never written anywhere, so two images may number topics differently)
// and the partition index. Keys hold no pointers, so the maps (several
// million entries at scale) are not scanned by the garbage collector.

// partKey is (topic seq << 32 | partition).
type partKey uint64

func keyOf(seq uint32, partition int32) partKey {
	return partKey(uint64(seq)<<32 | uint64(uint32(partition)))
}

func (k partKey) seq() uint32        { return uint32(k >> 32) }
func (k partKey) partition() int32   { return int32(uint32(k)) }
func (k partKey) String() string     { return fmt.Sprintf("%d/%d", k.seq(), k.partition()) }
func (s partSet) add(k partKey)      { s[k] = struct{}{} }
func (s partSet) has(k partKey) bool { _, ok := s[k]; return ok }

type partSet map[partKey]struct{}

// partIndex is the image's partition index; the zero value is not ready
// (newPartIndex).
type partIndex struct {
	lastSeq uint32
	bySeq   map[uint32]*Topic
	hosts   map[int32]partSet // broker -> partitions naming it among their replicas
	leads   map[int32]partSet // broker -> partitions it leads
	offline partSet           // partitions without a leader
}

func newPartIndex() partIndex {
	return partIndex{bySeq: map[uint32]*Topic{}, hosts: map[int32]partSet{}, leads: map[int32]partSet{}, offline: partSet{}}
}

// clone copies the index for an image whose topics are topics (the
// clones of the indexed ones, with the same seq).
func (x *partIndex) clone(topics map[string]*Topic) partIndex {
	c := partIndex{lastSeq: x.lastSeq, bySeq: make(map[uint32]*Topic, len(x.bySeq)),
		hosts: make(map[int32]partSet, len(x.hosts)), leads: make(map[int32]partSet, len(x.leads)), offline: maps.Clone(x.offline)}
	for _, t := range topics {
		c.bySeq[t.seq] = t
	}
	for b, s := range x.hosts {
		c.hosts[b] = maps.Clone(s)
	}
	for b, s := range x.leads {
		c.leads[b] = maps.Clone(s)
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

// add indexes partition i of t as it is now; remove forgets it (call
// remove before changing a partition and add after).
func (x *partIndex) add(t *Topic, i int32) {
	k, p := keyOf(t.seq, i), &t.Partitions[i]
	for _, r := range p.Replicas {
		s := x.hosts[r]
		if s == nil {
			s = partSet{}
			x.hosts[r] = s
		}
		s.add(k)
	}
	if p.Leader == NoLeader {
		x.offline.add(k)
		return
	}
	s := x.leads[p.Leader]
	if s == nil {
		s = partSet{}
		x.leads[p.Leader] = s
	}
	s.add(k)
}

func (x *partIndex) remove(t *Topic, i int32) {
	k, p := keyOf(t.seq, i), &t.Partitions[i]
	for _, r := range p.Replicas {
		if s := x.hosts[r]; s != nil {
			delete(s, k)
			if len(s) == 0 {
				delete(x.hosts, r)
			}
		}
	}
	if p.Leader == NoLeader {
		delete(x.offline, k)
		return
	}
	if s := x.leads[p.Leader]; s != nil {
		delete(s, k)
		if len(s) == 0 {
			delete(x.leads, p.Leader)
		}
	}
}

// each calls fn for the partitions of s in no particular order.
func (im *Image) each(s partSet, fn func(t *Topic, partition int32, p *Partition)) {
	for k := range s {
		t := im.idx.bySeq[k.seq()]
		fn(t, k.partition(), &t.Partitions[k.partition()])
	}
}

// sorted calls fn for the partitions of s in topic-name, then partition
// order: the order in which a scan of every partition met them, so that
// plans (and their records) come out the same.
func (im *Image) sorted(s partSet, fn func(t *Topic, partition int32, p *Partition)) {
	keys := make([]partKey, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	if len(keys) < 4*len(im.idx.bySeq) {
		slices.SortFunc(keys, func(a, b partKey) int {
			if a.seq() != b.seq() {
				return strings.Compare(im.idx.bySeq[a.seq()].Name, im.idx.bySeq[b.seq()].Name)
			}
			return int(a.partition()) - int(b.partition())
		})
	} else {
		// Many partitions (a broker's share of a million): rank the
		// topics by name once and sort integers, not strings.
		rank := make(map[uint32]uint32, len(im.idx.bySeq))
		for i, name := range im.SortedTopics() {
			rank[im.Topics[name].seq] = uint32(i)
		}
		for i, k := range keys {
			keys[i] = keyOf(rank[k.seq()], k.partition())
		}
		slices.Sort(keys)
		bySeq := make([]*Topic, len(rank))
		for seq, r := range rank {
			bySeq[r] = im.idx.bySeq[seq]
		}
		for _, k := range keys {
			t := bySeq[k.seq()]
			fn(t, k.partition(), &t.Partitions[k.partition()])
		}
		return
	}
	for _, k := range keys {
		t := im.idx.bySeq[k.seq()]
		fn(t, k.partition(), &t.Partitions[k.partition()])
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
func (im *Image) PartitionsOn(broker int32) int { return len(im.idx.hosts[broker]) }

// PartitionsLedBy returns how many partitions broker leads.
func (im *Image) PartitionsLedBy(broker int32) int { return len(im.idx.leads[broker]) }

// OfflinePartitions returns how many partitions have no leader.
func (im *Image) OfflinePartitions() int { return len(im.idx.offline) }

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
	same := func(what string, a, b map[int32]partSet) error {
		if len(a) != len(b) {
			return fmt.Errorf("quorum invariant: index of %s covers %d brokers, a scan %d", what, len(a), len(b))
		}
		for id, s := range b {
			if !maps.Equal(a[id], s) {
				return fmt.Errorf("quorum invariant: index of %s of broker %d has %d partitions, a scan %d", what, id, len(a[id]), len(s))
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
	if !maps.Equal(im.idx.offline, want.offline) {
		return fmt.Errorf("quorum invariant: %d offline partitions indexed, a scan finds %d", len(im.idx.offline), len(want.offline))
	}
	return nil
}
