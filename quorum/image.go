package quorum

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"sort"
)

// NoLeader is the leader id of a partition that has no leader (offline).
const NoLeader int32 = -1

// UUID is a 128-bit id (topic ids, cluster ids, directory ids). Its text form
// is Kafka's: unpadded URL-safe base64, 22 characters.
type UUID [16]byte

// NewUUID returns a random (version 4) UUID that is not the zero UUID.
func NewUUID() UUID {
	var u UUID
	for u == (UUID{}) {
		if _, err := rand.Read(u[:]); err != nil {
			panic(fmt.Sprintf("quorum: crypto/rand: %v", err))
		}
		u[6] = u[6]&0x0f | 0x40
		u[8] = u[8]&0x3f | 0x80
	}
	return u
}

// ParseUUID parses the text form written by UUID.String.
func ParseUUID(s string) (UUID, error) {
	var u UUID
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != len(u) {
		return u, fmt.Errorf("%w: %q is not a 22-character base64url UUID", ErrBadUUID, s)
	}
	copy(u[:], b)
	return u, nil
}

func (u UUID) String() string { return base64.RawURLEncoding.EncodeToString(u[:]) }

// MarshalText implements encoding.TextMarshaler.
func (u UUID) MarshalText() ([]byte, error) { return []byte(u.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (u *UUID) UnmarshalText(b []byte) error {
	v, err := ParseUUID(string(b))
	if err != nil {
		return err
	}
	*u = v
	return nil
}

// Endpoint is one listener a broker advertises.
type Endpoint struct {
	Name string `json:"name"`
	Host string `json:"host"`
	Port int32  `json:"port"`
}

// Broker is the registration of one broker. Epoch changes on every
// registration (KIP-841/903): a replica proves it is the current incarnation
// of its broker by carrying this epoch.
type Broker struct {
	ID           int32      `json:"id"`
	Epoch        int64      `json:"epoch"`
	Endpoints    []Endpoint `json:"endpoints,omitempty"`
	Rack         string     `json:"rack,omitempty"`
	Fenced       bool       `json:"fenced"`
	ShuttingDown bool       `json:"shutting_down"`
	// CleanShutdown is what the broker said about its previous run when it
	// registered; an unclean one may have lost its unflushed log tail.
	CleanShutdown bool `json:"clean_shutdown"`
	// OfflineLogDirs are the log directories this registration reported
	// failed (LogDirOffline); a new registration starts with none.
	OfflineLogDirs []string `json:"offline_log_dirs,omitempty"`
}

// Alive reports whether the broker may lead partitions and join ISRs:
// unfenced, not shutting down, and with its log directory online (a node
// has one, so an offline one takes every replica of the broker).
func (b *Broker) Alive() bool {
	return b != nil && !b.Fenced && !b.ShuttingDown && len(b.OfflineLogDirs) == 0
}

// UncleanElection records one election of a leader from outside the ISR: the
// data written after the old ISR's log end may be lost, and metrics and the
// admin CLI show these records.
type UncleanElection struct {
	LeaderEpoch int32   `json:"leader_epoch"`
	Leader      int32   `json:"leader"`
	LostISR     []int32 `json:"lost_isr"`
}

// Partition is the replication state of one partition.
type Partition struct {
	Replicas []int32 `json:"replicas"`
	ISR      []int32 `json:"isr"`
	Leader   int32   `json:"leader"`
	// LeaderEpoch is bumped on every leader change.
	LeaderEpoch int32 `json:"leader_epoch"`
	// PartitionEpoch is bumped on every change of the partition.
	PartitionEpoch int32 `json:"partition_epoch"`
	// StaleISR marks an offline partition whose only ISR member restarted
	// after an unclean shutdown and may have lost acknowledged records:
	// electing it counts as an unclean election (compare KIP-966).
	StaleISR         bool              `json:"stale_isr,omitempty"`
	UncleanElections []UncleanElection `json:"unclean_elections,omitempty"`
	// AddingReplicas and RemovingReplicas are set while a reassignment
	// (KIP-455) is in progress: Replicas is then the target followed by
	// the removing replicas, and the reassignment completes when every
	// adding replica is in the ISR (reassign.go). Both are empty
	// otherwise; snapshots from before reassignment have neither.
	AddingReplicas   []int32 `json:"adding_replicas,omitempty"`
	RemovingReplicas []int32 `json:"removing_replicas,omitempty"`
	// ELR are the eligible leader replicas (KIP-966, elr.go): replicas
	// out of the ISR that hold every committed record, because they left
	// it while the ISR was smaller than min.insync.replicas (the high
	// watermark stays frozen then) and have not restarted uncleanly
	// since. With an empty ISR the leader is elected from them.
	// LastKnownELR are the replicas that were in the ISR or ELR while it
	// was below min.insync.replicas but restarted uncleanly since: not
	// electable cleanly, the safest choice of an unclean election. Both
	// are empty while the ISR has min.insync.replicas members, and in
	// snapshots from before eligible leader replicas.
	ELR          []int32 `json:"elr,omitempty"`
	LastKnownELR []int32 `json:"last_known_elr,omitempty"`
}

// Reassigning reports whether a reassignment of the partition is in progress.
func (p *Partition) Reassigning() bool {
	return len(p.AddingReplicas) > 0 || len(p.RemovingReplicas) > 0
}

// TargetReplicas returns the replicas a reassignment in progress moves to
// (Replicas without the removing ones), or Replicas when none is.
func (p *Partition) TargetReplicas() []int32 {
	return without(p.Replicas, p.RemovingReplicas)
}

// OriginalReplicas returns the replicas before the reassignment in
// progress (Replicas without the adding ones), or Replicas when none is.
func (p *Partition) OriginalReplicas() []int32 {
	return without(p.Replicas, p.AddingReplicas)
}

// without returns a new slice of s without the members of drop.
func without(s, drop []int32) []int32 {
	out := make([]int32, 0, len(s))
	for _, r := range s {
		if !slices.Contains(drop, r) {
			out = append(out, r)
		}
	}
	return out
}

// Topic is one topic: its id, per-topic config overrides and partitions.
type Topic struct {
	Name       string            `json:"name"`
	ID         UUID              `json:"id"`
	Configs    map[string]string `json:"configs,omitempty"`
	Partitions []Partition       `json:"partitions"`

	// seq numbers the topic in its image's partition index (index.go).
	seq uint32
}

// ProducerIDBlock is a range of producer ids handed to one broker.
type ProducerIDBlock struct {
	BrokerID int32 `json:"broker_id"`
	Start    int64 `json:"start"`
	Len      int64 `json:"len"`
}

// Image is the whole metadata state. It changes only through Replay; every
// node that replays the same records holds an identical Image.
type Image struct {
	ClusterID string            `json:"cluster_id,omitempty"`
	Brokers   map[int32]*Broker `json:"brokers"`
	Topics    map[string]*Topic `json:"topics"`
	// LastBrokerEpoch is the largest broker epoch handed out so far.
	LastBrokerEpoch int64 `json:"last_broker_epoch"`
	// NextProducerID is the first producer id not yet in any block.
	NextProducerID int64 `json:"next_producer_id"`
	// LastProducerBlock is the most recent allocation.
	LastProducerBlock *ProducerIDBlock `json:"last_producer_block,omitempty"`
	// Scram holds the SCRAM credentials by user and mechanism (scram.go).
	Scram map[string]map[string]ScramCredential `json:"scram,omitempty"`
	// ACLs holds the ACL bindings by id (acl.go); acls indexes them for
	// the authorizer, rebuilt (never changed) on every ACL record.
	ACLs map[string]ACLBinding `json:"acls,omitempty"`
	acls *ACLSet
	// Quotas holds the client quotas by QuotaEntity.Key (quota.go).
	Quotas map[string]*ClientQuota `json:"quotas,omitempty"`
	// BrokerConfigs holds the dynamic broker configs by resource name:
	// "" for the cluster default, else a broker id (broker_configs.go).
	BrokerConfigs map[string]map[string]string `json:"broker_configs,omitempty"`
	// Features holds the finalized feature levels by name (features.go);
	// FeaturesEpoch counts the feature records replayed.
	Features      map[string]int16 `json:"features,omitempty"`
	FeaturesEpoch int64            `json:"features_epoch,omitempty"`

	topicsByID map[UUID]string
	// idx indexes the partitions by broker (index.go).
	idx partIndex
}

// NewImage returns the empty image.
func NewImage() *Image {
	return &Image{
		Brokers:    map[int32]*Broker{},
		Topics:     map[string]*Topic{},
		topicsByID: map[UUID]string{},
		idx:        newPartIndex(),
	}
}

// TopicByID returns the topic with the given id, or nil.
func (im *Image) TopicByID(id UUID) *Topic {
	name, ok := im.topicsByID[id]
	if !ok {
		return nil
	}
	return im.Topics[name]
}

// SortedTopics returns the topic names in order.
func (im *Image) SortedTopics() []string {
	names := make([]string, 0, len(im.Topics))
	for n := range im.Topics {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// SortedBrokers returns the broker ids in order.
func (im *Image) SortedBrokers() []int32 {
	ids := make([]int32, 0, len(im.Brokers))
	for id := range im.Brokers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Clone returns a deep copy that shares nothing with im.
func (im *Image) Clone() *Image {
	c := NewImage()
	c.ClusterID = im.ClusterID
	c.LastBrokerEpoch = im.LastBrokerEpoch
	c.NextProducerID = im.NextProducerID
	c.Scram = cloneScram(im.Scram)
	c.Quotas = cloneQuotas(im.Quotas)
	c.BrokerConfigs = cloneBrokerConfigs(im.BrokerConfigs)
	c.Features, c.FeaturesEpoch = maps.Clone(im.Features), im.FeaturesEpoch
	if im.ACLs != nil {
		c.ACLs = maps.Clone(im.ACLs)
	}
	c.acls = im.acls
	if im.LastProducerBlock != nil {
		b := *im.LastProducerBlock
		c.LastProducerBlock = &b
	}
	for id, b := range im.Brokers {
		nb := *b
		nb.Endpoints = slices.Clone(b.Endpoints)
		nb.OfflineLogDirs = slices.Clone(b.OfflineLogDirs)
		c.Brokers[id] = &nb
	}
	for name, t := range im.Topics {
		nt := &Topic{Name: t.Name, ID: t.ID, Partitions: make([]Partition, len(t.Partitions)), seq: t.seq}
		if t.Configs != nil {
			nt.Configs = make(map[string]string, len(t.Configs))
			for k, v := range t.Configs {
				nt.Configs[k] = v
			}
		}
		var arena []int32
		for i := range t.Partitions {
			nt.Partitions[i] = t.Partitions[i].cloneInto(&arena)
		}
		c.Topics[name] = nt
		c.topicsByID[t.ID] = name
	}
	c.idx = im.idx.clone(c.Topics)
	return c
}

// Clone returns a deep copy of the topic that shares nothing with t, for
// a reader that copies a few topics out of View instead of cloning the
// whole image (the node's reconciler after a change to some topics).
func (t *Topic) Clone() *Topic {
	nt := &Topic{Name: t.Name, ID: t.ID, Configs: maps.Clone(t.Configs), Partitions: make([]Partition, len(t.Partitions))}
	for i := range t.Partitions {
		nt.Partitions[i] = t.Partitions[i].clone()
	}
	return nt
}

// cloneInto is clone with the replicas and ISR carved out of *arena
// (capacity-limited: an append copies), one allocation for many
// partitions instead of two each.
func (p Partition) cloneInto(arena *[]int32) Partition {
	q := p
	q.Replicas, q.ISR = carve(arena, p.Replicas), carve(arena, p.ISR)
	q.cloneRare()
	return q
}

func carve(arena *[]int32, s []int32) []int32 {
	if s == nil {
		return nil
	}
	if cap(*arena)-len(*arena) < len(s) {
		*arena = make([]int32, 0, max(len(s), 1024))
	}
	start := len(*arena)
	*arena = append(*arena, s...)
	return (*arena)[start:len(*arena):len(*arena)]
}

func (p Partition) clone() Partition {
	q := p
	q.Replicas = slices.Clone(p.Replicas)
	q.ISR = slices.Clone(p.ISR)
	q.cloneRare()
	return q
}

// cloneRare replaces the rarely set slices of p with copies.
func (p *Partition) cloneRare() {
	p.AddingReplicas = slices.Clone(p.AddingReplicas)
	p.RemovingReplicas = slices.Clone(p.RemovingReplicas)
	p.ELR = slices.Clone(p.ELR)
	p.LastKnownELR = slices.Clone(p.LastKnownELR)
	if p.UncleanElections != nil {
		us := make([]UncleanElection, len(p.UncleanElections))
		for i, u := range p.UncleanElections {
			u.LostISR = slices.Clone(u.LostISR)
			us[i] = u
		}
		p.UncleanElections = us
	}
}

// reindex rebuilds the derived indexes after decoding.
func (im *Image) reindex() {
	if im.Brokers == nil {
		im.Brokers = map[int32]*Broker{}
	}
	if im.Topics == nil {
		im.Topics = map[string]*Topic{}
	}
	im.acls = newACLSet(im.ACLs)
	im.topicsByID = make(map[UUID]string, len(im.Topics))
	im.idx = newPartIndex()
	for _, name := range im.SortedTopics() {
		t := im.Topics[name]
		im.topicsByID[t.ID] = name
		im.idx.addTopic(t)
	}
}

// PartitionCount returns the number of partitions of all topics.
func (im *Image) PartitionCount() int {
	n := 0
	for _, t := range im.Topics {
		n += len(t.Partitions)
	}
	return n
}
