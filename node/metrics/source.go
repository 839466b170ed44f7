package metrics

import (
	"time"

	"github.com/sluice-log/sluice/node/kafka"
)

// Source is what the collectors read at each scrape; the node implements
// it. Its methods are called from the scraping goroutine, concurrently
// with everything else the node does, and must not block on I/O; returned
// values belong to the caller.
type Source interface {
	// Partitions appends one PartitionStat for each partition replica
	// hosted on this node to buf and returns it.
	Partitions(buf []PartitionStat) []PartitionStat
	// Broker describes this broker's own state.
	Broker() BrokerStat
	// Controller describes the metadata quorum as this node sees it.
	Controller() ControllerStat
}

// PartitionStat is one partition replica hosted on this node.
type PartitionStat struct {
	Topic     string
	Partition int32
	// Leader is set when this node leads the partition.
	Leader bool
	// NotServing: this node leads it but acknowledges nothing (a leader
	// the controller fenced until the metadata catches up). It counts as
	// under-replicated: no acks=all produce completes there.
	NotServing bool
	// Replicas and ISR are the sizes of the assigned replica set and of
	// the in-sync replica set; MinISR is min.insync.replicas.
	Replicas, ISR, MinISR int
	// Reassigning: a reassignment of the partition is in progress
	// (Replicas is then its target's size, as Kafka counts it).
	Reassigning bool
	// LogStart, LogEnd and HighWatermark are offsets of the local log;
	// Flushed is the local flushed offset (every offset below is
	// fsynced here). Size is the log's size in bytes.
	LogStart, LogEnd, HighWatermark, Flushed, Size int64
	// UnflushedBytes are the bytes of the local log past Flushed: what a
	// power cut of this node now would take from this replica.
	UnflushedBytes int64
	// UnflushedSince is when the oldest of them was appended; zero when
	// there are none or the time is unknown (after recovery).
	UnflushedSince time.Time
	// UnwrittenBytes are those of the UnflushedBytes whose page-cache pages
	// the kernel has not yet written to disk (dirty or under writeback,
	// segment.Log.Unwritten): what a power cut now would most likely take,
	// where UnflushedBytes is what no fsync guarantees yet. Asking the
	// kernel is a system call per unfsynced segment, not I/O. Set only when
	// UnwrittenKnown: kernels before Linux 6.5 and in-memory file systems
	// cannot tell.
	UnwrittenBytes int64
	UnwrittenKnown bool
	// FollowerLag, on a leader, is how many offsets its furthest-behind
	// follower (of those that fetched in this leader epoch) is behind the
	// log end; 0 on a follower. Kafka measures MaxLag on the followers;
	// the leader's view gives the same cluster-wide maximum.
	FollowerLag int64
	// DirtyRatio is the share of the log's cleanable bytes not yet
	// compacted, as the cleaner last measured it; set only when
	// Compacted (cleanup.policy has compact, the cleaner runs and has
	// measured the log).
	DirtyRatio float64
	Compacted  bool
	// LastStable is the leader's last stable offset (LSO: min(HW, the
	// first offset of the oldest open transaction)); OpenTxnSince is when
	// that transaction began (its first batch's timestamp), zero when
	// none is open. Set on leaders only.
	LastStable   int64
	OpenTxnSince time.Time
}

