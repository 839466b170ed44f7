// Package replica runs this broker's copies of its partitions: one Replica
// per hosted partition, each owning its *segment.Log and a
// partition.Replica state machine, and the Manager that holds them with
// the goroutines they share. The state machine decides; this package does
// its I/O. The node drives it from the metadata image and through a small
// Host interface (broker epoch, leader endpoints, the controller for ISR
// changes, wake-ups, the log directory's health); it never sees the node.
//
// # Use
//
//	m, err := replica.NewManager(host, replica.Options{NodeID: 1, FS: fs, Dir: dir})
//	if err != nil {
//		return err // a corrupt high-watermark checkpoint: says what to do
//	}
//	m.Start() // clock, AlterPartition sender, scrubber
//	// for every applied metadata change, for every partition hosted here:
//	r := m.Replica(key)
//	if r == nil {
//		r, err = m.Add(topic, p, openedLog, cfg) // starts at its checkpointed HW
//	}
//	r.Become(partitionState, cfg, eligibleBrokers)
//	// ... Produce, Fetch, ListOffset, EndOffsetForEpoch from Kafka handlers
//	m.Stop()
//	m.WriteHWCheckpoint()
//	m.CloseLogs()
//
// # One replica
//
// Every event is stepped under Replica.mu and followed by process, which
// carries out the state machine's Ready in order: truncate the log, start
// an fsync (sync durability: a goroutine per replica around the segment's
// group commit, then LocalFlush), queue the follower's fetch, hand answers
// to the fetch handlers waiting for them, complete produce requests, send
// ISR changes, publish the high watermark (an atomic that consumers read
// without the lock) and wake long-polling fetches (Host.Signal).
//
//   - Leader: Produce checks CheckProduce, appends at the leader epoch,
//     steps LocalAppend and returns at once; the Kafka handler then waits
//     on every partition's Pending together (acks=all: until the HW passes
//     the records; REQUEST_TIMED_OUT at the request's timeout). A replica
//     Fetch (replica id >= 0) is stepped as FollowerFetch with the broker
//     epoch it claims (v15's ReplicaState; -1 below v15, which is refused);
//     the answer is an error, a diverging epoch, or a read up to the log
//     end. Consumers read below the high watermark. Answers of 16 KiB or
//     more leave the batches in the segment file (segment.Log.ReadSpan),
//     which the connection sends with sendfile(2).
//   - Follower: fetcher.go runs one replica fetcher per leader broker
//     (Kafka's ReplicaFetcherThread): the fetches its followers queued go
//     as one Fetch v15 (topics by ID; ReplicaState: this broker's id and
//     registered epoch, without which the leader counts nothing; current
//     leader epoch, last fetched epoch) over a kafka.ClientConn (TLS,
//     kafka.DialTLS, when Options.FetchTLS is set: an SSL inter-broker
//     listener, with the node's keystore as client certificate), long-polled
//     by the leader (replica.fetch.wait.max.ms 500); each answer is
//     appended with AppendReplicated when the state machine still waits
//     for it, then stepped. The fetcher keeps a fetch session (KIP-227)
//     with the leader: its first request is full, later ones carry only
//     the partitions whose fetch position moved (and forget those whose
//     replica no longer waits: fetchWanted), and the leader answers only
//     partitions with news; the rest stay pending in the session, so an
//     idle follower's fetch carries nothing either way. A session error
//     (the leader restarted or evicted it) starts a new one at once,
//     closing the old. An unreachable leader is retried after
//     replica.fetch.backoff.ms; a kept connection that fails (the leader's
//     process restarted while it sat idle) is first redialled once, at
//     once.
//   - ISR changes: alter.go batches the leaders' proposals into one
//     AlterPartitions command at a time (Host.AlterPartitions); the answers
//     are stepped back.
//   - Clock (clock.go): replica.lag.time.max.ms and produce deadlines
//     are counted in ticks of TickInterval (10 ms) since the Manager
//     started, but no replica is ticked every tick. Before each event a
//     replica brings its state machine's clock up to date (TickTo), and
//     after process it puts itself in the Manager's deadline heap at the
//     tick its machine says something is next due (NextDue); one
//     goroutine sleeps until the earliest and wakes only those. An idle
//     follower waits in its fetcher's long poll with nothing due; an idle
//     leader is due only when a follower would pass the lag, a deadline
//     each follower fetch moves on. So idle replicas cost no work
//     (Wakeups counts the wakes; node's TestIdleReplicasCostNothing, make
//     bench-scale). A leader still steps each partition of a follower's
//     session on every poll (its lag is kept that way), but a fetch at
//     the log end stops at segment.Log.Bounds: no log read, no segment
//     file opened, one allocation (TestIdleFetchAllocatesNothing).
//   - Idempotent producers: the log decides (segment.Log.Append). A
//     duplicate answers the original offsets without writing (acks=all:
//     once they are committed), a gap OUT_OF_ORDER_SEQUENCE_NUMBER and an
//     old epoch INVALID_PRODUCER_EPOCH.
//   - Transactions (txn.go): the log keeps each producer's open
//     transaction, the markers and the aborted index (segment/txn.go);
//     the replica adds the last stable offset, LastStable: the high
//     watermark, or the first offset of the oldest open transaction when
//     lower. A read_committed consumer reads below it and gets the
//     aborted transactions of the range it read; ListOffsets' latest is
//     it. WriteMarker appends the coordinator's marker as leader
//     (Log.AppendMarker under Replica.mu, then LocalAppend with acks=all,
//     as a produce). A transactional batch that would open a transaction
//     is first verified with its coordinator (Options.TxnVerifier,
//     KIP-890 part 1) without the lock, behind a verification guard that
//     a marker for the producer clears: a batch whose transaction ended
//     while it was verified is refused (INVALID_TXN_STATE) rather than
//     opening a transaction no coordinator would end. Followers keep the
//     same transactional state from the leader's batches
//     (AppendReplicated), so a new leader's LSO is exact.
//
// Which replica fetches count (KIP-903). A leader counts a replica fetch
// (acknowledgement, ISR expansion) only from an assigned replica whose
// epoch is the one the metadata lists for that broker while it is eligible
// (registered, unfenced, not shutting down); anything else, a replica
// fetch below v15 included (it has no epoch), gets NOT_LEADER_OR_FOLLOWER,
// Kafka's answer to a stale broker epoch. Kafka 3.5+ still takes
// epoch-less replica fetches; Sluice refuses them because all its brokers
// speak v15. A fetch with a leader epoch above the leader's gets
// UNKNOWN_LEADER_EPOCH and changes nothing. Limits until the security
// work (inter-broker listener, CLUSTER_ACTION): replica fetches arrive on
// the one PLAINTEXT listener, and broker epochs are small sequential
// numbers, so a forger who guesses one and names an unfenced follower is
// still counted; the check stops zombies, old incarnations and fenced
// brokers, not an attacker.
//
// # High-watermark checkpoint
//
// WriteHWCheckpoint writes every open replica's high watermark to
// <dir>/replication-offset-checkpoint (Kafka's format: "0", a count, then
// "topic partition offset" lines) durably; the node calls it every 5 s and
// at Close. When no high watermark moved since it last wrote, it writes
// nothing (idle replicas cost no fsyncs). NewManager reads it; a log that opens below its checkpointed
// HW lost committed records (a power cut in page-cache mode): Add logs a
// warning and LostOnRecovery counts them.
//
// # Replication throttles and fetch from follower
//
// throttle.go: two broker-wide quotas (leader.replication.throttled.rate,
// follower.replication.throttled.rate; SetThrottleRates) and, per replica,
// whether its topic throttles it here as leader or follower (SetThrottle,
// with the partition's ISR). A leader reads at most the leader quota's
// bytes (no records past it) for a throttled follower outside the ISR; a
// fetcher leaves a throttled follower outside the ISR out of its requests
// while the follower quota is spent, and asks again when it refills.
// In-sync replicas are never throttled (acks=all does not wait on it).
// Consumers' v11+ fetches are served by a follower too, up to its high
// watermark (partition.CheckReadEpoch); Redirect answers a consumer, as
// leader, with the preferred read replica the node chose (KIP-392).
//
// # Corruption
//
// scrub.go runs one scrubber goroutine that verifies the sealed segments
// of every replica's log with segment.Log.ScrubNext (Options.ScrubInterval,
// sluice.log.scrub.interval.ms, default a day; throttled by
// ScrubBytesPerSecond, sluice.log.scrub.max.bytes.per.second, default 10
// MiB/s), and at once those of a log whose read met a bad batch. A bad
// batch is logged at ERROR, counted (Options.OnCorruptBatch:
// sluice_log_corrupt_batches_total) and stepped as partition.LogCorrupt: a
// follower truncates before it and fetches it again; a leader proposes the
// ISR without itself (the controller elects another member; the quorum
// accepts a leader leaving only so), then truncates as a follower; the
// only in-sync copy keeps leading and serves what is valid below the
// damage. This goes beyond Kafka. node's TestCorruptReplicaHeals flips
// bytes in a running follower and in a stopped leader under load.
//
// # Goroutines and locks
//
// The clock loop, one fetcher per leader broker, the AlterPartition sender,
// the scrubber (takes Replica.mu only to report), and a flush goroutine
// per sync-mode replica while it fsyncs. Lock order: Manager.mu →
// Replica.mu → Manager.fetch (process finds the fetcher) → fetcher.mu
// (stopFetchers closes its connection); Replica.mu → queue.mu (the
// alterer's and each fetcher's queue.go: leaves, taken by process to
// queue). Manager.mu is held over a Replica.mu only by
// CloseLogs (it kills each replica); nothing under a Replica.mu takes
// Manager.mu. The scheduler's mutex (clock.go) is a leaf, taken under
// Replica.mu by process; the clock loop wakes replicas with it released.
// The fetcher and alterer
// goroutines take Replica.mu only with their own locks released. Host
// methods are called with Replica.mu held and must not call back. The
// quotas' locks and each Replica.throttle's are leaves.
package replica
