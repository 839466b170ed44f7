package quorum

import (
	"fmt"
	"sort"
	"strings"
)

// EntryVersion is the version of the encoding of one Raft log entry: 2 is
// the binary encoding (codec_records.go), 1 the JSON of older builds,
// still read. Decoders reject entries of a newer version rather than
// guessing.
const EntryVersion = 2

// RecordType names a record kind in the encoding.
type RecordType string

// The record types. Their names are part of the on-disk format of the Raft log
// and snapshots: never rename one.
const (
	TypeClusterID       RecordType = "cluster_id"
	TypeRegisterBroker  RecordType = "register_broker"
	TypeFenceBroker     RecordType = "fence_broker"
	TypeUnfenceBroker   RecordType = "unfence_broker"
	TypeBrokerShutdown  RecordType = "broker_shutdown"
	TypeCreateTopic     RecordType = "create_topic"
	TypeRemoveTopic     RecordType = "remove_topic"
	TypeTopicConfig     RecordType = "topic_config"
	TypePartitionChange RecordType = "partition_change"
	TypeProducerIDs     RecordType = "producer_ids"
)

// Record is one metadata change. Records are produced by Plan, committed
// through Raft and applied by Replay; they carry every decision (epochs,
// placement, leaders, ids), so Replay never decides anything.
type Record interface {
	Type() RecordType
	fmt.Stringer
}

// ClusterIDRecord sets the cluster id once, when the quorum first elects a leader.
type ClusterIDRecord struct {
	ClusterID string `json:"cluster_id"`
}

// RegisterBrokerRecord (re)registers a broker with a new epoch. The broker
// starts fenced; an UnfenceBrokerRecord lets it lead and join ISRs.
type RegisterBrokerRecord struct {
	ID            int32      `json:"id"`
	Epoch         int64      `json:"epoch"`
	Endpoints     []Endpoint `json:"endpoints,omitempty"`
	Rack          string     `json:"rack,omitempty"`
	CleanShutdown bool       `json:"clean_shutdown"`
}

// FenceBrokerRecord fences the broker registration with the given epoch.
type FenceBrokerRecord struct {
	ID    int32 `json:"id"`
	Epoch int64 `json:"epoch"`
}

// UnfenceBrokerRecord unfences the broker registration with the given epoch.
type UnfenceBrokerRecord struct {
	ID    int32 `json:"id"`
	Epoch int64 `json:"epoch"`
}

// BrokerShutdownRecord marks a broker as in controlled shutdown.
type BrokerShutdownRecord struct {
	ID    int32 `json:"id"`
	Epoch int64 `json:"epoch"`
}

// CreateTopicRecord creates a topic with all of its partitions.
type CreateTopicRecord struct {
	Name       string            `json:"name"`
	ID         UUID              `json:"id"`
	Configs    map[string]string `json:"configs,omitempty"`
	Partitions []Partition       `json:"partitions"`
}

// RemoveTopicRecord deletes a topic.
type RemoveTopicRecord struct {
	Name string `json:"name"`
	ID   UUID   `json:"id"`
}

// TopicConfigRecord sets and deletes per-topic config overrides.
type TopicConfigRecord struct {
	TopicID UUID              `json:"topic_id"`
	Set     map[string]string `json:"set,omitempty"`
	Delete  []string          `json:"delete,omitempty"`
}

