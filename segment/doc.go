// Package segment is one partition replica's log on disk: Kafka RecordBatch
// v2 bytes in segment files, an offset index, a time index and a
// leader-epoch cache in Pebble, recovery after a crash, truncation,
// retention, compaction (the log cleaner), and the flush policy with
// group commit.
//
// # Files
//
// A log lives in its own directory, by convention <log.dir>/<topic>-<partition>:
//
//	00000000000000000000.log   batches with offsets [0, 1712)
//	00000000000000001712.log   batches from offset 1712 on (the active segment)
//	00000000000000000873.log.deleted   a removed segment some reader still holds
//	00000000000000001712.snapshot      producer state of the batches below 1712
//	00000000000000000000.log.cleaned   a segment the cleaner rewrote, before its swap
//
// A segment file is named by its base offset (20 digits) and holds whole
// RecordBatch v2 batches back to back, exactly as produced: the leader
// rewrites only baseOffset and partitionLeaderEpoch, which lie outside the
// CRC-32C. Nothing else is in the file: no header, no padding.
//
// # The index (one Pebble DB per node)
//
// Every log on a node shares one Pebble DB (Index). A log's keys start with
// "l" + <name> + 0x00, then a kind byte:
//
//	'm'                    checkpoint: log start offset, recovery point (offset,
//	                       segment, position, timestamps), clean-shutdown flag
//	'o' offset(8, BE)      offset index: batch base offset -> position (uvarint),
//	                       one entry per index.interval.bytes of a segment
//	't' timestamp(8, BE^)  time index: running max batch timestamp -> base offset
//	                       of the indexed batch where it was recorded (same
//	                       interval; nothing before that batch reaches it)
//	'e' epoch(4, BE^)      leader-epoch cache: epoch -> start offset
//	's' base(8, BE)        a closed segment: logical end, next offset, first and
//	                       max timestamps; version 2 adds when the cleaner
//	                       first rewrote it
//	'c'                    cleaner checkpoint: the first dirty offset
//	'w'                    a committed swap of cleaned segments: version 2,
//	                       then per group the base its .cleaned file replaces
//	                       (8, BE), how many other members (4, BE) and their
//	                       bases (8, BE each); removed once the files are
//	                       renamed and removed (version 1, bases alone, is
//	                       still read)
//	'a' offset(8, BE)      aborted-transaction index: the abort marker's
//	                       offset -> producer id (8), first offset (8), the
//	                       LSO after the abort (8); see Transactions
//
// Index entries past the recovery point are rebuilt by recovery, so they are
// written without an fsync. The checkpoint and the segment records that cut a
// log (truncation, recovery) are written with one.
//
// # Durability
//
// Three points, named separately (see DESIGN.md): Append returns once the
// bytes are in the page cache; FlushedOffset says what is fsynced;
// WaitFlushed waits for an offset to be fsynced, sharing one fsync among all
// concurrent waiters (group commit). Options.FlushMessages and FlushMs are
// Kafka's flush.messages and flush.ms; by default the OS writes back.
// Options.WritebackBytes (off by default) asks the kernel every so many
// appended bytes to start writing back what came before (sync_file_range,
// SYNC_FILE_RANGE_WRITE), outside the log's lock: a hint that keeps the
// page cache draining steadily, not a durability point (writeback.go).
// The append marks what came before as due (the active segment, the tails
// of segments rolled since) and hands the log to the node's one Writeback
// goroutine, which takes the ranges under Log.mu (references on the
// segments), releases it and makes the calls (Linux; a no-op elsewhere).
// It holds flushMu by TryLock: a running Flush covers it, and Close and
// truncation never close a file under it. The flushed offset does not
// move.
//
// Two windows measure what a power cut could take. Unflushed counts the
// bytes past the flushed position (not yet fsynced: nothing guarantees
// them). Unwritten asks the kernel how many of their page-cache pages are
// still dirty or under writeback (cachestat(2), Linux 6.5 or later): it
// takes the segments past the flushed position under Log.mu (references,
// as readers do; the newest 8, older unfsynced ones count whole so the
// bound only overstates), releases it, and makes one call per segment
// from the page of the flushed position on, each capped at that
// segment's bytes. A fully fsynced log answers 0 without a call; a kernel
// without cachestat (ENOSYS, or EPERM from seccomp; remembered
// process-wide), another OS or a file without a descriptor (in-memory
// vfs) answers ErrUnwrittenUnsupported. An estimate, not a bound:
// recovery cuts at the first missing byte (pages written back out of
// order save nothing after an older dirty one), and the file size is
// durable only at the journal commit (ext4: 5 s).
//
// An fsync error fails the log for good (ErrLogFailed): Linux may drop dirty
// pages after a failed writeback and report later fsyncs as successful, so
// only a reopen, which recovers from the last checkpoint, is honest. A failed
// write does the same, so that a half-written batch is never followed by
// another.
//
// # Recovery and the seal rule
//
// Close writes a checkpoint with the clean-shutdown flag; Open clears it.
// Checkpoint writes nothing when nothing was appended, truncated or
// retained since the last one and that one covered the whole log (its
// recovery point and snapshot at the log end): the record on disk already
// says it all, and an idle log costs no fsyncs.
// After an unclean shutdown Open scans from the recovery point (the flushed
// offset at the last checkpoint), validates each batch (framing, magic,
// CRC-32C, rising offsets (gaps are compaction's holes; no overlap),
// non-decreasing epochs) and cuts the log at the
// first bad byte. Pebble's vfs.File cannot truncate, and a crash image may
// hold CRC-valid batches past a torn one, so a cut never relies on the bytes
// after it: the segment is sealed at the cut position by a durable segment
// record ('s', end = position) and appends continue in a new segment. Reads
// and later scans never look past a seal. Truncation (TruncateTo, follower
// divergence) uses the same seal, written and fsynced before any file is
// removed or any new batch written, so that after any crash the old batches
// past a truncation point cannot come back.
//
// Segments before the scan start are trusted, not rescanned: one whose file
// is shorter than its seal (bytes lost after they were fsynced) is named in
// RecoveryReport.Damaged, not cut, so that the segments after it stay
// readable; a read in its missing bytes is ErrCorruptBatch.
//
// # Validation at the leader
//
// Append is the leader's append of a producer's batches, and checks them
// as Kafka's LogValidator does before writing anything (validate.go):
// besides framing, magic and CRC-32C, each batch's records are walked —
// decompressed as a stream when compressed, in place otherwise, without
// an allocation per record — and must match the header (count, offset
// deltas 0..n-1, varint framing, no trailing bytes), carry CreateTime
// timestamps within Options.TimestampBeforeMaxMs/AfterMaxMs of now
// (KIP-937); no control batch (AppendMarker writes those), and a
// transactional batch carries a producer id. The
// errors (ErrInvalidRecord, ErrInvalidTimestamp, ErrCorruptBatch,
// ErrUnsupportedCompression) name the Kafka code each maps to. Compressed batches go through pooled decoders: gzip, lz4,
// xerial snappy and zstd past 1 MiB are streamed, raw snappy blocks and
// smaller zstd bodies decoded whole; at most 256 MiB decompressed, snappy
// strict, zstd windows up to 128 MiB (as zstd-jni allows). Kafka 4's
// timestamp defaults: unbounded before, 1 h after. Kafka rewrites a
// compressed batch whose inner offsets are not 0..n-1; we store batches
// verbatim and refuse it. AppendReplicated
// trusts the leader and checks framing and CRC only. Both return the headers they parsed (AppendInfo.Headers);
// outside this package BatchIter is the one walker of batch headers.
// Append is Check (the checks, no lock, no log state) then AppendChecked
// (producer state, epoch, write): a caller that serialises appends under
// a lock of its own checks first, outside it, as the node's replica does.
//
// # Corruption: verified reads and scrubbing
//
// Bytes can rot after the log accepted them. Read and ReadSpan CRC-check
// the batches they return that were on disk, unchecked, when the log
// opened (bytes this process appended were validated by Append, so the
// steady state at the log end costs nothing; each segment remembers the
// latest range a read checked, so a sequential reader of old data checks
// each byte once). A read never hands out a bad batch: it returns the good
// batches before it, or a *CorruptionError (ErrCorruptBatch) when the bad
// one comes first. ScrubNext verifies one sealed segment whole (framing,
// magic, CRC-32C, offsets rising up to the seal: compaction leaves holes), through the vfs,
// without the log's lock, paced by the caller; it remembers the first bad
// batch (Corruption) until a truncation or retention removes it, and
// TruncateTo at or past it cuts at its recorded position with the usual
// durable seal (TruncateBeforeCorruption), never trusting the damaged
// header. Damage made while the log is open is found by the scrub only.
//
// # Lookups by time and by header
//
// OffsetForTimestamp (ListOffsets by timestamp) starts at the time index's
// last entry below the target, walks batch headers to the first batch whose
// maxTimestamp reaches it, and decodes that batch's records only (length,
// attributes, timestamp and offset deltas; keys and values are skipped) to
// answer the first record at or after the target, as Kafka does.
// MaxTimestamp (ListOffsets -3, KIP-734) answers the record with the
// largest timestamp in the batches wholly in [log start, upTo), upTo being
// the high watermark: the log keeps in memory the latest 64 batches where
// its running maximum timestamp rose, which answers at once while the high
// watermark is near the log end; otherwise each segment's largest
// timestamp (in its seal) picks the segment and that segment's batch is
// found by a header scan, once per segment and process. The one batch
// found is decompressed when compressed (gzip, snappy raw or xerial, lz4,
// zstd; at most 256 MiB); a batch whose records do not decode answers with
// its base offset and maxTimestamp.
//
// ReadSpan answers a fetch without copying: it reads only batch headers
// and returns the file range with a reference on its segment, which stays
// open until the last release, even after Log.Close, so its descriptor is
// never reused under a send (node/kafka sends the range with sendfile(2)).
//
// ScanBatches hands out the headers of the batches in an offset range
// (producer id, epoch, sequences, attributes) without reading record
// bodies.
//
// # Compaction (the log cleaner)
//
// Clean is Kafka's LogCleaner for one log (cleanup.policy=compact); the
// node picks the log (CleanCandidate) and paces it. It maps every key of
// the dirty section, from the cleaner checkpoint to the cleanable end, to
// its latest offset, then rewrites the segments below the end of what the
// map covers, oldest first, into <base>.log.cleaned files, a group of
// small neighbours into one (Kafka's groupSegmentsBySize): a segment joins
// the group before it while the group's bytes, counted before cleaning,
// stay within segment.bytes and its offsets within 2^31-1 of its base.
// So a compacted log with small segments (__consumer_offsets) holds about
// as many files as its live data fills, not one per segment ever rolled.
// The group's file takes its first member's name; Kafka's bound on index
// file size has no counterpart (the indexes are Pebble keys).
//
// The map is an open-addressing table of 128-bit key hashes and offsets
// (offsetmap.go). Its slots are where a Clean waits: every record of a
// batch is decoded and hashed first, then the slots of the whole batch
// are touched in one loop with no dependency between its loads, so that
// their cache misses overlap, and only then looked up (or set). That made
// a Clean's CPU per byte about twice lower (BenchmarkClean's cpu-MB/s).
// The hashes, offsets and null flags of the batches the map was built
// from are kept (up to the map's memory again, 32 bytes a record),
// so that the rewrite decides a batch without decompressing and parsing
// it a second time: one whose records all stay or all go is copied or
// dropped from its header; only one rebuilt is decoded again.
//
//   - a record goes when the map holds a later offset for its key, when
//     its key is null, or when it is a tombstone (null value) and its
//     batch's delete horizon has passed (KIP-534): the first Clean that
//     keeps a tombstone rebuilds its batch with attribute bit 6 set and
//     the horizon, now + delete.retention.ms, as its base timestamp, each
//     record's timestamp delta re-encoded against it so that every record
//     keeps its timestamp (as Kafka's MemoryRecordsBuilder; clients add
//     base and delta and need not know the bit). The horizon travels with
//     the batch: grouping segments or cleaning again never moves it, so a
//     tombstone is readable for delete.retention.ms after its first clean,
//     no less and, once a Clean runs at its horizon, no more (Kafka
//     before KIP-534 counted from the segment's time: KAFKA-8522).
//     Batches cleaned before horizons existed get one at their next clean;
//   - a log whose earliest horizon (CleanCandidate.DeleteHorizon, kept in
//     memory from the last Clean, as Kafka's latestDeleteHorizon) has
//     passed is cleanable with nothing dirty: a pass over the clean
//     section with an empty map removes what the horizons allow;
//   - a batch keeps its base offset, lastOffsetDelta and producer fields,
//     and its base timestamp unless stamped (records keep their deltas:
//     offsets leave holes); a rebuilt one gets a new record count,
//     maxTimestamp (CreateTime: its records' largest), length and CRC,
//     re-compressed with its codec;
//   - a batch left with no record goes, unless it is its producer's last:
//     that one stays, empty and uncompressed, for idempotence (Kafka); so
//     does the log's last batch when the active segment is empty, so that
//     the log end stays a batch's end (a follower below it finds one);
//   - batches whose records do not decode stay whole;
//   - transactions (txnclean.go): the cleanable end is clamped to the
//     first unstable offset; an aborted transaction's batches lose every
//     record (and count for nothing in the map); a marker goes once its
//     delete horizon has passed, stamped as a tombstone's by the first
//     pass that read no data batch of its transaction; else it stays.
//     Before a pass that removes markers swaps, the snapshots at or below
//     the last one it removes are deleted, durably, so that no rebuild
//     loads a state with a transaction open that nothing left ends.
//
// The swap: the .cleaned files are fsynced and the directory too; one
// synced Pebble batch writes the new seals ('s', marked cleaned; a
// group's other members' seals go), the new offset index entries, the
// cleaner checkpoint, a recovery point past the rewritten segments (they
// are fsynced whole) and the swap record ('w'); then each .cleaned file is
// renamed over its group's first .log file, the other members' files are
// renamed to .deleted (removed once no reader holds them), the directory
// fsynced, and the swap record removed (synced). Open finishes a swap
// whose record it finds (renames the .cleaned files still there, removes
// the members' files still there) before it lists the segments, and
// removes other .cleaned files (a Clean that never committed). So after a
// crash the log is either wholly the old segments or wholly the new ones:
// TestCrashPointsClean cuts power before every file operation of Cleans
// that group (make crash: about 1,100 points, most in grouped swaps).
//
// A log with holes: Read in a hole returns the batches after it (from the
// next segment when the hole ends its own); recovery and the scrub take
// offsets that rise with gaps; AppendReplicated takes a gap (a follower
// copies its leader's holes); TruncateTo in a hole ends the log at the
// offset asked for.
//
// # Idempotent producers
//
// The log keeps, per producer id, its epoch, the timestamp of its latest
// batch and the sequence ranges and offsets of its last five batches
// (producers.go; Kafka's ProducerStateManager, Redpanda's rm_stm). Append
// decides a leader's idempotent batch against it, under the append lock:
//
//   - a retry of one of the last five batches writes nothing and answers
//     the original's offsets (AppendInfo.Duplicate);
//   - an epoch older than the producer's is ErrInvalidProducerEpoch;
//   - a newer epoch must start at sequence 0, a known epoch must go on at
//     the sequence after its last batch: else ErrOutOfOrderSequence;
//   - a producer id the state does not know must start at sequence 0
//     (else ErrOutOfOrderSequence), unless the state may have forgotten
//     it (a producer expired, or the state was rebuilt without the
//     batches below the log start): then any sequence is taken. Kafka
//     2.5+ (KIP-360) takes any sequence from an unknown producer and no
//     longer answers UNKNOWN_PRODUCER_ID; we are stricter only where
//     the state is known to be complete, so that a batch that overtook
//     its producer's first one is refused rather than written out of
//     order, and a producer we forgot is never refused for good.
//
// AppendReplicated and recovery update the state from every batch written,
// without checks, so a follower that becomes leader recognises retries.
// A producer whose latest batch was written longer than
// Options.ProducerIDExpiration (producer.id.expiration.ms, one day) ago is
// forgotten: when a snapshot is written, at open, and when it appends
// again. Unlike Kafka, which counts from the batch's maxTimestamp (the
// client's clock when CreateTime), the log counts from its own clock when
// it wrote the batch, so that a skewed producer clock cannot expire a live
// producer; a batch found by a recovery scan counts as written then.
//
// Snapshots. At every segment roll and every Checkpoint (so at Close) the
// state is written to <offset>.snapshot, offset being the log end: the
// state of the batches below it. The file goes through the vfs, written to
// <name>.tmp, fsynced, renamed, and the directory fsynced. Format, all
// big-endian:
//
//	magic "SLPS" (4) | version 3 (1) | crc (4) CRC-32C of every byte after it
//	offset (8) | flags (1) bit 0: may miss producers | count (4)
//	count × { producer id (8) | epoch (2) | latest write, ms (8)
//	          open transaction's first offset, -1 none (8)   version 2+
//	          coordinator epoch of the last marker, -1 none (4)   version 2+
//	          n (1, at most 5) | n × { first seq (4) | last seq (4)
//	                                   first offset (8) | last offset (8) } }
//	version 3: ended (4) | ended × { first offset (8) | marker offset (8) }
//	          the transactions ended by a marker that a high watermark
//	          had not passed when last asked, markers rising
//
// Version 1 (no transaction fields) and 2 (no ended transactions)
// snapshots still load; a binary that knows only version 2 skips a
// version 3 snapshot as corrupt and rebuilds from an older one or a scan.
// Open loads the newest snapshot at or below the recovered log end (after
// an unclean shutdown: at or below the recovery point, see Transactions)
// that decodes (a corrupt one is removed and the one before tried) and scans
// batch headers from its offset to the log end; with none it scans from
// the log start. Snapshots past the log end (a lost tail) are removed
// first, durably. A truncation removes, durably, the snapshots past the
// cut and rebuilds the state the same way: the newest snapshot at or
// below the cut, then the batches after it. A full truncation removes them
// all before recording its new log start. Kept: the two newest snapshots
// and those at the base of a segment still in the log; retention deletes
// the others with the segments they describe.
//
// # Transactions
//
// Kafka's exactly-once log side (ProducerStateManager, TransactionIndex;
// txn.go). A transactional producer's batch opens its transaction on the
// partition (the producer's entry records its first offset, Kafka's
// currentTxnFirstOffset); the marker the transaction coordinator has the
// leader write (AppendMarker: one control batch, Kafka's
// EndTransactionMarker record: key version 0 + type 0 abort / 1 commit,
// value version 0 + coordinator epoch, encoded with kmsg) ends it and
// records the coordinator epoch. AppendReplicated and every rebuild apply
// the same from the leader's batches, reading the one record of each
// control batch; a control batch that is not a marker ends nothing.
//
//   - Append refuses a producer's non-transactional batch while its
//     transaction is open (ErrInvalidTxnState, after the duplicate,
//     epoch and sequence checks); AppendMarker refuses an epoch older
//     than the producer's (ErrInvalidProducerEpoch) and a coordinator
//     epoch older than its last marker's (ErrTransactionCoordinatorFenced).
//     A marker for a producer with nothing open is written and ends
//     nothing (coordinators retry markers).
//   - FirstUnstableOffset is the oldest open transaction's first offset,
//     at least the log start: the root of a min-heap of the open
//     transactions (O(1) to read, O(log n) to open or end one).
//     LastStableOffset(hw) is the LSO: the smallest of hw, it, and the
//     first offset of each transaction whose marker is at or above hw (a
//     marker above the high watermark may yet be truncated away, so its
//     transaction stays unstable until the high watermark passes it, as
//     Kafka's unreplicatedTxns). Snapshots keep them (version 3) and
//     rebuilds add those of the markers they scan, so a restart with the
//     high watermark below such a marker keeps its transaction unstable.
//   - Producers with an open transaction never expire.
//   - An abort writes an 'a' entry with the marker, in the append's index
//     batch (no fsync, as the offset index). AbortedTxns(from, upTo)
//     scans the entries from from and stops after the first whose LSO
//     reaches upTo: every transaction aborted later began at or after
//     that LSO. Truncation deletes the entries past the cut in its synced
//     batch; retention those below the new log start; Delete all of them.
//   - Rebuilds (Open, truncation) rewrite the entries from their snapshot
//     on, in one Pebble batch with a range deletion of what was there.
//     After an unclean shutdown Open takes a snapshot at or below the
//     recovery point, so every entry it cannot trust is rewritten from the
//     markers scanned (the walk is headers only, plus the ~80 bytes of each
//     control batch).
//   - What a log start passed cannot be rebuilt: a transaction that began
//     below it is known, after a rebuild from the log start or from a
//     snapshot below it, from its first batch at or after it (as Kafka).
//
// # Open files
//
// A segment's file is opened when the log first appends to it or reads
// it (Open stats the files and opens only those a recovery scan reads),
// and Options.Files, the node's budget (sluice.log.max.open.files),
// closes idle ones past it: a CLOCK sweep over the open files, whose
// hits cost a flag under Log.mu; a segment with references (a read, a
// flush, a Span on its way to a socket) is never closed, so the budget
// is soft while files are in use. A closed segment reopens by its name,
// read-write when it is the active one; a removed or replaced one never
// does (its name may hold other bytes): every reference is taken with
// the file open, so those are still open while referenced. Closing
// writes nothing back and loses nothing: the next Flush reopens and
// fsyncs the file (fsync is per inode). Unwritten counts a closed
// segment's unfsynced bytes whole rather than reopen it, and batched
// writeback skips closed files (a hint). See files.go.
//
// # The filesystem contract
//
// All I/O goes through pebble's vfs.FS (tests use vfs.NewCrashableMem and
// CrashClone to cut power, and vfs/errorfs to inject errors). Beyond vfs's own
// contract, a segment file must allow Sync concurrently with WriteAt and
// ReadAt (true of OS files and of vfs.MemFS): fsyncs run outside the append
// lock.
//
// # Tests
//
// TestCrashPoints (half of its runs under a budget of one to three open
// files, so that files close and reopen between most operations) cuts
// power at 1,000 or more points per run on
// vfs.NewCrashableMem and checks each image for a valid prefix, fsynced
// durability, batch validity, and its open transactions, first unstable
// offset and aborted transactions against a replay of its batches; TestCrashPointsAfterRecovery cuts a
// recovered log again (330 points in `make test`, 1,100 under `make
// crash`). Datadriven scripts are in testdata/scripts/, the fuzz corpus in
// testdata/fuzz/ (with the poison batches of FuzzValidateRecords); errorfs
// injects faults. node's TestProducePoisonBatches sends each poison batch
// through the Kafka protocol.
//
// # Concurrency
//
// A Log is safe for concurrent use. Lock order: Log.cleanMu (one Clean at a
// time) before Log.flushMu (flushes,
// checkpoints, truncation, retention, close, a Clean's swap) before Log.mu (segments, offsets,
// index buffers, producer state and snapshot files) before Log.syncMu (the
// group-commit rendezvous). Reads hold Log.mu only to pick a segment and
// take a reference on it, and to record the range they verified; a scrub
// the same, to pick and to record; a Clean the same, and reads and writes
// files without a lock until its swap. The swap holds flushMu throughout
// and Log.mu twice, briefly (to check that nothing raced it and to
// install the new segments), not across its fsyncs: appends go on during
// the synced index commit (TestSwapFsyncHoldsNoLogLock). A reader of a
// segment a Clean swapped out keeps reading its file; one whose index
// lookup may have seen the new file's positions waits until the swap has
// installed them (Log.swapWait) and starts again.
package segment
