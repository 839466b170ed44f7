package txn

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/node/group"
)

// StateTopic is the internal topic that holds the transactional ids.
const StateTopic = "__transaction_state"

// Config is the coordinator's share of the broker configuration, with
// Kafka's names and defaults (node/config will fill it).
type Config struct {
	// StatePartitions is transaction.state.log.num.partitions (50): a
	// transactional id of another partition is NOT_COORDINATOR here.
	StatePartitions int32
	// OffsetsPartitions is the partition count of __consumer_offsets
	// (offsets.topic.num.partitions, 50): AddOffsetsToTxn adds the
	// group's partition of it.
	OffsetsPartitions int32
	// MaxTimeout is transaction.max.timeout.ms (900000): a larger
	// transaction.timeout.ms is INVALID_TRANSACTION_TIMEOUT.
	MaxTimeout time.Duration
	// IDExpiration is transactional.id.expiration.ms (7 days): an id
	// without a transaction, idle this long, is removed (tombstone).
	IDExpiration time.Duration
	// AbortInterval is
	// transaction.abort.timed.out.transaction.cleanup.interval.ms (10000):
	// how often expired transactions are looked for.
	AbortInterval time.Duration
	// RemoveInterval is
	// transaction.remove.expired.transaction.cleanup.interval.ms
	// (3600000): how often expired ids are looked for.
	RemoveInterval time.Duration
	// RetryBackoff is how long failed markers or a failed completion
	// record wait before they are tried again (retry.backoff.ms, 100).
	RetryBackoff time.Duration
}

// DefaultConfig is Kafka's defaults.
func DefaultConfig() Config {
	return Config{
		StatePartitions:   50,
		OffsetsPartitions: 50,
		MaxTimeout:        15 * time.Minute,
		IDExpiration:      7 * 24 * time.Hour,
		AbortInterval:     10 * time.Second,
		RemoveInterval:    time.Hour,
		RetryBackoff:      100 * time.Millisecond,
	}
}

// Partition is the __transaction_state partition of a transactional id:
// abs(Java's String.hashCode(id)) mod partitions, as Kafka computes it.
func Partition(transactionalID string, partitions int32) int32 {
	return group.Partition(transactionalID, partitions)
}

// TopicPartition names one partition of a transaction.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Request is one client (or broker) request for transactional ids of this
// shard.
type Request struct {
	// ID is the driver's: echoed in the Response.
	ID uint64
	// Body is the decoded request, its Version set: one of
	// *kmsg.InitProducerIDRequest (with a non-nil transactional id: the
	// driver serves idempotent producers itself),
	// *kmsg.AddPartitionsToTxnRequest, *kmsg.AddOffsetsToTxnRequest,
	// *kmsg.EndTxnRequest, *kmsg.DescribeTransactionsRequest. A request
	// naming several ids (AddPartitionsToTxn v4+, DescribeTransactions)
	// holds only the ids of this shard: the driver splits it and merges
	// the answers. The driver has checked what needs the metadata and
	// the connection (v4+ AddPartitionsToTxn needs CLUSTER_ACTION;
	// partitions of unknown topics are UNKNOWN_TOPIC_OR_PARTITION). Any
	// other Body panics.
	Body kmsg.Request
}

// Response is the answer to the Request with the same ID: the response
// kind of its Body, at its version.
type Response struct {
	ID   uint64
	Body kmsg.Response
}

// Record is one record of the state partition. Value nil is a tombstone.
type Record struct {
	Key, Value []byte
}

// Append is records to write to the shard's partition as one batch with
// acks=all; the driver reports the outcome with Appended(ID).
type Append struct {
	ID      uint64
	Records []Record
}

// Markers asks the driver to write a transaction's COMMIT or ABORT
// control records (WriteTxnMarkers, with the state partition's leader
// epoch as coordinator epoch) to the leaders of Partitions, and to report
// with MarkersWritten(ID, failed).
type Markers struct {
	ID              uint64
	TransactionalID string
	ProducerID      int64
	ProducerEpoch   int16
	Commit          bool
	// Partitions, sorted by topic then partition.
	Partitions []TopicPartition
}

// Ready is what the driver must do now.
type Ready struct {
	// Appends in order; each is answered by Appended.
	Appends []Append
	// Markers to write; each is answered by MarkersWritten.
	Markers []Markers
	// NeedProducerIDs: InitProducerId requests wait for producer ids; the
	// driver obtains a block (from the controller, as KRaft's
	// AllocateProducerIds does) and calls ProducerIDs, or
	// ProducerIDsFailed. It is set once per need.
	NeedProducerIDs bool
	// Responses to send.
	Responses []Response
}