// PartitionChangeRecord carries the complete new state of a partition's
// leader and ISR. PartitionEpoch must be the current one plus one, which
// makes a stale or duplicated change fail Replay.
type PartitionChangeRecord struct {
	TopicID        UUID    `json:"topic_id"`
	Partition      int32   `json:"partition"`
	Leader         int32   `json:"leader"`
	ISR            []int32 `json:"isr"`
	LeaderEpoch    int32   `json:"leader_epoch"`
	PartitionEpoch int32   `json:"partition_epoch"`
	StaleISR       bool    `json:"stale_isr,omitempty"`
	// Unclean is set when Leader was elected from outside the ISR.
	Unclean *UncleanElection `json:"unclean,omitempty"`
	// Assignment, when set, is the partition's new replica set with its
	// adding and removing replicas (a reassignment starts, completes or
	// is cancelled); nil keeps them. Records from before reassignment
	// have none.
	Assignment *Assignment `json:"assignment,omitempty"`
	// ELR and LastKnownELR are the partition's complete new eligible
	// leader replicas and last-known ones (KIP-966); records from before
	// them, or with eligible.leader.replicas.version 0, have neither,
	// which leaves both empty.
	ELR          []int32 `json:"elr,omitempty"`
	LastKnownELR []int32 `json:"last_known_elr,omitempty"`
}

// Assignment is a partition's replicas with the reassignment in progress,
// if any (Kafka's PartitionChangeRecord Replicas, AddingReplicas,
// RemovingReplicas).
type Assignment struct {
	Replicas []int32 `json:"replicas"`
	Adding   []int32 `json:"adding,omitempty"`
	Removing []int32 `json:"removing,omitempty"`
}

func (a *Assignment) String() string {
	s := fmt.Sprintf("replicas=%v", a.Replicas)
	if len(a.Adding) > 0 {
		s += fmt.Sprintf(" adding=%v", a.Adding)
	}
	if len(a.Removing) > 0 {
		s += fmt.Sprintf(" removing=%v", a.Removing)
	}
	return s
}

// ProducerIDsRecord hands the block [Start, Start+Len) to a broker.
type ProducerIDsRecord struct {
	BrokerID    int32 `json:"broker_id"`
	BrokerEpoch int64 `json:"broker_epoch"`
	Start       int64 `json:"start"`
	Len         int64 `json:"len"`
}

func (*ClusterIDRecord) Type() RecordType       { return TypeClusterID }
func (*RegisterBrokerRecord) Type() RecordType  { return TypeRegisterBroker }
func (*FenceBrokerRecord) Type() RecordType     { return TypeFenceBroker }
func (*UnfenceBrokerRecord) Type() RecordType   { return TypeUnfenceBroker }
func (*BrokerShutdownRecord) Type() RecordType  { return TypeBrokerShutdown }
func (*CreateTopicRecord) Type() RecordType     { return TypeCreateTopic }
func (*RemoveTopicRecord) Type() RecordType     { return TypeRemoveTopic }
func (*TopicConfigRecord) Type() RecordType     { return TypeTopicConfig }
func (*PartitionChangeRecord) Type() RecordType { return TypePartitionChange }
func (*ProducerIDsRecord) Type() RecordType     { return TypeProducerIDs }

func (r *ClusterIDRecord) String() string { return fmt.Sprintf("cluster-id %s", r.ClusterID) }

func (r *RegisterBrokerRecord) String() string {
	s := fmt.Sprintf("register-broker id=%d epoch=%d", r.ID, r.Epoch)
	if r.Rack != "" {
		s += " rack=" + r.Rack
	}
	return s + fmt.Sprintf(" clean-shutdown=%t", r.CleanShutdown)
}

func (r *FenceBrokerRecord) String() string {
	return fmt.Sprintf("fence-broker id=%d epoch=%d", r.ID, r.Epoch)
}

func (r *UnfenceBrokerRecord) String() string {
	return fmt.Sprintf("unfence-broker id=%d epoch=%d", r.ID, r.Epoch)
}

func (r *BrokerShutdownRecord) String() string {
	return fmt.Sprintf("broker-shutdown id=%d epoch=%d", r.ID, r.Epoch)
}

func (r *CreateTopicRecord) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "create-topic %s partitions=%d", r.Name, len(r.Partitions))
	if len(r.Configs) > 0 {
		fmt.Fprintf(&b, " configs=%s", formatConfigs(r.Configs))
	}
	for i, p := range r.Partitions {
		fmt.Fprintf(&b, "\n  %d: %s", i, p.String())
	}
	return b.String()
}

func (r *RemoveTopicRecord) String() string { return "remove-topic " + r.Name }

