package partition

import "fmt"

// Log is what the replica reads from its local log: the leader-epoch cache
// and, after a truncation, the log end.
// *segment.Log implements it. Contract: calls are cheap (no I/O), made only
// from inside Step, Tick, Ready and Advance on the goroutine driving the
// replica, and the answers reflect every append the node told the replica
// about and every Ready.Truncate the node applied before Advance.
type Log interface {
	// LatestEpoch is the newest leader epoch in the log, or -1.
	LatestEpoch() int32
	// EndOffsetForEpoch answers OffsetForLeaderEpoch (KIP-101/279) as
	// segment.Log does: the largest epoch <= epoch the log knows and the
	// offset where it ends, or (-1, -1).
	EndOffsetForEpoch(epoch int32) (int32, int64)
	// LogEndOffset is the offset after the last record. The replica reads
	// it only after a truncation: segment cuts at a batch start, which may
	// lie below the offset asked for.
	LogEndOffset() int64
}

// UndefinedEpoch and UndefinedOffset are Kafka's "unknown" values.
const (
	UndefinedEpoch  int32 = -1
	UndefinedOffset int64 = -1
)

// AnyBrokerEpoch in an ISRMember means "skip the broker epoch check" (quorum.AnyEpoch).
const AnyBrokerEpoch int64 = -1

// Acks values of a produce request.
const (
	AcksNone   int16 = 0
	AcksLeader int16 = 1
	AcksAll    int16 = -1
)

// Msg is an event for Step: one of the types below.
type Msg interface{ isMsg() }

// BecomeLeader: the metadata made this replica the leader at LeaderEpoch.
// The same LeaderEpoch again with a newer PartitionEpoch is an ISR/replica
// update from the controller (for example a fenced broker removed).
type BecomeLeader struct {
	LeaderEpoch    int32
	PartitionEpoch int32
	ISR            []int32
	Replicas       []int32
}

// Become returns the event for a partition state from the metadata image
// (quorum.Partition) as seen by replica self: BecomeLeader when self leads,
// else BecomeFollower.
func Become(self, leader, leaderEpoch, partitionEpoch int32, isr, replicas []int32) Msg {
	if leader == self {
		return BecomeLeader{LeaderEpoch: leaderEpoch, PartitionEpoch: partitionEpoch, ISR: isr, Replicas: replicas}
	}
	return BecomeFollower{Leader: leader, LeaderEpoch: leaderEpoch, PartitionEpoch: partitionEpoch}
}

// BecomeFollower: the metadata made Leader (-1: none) the leader at
// LeaderEpoch. Waiting produce requests fail with NOT_LEADER_OR_FOLLOWER.
type BecomeFollower struct {
	Leader         int32
	LeaderEpoch    int32
	PartitionEpoch int32
}

// LocalAppend: the node appended a produce request's records to the leader
// log (segment.Log.Append with LeaderEpoch) up to LastOffset, after
// CheckProduce allowed it. Deadline is the tick (on the replica's clock,
// Now) at which it times out with REQUEST_TIMED_OUT; 0: never.
type LocalAppend struct {
	ReqID      uint64
	LastOffset int64
	Acks       int16
	Deadline   int64
}

// LocalFlush: every offset below Flushed is fsynced (segment.Log.FlushedOffset).
type LocalFlush struct{ Flushed int64 }

// FollowerFetch is a replica's Fetch as the leader got it (Kafka Fetch with
// a replica id). ReqID is the node's, echoed in the FetchAnswer.
type FollowerFetch struct {
	ReqID              uint64
	Replica            int32
	BrokerEpoch        int64
	FetchOffset        int64
	LastFetchedEpoch   int32
	CurrentLeaderEpoch int32
}

// EpochEndOffset is a diverging-epoch answer: the leader's log has Epoch
// ending at EndOffset (KIP-320/595).
type EpochEndOffset struct {
	Epoch     int32
	EndOffset int64
}

// FetchResponse is the leader's answer to this follower's FetchRequest Seq.
// The node appends the records (segment.Log.AppendReplicated) only when
// ExpectsFetch(Seq) and Err and Diverging are empty, then steps this with LEO
// the log end after the append.
type FetchResponse struct {
	Seq       uint64
	Err       error
	HW        int64
	Diverging *EpochEndOffset
	LEO       int64
	// LogStartOffset is the leader's log start (Kafka's Fetch response
	// field); with OFFSET_OUT_OF_RANGE above this follower's log end it
	// makes the follower start over there.
	LogStartOffset int64
}

// AlterPartitionResult answers the AlterPartition in flight: Err nil and the
// partition as the controller committed it, or the error (a *kerr.Error).
type AlterPartitionResult struct {
	// Proposal is the Ready.AlterPartition this answers; nil means the one
	// in flight. A result for an older proposal (one dropped by a
	// leadership or metadata change) is ignored with ErrStaleResponse.
	Proposal       *Proposal
	Err            error
	LeaderEpoch    int32
	PartitionEpoch int32
	ISR            []int32
}

