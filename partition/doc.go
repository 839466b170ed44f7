// Package partition is one partition replica's replication state machine:
// role, leader epoch, log end offset (LEO), high watermark (HW), ISR, the
// produce requests waiting for acknowledgements, follower fetching and
// truncation. It does no I/O and has no goroutines, sockets or clocks, like
// etcd-io/raft's RawNode: events go in through Step and Tick, decisions come
// out through Ready, and the node (node/) does the I/O and calls Advance.
//
// # The loop the node runs
//
// One Replica per hosted partition, driven from one goroutine or under one
// lock:
//
//	r, _ := partition.New(cfg, log, partition.LogState{LEO: ..., HW: ..., Flushed: ...})
//	r.Step(partition.BecomeLeader{...})  // or BecomeFollower, from the metadata image
//	...
//	for r.HasReady() {
//		rd := r.Ready()
//		// 1. rd.Truncate: log.TruncateTo(rd.Truncate.Offset) (report BelowHW)
//		// 2. rd.Flush (sync mode): start log.WaitFlushed(rd.Flush), then Step(LocalFlush)
//		// 3. rd.Fetch: send a replica Fetch to rd.Fetch.Leader
//		// 4. rd.FetchAnswers: answer the follower fetches (read from ReadFrom)
//		// 5. rd.Completed: answer produce requests (Err nil = NONE)
//		// 6. rd.AlterPartition: propose it to the controller (quorum.AlterPartition)
//		// 7. rd.HW: publish to consumers and checkpoint
//		r.Advance(rd)
//	}
//
// Events (Step): BecomeLeader, BecomeFollower (metadata), LocalAppend (the
// node appended a produce request with segment.Log.Append at LeaderEpoch()
// after CheckProduce said yes), LocalFlush (segment.Log.FlushedOffset moved),
// FollowerFetch (a replica's Fetch reached this leader), FetchResponse (this
// follower's fetch came back; records, if any, already appended with
// AppendReplicated — only when ExpectsFetch(seq)), AlterPartitionResult (the
// controller's answer, naming its Proposal), BrokerEpochs (the eligible
// brokers and their epochs from the metadata). The clock is the driver's:
// Tick (one tick) or TickTo (jump to a tick) are the only time the replica
// knows; produce deadlines and replica.lag.time.max.ms are counted in
// ticks. NextDue says at which tick the clock alone would next change
// anything (a deadline, a lag, a retry), so a driver with many replicas
// wakes each only then, and brings its clock up to date with TickTo before
// stepping an event (testdata/due.txt; every script's ticks check that a
// tick before NextDue is a no-op). Step returns an error only for events
// it ignored (Err* values); Kafka error codes for clients are *kerr.Error
// values in Ready.
//
// Contract: Ready does not change the replica; Advance(rd) must follow each
// Ready before the next Step, Tick or Ready, after the node did everything
// in rd (a truncation must be applied to the log before Advance: the next
// fetch's lastFetchedEpoch is read from the truncated log). Queries
// (CheckProduce, CheckLeaderEpoch, EndOffsetForEpoch, ExpectsFetch, Fenced,
// HW, LeaderEpoch, NextDue, Now, Status) never change it. The Log interface (implemented
// by *segment.Log) is only read: its leader-epoch cache, and its log end
// after a truncation (segment cuts at a batch start, possibly below the
// offset asked for).
//
// # Leader
//
//   - HW: HighWatermark over the acknowledged offsets of the maximal ISR —
//     the committed ISR plus the ISR of the AlterPartition in flight
//     (KIP-497) — never backwards, and frozen while the committed ISR is
//     smaller than min.insync.replicas (KIP-966). A follower acknowledges with
//     its fetch offset; after a leader change nobody counts until it fetched
//     from the new leader.
//   - Produce: CheckProduce refuses with NOT_LEADER_OR_FOLLOWER (franz-go's
//     kerr.NotLeaderForPartition, code 6), or NOT_ENOUGH_REPLICAS for acks=all
//     when the ISR is below min.insync.replicas, before anything is appended.
//     acks=all completes when the HW passes its last offset; acks=1
//     at once (page-cache) or when the leader fsynced it (sync); acks=0 never
//     answers. Waiting acks=all requests get NOT_ENOUGH_REPLICAS_AFTER_APPEND
//     as soon as a committed ISR change leaves fewer than min.insync.replicas,
//     REQUEST_TIMED_OUT at their deadline tick, and NOT_LEADER_OR_FOLLOWER when
//     the replica is deposed (BecomeFollower) or fenced.
//   - Fetch answers, in order: a stale CurrentLeaderEpoch gets
//     FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH and nothing
//     else (as in Kafka, leadership changes only with the metadata: a fetch
//     is no proof that a newer epoch exists, anyone can send one); a
//     non-leader, a broker that is not an assigned replica, and — once
//     BrokerEpochs came — a fetch whose broker epoch is not the registered
//     epoch of an eligible broker (KIP-903: fenced, shutting down, an older
//     or newer incarnation, or no epoch at all) get NOT_LEADER_OR_FOLLOWER,
//     Kafka's answer to a stale broker epoch, and acknowledge nothing;
//     before the first BrokerEpochs only an epoch older than the one the
//     replica last fetched with is refused; then, if LastFetchedEpoch is
//     set, the leader answers OffsetForLeaderEpoch from its epoch cache and
//     returns a diverging epoch (no records) when the follower's epoch ends
//     earlier here or is unknown here (KIP-320/595); a fetch offset past the
//     log end gets OFFSET_OUT_OF_RANGE; otherwise records from the fetch
//     offset, which becomes the follower's acknowledged offset. The epoch
//     cache is read as if the current epoch began at the log end when this
//     replica became leader (Kafka assigns it then; segment on the first
//     append).
//   - ISR: an ISR follower that has not been caught up with the leader's log
//     end for more than Config.LagTicks ticks is proposed for removal (Tick);
//     a follower outside the ISR whose fetch offset reached the HW and the
//     start of this leader epoch is proposed for addition (so a restarted
//     broker that lost its unflushed tail rejoins only after catching up),
//     with the broker epoch it fetched with (KIP-903) — once BrokerEpochs
//     came, only if that broker is eligible at that epoch (KIP-841). One
//     AlterPartition in flight at most, carrying the leader and partition
//     epochs; the ISR changes only when AlterPartitionResult (or BecomeLeader
//     with the same leader epoch and a newer partition epoch) commits it.
//     Refused with FENCED_LEADER_EPOCH or NOT_LEADER_OR_FOLLOWER: the leader
//     fences itself; INVALID_UPDATE_VERSION: no proposal until new metadata;
//     any other error: decided again from the next tick.
//
// # Follower
//
// A follower fetches from its leader with its current leader epoch, its log
// end as fetch offset and its latest log epoch as lastFetchedEpoch, one fetch
// at a time. There is no separate OffsetsForLeaderEpoch round trip: on
// becoming follower the first fetch carries lastFetchedEpoch and the leader
// answers with a diverging epoch if the logs differ. On a diverging epoch
// {E, end} it truncates, as Kafka's fetcher does (KIP-279), to min(end, its
// own end offset for E, its LEO) when it knows E, to its own end of the
// largest epoch below E when it does not (and compares again on the next
// fetch), and never to its own HW (KIP-101). A truncation below the HW (an
// unclean election's loss) says so in Truncation.BelowHW. The follower's HW
// is min(leader HW, LEO), never backwards except by truncation. After
// FENCED_LEADER_EPOCH it waits for new metadata; after OFFSET_OUT_OF_RANGE
// with a leader log start past its log end (retention) it empties its log
// and starts there (Truncation.Fully); after other errors it fetches again
// after Config.FetchBackoffTicks (at least one tick).
//
// # Damage in the own log
//
// LogCorrupt (corrupt.go) says the node found a bad batch in the replica's
// own log. A follower truncates before it (BelowHW -1: the leader holds
// those records) and fetches again; a leader with another ISR member
// proposes the ISR without itself, which the controller answers by electing
// that member, and truncates once it follows; the only in-sync copy keeps
// leading and resigns when another member joins.
//
// # Durability modes
//
// The topic config sluice.durability (ConfigDurability) picks one:
//
//   - page-cache (default, Kafka's model): replicas count towards the HW with
//     what they appended; replication is the durability and flush.messages /
//     flush.ms apply as usual.
//   - sync (sync-before-ack): replicas count only with what they fsynced.
//     Ready.Flush asks the node to fsync (segment's group commit:
//     WaitFlushed, which may batch several asks) and step LocalFlush with
//     FlushedOffset; the leader counts with that. A follower sends its next
//     fetch only once everything it appended is fsynced, so its fetch offset
//     is its fsynced offset and the Fetch wire format needs no extra field.
//     acks=1 waits for the leader's fsync. A correlated power loss of every
//     replica then loses nothing acknowledged.
//
// # Invariants
//
// Built with -tags invariants (make test), the replica checks itself after
// every Step, Tick and Advance and panics with context: HW <= LEO, flushed <=
// LEO; a leader's HW never moves backwards and only advances with the
// committed ISR at min.insync.replicas and every maximal-ISR member at or
// past it; the leader is in its ISR and in any proposal; waiting requests are
// ordered and below the LEO.
//
// # Tests
//
// hw_test.go is the HW rule as a table. testdata/*.txt are datadriven scripts
// (regenerate with go test ./partition -run TestDataDriven -rewrite) over
// replicas with in-memory epoch logs, fetches delivered the way the node will.
// sim_test.go runs random failovers against a toy controller and checks that
// no acks=all record is lost by a clean election.
package partition
