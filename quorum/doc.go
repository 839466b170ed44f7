// Package quorum is Sluice's metadata controller: a Raft-replicated state
// machine (hashicorp/raft, raft-boltdb/v2) holding the cluster's metadata
// image, in the style of Kafka's KRaft controller.
//
// # Image, commands and records
//
// The Image holds the cluster id, the brokers (id, endpoints, rack, broker
// epoch, fenced, shutting down), the topics (name, topic id, config
// overrides) with their partitions (replicas, ISR, leader, leader epoch,
// partition epoch, unclean elections), and the next producer id.
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
// A log entry is JSON: {"v":1,"records":[{"type":"partition_change","data":{...}}]}.
// "v" is EntryVersion; a decoder refuses newer versions. Record type names
// (RecordType constants) are part of the on-disk format. A snapshot is the
// JSON of the whole Image with its own version field.
//
// Record types: cluster_id, register_broker, fence_broker, unfence_broker,
// broker_shutdown, create_topic, remove_topic, topic_config,
// partition_change (complete new leader/ISR/epochs, and the lost ISR of an
// unclean election), producer_ids.
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
// KIP-903).
//
// # Goroutines and locks
//
// Plan, Replay, PartitionChange and Image are plain data and functions with
// no locks or goroutines; an Image is not safe for concurrent use.
//
// The FSM owns one Image behind a sync.RWMutex (FSM.mu). Raft's FSM goroutine
// is the only writer (Apply, Restore); readers take the read lock (View,
// Image). The OnApply callback runs on raft's FSM goroutine after the lock is
// released, in log order; it must not block for long and must not call
// Controller.Propose (which waits for that same goroutine).
//
// The Controller serialises proposals with Controller.proposeMu so that each
// command is planned against an image that already contains every earlier
// command: proposeMu is taken before FSM.mu (read), never the other way round.
// Lock order: Controller.proposeMu → FSM.mu. The forwarding server runs one
// goroutine per connection and calls Propose like any local caller.
package quorum