// BrokerEpochs is the metadata's list of eligible brokers — registered,
// unfenced, not shutting down — with their broker epochs (KIP-841/903). The
// leader counts a replica fetch only from a listed broker fetching with
// its listed epoch, and proposes only such followers for the ISR. Until
// the first BrokerEpochs it trusts the epochs fetches carry (refusing only
// older ones); the node steps one before anything else. The map is read,
// never changed, and must not change after Step: pass a new one.
type BrokerEpochs struct{ Epochs map[int32]int64 }

func (BrokerEpochs) isMsg()         {}
func (BecomeLeader) isMsg()         {}
func (BecomeFollower) isMsg()       {}
func (LocalAppend) isMsg()          {}
func (LocalFlush) isMsg()           {}
func (FollowerFetch) isMsg()        {}
func (FetchResponse) isMsg()        {}
func (AlterPartitionResult) isMsg() {}

// Ready is what the node must do, in this order, before Advance:
// Truncate the log; then start Flush, send Fetch, answer FetchAnswers and
// Completed, propose AlterPartition, and publish HW. Its slices are the
// node's until Advance, which may reuse them (FetchAnswers' array holds
// the next Ready's answers).
type Ready struct {
	// HW is the high watermark; HWChanged says it moved since the last Ready.
	HW        int64
	HWChanged bool
	// Truncate: a follower must truncate its log to Truncate.Offset
	// (segment.Log.TruncateTo) before Advance.
	Truncate *Truncation
	// Flush (sync mode): fsync the log below this offset — the node may
	// batch these (segment.Log.WaitFlushed) — then step LocalFlush. 0: none.
	Flush int64
	// Fetch: a follower must send this Fetch to its leader.
	Fetch *FetchRequest
	// FetchAnswers: the leader's decisions on follower fetches.
	FetchAnswers []FetchAnswer
	// Completed: produce requests to answer (nil Err is NONE).
	Completed []Completion
	// AlterPartition: an ISR change to send to the controller; its answer
	// comes back as AlterPartitionResult. At most one is in flight.
	AlterPartition *Proposal
}

// Truncation removes the records [Offset, From) of a follower's log
// (segment.Log.TruncateTo). Below the old HW it is the loss of an unclean
// election and must be reported. With Fully, the follower is behind the
// leader's log start: empty the log and start it at Offset
// (segment.Log.TruncateFullyAndStartAt), as Kafka does.
type Truncation struct {
	Offset int64
	From   int64
	Fully  bool
	// BelowHW is the follower's HW before the truncation when Offset is
	// below it (committed records go), else -1.
	BelowHW int64
}

// FetchRequest is the Fetch a follower sends (replica id = Config.ID).
type FetchRequest struct {
	Seq                uint64
	Leader             int32
	FetchOffset        int64
	CurrentLeaderEpoch int32
	LastFetchedEpoch   int32
}

// FetchAnswer is the leader's decision on FollowerFetch ReqID: an error,
// or a diverging epoch (no records), or records read from ReadFrom.
type FetchAnswer struct {
	ReqID     uint64
	Err       error
	HW        int64
	Diverging *EpochEndOffset
	ReadFrom  int64
}

// Completion answers produce request ReqID; Err is nil or a *kerr.Error.
type Completion struct {
	ReqID uint64
	Err   error
}

// ISRMember is a member of a proposed ISR with the broker epoch the leader
// saw it fetch with (KIP-903), or AnyBrokerEpoch.
type ISRMember struct {
	ID          int32
	BrokerEpoch int64
}

// Proposal is an AlterPartition: the node adds its broker id/epoch and the
// topic partition (quorum.AlterPartition).
type Proposal struct {
	LeaderEpoch    int32
	PartitionEpoch int32
	NewISR         []ISRMember
}

func (p *Proposal) ids() []int32 {
	out := make([]int32, len(p.NewISR))
	for i, m := range p.NewISR {
		out[i] = m.ID
	}
	return out
}

func (p *Proposal) String() string {
	return fmt.Sprintf("alter-partition leader-epoch=%d partition-epoch=%d isr=%v", p.LeaderEpoch, p.PartitionEpoch, p.ids())
}

// Role of a replica.
type Role int

// Roles.
const (
	Follower Role = iota
	Leader
)

func (r Role) String() string {
	if r == Leader {
		return "leader"
	}
	return "follower"
}

// Status is a snapshot of the replica for the node (metrics, consumers
// reading below HW, the admin CLI). Slices are copies.
type Status struct {
	Role           Role
	Leader         int32
	LeaderEpoch    int32
	PartitionEpoch int32
	ISR            []int32
	PendingISR     []int32
	LEO, HW        int64
	Flushed        int64
	// Fenced: a leader whose AlterPartition the controller refused as
	// from a stale leader (a newer leader epoch exists); it acknowledges
	// nothing more until the metadata catches up.
	Fenced bool
	// Followers (leader only), by id: for metrics such as under-replicated
	// partitions and replica lag.
	Followers []FollowerStatus
}

// FollowerStatus is the leader's view of one follower.
type FollowerStatus struct {
	ID int32
	// Acked is the offset it acknowledged in this leader epoch, -1: none.
	Acked int64
	// BehindTicks is how long it has not been caught up with the log end.
	BehindTicks int64
	BrokerEpoch int64
}
