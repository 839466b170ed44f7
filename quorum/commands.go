package quorum

// Commands are requests to change the metadata. Plan validates one against
// the image and turns it into records and a reply. Commands and replies are
// plain data: they travel as JSON when forwarded to the active controller.

// CommandType names a command on the wire.
type CommandType string

// The command types.
const (
	CmdSetClusterID       CommandType = "set_cluster_id"
	CmdRegisterBroker     CommandType = "register_broker"
	CmdFenceBroker        CommandType = "fence_broker"
	CmdUnfenceBroker      CommandType = "unfence_broker"
	CmdControlledShutdown CommandType = "controlled_shutdown"
	CmdCreateTopics       CommandType = "create_topics"
	CmdDeleteTopics       CommandType = "delete_topics"
	CmdAlterConfigs       CommandType = "alter_configs"
	CmdAlterPartition     CommandType = "alter_partition"
	CmdAlterPartitions    CommandType = "alter_partitions"
	CmdElectLeaders       CommandType = "elect_leaders"
	CmdAllocateProducerID CommandType = "allocate_producer_ids"
)

// Command is one metadata change request.
type Command interface {
	CommandType() CommandType
	// newReply returns a pointer to the zero reply of this command, for
	// decoding a forwarded reply.
	newReply() any
}

// AnyEpoch in a command's broker epoch means "the current registration".
const AnyEpoch int64 = -1

// SetClusterID stores the cluster id in an image that has none, with
// the SCRAM credentials bootstrapped at format time (sluice init
// --add-scram) and the initial feature levels (features.go), written
// only then, as Kafka's bootstrap records.
type SetClusterID struct {
	ClusterID string                  `json:"cluster_id"`
	Scram     []ScramCredentialRecord `json:"scram,omitempty"`
	Features  map[string]int16        `json:"features,omitempty"`
}

// RegisterBroker registers (or re-registers, with a new epoch) a broker. The
// broker leaves every ISR and leadership of its previous incarnation, and
// starts fenced. Reply: *RegisterBrokerReply.
type RegisterBroker struct {
	ID        int32      `json:"id"`
	ClusterID string     `json:"cluster_id,omitempty"`
	Endpoints []Endpoint `json:"endpoints,omitempty"`
	Rack      string     `json:"rack,omitempty"`
	// CleanShutdown says the broker's logs hold everything it acknowledged
	// (it stopped cleanly, or fsyncs before acking). When false, a partition
	// whose only ISR member is this broker gets a stale ISR: it is not
	// elected leader again without an unclean election.
	CleanShutdown bool `json:"clean_shutdown"`
	// PreviousBrokerEpoch is the broker epoch the broker's clean-shutdown
	// marker names (Kafka's BrokerRegistration PreviousBrokerEpoch), -1
	// without one; 0 (older nodes) leaves CleanShutdown alone. The
	// shutdown counts as clean only when it names the epoch the image
	// holds for the broker: a marker of another incarnation (a data
	// directory restored from a copy, a registration the controller has
	// since replaced) is not evidence that this one stopped cleanly.
	PreviousBrokerEpoch int64 `json:"previous_broker_epoch,omitempty"`
}

// RegisterBrokerReply carries the new broker epoch.
type RegisterBrokerReply struct {
	Epoch int64 `json:"epoch"`
}

// FenceBroker fences a broker (it left the cluster, missed its session): it
// leaves every ISR (except as the last member) and loses leadership.
type FenceBroker struct {
	ID    int32 `json:"id"`
	Epoch int64 `json:"epoch"`
}

// UnfenceBroker lets a registered broker lead again and elects it leader of
// leaderless partitions it can take cleanly (or uncleanly where allowed).
type UnfenceBroker struct {
	ID    int32 `json:"id"`
	Epoch int64 `json:"epoch"`
}

// ControlledShutdown moves leadership and ISR membership off a broker that
// is stopping.
type ControlledShutdown struct {
	ID    int32 `json:"id"`
	Epoch int64 `json:"epoch"`
}

