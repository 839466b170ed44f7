// Package group is the consumer group coordinator's state machine (Kafka's
// GroupCoordinator / GroupMetadataManager for the classic protocol and the
// KIP-848 consumer protocol, and the committed offsets): the groups whose
// coordinator is one partition of the
// internal topic __consumer_offsets, and the records that persist them. It
// does no I/O and has no goroutines, sockets or clocks, like partition/:
// requests go in through Step, the clock through TickTo, decisions come out
// through Ready, and the driver (node/) appends the records to the offsets
// partition, answers the clients and calls Appended.
//
// # The loop the driver runs
//
// One Shard per __consumer_offsets partition this node leads, under one
// lock:
//
//	s := group.NewShard(partition, cfg)
//	for each record of the partition from its log start to its high watermark:
//		s.Replay(offset, key, value)          // loading: requests get COORDINATOR_LOAD_IN_PROGRESS
//		// a transactional batch's: s.ReplayTxn(offset, producerID, key, value)
//		// a control batch (marker): s.ReplayMarker(producerID, commit)
//	s.LoadDone(now)
//	s.SetTopics(now, topics)                  // again whenever topics change
//	...
//	s.TickTo(now); s.Step(now, group.Request{ID: id, Body: req, ...})
//	rd := s.Ready()
//	// 1. rd.Appends: append each to the partition, acks=all, in order
//	//    (a.Transactional: as a transactional batch of a.ProducerID at
//	//    a.ProducerEpoch); when committed (or failed) call
//	//    s.Appended(now, a.ID, err)
//	// 2. rd.Responses: answer the waiting clients
//	// wake again at s.NextDue() (TickTo) or on the next request
//	// a transaction marker committed in the partition: s.CompleteTxn(now, producerID, commit)
//
// When this node stops leading the partition the driver drops the Shard
// and answers every request still waiting NOT_COORDINATOR.
//
// # How it works
//
// A group (state.go) moves Empty → PreparingRebalance → CompletingRebalance
// → Stable, and back to PreparingRebalance whenever its membership or a
// member's protocols change; Dead is a group being deleted. Each rebalance
// makes a generation:
//
//   - join.go: JoinGroup. New dynamic members of v4+ first get
//     MEMBER_ID_REQUIRED and an id (KIP-394), pending until they rejoin or
//     their session timeout passes. The join phase ends when every member
//     has rejoined, or at the rebalance timeout (the longest of the
//     members'), when members that did not rejoin are removed (static ones
//     stay until their session ends). An empty group's first join phase
//     waits group.initial.rebalance.delay.ms, again while new members come,
//     up to the rebalance timeout. The protocol is the one every member
//     supports with the most first-choice votes; the leader gets every
//     member's metadata. A static member (KIP-345) that restarts takes its
//     instance's place and assignment: in a Stable group without a
//     rebalance when the selected protocol stays; the old member id is
//     fenced (FENCED_INSTANCE_ID).
//   - sync.go: SyncGroup, Heartbeat, LeaveGroup. Followers wait for the
//     leader's SyncGroup; its assignment is written as the group's record
//     and, once Appended, the group is Stable and every waiting member gets
//     its assignment. A member that does not send SyncGroup within the
//     rebalance timeout after the join phase is removed and the group
//     rebalances. A member whose session ends (no heartbeat, not waiting
//     for an answer) is removed and the group rebalances.
//   - offsets.go: OffsetCommit, OffsetFetch, OffsetDelete, retention. A
//     commit is answered when its records are Appended and applied only if
//     they were; a client without membership (generation -1, no member id)
//     commits to a group without members. Offsets expire as KIP-211 and
//     Kafka 4 say (from when the group became Empty; from the commit for a
//     group without protocol type and for unsubscribed topics of a Stable
//     consumer group), checked every offsets.retention.check.interval.ms.
//   - admin.go: DescribeGroups, DeleteGroups, ListGroups, TopicsDeleted,
//     Stats.
//   - txn_offsets.go: TxnOffsetCommit and the pending transactional
//     offsets, below.
//   - consumer.go, assign.go, consumer_describe.go, records848.go: KIP-848
//     consumer groups, below; mixed.go: the online migration between the
//     protocols and classic members inside a consumer group.
//   - tombstones.go: tombstones are issued before they are written, so a
//     commit still in flight for the same partition must not reappear when
//     it lands, and a tombstone whose write fails is undone.
//   - timers.go: one heap entry per group at (no later than) its earliest
//     deadline; NextDue is exact: a tick before it changes nothing.
//
// # KIP-848 consumer groups
//
// A group id is a classic group or a consumer group (group.consumer
// records, ConsumerGroupHeartbeat): an empty group of one type becomes the
// other on the other's first request, its offsets kept. A group with
// members migrates online as Kafka 4's does, under
// group.consumer.migration.policy (Config.MigrationPolicy; mixed.go):
//
//	classic group, Stable ── ConsumerGroupHeartbeat joins (upgrade allowed) ──▶ consumer group
//	    every classic member kept: epoch = generation, its assignment owned and targeted
//	consumer group with classic members: JoinGroup/SyncGroup/Heartbeat/LeaveGroup
//	    served from its state (JoinGroup: the member's subscription, owned
//	    partitions from it; generation = member epoch; SyncGroup: what it owns;
//	    Heartbeat: REBALANCE_IN_PROGRESS to make it rejoin)
//	last consumer-protocol member leaves (downgrade allowed) ──▶ classic group
//	    generation = assignment epoch, members with their protocols and
//	    partitions, then a rebalance
//
//	heartbeat(epoch 0: join | > 0 | -1 leave | -2 static leave)
//	  → member changed (new, subscription, assignor)? group epoch + 1
//	  → group epoch > assignment epoch? assign (uniform | range) over
//	    the subscribed topics (names ∪ RE2 regex over SetTopics' names):
//	    target assignment, assignment epoch = group epoch
//	  → reconcile the member toward its target:
//	      owns partitions not in its target → UNREVOKED: told to give them
//	        up, keeps its epoch until a heartbeat shows them released
//	      else → the assignment epoch; takes the target partitions no
//	        other member owns or revokes (UNRELEASED until it has all)
//	  → answer: member id, epoch, heartbeat interval, its assignment
//
// So no partition is ever owned by two members (checked after every
// event under the invariants tag). A heartbeat with an older epoch is
// accepted only as the previous epoch of a member that owns nothing
// beyond its assignment (its answer was lost); otherwise
// FENCED_MEMBER_EPOCH. Sessions last group.consumer.session.timeout.ms
// from the last heartbeat; a member that does not revoke within its
// rebalance timeout is removed. A static member that leaves with -2 keeps
// its partitions until its session ends; its restart with a new member
// id takes them over without a new epoch; another live member with the
// same group.instance.id is UNRELEASED_INSTANCE_ID. SetTopics bumps the
// epoch of every group whose subscribed topics changed (created,
// deleted, partitions added), by a hash of them. OffsetCommit v9 and
// OffsetFetch v9 check the member epoch (STALE_MEMBER_EPOCH,
// FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID; commits of a consumer group's
// member below v9: UNSUPPORTED_VERSION); a commit without membership is
// taken only while the group has no members. DescribeGroups answers a
// consumer group in the classic shape (protocol type "consumer");
// ListGroups gives its type and state (Empty, Assigning, Reconciling,
// Stable); ConsumerGroupDescribe gives epochs, subscriptions, current and
// target assignments.
//
// Writes are Kafka's records (records848.go), applied in memory at once
// and answered when Appended, as Kafka 4's timeline does; an answer that
// wrote nothing waits for the Appends in flight before it (it may have
// read what they wrote) and gets their error if one fails. A failed write
// is answered with the mapped error and the whole group written again
// (the records are upserts by key), so that log and memory meet.
// The assignors are rack-aware (KIP-881): TopicInfo.Racks gives each
// partition's replica racks, a member its rack; range gives each member
// its rack's partitions first within its count, uniform prefers a
// member in the partition's rack among the least loaded and moves
// off-rack partitions first (stickiness comes first: an owner keeps its
// partitions). Racks are part of the metadata hash, so a change of them
// assigns again (KIP-1101).
//
// Differences from Kafka: the metadata hash is FNV-64a, not Murmur3 (a
// Kafka coordinator reading these records assigns once more); the
// assignment is computed in the heartbeat that finds it stale (no
// group.consumer.min.assignment.interval); regular expressions are Go's
// RE2, matched against whole names; a classic group is upgraded only
// when Stable (Kafka converts one in any state): until then the joining
// member is answered COORDINATOR_NOT_AVAILABLE, which clients retry, so
// that no member's partitions are unknown; a classic member of a consumer
// group gets MEMBER_ID_REQUIRED without a pending id being kept, and its
// JoinGroup answer names no leader (every client then acts as a
// follower and takes the server's assignment from SyncGroup).
//
// Every request is checked as Kafka checks it: an empty group id is
// INVALID_GROUP_ID; an unknown member UNKNOWN_MEMBER_ID; a fenced instance
// FENCED_INSTANCE_ID; another generation ILLEGAL_GENERATION; SyncGroup and
// Heartbeat during the join phase REBALANCE_IN_PROGRESS; protocols a group
// cannot take INCONSISTENT_GROUP_PROTOCOL. Beyond Kafka, a member's
// protocols and assignment are bounded (MaxMemberMetadataBytes: over it,
// INVALID_REQUEST) and pending KIP-394 ids count toward group.max.size, so
// that one client's joins cannot exhaust the coordinator's memory.
//
// # Transactional offset commits
//
// TxnOffsetCommit (v0-5, KIP-98/KIP-447) checks the group and member as
// Kafka's validateTransactionalOffsetCommit does and writes the offsets
// as one transactional Append of the request's producer (the log fences
// an older epoch: INVALID_PRODUCER_EPOCH). Once Appended they are pending
// for that producer (Kafka's pendingTransactionalOffsets), not committed:
//
//	TxnOffsetCommit ─ Append(transactional, pid, epoch) ─ Appended ─▶ pending[pid]
//	marker committed ─ CompleteTxn(pid, commit) ─▶ commit: each pending offset
//	    becomes the group's, unless a commit later in the log is there; abort: dropped
//	load: ReplayTxn ─▶ pending[pid]; ReplayMarker(pid, commit) ─▶ the same end
//
// OffsetFetch does not show pending offsets; with require_stable (v7+) a
// partition with any answers UNSTABLE_OFFSET_COMMIT. A tombstone of the
// partition drops them (OffsetDelete and DeleteGroups write one for a
// partition that has only pending offsets); retention keeps an offset
// with pending ones and a group with any. Offsets carry their place in
// log order (the record's offset when replayed, the Append's rank when
// written) so that a commit and a transaction's commit resolve as in the
// log. A CompleteTxn that finds the producer's TxnOffsetCommit still in
// flight applies to it when it lands (the protocol orders the marker
// after the client's answer; a marker written before the record would
// leave the record pending in the log, and a new coordinator would see
// it so). A CompleteTxn before LoadDone is kept until then.
//
// # Where it differs from Kafka, on purpose
//
//   - Bounds Kafka lacks: MaxMemberMetadataBytes per member (INVALID_REQUEST)
//     and MaxGroupMetadataBytes per group (GROUP_MAX_SIZE_REACHED); pending
//     KIP-394 member ids count toward group.max.size.
//   - A static member's restart (a new id for a known group.instance.id) is
//     not refused by group.max.size: it replaces a member, it adds none.
//   - A JoinGroup or SyncGroup superseded by a newer one from the same
//     member is answered REBALANCE_IN_PROGRESS (Kafka drops it
//     unanswered), so that the driver never holds a request forever.
//   - A pending member id that leaves causes no rebalance.
//   - Ties in protocol selection go to the leader's preference (Kafka's
//     pick is a hash map's); members are ordered by id.
//   - Awaiting members are not expired by Kafka's 5-minute new-member join
//     timeout: the rebalance timeout ends the join phase.
//   - A new group is written at its first generation, not at its creation
//     (Kafka 4 writes an empty group record to commit its timeline).
//
// # Records
//
// Records are Kafka's __consumer_offsets schemas, as Kafka 4 writes them
// (records.go draws them): OffsetCommitKey v1 / OffsetCommitValue v3 with
// the leader epoch, GroupMetadataKey v2 / GroupMetadataValue v3, and the
// consumer group record types 3-8 (records848.go draws them; a classic
// member of a consumer group keeps its session timeout and protocols in
// the member record's tagged ClassicMemberMetadata); a nil
// value is a tombstone. The group record is the whole group: written after
// the leader's assignment, when a generation ends without members, and when
// a static member is replaced without a rebalance. Replay rebuilds what
// those records say (a group with members Stable, without Empty; member
// sessions start at LoadDone), so a new coordinator has the groups, members,
// assignments and offsets the old one had written. Member ids are
// prefix-UUID, the UUID made of the load time and a counter, so that ids of
// an earlier coordinator do not come back.
//
// # Failed writes
//
// Appended(err) answers what waited as Kafka 4 maps the error
// (NOT_LEADER_OR_FOLLOWER, KAFKA_STORAGE_ERROR → NOT_COORDINATOR; timeouts,
// missing replicas, other errors → COORDINATOR_NOT_AVAILABLE). A failed
// commit is not applied; a failed assignment rebalances the group; a
// failed static replacement is undone; failed tombstones are undone. The
// group record nobody waits on (a generation without members) is not: the
// next group record, which holds the whole group, or the next
// coordinator's load brings memory and log together again. A write that
// timed out may still be in the log: like Kafka's coordinator, this one
// cannot know.
//
// # Tests
//
// testdata/*.txt are datadriven scripts (a harness with a clock and
// scripted clients, regenerated with -rewrite; consumer*.txt for KIP-848,
// migration.txt for the migration and mixed groups, racks.txt for the
// rack-aware assignors);
// TestRandom drives shards with random clients (classic and KIP-848,
// transactional commits and markers), clocks, topic changes and write
// outcomes; FuzzReplay feeds Replay any record (seeds of every type,
// corpus in testdata/fuzz/FuzzReplay), FuzzReplayTxn ReplayTxn and the
// marker after it.
package group
