// Package soak is `sluice soak`: it starts a local cluster of real node
// processes (tools/cluster), runs idempotent acks=all producers and a
// consumer through Kafka's own client (franz-go), injects faults on a
// seeded schedule, reads every partition back from the start, and checks
// that no acknowledged record was lost.
//
// # The history and the checker
//
// Every value the workload writes is "soak <producer> <seq> " padded with
// 'x': the workload's producer number and that producer's sequence number,
// which grows by one per send. Each send ends Acked (with its offset),
// Failed (definitely not written: only broker rejections that happen before
// any append, see classify) or Unknown (timeouts, lost connections, anything
// else). A consumer reads every partition during the run, keeping each
// record with the high watermark of the fetch response that carried it;
// at the end every partition is read again from its start up to its high
// watermark. Check then verifies, and reports by kind:
//
//	lost             every acknowledged record is in the final log
//	lost-unexplained (page-cache durability) every acknowledged record
//	                 missing from the final log was dropped by a power
//	                 loss (below)
//	duplicate        no sent record is at two offsets
//	reordered        one producer's records in one partition are in send order
//	offset-conflict  no offset holds two values (acks, live reads, final read)
//	vanished         what a consumer read during the run is still there
//	failed-visible   no definitely failed send is in the log
//	phantom          every record was sent by the workload, to that partition
//	above-hw         no consumer got an offset at or above the fetch's HW
//	not-writable     every partition acknowledges a write within the
//	                 recovery bound after the last fault healed
//	no-effect        every injected fault showed its effect (below)
//	bad-accepted     every request of the bad client that got an answer
//	                 was refused with an error code
//
// Unknown sends may be present or absent (counted, never a violation). The
// report also lists unavailability windows: stretches longer than the gap
// threshold in which a partition acknowledged nothing, each with the faults
// it overlaps and how long it lasted after they healed (the five longest
// are printed), and, per fault kind, the percentiles (p50, p99, max) of
// the time from a fault's start until every partition acknowledged a
// write sent after it (Report.Writable, writable.go; a pause or a network
// partition counts its own length; a fault after which some partition
// took no write again is counted as "never"). Lost records are grouped by the fault that lost them (the
// power loss that explains them, below; else the first fault that healed
// after their acknowledgement), with their partition, offsets and
// acknowledgement times.
//
// # Power losses and page-cache durability
//
// With --durability page-cache a record is acknowledged before any fsync,
// so a power loss of every replica may lose it: that is the documented
// risk of the mode, to be measured, not a bug. But only a power loss may
// lose it, and only what it dropped. When powerfs cuts a killed node's
// files (powerfs.RecoverWith), the soak reads the RecordBatch headers of
// each segment file it is about to cut and records, per replica and
// partition, the offsets and write times of the batches at or past the
// synced length (Fault.Dropped, power.go). The checker (explain.go) puts
// a lost acknowledged record down to the first power loss that
//
//   - dropped its acknowledged offset from some replica of its partition,
//   - and healed after it was acknowledged (offsets are reused after a
//     power loss: a record acknowledged later at a dropped offset is not
//     that power loss's to explain).
//
// The same rule explains a record a consumer read during the run that is
// gone (vanished) or that another record replaced (offset-conflict), by
// when it was read. With page-cache durability an explained loss is
// counted (Counts.LostExplained, VanishedExplained, ConflictsExplained),
// not a violation; a lost record no power loss explains is a
// lost-unexplained violation. With sync durability nothing is excused:
// every loss is a lost violation, whose detail names the power loss that
// dropped its offset if one did. The report lists each power loss with
// what it dropped (offsets, union over the replicas, per partition), how
// long the oldest dropped batch had waited for an fsync (Unsynced), and
// the lost, vanished and overwritten records it explains
// (Report.PowerLosses). "Some replica" is as precise as the history
// allows: which replica the operator's unclean election chose is not
// recorded.
//
// # The compacted topic
//
// Every feature adds its workload to the soak. Beside the soak topic, a
// second topic (--compacted-topic, --compacted-partitions 2 by default,
// 0: none; replication factor and min.insync.replicas as the soak
// topic's) has cleanup.policy=compact, segment.bytes 16 KiB,
// min.cleanable.dirty.ratio 0.01 and delete.retention.ms 10 s, and the
// nodes run with log.cleaner.backoff.ms=500 (unless --node-config sets
// it), so the cleaners rewrite its logs throughout the run, under the
// same faults. Half the producers (at least one; idempotent, acks=all)
// write --compacted-rate records per second of random keys of their own
// ("k<producer>-<n>", --compacted-keys in all; key n goes to partition n
// mod the partitions, so one key's writes are in send order), one in ten
// a tombstone (null value); a value is "soak <producer> <seq>" as above.
// At the end the topic is read from its start (until every partition
// reached its high watermark, or 5 s passed without a record: compaction
// may leave a hole at the end of a log). A key's latest acknowledged
// write is its acknowledged send at the highest offset. Compaction may
// remove any record of a key but its latest, and a tombstone once
// delete.retention.ms passed; the checker (compactcheck.go) reports:
//
//	compaction-lost-latest      a key's latest acknowledged value is not
//	                            its last record in the log (gone, or an
//	                            older one in its place), unless an
//	                            unknown-outcome tombstone of it was sent
//	                            later or an unknown-outcome write of it is
//	                            at a higher offset; a latest tombstone is
//	                            gone though sent less than
//	                            delete.retention.ms before the final read,
//	                            or an older value of its key is back
//	compaction-phantom          a record no send explains: a value never
//	                            sent, sent to another partition or under
//	                            another key, a tombstone no acknowledged
//	                            (at that offset) or unknown send of its
//	                            key wrote, a record without a key
//	compaction-offset-order     a partition's offsets in the final read
//	                            do not strictly increase (holes allowed)
//	compaction-offset-conflict  an acknowledged offset holds another
//	                            record, or an acknowledged record is at
//	                            another offset (compaction empties
//	                            offsets, never refills or moves them)
//
// A lost latest write is put down to a fault in the losses table like a
// lost record; with page-cache durability one a power loss explains is
// counted (Report.Compact.Explained), not a violation. The report counts
// the topic's sends, tombstones, the offsets compacted away (holes below
// the high watermarks: the cleaners' work, seen by a client), the cleans
// the nodes counted (sluice_log_cleaner_cleans_total and
// _failures_total, sampled every 2 s and summed across restarts) and the
// keys whose latest value or tombstone is present (Report.Compact). The
// compacted partitions are not in the per-partition table, the
// unavailability windows or the recovery bound, which are the soak
// topic's.
//
// # Consumer groups
//
// With --groups N (2 by default) N consumer groups ("soak-group-a", ...)
// read the soak topic, --group-members each at a time, their balancers
// cooperative-sticky, range, sticky and round-robin in turn (groups.go).
// A member is a kgo group consumer that polls, records every record as
// delivered (member, generation, partition, offset, value), and commits
// what it polled every --group-commit-every and when partitions are
// revoked, with CommitOffsetsSync: its request and answer give the
// generation and each partition's outcome (acked; failed: refused by a
// generation or member check before any write; unknown: anything else).
// Rebalances wait while a poll's records are processed
// (BlockRebalanceOnPoll). Every change of a member's partitions is an
// assignment event (OnPartitionsAssigned/Revoked/Lost, a new generation
// seen in GroupMetadata, leaving) with what it owns after it. About every
// --group-churn a member of a random group leaves (Close: LeaveGroup) and,
// once the group settled, a new one joins; each change is a rebalance,
// timed from the change until every live member got a new generation
// since (the same one for all; not necessarily a higher number: a
// coordinator that fails over before it wrote a generation hands that
// number out again) and together they own each partition once (one
// still unsettled after 30 s counts as unsettled). A member given a
// generation, or an assignment, below one another member was already
// assigned partitions in (more than a second before) is counted as a
// generation regression, with examples: the coordinator writes a
// generation's record before it answers any SyncGroup of it, so this
// suggests a lost group record. Every second, and once more after
// every member left at the end, the groups' committed offsets are read
// back (kadm FetchOffsets). The checker (groupcheck.go) reports:
//
//	group-offset-backwards  a committed offset seen lower than an earlier
//	                        observation of it (an acknowledged commit or
//	                        a FetchOffsets answer that ended before this
//	                        one began), outside an explicit reset and
//	                        unless an unknown-outcome commit wrote the
//	                        lower value
//	group-undelivered       at-least-once: an acknowledged record (in the
//	                        final log) below an acknowledged commit was
//	                        not delivered to a member of the group before
//	                        the first such commit was acknowledged; with
//	                        page-cache durability a record at an offset a
//	                        power loss cut after the commit was sent (or
//	                        after the group got another record there) is
//	                        explained: the commit is about what was lost
//	group-double-owner      two members claimed one partition in one
//	                        generation at the same time
//	group-commit-lost       a final committed offset is not what the
//	                        last acknowledged commits of the partition
//	                        wrote (those no acknowledged commit was sent
//	                        after), nor an unknown-outcome commit not over
//	                        before them; or it could not be read
//
// The report adds the deliveries (and redeliveries, which at-least-once
// allows), the commits by outcome, the rebalance durations and the
// commit latency (p50, p99, max), and each group's lag at the end. A
// kill-coordinator fault (only in runs with groups) SIGKILLs the node
// that answers FindCoordinator for one of the groups (asked of every
// broker directly, since kgo caches coordinators; its target names the
// __consumer_offsets partition, abs(String.hashCode) mod partitions as
// Kafka computes it) and restarts it after 1–10 s; its effect is that
// partition led in a later leader epoch (by another node, or by the same
// one after its restart when no other was in the ISR) with FindCoordinator
// naming its leader, and how long that took.
//
// The soak gives __consumer_offsets the run's sluice.durability and
// min.insync.replicas (the node creates it page-cache, without a
// min.insync.replicas: a power loss of every replica then loses
// acknowledged commits and leaves its partitions without a leader), and
// with page-cache durability includes it in the operator's unclean
// elections and counts a commit a power loss took back as explained.
//
// Measured (shared 2-core VM, December, `sluice soak --duration 5m --seed
// 20261201`: 3 nodes, sync, 2 groups of 3, every fault kind, 3 coordinator
// kills): 806,714 deliveries (2,256 redelivered), 2,088 commits, 30
// rebalances settled in p50 1.5 s, p99 21 s (rebalances during
// coordinator failovers and power losses); commit latency p50 18 ms, p99
// 1.6 s, max 14 s; a coordinator kill moved the group in 2.3–2.9 s
// (broker.session.timeout.ms default); no violation.
//
// # The exactly-once pipeline
//
// With --eos-members N (2 by default) the members of consumer group
// "soak-eos" run franz-go's GroupTransactSession over the soak topic
// (eos.go): each polls with read_committed (at most 1,000 records) and,
// in one transaction, writes one record per input record to the output
// topic (--eos-topic, as many partitions as the soak topic, the soak
// topic's configs; input partition p to output partition p), its value
// naming the input partition, offset and workload key and the
// transaction ("eos <partition> <offset> <producer> <seq> <member>
// <txn>"), then ends it: End commits the input offsets in the
// transaction (TxnOffsetCommit) and EndTxn commits, or aborts after a
// rebalance or a failure. Each transaction is recorded with its records
// and its outcome: committed, aborted (End aborted it without an error)
// or unknown (End failed: it may have gone either way). About every
// --eos-churn a member leaves and a new one joins with a new
// transactional.id (--eos-transaction-timeout its
// transaction.timeout.ms). __transaction_state (and __consumer_offsets)
// get the run's durability and min.insync.replicas, as for the groups.
// At the end every member leaves; each output partition's last stable
// offset (ListOffsets read_committed) must reach its high watermark
// within the transaction timeout plus the recovery bound; the group's
// committed offsets are read with require_stable; the output is read
// from its start with read_committed up to the LSOs. The checker
// (eoscheck.go) reports:
//
//	txn-duplicate         an input record is in the output twice
//	txn-missing           an input record below the group's final
//	                      committed offset of its partition is not in the
//	                      output, or a committed transaction's record is not
//	txn-aborted-visible   a record of an aborted transaction is visible
//	txn-reordered         one input partition's records are in the output
//	                      out of input order
//	txn-offsets-mismatch  the output holds an input record at or above the
//	                      committed offset of its partition (the offsets
//	                      and the output were not committed together), or
//	                      the committed offsets could not be read
//	txn-phantom           an output record no transaction produced, or one
//	                      naming an input offset that holds another record
//	txn-lso-stuck         an output partition's LSO stayed below its high
//	                      watermark (a transaction never ended), or the
//	                      output could not be read up to it
//
// With page-cache durability a power loss may take back a committed
// transaction's markers, offsets or coordinator state (then no one ends
// the transaction: its LSO stays, its offsets stay pending), and cut the
// input back so that its offsets are reused: a violation from a
// transaction that began before one healed (or, for the end state, any
// after one) is counted as explained (EOSCounts.Explained), not
// reported; with
// sync durability (the default) nothing is excused. The report adds the
// transactions by outcome, the records produced and read back, the input
// records covered, the aborted records checked invisible, the committed
// transactions' time (Begin to the end of EndTxn: p50, p99, max) and the
// lag at the end. A kill-txn-coordinator fault (runs with the pipeline
// only) SIGKILLs the node that answers FindCoordinator (key type 1) for
// one member's transactional id (the leader of its __transaction_state
// partition, abs(String.hashCode) mod partitions) and restarts it after
// 1–10 s; its effect is that partition led in a later leader epoch with
// FindCoordinator naming its leader.
//
// Measured (shared 2-core VM, December, the four issue-18 branches merged
// into this one, `sluice soak --duration 4m --seed 20261202`: 3 nodes,
// sync, every fault kind, 22 faults with 2 transaction coordinator kills
// and 2 power losses): 573 transactions by 15 member incarnations (567
// committed, 5 aborted, 1 unknown), 285,824 input records transformed
// exactly once, in order, final lag 0; a committed transaction took p50
// 335 ms, p99 8.0 s, max 14.9 s (the long ones span failovers); a
// transaction coordinator kill moved the coordinator in 0.7–4 s; no
// violation. TestSoakShort's 75 s: 77 transactions, p50 507 ms.
//
// So that failed-visible checks real failures, a poison producer sends,
// every --poison-every, one uncompressed record over the topic's
// max.message.bytes (256 KiB; the workload's batches stay under 64 KiB):
// the broker refuses it with MESSAGE_TOO_LARGE before any append.
//
// A bad client (badclient.go) sends, every --bad-client-every (2 s),
// what a broken or hostile client sends, cycling through: a Fetch v15 that
// claims a follower's replica id with a broker epoch that is not its own; a
// Fetch v12 with a follower's replica id (no broker epoch to check); a Fetch
// with the leader's epoch + 1; and batches with a valid CRC but a gzip flag
// over garbage, a record count of a million for two records, or the control
// flag. Each goes on a raw connection to the partition's leader, at exactly
// the version and fields forged. Its only allowed effect is a refused
// request: an answer without an error code is a bad-accepted violation, and
// the other invariants (no loss, no phantom, every partition writable
// after the last heal) must keep holding beside it.
//
// # Faults
//
// One at a time, on a schedule drawn from --seed (kind, partition, hold
// time, rest; the current metadata decides which node is "the leader of
// partition p"). The schedule starts with a quota per 10 minutes of run
// (21 leader kills, 6 controller kills, 3 pauses, 3 power losses, 3
// partitions, 3 coordinator kills, 3 transaction coordinator kills; at
// least one of each kind, and one of each before any
// second), then draws kinds by weight. Rests and holds are shortened (never
// below 0.5 s rest, 1 s or 5 s hold) only as far as the quota needs to fit
// before the last heal; the seed replays the same steps:
//
//	kill-leader      SIGKILL the leader of a partition, restart after 1–10 s
//	kill-controller  SIGKILL the active controller, restart after 1–10 s
//	pause            SIGSTOP the leader of a partition for 5–30 s, then SIGCONT
//	power-loss       SIGKILL every replica of a partition at once, cut each
//	                 one's files back to what it had fsynced (powerfs.Recover),
//	                 restart them; with page-cache durability, then elect
//	                 leaders uncleanly as an operator must (the restarted
//	                 replicas' ISR entries are stale, KIP-966)
//	net-partition    for 5–30 s, the leader cut off from its followers (Kafka
//	                 and gossip ports; the quorum stays up) or from the active
//	                 controller (controller and gossip ports); netfault.go
//	kill-coordinator SIGKILL the coordinator of a consumer group, restart
//	                 after 1–10 s (3 per 10 minutes; runs with groups only)
//	kill-txn-coordinator SIGKILL the transaction coordinator of a pipeline
//	                 member, restart after 1–10 s (3 per 10 minutes; runs
//	                 with the exactly-once pipeline only)
//
// With page-cache durability a kill is an unclean shutdown too: a
// partition whose last in-sync replica was killed keeps it as a stale ISR
// entry (KIP-966) and has no leader until an unclean election. So after a
// leader or controller kill, as after a power loss, the soak elects
// uncleanly where no leader can be elected cleanly, as an operator must;
// a loss that causes is no power loss's and shows as lost-unexplained.
//
// A fault is healed when the processes are running again (or the rules are
// gone); the recovery bound starts there.
//
// Every fault proves its effect in the report (Fault.Effect, printed on
// its line), or the run fails with a no-effect violation: a leader kill
// shows the partition's new leader (a later leader epoch) and how long
// after the kill it appeared, a controller kill the new active controller
// (DescribeQuorum: a later term) and the time; a pause how long the kernel
// showed the process stopped (/proc state T); a power loss the bytes and
// files powerfs.Recover dropped (nothing dropped, or no journal, is no
// effect); a network partition the packets its rules dropped (0 is no
// effect).
//
// # Negative controls
//
// --negative-control acks1 (acks=1, no idempotence), unclean
// (unclean.leader.election.enable=true, min.insync.replicas=1, replication
// factor capped so the followers are a minority of the nodes),
// page-cache (no fsync before ack) or compaction (the compacted topic's
// producers use acks=1 without idempotence) must make the checker report loss; the
// run exits 0 only if it does; groups (below) must make it report a
// broken group invariant (for page-cache, explained losses count:
// Counts.Lost is every lost acknowledged record). A control does not wait for the random
// schedule to stumble on its loss: it runs a scripted scenario, the
// shortest known path to it, on a partition the seed picks, and again
// while the run has room (scenario.go); the workload runs until the last
// scenario is over:
//
//	scenario-unclean     the Jepsen Kafka (2013) sequence: SIGSTOP the
//	                     followers until only the leader is in the ISR, let
//	                     it acknowledge alone, SIGKILL it, SIGCONT the stale
//	                     followers; one is elected uncleanly (by the
//	                     controller, or the operator's ElectLeaders type
//	                     unclean, whichever comes first)
//	scenario-acks1       SIGSTOP the followers, let the leader acknowledge
//	                     acks=1 records, SIGKILL it, SIGCONT them: a
//	                     follower still in the ISR is elected cleanly
//	                     without those records
//	scenario-page-cache  as soon as a partition acknowledged records, a
//	                     power loss of every replica, then the operator's
//	                     unclean election
//	scenario-compaction  scenario-acks1 on a partition of the compacted
//	                     topic: the latest values of the keys written in
//	                     its window are lost (compaction-lost-latest, and
//	                     compaction-offset-conflict where the new leader
//	                     refilled their offsets); the loss shows only on
//	                     keys not written again after it, so the control
//	                     uses at least 20,000 keys
//
// The groups control has no scenario and no faults: one member of the
// first group is wrong on purpose, committing 100 past what it polled
// every third commit and 200 behind it every third but one; the checker
// must report group-undelivered and group-offset-backwards.
//
// The txn control has neither: its pipeline members commit the produce
// transaction and then, separately, the input offsets (a plain
// OffsetCommit), and every third transaction leave between the two, as a
// crash would; the next owner of their partitions transforms the same
// input again, and the checker must report txn-duplicate.
//
// make test runs each control once (TestNegativeControls, 15–25 s each)
// and requires loss put down to its scenario; for compaction, reported by
// the compaction invariants with nothing lost on the soak topic; for
// groups, both group invariants, no record lost, no double owner. The txn
// control shares the groups control's run and cluster (Options.EOSControl
// beside the wrong group member): txn-duplicate must report its
// duplicates (where the nodes serve transactions).
//
// # Network partitions
//
// Every node process starts in its own cgroup v2 group
// (cluster.Node.Cgroup, CLONE_INTO_CGROUP: a socket keeps the group it was
// opened in, so moving a running process would not do), and iptables
// rules in a chain of the soak's own, jumped to from OUTPUT for lo
// (-m cgroup --path), drop what one node sends to the other side's ports.
// Needs root and iptables; skipped with a message otherwise. All nodes
// stay on 127.0.0.1; each heal reports the packets dropped.
//
// # Across hosts: the docker backend
//
// `sluice soak --docker` (make soak-docker, 10 minutes) runs the same
// workload and checker against the containers of a compose project
// (--compose-file, by default deploy/compose.yaml and
// deploy/compose.brokers.yaml: 3 combined nodes and 2 broker-only ones,
// --compose-project sluice-soak, --image sluice:dev of make image), each
// node its own host with its own address on a user-defined network. The
// clients reach the nodes through their EXTERNAL listeners published on
// 127.0.0.1; the soak removes the project (containers, network, volumes
// and what a host loss added) at the start and the end. The faults are
// those of real hosts (docker.go, dockerfaults.go; quota per 10 minutes
// in brackets):
//
//	kill-leader      docker kill (SIGKILL) of a partition's leader, docker
//	                 start after 1–10 s [10]; effect: a later leader epoch
//	kill-controller  docker kill of the active controller [3]; effect: a
//	                 later Raft term
//	stop-leader      docker stop (SIGTERM: the controlled shutdown) [3];
//	                 effect: a later leader epoch
//	pause            docker pause (the cgroup freezer) for 5–30 s [2];
//	                 effect: docker saw it paused, for how long
//	net-disconnect   the leader's container off the network (docker network
//	                 disconnect) for 12–30 s, then back at its address [10];
//	                 effect: its Kafka port answered the host before and not
//	                 during (and the new leader, when one came)
//	net-partition    iptables in the leader's network namespace (nsenter; the
//	                 image has no iptables) against its followers' addresses
//	                 for 5–30 s [4]: both ways, inbound only or outbound only
//	                 (asymmetric: it hears nothing from them, or reaches none
//	                 of them); effect: the packets its rules dropped
//	packet-loss      5% of the packets between the leader and its followers
//	                 dropped each way (iptables statistic) for 5–30 s [2];
//	                 effect: the packets dropped
//	host-loss        a host lost with its disk, its container and volume
//	                 removed [2]; they alternate, a controller first:
//	                 a controller (Raft voter) is removed from the quorum
//	                 (RemoveRaftVoter), after 1–10 s a new host takes its
//	                 address, hostname and id with an empty volume formatted
//	                 without initial controllers
//	                 (SLUICE_SLUICE_FORMAT_NO_INITIAL_CONTROLLERS), joins as
//	                 an observer and is added back (AddRaftVoter, once caught
//	                 up: quorum/voters.go); effect: a voter again and in the
//	                 ISR of every partition it holds. A broker-only host is
//	                 replaced after 1–10 s by a new host: a new broker
//	                 id (100, 101, ...), hostname sluice-<id>, address
//	                 .<id> on the network and an empty volume, the lost
//	                 one's host port; every partition with a replica on the lost
//	                 broker reassigned to the new one
//	                 (AlterPartitionReassignments, as `sluice topics reassign
//	                 --execute`); effect: the reassignment done and the
//	                 new broker in each moved partition's ISR
//
// Delay (tc netem) is not among them: the kernels this was built on have
// no sch_netem. Power loss is the process backend's only (powerfs sits
// under the node process's files); so are the coordinator kills and the
// negative controls (their scenarios signal processes). The lost broker's
// id stays registered, fenced, as a lost Kafka broker does until it is
// unregistered, and in the quorum's configuration as an observer at its
// address: so the replacement takes a new address (a new broker at the
// old one is refused: "found duplicate address in configuration").
//
// Clocks: the containers share the host's clock (one kernel), so no fault
// here skews a clock. The checker does not depend on the nodes' clocks
// agreeing anyway: it orders sends and acknowledgements by this process's
// clock alone, and reads from the nodes only offsets, high watermarks,
// leader epochs and Raft terms, never a node's time (the power-loss
// windows of the process backend use batches' CreateTime, which this
// process's producers set), so a skewed or stepped node clock could not
// change a verdict.
//
// A fault's start, for the time to writable after it, is when it took
// effect: docker kill returned, the container was seen paused or off the
// network, the rules were in place (a docker command takes up to a second
// on a loaded machine; writes acknowledged in between are no recovery).
//
// Measured (2-core VM, load average 20–25 from six other builds,
// December; `sluice soak --docker --duration 10m --seed 20261202`, every
// default: 5 containers, groups, pipeline, compacted topic): 33 faults,
// the quota of each kind met (10 kill-leader, 3 kill-controller, 3
// stop-leader, 2 pause, 10 net-disconnect, 4 net-partition, 2
// packet-loss, 1 host-loss: 69 partitions reassigned to the new broker,
// in sync 5.3 s after); 723,682 acknowledged, 0 lost, every invariant
// held. Whole topic writable again (every partition) after a docker kill
// of a leader p50 5.4 s, p99 7.5 s (N=10); after a disconnect of one p50
// 6.4 s, p99 8.7 s (N=10); after docker stop p50 0.23 s (controlled
// shutdown). A killed or disconnected node is not found by the probes
// (its address is gone with its container or network, so connects time
// out, which the probes take as no evidence: a lost host looks the
// same) but by gossip, within broker.session.timeout.ms (9 s).
//
// # Tests
//
// TestSoakDocker (make test-docker, not make test: SLUICE_DOCKER=1): 150 s
// against the 5 containers, every docker fault kind injected and showing
// its effect, nothing lost.
//
// TestSoakShort (make test): 75 s, a fixed seed, 3 nodes, a 3 s session
// timeout, two consumer groups of two members (a member leaves and one
// joins about every 10 s); every kind injected and showing its effect
// (partitions only where root, iptables and cgroup v2 allow, else logged;
// with CI set their absence fails), the live consumer read every
// partition, the groups consumed, committed, were read back and
// rebalanced, the report passed, the poison sends failed. The groups add
// no measurable time (93 s with them, 101 s without, one run each on the
// shared 2-core machine: the run's length is fixed).
// The exactly-once pipeline runs in it too (two members, one leaves and
// one joins about every 10 s, a kill-txn-coordinator fault) where the
// nodes serve transactions (Options.EOSIfServed: else it is left out with
// a log line, and with CI set that fails): its transactions must have
// committed and its output been read back.
//
// A SIGKILLed broker re-registers unclean and its ISR entry is stale
// (KIP-966): with replication factor 1 and page-cache durability its
// partitions stay leaderless unless unclean.leader.election.enable=true
// (--topic-config); the soak reports them as not-writable.
package soak