// TopicSpec describes one topic to create. Either Partitions and
// ReplicationFactor, or Assignments (replicas of each partition) are set.
type TopicSpec struct {
	Name              string            `json:"name"`
	Partitions        int32             `json:"partitions,omitempty"`
	ReplicationFactor int16             `json:"replication_factor,omitempty"`
	Assignments       [][]int32         `json:"assignments,omitempty"`
	Configs           map[string]string `json:"configs,omitempty"`
}

// CreateTopics creates topics; each succeeds or fails on its own.
// Reply: *TopicsReply.
type CreateTopics struct {
	Topics []TopicSpec `json:"topics"`
}

// DeleteTopics deletes topics by name. Reply: *TopicsReply.
type DeleteTopics struct {
	Names []string `json:"names"`
}

// TopicResult is the outcome for one topic; Code is a Kafka error code.
type TopicResult struct {
	Name    string `json:"name"`
	ID      UUID   `json:"id"`
	Code    int16  `json:"code"`
	Message string `json:"message,omitempty"`
}

// TopicsReply is the reply of CreateTopics and DeleteTopics.
type TopicsReply struct {
	Topics []TopicResult `json:"topics"`
}

// AlterConfigs sets and deletes config overrides of one topic.
type AlterConfigs struct {
	Topic  string            `json:"topic"`
	Set    map[string]string `json:"set,omitempty"`
	Delete []string          `json:"delete,omitempty"`
}

// ISRMember is one replica of a proposed ISR with the broker epoch the
// leader saw it fetch with (KIP-903); AnyEpoch skips the epoch check.
type ISRMember struct {
	ID    int32 `json:"id"`
	Epoch int64 `json:"epoch"`
}

// AlterPartition is a partition leader's request to change the ISR
// (Kafka's AlterPartition). Reply: *Partition, the state after the change.
type AlterPartition struct {
	BrokerID       int32       `json:"broker_id"`
	BrokerEpoch    int64       `json:"broker_epoch"`
	TopicID        UUID        `json:"topic_id"`
	Partition      int32       `json:"partition"`
	LeaderEpoch    int32       `json:"leader_epoch"`
	PartitionEpoch int32       `json:"partition_epoch"`
	NewISR         []ISRMember `json:"new_isr"`
}

// AlterPartitions is AlterPartition for many partitions led by one broker,
// in one command and one Raft entry, like Kafka's AlterPartition request. A
// stale sender epoch fails the whole command; otherwise each partition
// succeeds or fails on its own. Reply: *AlterPartitionsReply.
type AlterPartitions struct {
	BrokerID    int32                `json:"broker_id"`
	BrokerEpoch int64                `json:"broker_epoch"`
	Partitions  []AlterPartitionItem `json:"partitions"`
}

// AlterPartitionItem is one partition of AlterPartitions.
type AlterPartitionItem struct {
	TopicID        UUID        `json:"topic_id"`
	Partition      int32       `json:"partition"`
	LeaderEpoch    int32       `json:"leader_epoch"`
	PartitionEpoch int32       `json:"partition_epoch"`
	NewISR         []ISRMember `json:"new_isr"`
}

// AlterPartitionResult is the outcome for one partition: Code is a Kafka
// error code; State is the partition after the change when Code is 0.
type AlterPartitionResult struct {
	TopicID   UUID       `json:"topic_id"`
	Partition int32      `json:"partition"`
	Code      int16      `json:"code"`
	Message   string     `json:"message,omitempty"`
	State     *Partition `json:"state,omitempty"`
}

// AlterPartitionsReply is the reply of AlterPartitions.
type AlterPartitionsReply struct {
	Partitions []AlterPartitionResult `json:"partitions"`
}

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

// ElectLeaders runs preferred or unclean elections (Kafka's ElectLeaders).
// Empty Partitions means every partition. Reply: *ElectLeadersReply.
type ElectLeaders struct {
	Election   Election         `json:"election"`
	Partitions []TopicPartition `json:"partitions,omitempty"`
}