// Shard is the transaction coordinator state of one __transaction_state
// partition.
//
// A Shard is not safe for concurrent use: the driver calls it under one
// lock. Slices it returns (Ready, ListTransactions, Stats) are the
// caller's.
type Shard struct {
	partition int32
	cfg       Config

	loaded bool
	txns   map[string]*txn
	ready  Ready

	nextID          uint64
	ops             map[uint64]*op  // Appends in flight
	markers         map[uint64]*txn // Markers in flight
	waitPID         []Request       // InitProducerId requests waiting for ids
	asked           bool            // NeedProducerIDs given, no answer yet
	pidNext, pidEnd int64           // the producer id block: [pidNext, pidEnd)

	timers timerHeap     // the ids with a due time, earliest first
	dirty  map[*txn]bool // ids changed by this event: their due times to recompute

	// anchor is the load time: the abort and removal checks run every
	// AbortInterval and RemoveInterval from it, as Kafka schedules them.
	anchor time.Time

	aborted, committed, timedOut int64
}

// NewShard is an empty, loading shard for partition p.
func NewShard(p int32, cfg Config) *Shard {
	return &Shard{partition: p, cfg: cfg, txns: map[string]*txn{}, ops: map[uint64]*op{},
		markers: map[uint64]*txn{}, dirty: map[*txn]bool{}}
}

// Replay applies one record of the partition, in offset order, while
// loading (before LoadDone). value nil is a tombstone. A record it cannot
// decode is an error and is skipped.
func (s *Shard) Replay(offset int64, key, value []byte) error { return s.replay(key, value) }

// LoadDone ends loading: from now on requests are served, and the
// transactions the log left in PrepareCommit or PrepareAbort get their
// markers (in this Ready).
func (s *Shard) LoadDone(now time.Time) {
	s.loadDone(now)
	s.check("LoadDone")
}

// Step takes one request at now. Its answer comes out of Ready, at once
// or later (after its record is Appended, or producer ids arrive).
func (s *Shard) Step(now time.Time, r Request) {
	s.step(now, r)
	s.check("Step")
}

// Appended reports the outcome of the Append with this id: err nil means
// committed (acks=all).
func (s *Shard) Appended(now time.Time, id uint64, err error) {
	s.appended(now, id, err)
	s.check("Appended")
}

// MarkersWritten reports the Markers with this id: failed are the
// partitions whose marker was not written (retried after RetryBackoff);
// the rest were. A partition that no longer exists counts as written, as
// in Kafka.
func (s *Shard) MarkersWritten(now time.Time, id uint64, failed []TopicPartition) {
	s.markersWritten(now, id, failed)
	s.check("MarkersWritten")
}

// ProducerIDs gives the shard the producer ids [first, first+n): the
// waiting InitProducerId requests go on.
func (s *Shard) ProducerIDs(now time.Time, first int64, n int64) {
	s.producerIDs(now, first, n)
	s.check("ProducerIDs")
}

// ProducerIDsFailed answers the waiting InitProducerId requests with the
// error's code (COORDINATOR_NOT_AVAILABLE when it has none).
func (s *Shard) ProducerIDsFailed(now time.Time, err error) {
	s.producerIDsFailed(err)
	s.check("ProducerIDsFailed")
}

// TickTo moves the clock: timed-out transactions are aborted, idle ids
// expire, failed markers and completions are retried.
func (s *Shard) TickTo(now time.Time) {
	if !s.loaded {
		return
	}
	s.tick(now)
	s.check("TickTo")
}

// NextDue is when the clock alone would next change anything (zero:
// never).
func (s *Shard) NextDue() time.Time {
	if !s.loaded {
		return time.Time{}
	}
	return s.nextDue()
}

// Ready drains what the driver must do.
func (s *Shard) Ready() Ready {
	rd := s.ready
	s.ready = Ready{}
	return rd
}

// Loaded reports whether LoadDone was called (before it, the driver
// answers ListTransactions COORDINATOR_LOAD_IN_PROGRESS).
func (s *Shard) Loaded() bool { return s.loaded }

// ListTransactions is the shard's part of a ListTransactions answer:
// transactions in one of states (Kafka's names; unknown ones are
// returned in unknown), of one of producerIDs, running at least
// minDuration (KIP-994; zero or less: any); empty filters match all.
func (s *Shard) ListTransactions(now time.Time, states []string, producerIDs []int64, minDuration time.Duration) (txns []kmsg.ListTransactionsResponseTransactionState, unknown []string) {
	return s.listTransactions(now, states, producerIDs, minDuration)
}

// Stats is a snapshot for metrics.
type Stats struct {
	// Transactions by state name.
	Transactions map[string]int
	// Committed, Aborted count the transactions completed since the
	// shard began; TimedOut those the coordinator aborted.
	Committed, Aborted, TimedOut int64
}

// Stats reads the shard.
func (s *Shard) Stats() Stats { return s.stats() }
