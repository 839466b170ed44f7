// Package quorum is Sluice's metadata controller: a Raft-replicated state
// machine (hashicorp/raft, raft-boltdb/v2) holding the cluster's metadata
// image, in the style of Kafka's KRaft controller.
//
// # Image, commands and records
//
// The Image holds the cluster id, the brokers (id, endpoints, rack, broker
// epoch, fenced, shutting down), the topics (name, topic id, config
// overrides) with their partitions (replicas, ISR, leader, leader epoch,
// partition epoch, unclean elections), the next producer id, and the
// dynamic broker configs (broker_configs.go).
//
// A change goes through three steps, as in Kafka's ReplicationControlManager:
//
//  1. Plan(image, policy, command) validates a Command against the image and
//     returns the Records that carry it out plus the command's reply, or an
//     error wrapping a kerr code (FENCED_LEADER_EPOCH, INELIGIBLE_REPLICA, ...).
//     Leader and ISR decisions come from the pure PartitionChange builder.
//  2. The records of one command are encoded as one Raft log entry
//     (EncodeEntry) and committed: they apply atomically at one log index.
//  3. Every node's FSM decodes the entry and calls Image.Replay on each record.
//     Replay is the only code that changes an Image. Records carry every
//     decision (epochs, placement, leader, topic id), so Replay decides
//     nothing; it only re-checks that a record still fits (partition epoch
//     +1, broker epoch, topic existence) and skips, deterministically on
//     every node, a record that does not (ErrStaleRecord).
//
// # Encoding
//
// A log entry is a versioned binary batch of records (EntryVersion 2,
// codec_records.go): a version byte, the record count, then each record as
// a code, its own version, a length and its fields (varints, strings,
// 16-byte UUIDs; nullable slices keep nil apart from empty). An RF=3
// partition_change takes 29 bytes (JSON took 167), a create_topic of 100
// partitions 1.2 KiB (8 KiB). Small, rare record types (SCRAM, ACLs,
// quotas, broker configs) and any type without a binary codec travel as
// JSON inside the binary frame (code 0 with their RecordType name), so a
// new record type works before it gets a codec. A snapshot (SnapshotVersion
// 2, codec_snapshot.go) is "SLQS", the version and applied index, one JSON
// "cluster" item (everything but brokers and topics), one binary item per
// broker and per topic, and an end item with the item count and a CRC-32C
// of every byte before it: a truncated or damaged snapshot is refused, and
// the same image always writes the same bytes. Decoders refuse versions
// newer than theirs. Entries and snapshots of older builds are JSON
// ({"v":1,...}, starting with '{') and are still read, so a node upgraded in
// place replays its log (TestUpgradeFromJSONEra writes such a directory
// through raft's own stores and starts on it). A mixed-version cluster is
// not supported: an older node cannot read binary entries (its FSM stops on
// them), so upgrade every controller before the new build leads.
// TestEntryCodecKeepsEveryField fills every field of every record type
// (the types are read from the source) and requires it back; a field added
// without its codec fails there. Record type names (RecordType constants)
// and codes are part of the on-disk format. Fuzz targets: FuzzDecodeEntry,
// FuzzReadSnapshot (corpus in testdata/fuzz).
//
// # Partition indexes
//
// The image indexes partitions by the brokers among their replicas, by
// leader, and the leaderless ones (index.go). Fencing, shutting down,
// re-registering and unregistering a broker plan over the partitions
// naming it, unfencing over the leaderless ones, and Image.EachPartitionOn,
// EachPartitionLedBy, PartitionsOn, PartitionsLedBy and OfflinePartitions
// answer without a scan of every partition. Replay keeps the indexes, a
// restored snapshot rebuilds them, and CheckInvariants compares them with
// a scan. Metadata for a few topics reads only those topics (map lookups
// by name or id). Scale figures (make bench-scale, TestBenchMetadataScale):
// see ARCHITECTURE.md.
//
// Record types: cluster_id, register_broker, fence_broker, unfence_broker,
// broker_shutdown, create_topic, remove_topic, topic_config,
// partition_change (complete new leader/ISR/epochs, the lost ISR of an
// unclean election, and the new replicas of a reassignment), producer_ids, add_partitions (CreatePartitions: new
// partitions appended from the current count, placed as CreateTopics
// places them over the alive brokers, with the topic's replication
// factor), log_dir_offline (a broker's log directory failed: logdir.go;
// script testdata/log_dir_offline.txt), user_scram_credential and
// remove_user_scram_credential (SCRAM credentials as KRaft keeps them:
// salt, stored key, server key, iterations; scram.go),
// access_control_entry and remove_access_control_entry (ACL bindings by
// id, KRaft's AccessControlEntryRecord; CreateACLs and DeleteACLs with
// Kafka's filter semantics; acl.go), client_quota (one key of a user's,
// client id's or user and client id's quota, named or default, as KRaft's
// ClientQuotaRecord; AlterClientQuotas validates as Kafka's controller,
// Image.ResolveQuota finds the quota a connection is held to by Kafka's
// precedence; quota.go), unregister_broker (UnregisterBroker
// after a decommission: refused with INVALID_REQUEST while any partition
// names the broker; unregister.go, testdata/unregister.txt), broker_config
// (dynamic broker configs of the cluster default "" or one broker id; a
// broker's own value wins over the default; broker_configs.go,
// testdata/broker_config.txt), feature_level (KIP-584's finalized
// feature levels, KRaft's FeatureLevelRecord: transaction.version,
// written with the cluster id from the bootstrapping node's setting and
// changed by UpdateFeatures with Kafka's upgrade and downgrade rules;
// features.go, testdata/features.txt).
//
// # Racks and dynamic broker configs
//
// A broker registers its broker.rack; placement (CreateTopics,
// CreatePartitions) lists the alive brokers alternating racks, so a
// partition's replicas land on as many racks as it has replicas (up to
// the racks there are). Image.BrokerRack is the one rack lookup for other
// packages; Image.PreferredReadReplica is KIP-392's RackAwareReplicaSelector
// (the leader, unless an alive in-sync replica is in the consumer's rack
// and the leader is not; TestPreferredReadReplica). The dynamic broker
// configs the brokers read (leader.replication.throttled.rate,
// follower.replication.throttled.rate) are stored as given: which keys are
// dynamic and their values are checked by the node (node/throttle.go);
// Image.BrokerConfig resolves broker, then cluster default.
//
// # Partition reassignment
//
// AlterPartitionReassignments (reassign.go, KIP-455) moves a partition's
// replicas, as Kafka's controller does: the partition's Replicas become
// the target followed by the removing replicas (the original ones not in
// the target), AddingReplicas and RemovingReplicas say which are which,
// and Metadata shows the full set while the move runs. The brokers of
// the adding replicas open them and catch up as followers; the
// reassignment completes inside PartitionChange, in the change that puts
// the last adding replica in the ISR (the leader's AlterPartition): the
// removing replicas leave the replicas and the ISR, and a removed leader
// gives way to the first acceptable ISR member of the target (leader
// epoch bumped). A target that adds nothing completes at once. A null
// target cancels: back to the original replicas (in Kafka's order: the
// current list without the adding ones), adding replicas out of the ISR.
// A new target replaces one in progress, counted from the original set.
// Either is refused (INVALID_REPLICA_ASSIGNMENT) when it would leave no
// ISR member among the new replicas. Targets are validated as Kafka's
// validateManualPartitionAssignment: non-empty, no repeats, every broker
// registered and alive; the length may change unless the request keeps
// the replication factor (KIP-860). Records: partition_change carries an
// optional "assignment" (replicas, adding, removing); entries and
// snapshots from before have none and replay unchanged. Script:
// testdata/reassign.txt; builder table: TestPartitionChangeReassignment.
//
// # Authorization
//
// Authorizer (authorizer.go) decides as Kafka's StandardAuthorizer over
// the image's ACLSet, an immutable index rebuilt on every ACL record, so
// brokers check requests without holding the FSM lock: super users may
// do everything; among the ACLs whose pattern covers the resource
// (literal name, literal "*", a prefix), a matching DENY refuses, then a
// matching ALLOW permits (READ, WRITE, DELETE, ALTER imply DESCRIBE;
// ALTER_CONFIGS implies DESCRIBE_CONFIGS; ALL is everything; principal
// "User:*" and host "*" match all); with no ACL on the resource at all,
// allow.everyone.if.no.acl.found decides. AuthorizeAny is Kafka's
// authorizeByResourceType (KIP-679: idempotent producers with WRITE on
// any topic). Table tests: authorizer_test.go.
//
// # Election and ISR rules
//
// See PartitionChange: the leader comes from the ISR, in replica order;
// unclean election (outside the ISR) only where unclean.leader.election.enable
// (Policy default, topic override) allows it or an admin asks for it, and it
// is recorded in the partition; every leader change bumps the leader epoch and
// every change the partition epoch; the ISR is never empty. AlterPartition
// must come from the current leader with its broker epoch, the current leader
// epoch and partition epoch, and every ISR member must be registered,
// unfenced, not shutting down and carry its current broker epoch (KIP-841,
// KIP-903). Beyond Kafka, the leader may leave the ISR it proposes: it hands
// leadership to the first member of the rest (a leader that found its own
// log corrupt, node/replica/scrub.go); an ISR without it and without an acceptable
// leader is refused.
//
// A partition whose only ISR member re-registers after an unclean shutdown
// (RegisterBroker.CleanShutdown false) keeps that member but marks the ISR
// stale: electing it is then an unclean election (DESIGN.md: a restarted
// broker is never elected from a stale ISR entry; compare KIP-966). Topics
// with sluice.durability=sync are the exception: every acknowledged record
// was fsynced, so the unclean shutdown lost nothing acknowledged and the
// member stays electable.
//
// A broker whose log directory fails reports it (LogDirOffline, with its
// broker epoch, as Kafka's brokers do in their heartbeat): the broker stays
// registered and unfenced but is no longer Alive, so it leaves every ISR
// (as the last member it stays, without leading), its leaderships move to
// in-sync replicas, and it is neither elected nor admitted to an ISR until
// it registers again after a restart, which clears the offline directory.
//
// # Controller, forwarding, non-voters
//
// Controller runs hashicorp/raft: raft-boltdb/v2 (raft.db) as log and stable
// store behind a LogCache, a file snapshot store, and a NetworkTransport on
// the controller port. Open bootstraps from Config.InitialVoters on an empty
// directory; a node without voters waits for the leader's AddNonvoter.
// Propose(ctx, cmd) on the leader takes proposeMu, waits for a Barrier once
// per term (so the committed image holds every earlier entry), Plans against
// the leader's speculative image (committed image + entries in flight),
// replays the records into it, hands the entry to raft and releases the lock
// before waiting for the commit: commands are pipelined and share raft's
// group commit. A failed entry drops the speculative image; the next command
// rebuilds it after a Barrier. Propose returns once the entry is applied to
// the local committed image. On any other node it forwards
// the command over TCP to the leader's Raft address: the controller port is
// shared: every connection opens with a hello (hello.go: magic 0xC5,
// version, cluster id, sender node id), then a connection whose next byte
// is 0xF5 speaks the forwarding protocol of forward.go (length-prefixed
// JSON, requests one at a time; the client keeps idle connections for
// the next forwards, forward_pool.go, so mutual TLS costs one handshake
// per connection, and ResetForwardConns drops them when certificates are
// reloaded), anything else is handed to raft
// (mux.go). A connection whose hello is malformed or names another cluster
// id is closed before either protocol sees it, with one rate-limited line
// to Config.PeerLog naming both cluster ids (ErrBadHello, ErrWrongCluster;
// a forwarding client of another cluster gets ErrWrongCluster back).
// Retries happen only when the command surely did not apply; otherwise the
// caller gets ErrOutcomeUnknown. A node pointed at the wrong
// controller.quorum.voters (or a recycled port in tests) can so neither
// vote, append nor propose here; RaftStats.RefusedConns counts the
// connections refused.
//
// The hello keeps other clusters out, not attackers: the cluster id is
// public (Metadata answers it). With Config.ServerTLS and ClientTLS (the
// node's CONTROLLER listener mapped to SSL) every controller-port
// connection, raft's and forwarding's, is mutual TLS before the hello:
// the acceptor requires a client certificate its truststore verifies,
// and the dialler presents its own and verifies the acceptor's. A failed
// handshake is refused like a bad hello (counted, one line a minute per
// host); Config.AuthorizePeer may then refuse a verified certificate (the
// node admits only super.users principals when its authorizer is on),
// since one CA may sign clients' certificates too. A process outside the
// cluster that once forwarded fence_broker, register_broker or
// remove_server with the cluster id alone is refused at the handshake
// (node's TestControllerSSL, with a client that does it by hand).
//
// On disk, under the node's <log.dirs>/quorum: raft.db (the bolt log and
// stable store) and snapshots/ (the image, versioned; see Encoding);
// meta.properties, written by `sluice init`, lies beside it (node/meta).
//
// # Voters (voters.go)
//
// KIP-853's AddRaftVoter and RemoveRaftVoter on hashicorp/raft's AddVoter
// and RemoveServer: a controller lost with its disk is removed
// (RemoveVoter), its replacement (same or new id) starts from a directory
// formatted without initial controllers, joins as an observer, and
// AddVoter promotes it once its log caught up with the leader's. The
// leader refuses a node that joins with an empty Raft log under the id of
// a current voter (DUPLICATE_VOTER): a voter that lost its log must not
// count towards majorities for entries it no longer holds.
//
// # DescribeQuorum
//
// raft keeps follower match indexes private, so Status (status.go) on the
// leader asks every member of the Raft configuration, over the forwarding
// protocol (op "status"), for its own last log index and the time since it
// last heard from the leader. Exact: leader id, term (= leader epoch),
// commit index (= high watermark), each member's last log index (=
// LogEndOffset) at the moment it answered. Approximate: LastFetchTimestamp
// (the leader's clock minus the member's "ms since contact"; Raft pushes,
// nothing fetches) and LastCaughtUpTimestamp (the contact time of the
// latest describe, on this leader, that found the member's log as long as
// the leader's; -1 until then). A member that does not answer in 2 s shows
// LogEndOffset -1. Offsets are Raft log indexes.
//
// # Publishing: changes in effect when answered
//
// A hashicorp/raft follower learns that an entry committed only from the
// leader's next AppendEntries (the next entry, or one every CommitTimeout,
// 50-100 ms, when idle), so a change answered on commit was not yet
// visible on the other brokers. Publish (publish.go) proposes a command
// and has the active controller append a Barrier once it commits
// (coalesced, one in flight): its AppendEntries carry the new commit index
// to every follower at once. AwaitBrokers then asks this node and every
// live broker of the image (op "await_applied" of the forwarding
// protocol) to answer once the index is in effect there
// (Config.AwaitApplied: the node's "applied and reconciled"; by default
// applied to the image), until the caller's deadline; it names the
// brokers that did not confirm (ErrNotPublished). The node publishes the
// admin writes (CreateTopics, CreatePartitions, DeleteTopics,
// IncrementalAlterConfigs); other commands only Propose. Before this, a
// create followed at once by a describe or produce on another broker
// failed 11 times in 3 rounds (node's TestAdminWritesVisibleWhenAnswered);
// after: 0 in 100.
//
// # Liveness
//
// Gossip runs memberlist on every node; a broker advertises the epoch of its
// registration in its node metadata (SetBrokerEpoch). On the active
// controller, the pure Liveness decider turns the evidence into FenceBroker
// and UnfenceBroker commands for the registered epoch (timelines in
// testdata/liveness/timeline.txt):
//
//   - a probe: every GossipConfig.ProbeInterval (the node's
//     sluice.broker.probe.interval.ms, 250 ms) the controller opens a TCP
//     connection to each live broker's Kafka listener, the one followers
//     fetch from, and closes it. A refusal means nothing listens on that
//     port while its host answers: the process is gone. Two in a row fence
//     the broker (a killed leader loses its leaderships in 0.3–0.6 s in
//     TestKilledLeaderFencedByProbe, against 5.5–6.4 s without probes).
//     False positives: only a broker whose listener is closed is refused,
//     which a running broker's is not until it shuts down; a slow, loaded
//     or paused process still has its socket accepted by the kernel. A
//     refused broker stays fenced until a probe is answered or it
//     registers a new epoch, so gossip's stale "alive" cannot flap it;
//   - silence: a host that is gone (docker kill takes the container's
//     address with it, a lost host, a disconnected network) refuses
//     nothing, its connects time out. Probes that time out or find the
//     host unreachable in a row for SilenceToFence (2 s) over at least
//     SilentRoundsToFence rounds fence the broker, counting only rounds in
//     which another broker's listener answered this controller: a
//     controller starved of CPU or cut off itself sees every probe time
//     out and fences nobody. A live broker's kernel accepts connects even
//     while its process is paused or loaded; under 5% loss each way one
//     probe in ten times out, eight in a row about once in 10^8
//     (TestProbeSilenceFences; after docker kill, see docs/deploy.md);
//   - memberlist's dead event, a hint for what probes cannot see (a host
//     or its network gone: seconds, memberlist's LAN settings);
//   - the session timeout (broker.session.timeout.ms, 9 s), the bound: a
//     broker not seen alive by gossip for that long is fenced, counted from
//     when this controller became active.
//
// GossipConfig.Keys turn on memberlist's keyring: every packet and stream
// is encrypted and authenticated (AES-GCM, the cluster label as
// authenticated data) with the first key and opened with any, so a
// process without a key cannot join nor speak for a member, and keys
// rotate one node at a time, by restarts or live with Gossip.SetKeys
// (TestGossipKeys, TestGossipKeysLive; docs/deploy.md).
//
// The active controller's own death comes first: the other voters elect
// a new one (hashicorp/raft's defaults: a heartbeat timeout of 1-2 s,
// then the election), whose Liveness starts over (Reset) and whose probes
// then fence the dead broker. In `sluice bench --failover` a killed
// leader that was also the active controller made its partitions
// writable after 2.1-3.6 s, against 0.4-0.9 s for another leader.
//
// # Preferred leaders
//
// The first replica of a partition is its preferred leader; creation and
// placement spread those evenly, so leadership is balanced while every
// broker runs. A failover or a controlled shutdown moves leaderships
// away and nothing moves them back by itself. LeaderImbalances counts, per
// broker, the partitions it prefers that another replica leads, and which
// of them could move back now (the broker alive and in the ISR);
// PlanLeaderRebalance, with Kafka's rule, returns a preferred ElectLeaders
// of those partitions for every broker whose share exceeds (strictly)
// leader.imbalance.per.broker.percentage (10). Both are pure (script:
// testdata/leader_rebalance.txt). The node runs them on the active
// controller every leader.imbalance.check.interval.seconds (300) when
// auto.leader.rebalance.enable (true), and publishes the election: a
// restarted broker gets its leaderships back within one interval of
// rejoining the ISRs (node's TestLeadershipReturnsToPreferred).
//
// # Goroutines and locks
//
// Plan, Replay, PartitionChange, Liveness, PlanLeaderRebalance and Image
// are plain data and functions with no locks or goroutines; an Image is
// not safe for concurrent use.
//
// The FSM owns one Image behind a sync.RWMutex (FSM.mu). Raft's FSM goroutine
// is the only writer (Apply, Restore); readers take the read lock (View,
// Image). The OnApply callback runs on raft's FSM goroutine after the lock is
// released, in log order; it must not block for long and must not call
// Controller.Propose (which waits for that same goroutine).
//
// Goroutines of a Controller: raft's own; the mux accept loop and one short
// goroutine per accepted connection (routing); one per forwarding
// connection (serveForward, which calls proposeLocal like a local caller);
// leaderLoop (writes the cluster id when this node becomes leader);
// nudgeLoop (the Barriers of Publish); one per broker awaited by
// AwaitBrokers while it waits; and one
// per wait on a raft future (wait), because raft does not answer futures
// left in its buffered apply channel at shutdown: every wait also watches
// the caller's context and Close. Gossip adds memberlist's goroutines and
// its decision loop, which calls Propose.
//
// Lock order: Controller.proposeMu → FSM.mu (read). proposeMu is held while
// planning and appending, and during a Barrier, never while waiting for a
// commit. Controller.connMu, Controller.caught.mu and Gossip.mu are
// leaves: nothing is called while they are held.
package quorum