func (r *TopicConfigRecord) String() string {
	return fmt.Sprintf("topic-config %s set=%s delete=%v", r.TopicID, formatConfigs(r.Set), r.Delete)
}

func (r *PartitionChangeRecord) String() string {
	s := fmt.Sprintf("partition-change %s/%d leader=%d isr=%v leader-epoch=%d partition-epoch=%d",
		r.TopicID, r.Partition, r.Leader, r.ISR, r.LeaderEpoch, r.PartitionEpoch)
	if r.StaleISR {
		s += " stale-isr"
	}
	if len(r.ELR) > 0 {
		s += fmt.Sprintf(" elr=%v", r.ELR)
	}
	if len(r.LastKnownELR) > 0 {
		s += fmt.Sprintf(" last-known-elr=%v", r.LastKnownELR)
	}
	if r.Unclean != nil {
		s += fmt.Sprintf(" UNCLEAN(lost-isr=%v)", r.Unclean.LostISR)
	}
	if r.Assignment != nil {
		s += " " + r.Assignment.String()
	}
	return s
}

func (r *ProducerIDsRecord) String() string {
	return fmt.Sprintf("producer-ids broker=%d start=%d len=%d", r.BrokerID, r.Start, r.Len)
}

// String formats a partition on one line.
func (p Partition) String() string {
	s := fmt.Sprintf("replicas=%v isr=%v leader=%d leader-epoch=%d partition-epoch=%d",
		p.Replicas, p.ISR, p.Leader, p.LeaderEpoch, p.PartitionEpoch)
	if p.StaleISR {
		s += " stale-isr"
	}
	if len(p.ELR) > 0 {
		s += fmt.Sprintf(" elr=%v", p.ELR)
	}
	if len(p.LastKnownELR) > 0 {
		s += fmt.Sprintf(" last-known-elr=%v", p.LastKnownELR)
	}
	if n := len(p.UncleanElections); n > 0 {
		s += fmt.Sprintf(" unclean-elections=%d", n)
	}
	if len(p.AddingReplicas) > 0 {
		s += fmt.Sprintf(" adding=%v", p.AddingReplicas)
	}
	if len(p.RemovingReplicas) > 0 {
		s += fmt.Sprintf(" removing=%v", p.RemovingReplicas)
	}
	return s
}

func formatConfigs(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// newRecord returns an empty record of type t, or nil for an unknown type:
// the registry of record type names, which JSON-carried records use.
func newRecord(t RecordType) Record {
	switch t {
	case TypeClusterID:
		return &ClusterIDRecord{}
	case TypeRegisterBroker:
		return &RegisterBrokerRecord{}
	case TypeFenceBroker:
		return &FenceBrokerRecord{}
	case TypeUnfenceBroker:
		return &UnfenceBrokerRecord{}
	case TypeBrokerShutdown:
		return &BrokerShutdownRecord{}
	case TypeCreateTopic:
		return &CreateTopicRecord{}
	case TypeRemoveTopic:
		return &RemoveTopicRecord{}
	case TypeTopicConfig:
		return &TopicConfigRecord{}
	case TypePartitionChange:
		return &PartitionChangeRecord{}
	case TypeProducerIDs:
		return &ProducerIDsRecord{}
	case TypeAddPartitions:
		return &AddPartitionsRecord{}
	case TypeLogDirOffline:
		return &LogDirOfflineRecord{}
	case TypeScramCredential:
		return &ScramCredentialRecord{}
	case TypeRemoveScramCredential:
		return &RemoveScramCredentialRecord{}
	case TypeClientQuota:
		return &ClientQuotaRecord{}
	case TypeACL:
		return &ACLRecord{}
	case TypeRemoveACL:
		return &RemoveACLRecord{}
	case TypeUnregisterBroker:
		return &UnregisterBrokerRecord{}
	case TypeBrokerConfig:
		return &BrokerConfigRecord{}
	case TypeFeatureLevel:
		return &FeatureLevelRecord{}
	}
	return nil
}
