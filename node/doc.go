// Package node is the Sluice process: it wires the metadata quorum, the
// partition logs and the Kafka protocol server together.
//
// # Start and stop
//
// A node is opened from a validated config and closed with a deadline;
// tools/nodecmd (`sluice node`) does exactly this:
//
//	cfg, err := config.Load(flags, nil)
//	if err != nil {
//		return err
//	}
//	n, err := node.Open(cfg, node.Options{Logger: log})
//	if err != nil {
//		return err // says what to fix: an unformatted dir, a taken port...
//	}
//	<-ctx.Done() // SIGTERM
//	return n.Close(shutdownCtx)
//
// Open takes these steps, in order:
//
//  1. Check the data directory: meta.properties (node/meta) must name this
//     cluster and node.
//  2. Bind the Kafka (PLAINTEXT) and controller (CONTROLLER) listeners.
//  3. Open the node's one segment Index (Pebble, <log.dirs>/index).
//  4. Start the quorum Controller (<log.dirs>/quorum). An initial
//     controller bootstraps as a Raft voter; any other node, broker-only
//     ones included, joins as a non-voter (Controller.Join: join.go).
//  5. Start liveness gossip when a GOSSIP listener is configured.
//  6. Register the broker, saying whether the last run shut down cleanly
//     (the .clean_shutdown marker). The registration is retried while its
//     outcome is unknown.
//  7. Get unfenced: the active controller sees the new epoch in gossip, or,
//     without gossip, the node proposes UnfenceBroker itself.
//  8. Serve the Kafka protocol and, with an HTTP listener, /healthz,
//     /readyz and /metrics.
//
// Close undoes them. It stops the Kafka server (answering what was already
// read), stops HTTP and gossip, the loops and the log cleaner, closes every log (checkpoint and per-log
// clean marker), closes the Index and the quorum, and last writes the
// node's clean-shutdown marker.
//
// Test-only filesystems (the soak's power-loss journal, error injection)
// come in through Options.FS; the node never picks one itself.
//
// # Partitions and replication
//
// Every applied metadata change (quorum OnApply) wakes the reconciler, which
// compares the image with the logs open and opens, updates or deletes
// replicas: every partition this node hosts gets a replica (replica.go)
// that owns its *segment.Log and a partition.Replica state machine, stepped
// with the partition's leader, epochs, ISR and replicas, the topic's
// min.insync.replicas and sluice.durability, and the eligible brokers'
// epochs. Every event is stepped under replica.mu and followed by process,
// which carries out the state machine's Ready in order: truncate the log,
// start an fsync (sync durability: a goroutine per replica around the
// segment's group commit, then LocalFlush), queue the follower's fetch,
// hand answers to the fetch handlers waiting for them, complete produce
// requests, send ISR changes, publish the high watermark (an atomic that
// consumers read without the lock) and wake long-polling fetches.
//
//   - Leader: Produce checks CheckProduce, appends at the leader epoch,
//     steps LocalAppend and returns at once; the Kafka handler then waits on
//     every partition's Pending together (acks=all: until the HW passes the
//     records; REQUEST_TIMED_OUT at the request's timeout). A replica Fetch
//     (replica id >= 0) is stepped as FollowerFetch with the broker epoch
//     it claims (v15's ReplicaState; -1 below v15, which is refused); the
//     answer is an error, a diverging epoch, or a read up to the log end.
//     Consumers read below the high watermark.
//   - Follower: fetcher.go runs one replica fetcher per leader broker
//     (Kafka's ReplicaFetcherThread): the fetches its followers queued go as
//     one Fetch v15 (topics by ID; ReplicaState: this broker's id and
//     registered epoch, without which the leader counts nothing; current
//     leader epoch, last fetched epoch),
//     long-polled by the leader (replica.fetch.wait.max.ms 500); each answer
//     is appended with AppendReplicated when the state machine still waits
//     for it, then stepped. An unreachable leader is retried after
//     replica.fetch.backoff.ms.
//   - ISR changes: alter.go batches the leaders' proposals into one
//     AlterPartitions command at a time; the answers are stepped back.
//   - Clock: every replica is ticked every 10 ms (tickInterval);
//     replica.lag.time.max.ms and produce deadlines are counted in ticks.
//   - High watermarks are checkpointed every 5 s and at Close to
//     <log.dirs>/replication-offset-checkpoint (Kafka's format); a log that
//     restarts below its checkpointed HW lost committed records (a power cut
//     in page-cache mode) and the node says so (a warning; lostOnRecovery).
//     Each log's recovery point is checkpointed every 60 s.
//
// Corruption: scrub.go runs one scrubber goroutine that verifies the
// sealed segments of every local log (sluice.log.scrub.interval.ms,
// throttled by sluice.log.scrub.max.bytes.per.second), and at once those of
// a log whose read met a bad batch. A bad batch is logged at ERROR, counted
// and stepped as partition.LogCorrupt: a follower truncates before it and
// fetches it again; a leader hands leadership to another in-sync replica,
// then does the same; the only in-sync copy keeps serving what is valid.
//
// Idempotent producers: the log decides (segment.Log.Append; see
// segment/doc.go). A duplicate answers the original offsets without
// writing (acks=all: once they are committed), a gap answers
// OUT_OF_ORDER_SEQUENCE_NUMBER and an old epoch INVALID_PRODUCER_EPOCH.
// Followers' logs keep the same state from the batches they replicate, so
// a new leader recognises retries, and every log keeps it across restarts
// (snapshots and a scan). producer.id.expiration.ms (1 day) is passed down
// in segment.Options.
//
// Compaction (compaction.go): at every reconciliation each replica's log
// takes its topic's cleanup.policy and compaction configs: a compacted
// topic's leader refuses records without a key (INVALID_RECORD), the log
// is registered with the node's cleaner pool (node/cleaner, started from
// the log.cleaner.* keys; none with log.cleaner.enable=false) and given
// the policy, and retention applies only with delete in the policy.
// process tells the pool when the high watermark moves (Handle.Moved, an
// atomic after the first), which is what makes the log a candidate again;
// the pool cleans up to the high watermark. The replica is removed from
// the pool (a running Clean cancelled and waited for) before its log is
// closed or deleted.
//
// # Admin writes
//
// CreateTopics, CreatePartitions, DeleteTopics and IncrementalAlterConfigs
// are answered once the change is in effect on every live broker
// (publish.go over quorum's Publish and AwaitBrokers, at most 5 s): a
// client that asks any broker right after the answer sees the topic, its
// partitions and configs, and a produce finds the partition's leader.
//
// A failed log directory (logdir.go): the first disk error of a log
// (ErrLogFailed, ENOSPC, EIO) takes the node's one log dir offline, as
// Kafka's LogDirFailureChannel does. The node logs it at ERROR with the
// path, stops every replica, answers KAFKA_STORAGE_ERROR for them, writes
// nothing more to the dir, and reports it to the controller
// (quorum.LogDirOffline), which moves its leaderships to in-sync replicas
// and takes it out of the ISRs until it registers again. Recovery is a
// restart once the disk has room.
//
// # Metrics and health
//
// The HTTP listener also serves /metrics (node/metrics, Kafka's metric
// names), /healthz (the process answers) and /readyz (registered, unfenced
// with this run's epoch, log dir online, serving, and able to serve every
// partition the metadata says it leads: its log opened, the leader not
// fenced). metrics.go is the node's side: the
// metrics.Source over the replicas and the image, the ISR change counts
// taken from the metadata stream, and the vm.dirty_* check logged at start
// (node/writeback). The Kafka server reports request times to the
// registry through kafka.Options.Observer, the logs their fsyncs through
// segment.Options.OnFlush.
//
// # Goroutines and locks
//
// Besides the quorum's, gossip's and the Kafka server's: the reconciler
// (one), the replica ticker, one replica fetcher per leader broker, the
// AlterPartition sender, a flush goroutine per sync-mode replica while it
// fsyncs, the maintenance ticker (flush.ms, retention, checkpoints), the
// log-dir watcher (logDirLoop: waits for a failed dir, then reports it),
// the scrubber (takes replica.mu only to report), the log cleaner's
// threads (node/cleaner; take no node lock), the Serve loop and the
// HTTP server. Lock order: Node.reconcileMu → Node.mu → replica.mu →
// fetcher.mu / alterer.mu (leaves, taken by process to queue); replica.mu
// → Node.fetch (process finds the fetcher) → fetcher.mu (stopFetchers);
// replica.mu → cleaner.Pool.mu (Moved); Node.sig, Node.pids and
// Node.offline are leaves. A mutex's fields are
// grouped with it (n.mu.replicas, r.mu.part). The fetcher and alterer
// goroutines take replica.mu only with their own locks released.
package node
