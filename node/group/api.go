package group

import (
	"math"
	"time"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetsTopic is the internal topic that holds groups and their offsets.
const OffsetsTopic = "__consumer_offsets"

// Config is the coordinator's share of the broker configuration, with
// Kafka's names and defaults (node/config fills it).
type Config struct {
	// MinSessionTimeout, MaxSessionTimeout bound a member's session
	// timeout (group.min.session.timeout.ms 6000,
	// group.max.session.timeout.ms 1800000): outside them JoinGroup
	// answers INVALID_SESSION_TIMEOUT.
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// InitialRebalanceDelay is group.initial.rebalance.delay.ms (3000):
	// how long the first rebalance of an empty group waits for more
	// members.
	InitialRebalanceDelay time.Duration
	// MaxSize is group.max.size (Kafka: Integer.MAX_VALUE; 0 = no bound).
	MaxSize int
	// OffsetMetadataMaxBytes is offset.metadata.max.bytes (4096).
	OffsetMetadataMaxBytes int
	// OffsetsRetention is offsets.retention.minutes (7 days): offsets of
	// an empty group expire this long after the group became empty (or,
	// for a group without membership, after the commit).
	OffsetsRetention time.Duration
	// RetentionCheckInterval is offsets.retention.check.interval.ms
	// (600000).
	RetentionCheckInterval time.Duration

	// ConsumerSessionTimeout is group.consumer.session.timeout.ms
	// (45000): a KIP-848 member without a heartbeat that long is removed.
	ConsumerSessionTimeout time.Duration
	// ConsumerHeartbeatInterval is group.consumer.heartbeat.interval.ms
	// (5000), told to every member.
	ConsumerHeartbeatInterval time.Duration
	// ConsumerMaxSize is group.consumer.max.size (0 = no bound).
	ConsumerMaxSize int
	// MigrationPolicy is group.consumer.migration.policy (Kafka 4's:
	// bidirectional, upgrade, downgrade, disabled; "" = bidirectional):
	// whether a classic group with members is upgraded online to a
	// consumer group when a member joins with ConsumerGroupHeartbeat,
	// and whether a consumer group left with only classic members is
	// downgraded (mixed.go).
	MigrationPolicy string
	// ConsumerAssignors is group.consumer.assignors ("uniform", "range"):
	// the server assignors members may name; the first is the default.
	ConsumerAssignors []string
}

// DefaultConfig is Kafka's defaults.
func DefaultConfig() Config {
	return Config{
		MinSessionTimeout:      6 * time.Second,
		MaxSessionTimeout:      30 * time.Minute,
		InitialRebalanceDelay:  3 * time.Second,
		OffsetMetadataMaxBytes: 4096,
		OffsetsRetention:       7 * 24 * time.Hour,
		RetentionCheckInterval: 10 * time.Minute,

		ConsumerSessionTimeout:    45 * time.Second,
		ConsumerHeartbeatInterval: 5 * time.Second,
		ConsumerAssignors:         []string{"uniform", "range"},
		MigrationPolicy:           MigrationBidirectional,
	}
}

// Partition is the __consumer_offsets partition that coordinates a group:
// abs(Java's String.hashCode(groupID)) mod partitions, as Kafka computes it
// (so tooling that maps groups to partitions agrees).
func Partition(groupID string, partitions int32) int32 {
	var h int32
	for _, c := range utf16.Encode([]rune(groupID)) {
		h = 31*h + int32(c)
	}
	if h == math.MinInt32 { // Kafka's Utils.abs
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % partitions
}

// Request is one client request for groups of this shard.
type Request struct {
	// ID is the driver's: echoed in the Response (and in nothing else).
	ID uint64
	// ClientID and ClientHost are the connection's (DescribeGroups shows
	// them per member).
	ClientID, ClientHost string
	// Body is the decoded request, its Version set: one of
	// *kmsg.JoinGroupRequest, *kmsg.SyncGroupRequest,
	// *kmsg.HeartbeatRequest, *kmsg.LeaveGroupRequest,
	// *kmsg.OffsetCommitRequest, *kmsg.TxnOffsetCommitRequest,
	// *kmsg.OffsetFetchRequest,
	// *kmsg.DescribeGroupsRequest, *kmsg.DeleteGroupsRequest,
	// *kmsg.OffsetDeleteRequest, *kmsg.ConsumerGroupHeartbeatRequest,
	// *kmsg.ConsumerGroupDescribeRequest. A request that names several groups
	// (DescribeGroups, DeleteGroups, OffsetFetch v8+,
	// ConsumerGroupDescribe) holds only the
	// groups of this shard: the driver splits it and merges the answers.
	// The driver has validated what needs the metadata: the partitions of
	// an OffsetCommit or OffsetDelete exist (it answers
	// UNKNOWN_TOPIC_OR_PARTITION for the others itself and passes the
	// rest). Topics are by name: for OffsetCommit and OffsetFetch v10+
	// (topic ids) the driver fills in the names. Any other Body panics.
	Body kmsg.Request
}

// Response is the answer to the Request with the same ID: the response
// kind of its Body, at its version.
type Response struct {
	ID   uint64
	Body kmsg.Response
}

// Record is one record of the offsets partition. Value nil is a tombstone.
type Record struct {
	Key, Value []byte
}

// Append is records to write to the shard's partition as one batch with
// acks=all; the driver reports the outcome with Appended(ID).
type Append struct {
	ID      uint64
	Records []Record
	// Transactional: the batch is written as a transactional batch of
	// the producer ProducerID at ProducerEpoch (a TxnOffsetCommit's
	// offsets), which the log refuses for an older epoch
	// (INVALID_PRODUCER_EPOCH, answered to the client); otherwise the
	// batch has no producer.
	Transactional bool
	ProducerID    int64
	ProducerEpoch int16
}

// Ready is what the driver must do now.
type Ready struct {
	// Appends in order; each is answered by Appended.
	Appends []Append
	// Responses to send.
	Responses []Response
}

// Shard is the coordinator state of one __consumer_offsets partition.
//
// A Shard is not safe for concurrent use: the driver calls it under one
// lock. Slices it returns (Ready, ListGroups, Stats) are the caller's.
type Shard struct {
	partition int32
	cfg       Config

	loaded bool
	groups map[string]*group
	timers timerHeap
	ready  Ready

	nextAppend uint64
	// nextOrder ranks records in log order: the last offset replayed,
	// then one more for each Append (offset.order).
	nextOrder int64
	// txnGroups are the groups with pending transactional offsets of
	// each producer id (txn_offsets.go).
	txnGroups map[int64]map[string]bool
	// lateTxns are CompleteTxn calls made while loading.
	lateTxns []lateTxn
	// parked are KIP-848 answers that wrote nothing but read what an
	// Append still in flight wrote: each waits for the Append with the
	// key's id (the last in flight when it was made), as Kafka's
	// coordinator answers only from committed state.
	parked map[uint64][]parkedAnswer
	ops    map[uint64]*op // Appends in flight

	// Member ids are prefix-UUID as Kafka's, the UUID made of idSeed (the
	// load time: ids of an earlier coordinator of the partition do not
	// come back) and idSeq.
	idSeed, idSeq uint64

	// retentionAnchor is the load time: retention checks run every
	// RetentionCheckInterval from it, as Kafka schedules them;
	// retentionAt is the next check that may expire something (zero:
	// none can).
	retentionAnchor, retentionAt time.Time
	expired, commits, rebalances int64

	groupBudget int // MaxGroupMetadataBytes (tests lower it)

	// The topics consumer groups subscribe to and are assigned from
	// (SetTopics).
	topics     map[string]TopicInfo
	topicNames map[[16]byte]string
}

// NewShard is an empty, loading shard for partition p.
func NewShard(p int32, cfg Config) *Shard {
	return &Shard{partition: p, cfg: cfg, groups: map[string]*group{}, ops: map[uint64]*op{},
		groupBudget: MaxGroupMetadataBytes}
}

// Replay applies one record of the partition, in offset order, while
// loading (before LoadDone). value nil is a tombstone. A record it cannot
// decode is an error and is skipped (the driver logs it; Kafka fails the
// load, which would leave every group of the partition without a
// coordinator).
func (s *Shard) Replay(offset int64, key, value []byte) error {
	return s.replay(offset, -1, key, value)
}

// ReplayTxn is Replay of a record of a transactional batch of producer
// producerID: an offset commit in it is pending until the producer's
// marker (ReplayMarker) commits or aborts it.
func (s *Shard) ReplayTxn(offset, producerID int64, key, value []byte) error {
	return s.replay(offset, producerID, key, value)
}

// ReplayMarker applies a control batch of the partition while loading:
// the end (commit or abort) of producerID's transaction.
func (s *Shard) ReplayMarker(producerID int64, commit bool) {
	if !s.loaded {
		s.completeTxn(time.Time{}, producerID, commit)
	}
}

// CompleteTxn ends producerID's transaction once its marker is committed
// in the partition (the driver learns it from the node, which wrote it):
// its pending offsets become committed (commit) or are dropped. While
// loading, it is kept and applied at LoadDone: the marker may lie past
// what the load reads (if it does not, it was replayed, and applying it
// again finds nothing: the producer cannot have begun another
// transaction before its marker was committed).
func (s *Shard) CompleteTxn(now time.Time, producerID int64, commit bool) {
	if !s.loaded {
		s.lateTxns = append(s.lateTxns, lateTxn{producerID, commit})
		return
	}
	s.completeTxn(now, producerID, commit)
	s.fireTimers(now)
	s.check("CompleteTxn")
}

// LoadDone ends loading: from now on requests are served. Before it, every
// request is answered COORDINATOR_LOAD_IN_PROGRESS.
func (s *Shard) LoadDone(now time.Time) { s.loadDone(now) }

// Step takes one request at now. Its answer comes out of Ready, at once
// or later (a JoinGroup waits for the rebalance, a SyncGroup for the
// leader's assignment, a commit for its Append).
func (s *Shard) Step(now time.Time, r Request) {
	s.step(now, r)
	s.fireTimers(now)
	s.check("Step")
}

// Appended reports the outcome of the Append with this id: err nil means
// committed (acks=all). On error the coordinator answers what it was
// waiting on as Kafka does (e.g. NOT_COORDINATOR for a lost leadership,
// COORDINATOR_NOT_AVAILABLE or REQUEST_TIMED_OUT otherwise) and undoes
// what the write would have made true.
func (s *Shard) Appended(now time.Time, id uint64, err error) {
	s.appended(now, id, err)
	s.fireTimers(now)
	s.check("Appended")
}

// TickTo moves the clock: session and rebalance timeouts, the initial
// rebalance delay, offset expiry.
func (s *Shard) TickTo(now time.Time) {
	if !s.loaded {
		return
	}
	s.fireTimers(now)
	s.checkRetention(now)
	s.check("TickTo")
}

// NextDue is when the clock alone would next change anything (zero: never).
func (s *Shard) NextDue() time.Time {
	if !s.loaded {
		return time.Time{}
	}
	return earliest(s.nextGroupDue(), s.retentionAt)
}

// Ready drains what the driver must do.
func (s *Shard) Ready() Ready {
	rd := s.ready
	s.ready = Ready{}
	return rd
}

// ListGroups is the shard's part of a ListGroups answer, filtered by
// states (Kafka's names, case-insensitive) and types ("classic",
// "consumer"); empty filters match all.
func (s *Shard) ListGroups(states, types []string) []kmsg.ListGroupsResponseGroup {
	return s.listGroups(states, types)
}

// TopicsDeleted drops the committed offsets of deleted topics (writing
// their tombstones through Ready).
func (s *Shard) TopicsDeleted(now time.Time, topics []string) { s.topicsDeleted(now, topics) }

// SetTopics tells the shard every topic of the cluster (name → id and
// partition count); the driver calls it after LoadDone and whenever topics
// are created, deleted or get partitions. Consumer groups resolve their
// subscriptions (names and regular expressions) against it, and a group
// whose subscribed topics changed assigns its partitions again. The map is
// not kept.
func (s *Shard) SetTopics(now time.Time, topics map[string]TopicInfo) {
	s.setTopics(now, topics)
	s.fireTimers(now)
	s.check("SetTopics")
}

// Loaded reports whether LoadDone was called (before it, the driver
// answers ListGroups COORDINATOR_LOAD_IN_PROGRESS, as Kafka does).
func (s *Shard) Loaded() bool { return s.loaded }

// ConsumerGroupStates are Kafka's names of a KIP-848 group's states.
var ConsumerGroupStates = []string{"Empty", "Assigning", "Reconciling", "Stable"}

// Stats is a snapshot for metrics.
type Stats struct {
	// Groups are the classic groups by state name (Kafka's: Empty,
	// PreparingRebalance, CompletingRebalance, Stable, Dead).
	Groups map[string]int
	// ConsumerGroups are the KIP-848 groups by state name
	// (ConsumerGroupStates).
	ConsumerGroups map[string]int
	// Offsets are the committed offsets: group → topic → partition →
	// offset.
	Offsets map[string]map[string]map[int32]int64
	// Expired counts offsets removed by retention since the shard began.
	Expired int64
	// Commits counts the offsets committed (Appended) since the shard
	// began (Kafka's offset-commit-rate counts these).
	Commits int64
	// Rebalances counts the join phases completed since the shard began
	// (Kafka's group-completed-rebalance-count).
	Rebalances int64
	// Members is the members of all groups.
	Members int
}

// Stats reads the shard.
func (s *Shard) Stats() Stats { return s.stats() }