// ElectResult is the outcome for one partition; Code is a Kafka error code.
type ElectResult struct {
	TopicPartition
	Code    int16  `json:"code"`
	Message string `json:"message,omitempty"`
}

// ElectLeadersReply is the reply of ElectLeaders.
type ElectLeadersReply struct {
	Partitions []ElectResult `json:"partitions"`
}

// AllocateProducerIDs hands a block of producer ids to a broker.
// Reply: *ProducerIDBlock.
type AllocateProducerIDs struct {
	BrokerID    int32 `json:"broker_id"`
	BrokerEpoch int64 `json:"broker_epoch"`
}

func (*SetClusterID) CommandType() CommandType        { return CmdSetClusterID }
func (*RegisterBroker) CommandType() CommandType      { return CmdRegisterBroker }
func (*FenceBroker) CommandType() CommandType         { return CmdFenceBroker }
func (*UnfenceBroker) CommandType() CommandType       { return CmdUnfenceBroker }
func (*ControlledShutdown) CommandType() CommandType  { return CmdControlledShutdown }
func (*CreateTopics) CommandType() CommandType        { return CmdCreateTopics }
func (*DeleteTopics) CommandType() CommandType        { return CmdDeleteTopics }
func (*AlterConfigs) CommandType() CommandType        { return CmdAlterConfigs }
func (*AlterPartition) CommandType() CommandType      { return CmdAlterPartition }
func (*AlterPartitions) CommandType() CommandType     { return CmdAlterPartitions }
func (*ElectLeaders) CommandType() CommandType        { return CmdElectLeaders }
func (*AllocateProducerIDs) CommandType() CommandType { return CmdAllocateProducerID }

func (*SetClusterID) newReply() any        { return nil }
func (*RegisterBroker) newReply() any      { return &RegisterBrokerReply{} }
func (*FenceBroker) newReply() any         { return nil }
func (*UnfenceBroker) newReply() any       { return nil }
func (*ControlledShutdown) newReply() any  { return nil }
func (*CreateTopics) newReply() any        { return &TopicsReply{} }
func (*DeleteTopics) newReply() any        { return &TopicsReply{} }
func (*AlterConfigs) newReply() any        { return nil }
func (*AlterPartition) newReply() any      { return &Partition{} }
func (*AlterPartitions) newReply() any     { return &AlterPartitionsReply{} }
func (*ElectLeaders) newReply() any        { return &ElectLeadersReply{} }
func (*AllocateProducerIDs) newReply() any { return &ProducerIDBlock{} }

func newCommand(t CommandType) Command {
	switch t {
	case CmdSetClusterID:
		return &SetClusterID{}
	case CmdRegisterBroker:
		return &RegisterBroker{}
	case CmdFenceBroker:
		return &FenceBroker{}
	case CmdUnfenceBroker:
		return &UnfenceBroker{}
	case CmdControlledShutdown:
		return &ControlledShutdown{}
	case CmdCreateTopics:
		return &CreateTopics{}
	case CmdDeleteTopics:
		return &DeleteTopics{}
	case CmdAlterConfigs:
		return &AlterConfigs{}
	case CmdAlterPartition:
		return &AlterPartition{}
	case CmdAlterPartitions:
		return &AlterPartitions{}
	case CmdElectLeaders:
		return &ElectLeaders{}
	case CmdAllocateProducerID:
		return &AllocateProducerIDs{}
	case CmdCreatePartitions:
		return &CreatePartitions{}
	case CmdLogDirOffline:
		return &LogDirOffline{}
	case CmdAlterScram:
		return &AlterScramCredentials{}
	case CmdAlterClientQuotas:
		return &AlterClientQuotas{}
	case CmdCreateACLs:
		return &CreateACLs{}
	case CmdDeleteACLs:
		return &DeleteACLs{}
	case CmdAlterReassignments:
		return &AlterPartitionReassignments{}
	case CmdUnregisterBroker:
		return &UnregisterBroker{}
	case CmdAlterBrokerConfigs:
		return &AlterBrokerConfigs{}
	case CmdUpdateFeatures:
		return &UpdateFeatures{}
	}
	return nil
}
