// Package segment is one partition replica's log on disk: Kafka RecordBatch
// v2 bytes in segment files, an offset index, a time index and a
// leader-epoch cache in Pebble, recovery after a crash, truncation,
// retention, and the flush policy with group commit.
//
// # Files
//
// A log lives in its own directory, by convention <log.dir>/<topic>-<partition>:
//
//	00000000000000000000.log   batches with offsets [0, 1712)
//	00000000000000001712.log   batches from offset 1712 on (the active segment)
//	00000000000000000873.log.deleted   a removed segment some reader still holds
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
//	                       max timestamps
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
// After an unclean shutdown Open scans from the recovery point (the flushed
// offset at the last checkpoint), validates each batch (framing, magic,
// CRC-32C, contiguous offsets, non-decreasing epochs) and cuts the log at the
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
// (KIP-937), and be neither control nor transactional batches. The
// errors (ErrInvalidRecord, ErrInvalidTimestamp, ErrCorruptBatch,
// ErrUnsupportedCompression, ErrTransactionalBatch) name the Kafka code
// each maps to. AppendReplicated trusts the leader and checks framing
// and CRC only. Both return the headers they parsed (AppendInfo.Headers);
// outside this package BatchIter is the one walker of batch headers.
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
// ScanBatches hands out the headers of the batches in an offset range
// (producer id, epoch, sequences, attributes) without reading record
// bodies: a new leader rebuilds its idempotent-producer state from them.
//
// # The filesystem contract
//
// All I/O goes through pebble's vfs.FS (tests use vfs.NewCrashableMem and
// CrashClone to cut power, and vfs/errorfs to inject errors). Beyond vfs's own
// contract, a segment file must allow Sync concurrently with WriteAt and
// ReadAt (true of OS files and of vfs.MemFS): fsyncs run outside the append
// lock.
//
// # Concurrency
//
// A Log is safe for concurrent use. Lock order: Log.flushMu (flushes,
// checkpoints, truncation, retention, close) before Log.mu (segments, offsets,
// index buffers) before Log.syncMu (the group-commit rendezvous). Reads hold
// Log.mu only to pick a segment and take a reference on it.
package segment
