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
// Open checks the data directory first: meta.properties (node/meta) must
// name this cluster and node. Then it runs four phases, each a function in
// node.go; when one fails, what the earlier ones started is undone:
//
//  1. bindListeners: the Kafka listeners (every name mapped to PLAINTEXT,
//     SSL, SASL_PLAINTEXT or SASL_SSL, e.g. PLAINTEXT, or INTERNAL and
//     EXTERNAL), the HTTP and the
//     controller (CONTROLLER) listener, so a taken port fails before
//     anything opens. The broker registers each Kafka listener's
//     advertised endpoint by name; a client is answered the endpoints of
//     the listener it came in on, and replica fetchers (and the active
//     controller's liveness probes) use inter.broker.listener.name. An
//     SSL or SASL_SSL listener serves TLS with config.Config.TLS, a
//     SASL_PLAINTEXT or SASL_SSL one SASL with config.Config.SASL and
//     SCRAM credentials from the metadata image (scram.go; serve:
//     kafka.Server.ServeListenerSecure); when it is the inter-broker
//     listener, replica fetchers dial it with TLS too (interBrokerTLS),
//     the keystore as client certificate for ssl.client.auth=required,
//     and authenticate with the listener's JAAS username and password
//     (interBrokerSASL). SCRAM credentials bootstrapped by sluice init
//     --add-scram (bootstrap.json) go to the quorum with the cluster id.
//  2. openStorage: take the .clean_shutdown marker (was the last run's
//     shutdown clean?), open the node's one segment Index (Pebble,
//     <log.dirs>/index) and the replica manager (node/replica), which
//     reads the high-watermark checkpoint. Logs open later, from the
//     metadata.
//  3. startQuorum: start the quorum Controller (<log.dirs>/quorum; an
//     initial controller bootstraps as a Raft voter, any other node joins
//     as a non-voter: join.go; over mutual TLS when CONTROLLER is
//     mapped to SSL, admitting only super.users peers when the
//     authorizer is on: security.go), the reconciler and the replicas'
//     goroutines, liveness gossip when a GOSSIP listener is configured
//     (encrypted with sluice.gossip.encryption.keys),
//     the leader-rebalance check (auto.leader.rebalance.enable:
//     rebalance.go, active only on the active controller);
//     then register the broker (retried while the outcome is unknown) and
//     wait to be unfenced: the active controller sees the new epoch in
//     gossip, or, without gossip, the node proposes UnfenceBroker itself.
//  4. serve: the Kafka protocol, the maintenance loop, the certificate
//     reload loop (sluice.ssl.reload.interval.ms; ReloadTLS, which
//     `sluice node` also calls on SIGHUP, with SetGossipKeys for the
//     gossip keys reread from its configuration) and, with an HTTP listener,
//     /healthz, /readyz and /metrics (HTTPS when HTTP is mapped to SSL).
//
// Close undoes them. First, with controlled.shutdown.enable, it asks the
// controller to move the node's leaderships and ISR memberships to the
// other replicas and waits until every live broker has that in effect
// (controlledShutdown; skipped when no partition has a live in-sync peer).
// Then it stops the Kafka server (answering what was already read), stops
// HTTP and gossip, the loops and the log cleaner, closes every log
// (checkpoint and per-log clean marker), closes the Index and the quorum,
// and last writes the node's clean-shutdown marker.
//
// Test-only filesystems (the soak's power-loss journal, error injection)
// come in through Options.FS; the node never picks one itself.
//
// # Partitions and replication
//
// Every applied metadata change (quorum OnApply) notes the topics its
// records touched and wakes the reconciler (reconcile.go), which compares
// those topics, copied out of the image under the FSM's read lock, with
// the replicas open (the whole image only at the first pass, after a
// restored snapshot and after broker or broker-config records: its cost
// per change does not grow with the image,
// TestReconcileCostDoesNotGrowWithImage) and opens, updates or deletes
// them: for every partition this node hosts
// it opens the log (segment options from the topic's configs) and hands
// it to the replica manager (node/replica: Manager.Add), then steps the
// replica with the partition's leader, epochs, ISR and replicas, the
// topic's min.insync.replicas and sluice.durability, and the eligible
// brokers' epochs (Replica.Become). Everything a replica does from there
// — produce, fetch, follower fetchers, ISR changes, the clock, the
// high-watermark checkpoint, the scrubber — is in node/replica's doc. The
// node is its replica.Host (replicas.go): broker epoch, leader endpoints
// from the image, AlterPartitions through the quorum, the reconciler's
// and long polls' wake-ups, and the log directory.
//
// Reassignment (reassign.go, quorum/reassign.go): the reconciler hosts
// every replica the image's Replicas names, the adding replicas of a
// reassignment in progress included, so an adding broker opens the log
// when the move starts and its follower catches up and joins the ISR as
// any follower does; a broker no longer named (the move completed, or
// was cancelled before it joined) stops its replica and deletes its log,
// segment files and index entries (replica.Manager.Drop). The broker
// serves AlterPartitionReassignments (published, so every adding broker
// has its replica open when answered) and ListPartitionReassignments
// from its image. TestReassignmentUnderLoad (reassign_test.go) moves a
// partition from {1,2,3} to {2,3,4}, 4 a broker-only node, under an
// acks=all load, and cancels a move.
//
// Dynamic broker configs and throttles (throttle.go): IncrementalAlterConfigs
// of a BROKER resource (the cluster default "" or a broker id) publishes
// quorum.AlterBrokerConfigs for the dynamic keys only (a static key answers
// INVALID_REQUEST, a bad value INVALID_CONFIG); DescribeConfigs shows them
// with DYNAMIC_BROKER_CONFIG / DYNAMIC_DEFAULT_BROKER_CONFIG. Every
// reconcile gives the replica manager this broker's effective
// leader/follower.replication.throttled.rate and each replica whether its
// topic's *.replication.throttled.replicas name it here, with its ISR
// (node/replica/throttle.go enforces them). TestThrottledReassignment.
//
// Racks: broker.rack is registered; with replica.selector.class
// RackAwareReplicaSelector a leader redirects a v11+ consumer with a
// rack_id to an in-sync replica in its rack (broker.Fetch, readReplica),
// and followers serve v11+ consumer fetches up to their high watermark
// (KIP-392; TestFetchFromFollower, kgo and kcat). UnregisterBroker is
// published (reassign.go).
//
// The maintenance loop (maintain in node.go) does the time-driven log
// work over the replicas: flush.ms, retention every 5 minutes, each log's
// recovery point every 60 s, and the high-watermark checkpoint every 5 s.
//
// producer.id.expiration.ms (1 day) is passed down in segment.Options; the
// logs keep idempotent producers' state (segment/doc.go).
//
// Long-polling fetches wait on one node-wide "appended" channel that every
// successful append, high-watermark change and reconciliation closes and
// replaces (Node.signal; kafka.Logs.Appended).
//
// Gossip is optional (a GOSSIP listener): without it a broker unfences
// itself after registering and nothing fences a dead broker, so leaders
// never fail over. Gossip packets and streams carry the cluster id as
// memberlist's label, so a node of another cluster never joins the
// membership; the active controller logs every fence and unfence with the
// broker's gossip state. A node that is not an initial voter
// (process.roles=broker) joins the running quorum as a Raft non-voter
// before registering (join.go); DescribeQuorum lists it as an observer.
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
// # Consumer groups
//
// groups.go: the broker serves kafka.Groups through node/coord. The first
// FindCoordinator for a group creates __consumer_offsets
// (offsets.topic.num.partitions, offsets.topic.replication.factor clamped
// to the live brokers with a warning, cleanup.policy=compact,
// offsets.topic.segment.bytes); a group's coordinator is the leader of
// its partition. After each reconciliation (the replicas became leaders or
// followers) syncGroups tells the coordinator which offsets partitions
// this node leads, at which epoch, and which topics were deleted.
// coordHost writes the shards' records through the replica's Produce,
// acks=all, the path clients take, which itself refuses clients' writes
// to internal topics; CreateTopics, DeleteTopics and CreatePartitions
// refuse them too, and Metadata marks them internal.
//
// # Transactions
//
// txns.go: the broker serves kafka.Transactions through node/txncoord,
// the same way: the first FindCoordinator for a transactional id creates
// __transaction_state (transaction.state.log.num.partitions,
// transaction.state.log.replication.factor clamped to the live brokers
// with a warning, transaction.state.log.min.isr, compacted, internal);
// syncGroups tells the transaction coordinator which of its partitions
// this node leads; txnHost adds producer id blocks from the quorum, the
// metadata's partition leaders for the markers, and connections to the
// other brokers' inter-broker listener with the fetchers' TLS and SASL.
// The replicas' KIP-890 verification (txnVerifier) is the broker's
// VerifyTxn, which also checks TxnOffsetCommit and, for transaction.version
// 2's requests (Produce v12, TxnOffsetCommit v5), adds the partition to
// the transaction; the broker's FinalizedFeatures (txns.go: the quorum's
// feature levels, KIP-584, or the transaction.version setting in a
// cluster bootstrapped before feature records) are what ApiVersions
// finalizes, and UpdateFeatures changes them through the quorum.
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
// and takes it out of the ISRs until it registers again. Metadata lists
// its replicas offline, /readyz is 503 and
// kafka_log_logmanager_offlinelogdirectorycount 1; Close writes no
// clean-shutdown marker. Recovery is a restart once the disk has room (the
// logs recover, the broker registers again, its replicas catch up as
// followers). Kafka halts a broker whose last log dir failed; Sluice keeps
// the process up so that the failure stays visible. A full disk that also
// fails the Pebble index's WAL is fatal to Pebble (it exits the process),
// and the broker is then fenced by its session timeout instead.
// TestFullDiskMovesLeadership (errorfs ENOSPC on the leader's log files
// under an idempotent acks=all load): leadership moves in about 0.1 s,
// nothing acknowledged is lost, the node rejoins every ISR after a
// restart. The producer still pauses about 5 s on the moved partition:
// kgo retries the KAFKA_STORAGE_ERROR and asks for metadata at most every
// MetadataMinAge (5 s by default).
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
// sluice.debug.pprof=true serves Go's /debug/pprof/ on the HTTP listener
// (off by default), e.g. `sluice cluster start --set
// sluice.debug.pprof=true`, then `go tool pprof
// http://127.0.0.1:<http port>/debug/pprof/profile?seconds=20`.
//
// # Tests
//
// TestReplicationSurvivesLeaderKill: 3 nodes, RF=3, kgo idempotent
// acks=all; the leader is killed mid-stream on a crash clone of its
// filesystem and restarted; every acknowledged record reads back once, in
// order, and the ISR is back to 3. TestPowerCutAllReplicas: every replica
// loses its unsynced writes at once; sync durability loses nothing,
// page-cache loses only above the least-flushed replica's flushed offset,
// and reports it. Real clients against one node: TestProduceConsume (kgo,
// kadm) and TestKcat (librdkafka through kcat: idempotent acks=all
// produce, consume to the end with -e, -L metadata; skipped without kcat,
// which .ci/run installs). Consumer groups with every client library
// users run (groups_clients_test.go): sarama, kafka-go, kcat -G and the
// Python clients, one scenario each on 3 nodes. BenchmarkProduce (RF=1, acks=1, kgo's default
// batching) runs beside the segment append in the same run and reports
// their ratio (x-segment); `make bench` tables the best of three;
// BenchmarkReplicatedProduce is its RF=3 peer. Consumer groups (issue 17,
// `make bench-groups`, groups_bench*_test.go), each beside a baseline in
// the same run: BenchmarkGroupConsume (six group members against six
// direct-assignment consumers, x-direct), BenchmarkOffsetCommitRate
// (commits at 1,000/s over 100 groups against acks=all produces at that
// pace, x-produce-p99), BenchmarkGroupRebalance (a 10-member group after
// a leave, range and cooperative-sticky, x-heartbeat); `make
// bench-groups-scale` (TestBenchGroupsScale) watches memory and
// __consumer_offsets on disk under thousands of committing groups.
//
// # Goroutines and locks
//
// Besides the quorum's, gossip's, the Kafka server's and the replica
// manager's (node/replica): the reconciler (one), the maintenance ticker
// (flush.ms, retention, checkpoints), the log-dir watcher (logDirLoop:
// waits for a failed dir, then reports it), the log cleaner's threads
// (node/cleaner; they take no node lock), the Serve loop and the HTTP
// server. Lock order: Node.reconcileMu → Node.mu → replica.Manager.mu →
// replica.Replica.mu → (node/replica's own order); Replica.mu →
// cleaner.Pool.mu (a high-watermark move tells the pool); Node.sig,
// Node.pids and Node.offline are leaves, taken under Replica.mu through
// the replica.Host; Node.dirty is a leaf (OnApply on raft's FSM goroutine,
// and the reconciler). The reconciler reads the image under the FSM's
// read lock (quorum View) holding Node.reconcileMu and nothing else. A mutex's fields are grouped with it (n.mu.openErrs,
// r.mu.part).
package node
