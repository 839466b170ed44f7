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
//	m.Start() // ticker, AlterPartition sender, scrubber
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
//     end. Consumers read below the high watermark.
//   - Follower: fetcher.go runs one replica fetcher per leader broker
//     (Kafka's ReplicaFetcherThread): the fetches its followers queued go
//     as one Fetch v15 (topics by ID; ReplicaState: this broker's id and
//     registered epoch, without which the leader counts nothing; current
//     leader epoch, last fetched epoch) over a kafka.ClientConn, long-polled
//     by the leader (replica.fetch.wait.max.ms 500); each answer is
//     appended with AppendReplicated when the state machine still waits
//     for it, then stepped. An unreachable leader is retried after
//     replica.fetch.backoff.ms.
//   - ISR changes: alter.go batches the leaders' proposals into one
//     AlterPartitions command at a time (Host.AlterPartitions); the answers
//     are stepped back.
//   - Clock: every replica is ticked every TickInterval (10 ms);
//     replica.lag.time.max.ms and produce deadlines are counted in ticks.
//   - Idempotent producers: the log decides (segment.Log.Append). A
//     duplicate answers the original offsets without writing (acks=all:
//     once they are committed), a gap OUT_OF_ORDER_SEQUENCE_NUMBER and an
//     old epoch INVALID_PRODUCER_EPOCH.
//
// # High-watermark checkpoint
//
// WriteHWCheckpoint writes every open replica's high watermark to
// <dir>/replication-offset-checkpoint (Kafka's format: "0", a count, then
// "topic partition offset" lines) durably; the node calls it every 5 s and
// at Close. NewManager reads it; a log that opens below its checkpointed
// HW lost committed records (a power cut in page-cache mode): Add logs a
// warning and LostOnRecovery counts them.
//
// # Corruption
//
// scrub.go runs one scrubber goroutine that verifies the sealed segments
// of every replica's log (Options.ScrubInterval, throttled by
// ScrubBytesPerSecond), and at once those of a log whose read met a bad
// batch. A bad batch is logged at ERROR, counted (Options.OnCorruptBatch)
// and stepped as partition.LogCorrupt: a follower truncates before it and
// fetches it again; a leader hands leadership to another in-sync replica,
// then does the same; the only in-sync copy keeps serving what is valid.
//
// # Goroutines and locks
//
// The ticker, one fetcher per leader broker, the AlterPartition sender,
// the scrubber (takes Replica.mu only to report), and a flush goroutine
// per sync-mode replica while it fsyncs. Lock order: Manager.mu →
// Replica.mu → fetcher.mu / alterer.mu (leaves, taken by process to
// queue); Replica.mu → Manager.fetch (process finds the fetcher) →
// fetcher.mu (stopFetchers). Manager.mu is held over a Replica.mu only by
// CloseLogs (it kills each replica); nothing under a Replica.mu takes
// Manager.mu. The fetcher and alterer
// goroutines take Replica.mu only with their own locks released. Host
// methods are called with Replica.mu held and must not call back.
package replica