// BrokerStat is this broker's own state.
type BrokerStat struct {
	// IsrShrinks and IsrExpands count the ISR changes of partitions this
	// broker led, since the process started.
	IsrShrinks, IsrExpands int64
	// LostOnRecovery counts committed records the logs no longer held
	// when they were opened (below their checkpointed high watermark): a
	// power cut took an unflushed tail. They are fetched back from a
	// replica that kept them, if any did.
	LostOnRecovery int64
	// OfflineLogDirs counts the log directories that failed (0 or 1: a
	// node has one).
	OfflineLogDirs int
	// Connections is the Kafka listeners' connections by listener name.
	Connections map[string]kafka.ListenerConns
	// FailedAuthentication counts, by listener name, the connections
	// closed by a failed TLS handshake or SASL authentication;
	// SuccessfulAuthentication the SASL authentications that succeeded.
	FailedAuthentication, SuccessfulAuthentication map[string]int64
	// ExpiredConnectionsKilled counts the connections closed because
	// their SASL session ended without re-authentication.
	ExpiredConnectionsKilled int64
	// QuotaThrottles counts the client-quota throttles and their time by
	// quota key (producer_byte_rate, ...).
	QuotaThrottles map[string]kafka.QuotaThrottles
	// AuthorizationAllowed and AuthorizationDenied count the
	// authorizer's decisions (authorizer.class.name set).
	AuthorizationAllowed, AuthorizationDenied int64
	// Cleaner is the log cleaner; nil when log.cleaner.enable is false.
	Cleaner *CleanerStat
	// ThrottledLeaderBytes and ThrottledFollowerBytes count the record
	// bytes of throttled replicas this broker sent as leader and fetched
	// as follower (leader/follower.replication.throttled.replicas, out of
	// the ISR); ReassignmentBytesIn and ReassignmentBytesOut those it
	// fetched as a replica a reassignment adds and sent to such replicas.
	ThrottledLeaderBytes, ThrottledFollowerBytes int64
	ReassignmentBytesIn, ReassignmentBytesOut    int64
	// SegmentFiles is the budget of open segment files
	// (sluice.log.max.open.files: segment.Files).
	SegmentFiles SegmentFilesStat
}

// SegmentFilesStat is the node's budget of open segment files.
type SegmentFilesStat struct {
	Max     int   // the budget; 0: none
	Open    int64 // segment files open now
	Opened  int64 // opens (first and re-opens) since the process started
	Evicted int64 // idle files closed to stay within the budget
}

// CleanerStat is the log cleaner pool (Kafka's LogCleaner and
// LogCleanerManager gauges).
type CleanerStat struct {
	// MaxDirtyRatio is the largest dirty ratio of the compacted logs as
	// last measured, uncleanable ones left out (max-dirty-percent / 100).
	MaxDirtyRatio float64
	// RecopyRatio is bytes written over bytes read by each thread's
	// latest clean (cleaner-recopy-percent / 100).
	RecopyRatio float64
	// MaxCleanTime is the longest of each thread's latest clean.
	MaxCleanTime time.Duration
	// Uncleanable counts the logs the cleaner gave up on after errors.
	Uncleanable int
	// SinceLastRun is the time since a cleaner thread last looked for a
	// log to clean.
	SinceLastRun time.Duration
	// Cleans counts the cleans that moved a log's cleaner checkpoint,
	// Failures the cleans that failed, since the node started.
	Cleans, Failures int64
}

// ControllerStat is the metadata quorum as this node sees it. The cluster
// counts (offline partitions, brokers, unclean elections) are reported by
// the active controller only, as Kafka does, so that a sum over the
// cluster counts each once; on other nodes they are zero.
type ControllerStat struct {
	Active            bool
	OfflinePartitions int
	ActiveBrokers     int
	FencedBrokers     int
	// UncleanElections counts the unclean elections recorded in the
	// metadata of the existing partitions (it drops when a topic that had
	// some is deleted).
	UncleanElections int64
	Raft             RaftStat
}

// RaftStat is the local Raft member of the metadata quorum.
type RaftStat struct {
	// State is "leader", "follower", "candidate" or "shutdown".
	State string
	// Leader is the leader's node id, -1 when unknown.
	Leader int32
	// Term is the current term (Kafka's epoch).
	Term uint64
	// LastIndex, CommitIndex and AppliedIndex are Raft log indexes.
	LastIndex, CommitIndex, AppliedIndex uint64
	// Commits and CommitTime count the commands this node committed as
	// leader and the total time from proposal to commit.
	Commits    int64
	CommitTime time.Duration
	// RefusedConns counts connections the controller port refused for
	// a bad hello, a foreign cluster id, a failed TLS handshake or a
	// peer certificate not admitted, and forwarded requests a node may
	// not make (quorum/peer_commands.go).
	RefusedConns int64
}
