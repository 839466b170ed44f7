// Package cleaner is a node's log cleaner pool (Kafka's LogCleaner and
// LogCleanerManager): log.cleaner.threads goroutines that compact the
// node's logs of compacted topics (cleanup.policy has compact) with
// segment.Log.Clean. It is a thin driver: what a Clean keeps, and its
// crash safety, are the segment package's.
//
// # Use
//
//	p := cleaner.New(cleaner.Config{Threads: 1, DedupeBufferBytes: 128 << 20, Backoff: 15 * time.Second})
//	h := p.Register(cleaner.Target{Topic: "t", Partition: 0, Log: log, UpTo: replica.HighWatermark})
//	h.SetPolicy(policy) // at registration and whenever the topic's configs change
//	h.Moved()           // whenever the high watermark moves (cheap; any goroutine)
//	h.Remove()          // before the log is closed or deleted: stops a Clean of it
//	p.Close()           // cancels running Cleans and waits for the threads
//
// # Behavior
//
//   - Each round a thread picks the dirtiest eligible log: one whose last
//     segment.CleanCandidate is Cleanable (dirty bytes, and a dirty ratio
//     at or above min.cleanable.dirty.ratio or a record past
//     max.compaction.lag.ms), not being cleaned by another thread and not
//     uncleanable, and cleans it up to its high watermark (Target.UpTo).
//   - Candidates are measured only for logs that may have changed: those
//     whose high watermark moved since they were last measured (Moved),
//     those just registered or given a new policy, and those whose policy
//     has a compaction lag while part of their committed log waits for it
//     (measured again every log.cleaner.backoff.ms). A quiet log costs
//     nothing: no round looks at it until its high watermark moves.
//   - With nothing to clean a thread waits log.cleaner.backoff.ms, or less
//     when a high watermark moves (at most every backoff/10, so a stream
//     of produces does not keep it measuring).
//   - After a Clean that moved the log's cleaner checkpoint the log is
//     measured again at once (another pass may be due); after one that
//     found nothing to do, only after log.cleaner.backoff.ms or a moved
//     high watermark, so that no log can keep a thread spinning.
//   - Reads and writes of all threads share one throttle,
//     log.cleaner.io.max.bytes.per.second (Config.IOBytesPerSecond).
//   - Each thread gets log.cleaner.dedupe.buffer.size / threads bytes of
//     offset map (segment.CleanOptions.OffsetMapBytes).
//   - A Clean that fails twice in a row marks its log uncleanable (logged
//     once at ERROR, counted in Stats.Uncleanable) until it is registered
//     again (a restart or a reopened replica); the node and the other logs
//     go on. One failure is retried after the backoff: a Clean can lose a
//     race with a truncation and change nothing. Config.OnError sees every
//     error (the node takes its log dir offline on a disk error).
//   - Remove and Close cancel a running Clean through its context; the
//     Clean then changes nothing (segment's contract).
//   - A Clean rewrites small neighbouring segments into one file (Kafka's
//     groupSegmentsBySize), so a compacted log's files follow its live
//     data, not the segments ever rolled; its swap takes the log's lock
//     only briefly, never across an fsync, so produces to the log go on
//     while it commits (segment/doc.go). BenchmarkCompactedProduce (node)
//     compares produce p99 with the cleaner on and off.
//
// # Goroutines and locks
//
// Threads goroutines. Each Clean is timed by the pool (Stats.MaxCleanTime).
// Pool.mu guards the registered handles and the
// statistics; it is a leaf except that a thread never holds it while it
// measures or cleans a log (segment.Log's locks are taken without it).
// Moved may be called under any lock: it takes Pool.mu only the first time
// after a measurement, briefly.
package cleaner
