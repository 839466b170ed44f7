// Package txn is the transaction coordinator's state machine (Kafka's
// TransactionCoordinator and TransactionStateManager): the transactional
// ids whose coordinator is one partition of the internal topic
// __transaction_state, and the records that persist them. It does no I/O
// and has no goroutines, sockets or clocks, like node/group: requests go
// in through Step, the clock through TickTo, decisions come out through
// Ready, and a driver (node/txncoord) appends the records, writes the
// markers, obtains producer ids and answers the clients.
//
// # The loop the driver runs
//
// One Shard per __transaction_state partition this node leads, under one
// lock:
//
//	s := txn.NewShard(partition, cfg)
//	for each record of the partition from its log start to its high watermark:
//		s.Replay(offset, key, value)          // loading: requests get COORDINATOR_LOAD_IN_PROGRESS
//	s.LoadDone(now)                           // prepared transactions: their Markers come out now
//	...
//	s.TickTo(now); s.Step(now, txn.Request{ID: id, Body: req})
//	rd := s.Ready()
//	// 1. rd.Appends: append each to the partition, acks=all, in order;
//	//    when committed (or failed) call s.Appended(now, a.ID, err)
//	// 2. rd.Markers: WriteTxnMarkers to each partition's leader (with the
//	//    state partition's leader epoch as coordinator epoch); then
//	//    s.MarkersWritten(now, m.ID, failedPartitions)
//	// 3. rd.NeedProducerIDs: get a block of producer ids (the
//	//    controller's AllocateProducerIds); s.ProducerIDs(now, first, n)
//	//    or s.ProducerIDsFailed(now, err)
//	// 4. rd.Responses: answer the waiting clients
//	// wake again at s.NextDue() (TickTo) or on the next request
//
// When this node stops leading the partition the driver drops the Shard,
// answers every request still waiting NOT_COORDINATOR and forgets its
// markers in flight: the next coordinator sends them again.
//
// # How it works
//
// A transactional id (state.go) moves Empty → Ongoing (the first
// AddPartitionsToTxn or AddOffsetsToTxn) → PrepareCommit | PrepareAbort
// (EndTxn, a timeout, or a new incarnation's InitProducerId) →
// CompleteCommit | CompleteAbort (every marker written) → Ongoing (the
// next transaction) or Empty (InitProducerId). Each transition is one
// record (records.go), written before it takes effect: while it is in
// flight, and while markers are, the id is busy and requests that would
// change it get CONCURRENT_TRANSACTIONS, except adds: those are held
// until the id is idle and then checked as a retry would be, the held
// ones folded into one record (written in the completion's Append when
// they wait for one), which saves the client its backoff and the
// coordinator a write. A failed write changes nothing
// and answers the client as Kafka maps the error (NOT_COORDINATOR,
// COORDINATOR_NOT_AVAILABLE, ...).
//
//   - init_producer_id.go: new ids, epoch bumps, fencing of an ongoing
//     transaction, KIP-360 recovery, epoch exhaustion (a new producer id),
//     transaction.timeout.ms bounds.
//   - add_partitions_to_txn.go: AddPartitionsToTxn (the client form v0-3
//     and the broker form v4+ of KIP-890 part 1, with VerifyOnly) and
//     AddOffsetsToTxn.
//   - end_txn.go: EndTxn (v5: the epoch bump of transaction.version 2),
//     and what Kafka answers to its retries.
//   - shard.go: writes, markers (failed partitions retried after
//     RetryBackoff; a failed completion record written again), loading.
//   - timers.go: timed-out transactions are aborted with the epoch bumped
//     at the first check (every AbortInterval from the load, as Kafka
//     schedules it) after start + timeout; ids idle for IDExpiration are
//     removed with a tombstone at the removal check (every
//     RemoveInterval); a failed abort or tombstone waits for the next
//     check. One heap entry per id at its due time, recomputed at the end
//     of each event for the ids it changed; NextDue is exact: a tick
//     before it changes nothing.
//   - admin.go: DescribeTransactions, ListTransactions, Stats.
//
// Transaction version: both. A client of transaction.version 1 adds its
// partitions with AddPartitionsToTxn v0-3 and ends with EndTxn v0-4 at an
// unchanged epoch (KIP-890 part 1: brokers verify with v4+ VerifyOnly). A
// client of transaction.version 2 (KIP-890 part 2) never sends
// AddPartitionsToTxn: the partition leader adds each partition on its
// first transactional produce (v5, broker form, not VerifyOnly), the
// group coordinator the offsets partition on TxnOffsetCommit v5; EndTxn
// v5 bumps the epoch in the Prepare record, the markers carry it, the
// answer gives it (a new producer id at epoch 0 when exhausted, written
// as NextProducerId), an abort without a transaction is allowed, and a
// retry of the previous epoch's EndTxn gets the current id and epoch
// (end_txn.go, testdata/tv2.txt). The version is the request's, per
// transaction, as in Kafka; the driver decides which one clients use by
// the transaction.version feature it finalizes in ApiVersions.
//
// # Where it differs from Kafka, on purpose
//
//   - PrepareEpochFence is never a state, not even in memory: fencing
//     goes from Ongoing straight to a PrepareAbort record with the bumped
//     epoch (what Kafka writes after its in-memory fence).
//   - A new id whose first record fails to be written is forgotten (Kafka
//     keeps it in memory at epoch -1 until it expires).
//   - A failed timeout abort or expiry is tried again at the next periodic
//     check after the failure, so NextDue never lies in the past.
//
// A write that timed out may still reach the log: like Kafka's
// coordinator, this one cannot know, and the next coordinator loads what
// the log holds.
//
// # Records
//
// Kafka's __transaction_state schemas (records.go draws them):
// TxnMetadataKey v0 and TxnMetadataValue v1 with previousProducerId (the
// producer id before a rotation); v0 values load too. A nil value is a
// tombstone. Replay rebuilds every id from its last record; records that
// break the state rules (an Ongoing or prepared transaction without
// partitions or start time, a completed one with partitions, the fencing
// epoch 32767 outside an abort) are ErrCorruptRecord and skipped. In
// memory only, as in Kafka: the epoch before the last bump (a lost
// InitProducerId answer is recoverable while the coordinator stays).
//
// # Tests
//
// testdata/*.txt are datadriven scripts (a harness with a clock, scripted
// producers and brokers, writes and markers acknowledged at once or one
// by one, regenerated with -rewrite); TestRandom drives shards with random
// producers, zombies, clocks, write and marker failures and failovers
// (every request answered exactly once, replay gives the live state
// back, every transaction ends once the timeouts pass); FuzzReplay feeds
// Replay any record (corpus in testdata/fuzz/FuzzReplay). With -tags
// invariants the shard checks itself after every event (invariants.go).
package txn
