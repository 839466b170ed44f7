// Package bench is `sluice bench` (and `make bench-cluster`): throughput and
// latency of a real cluster over the matrix that tells the durability story,
// next to a peer system measured in the same run.
//
// A cell is one topic and one producer setting: acks (0, 1, all) ×
// durability (page-cache: flush never; sync: sluice.durability=sync, fsync
// before ack with group commit; flush1: flush.messages=1, an fsync per
// append) × record size × replication factor × partitions × batching (kgo's
// defaults, or a set linger). Each cell creates a fresh topic, produces with
// franz-go (idempotent for acks=all, kgo's default) for a bounded time —
// unpaced, or paced at an offered MB/s for the fixed-load cells — while a
// consumer reads the same topic, then deletes the topic. A cell the cluster
// refuses (an unknown topic config, NOT_ENOUGH_REPLICAS, too few brokers),
// or that fails to create its topic, probe (one record, three retries),
// produce or flush, is reported with the error (Result.Err) and the run
// goes on.
//
// Latencies: produce latency runs from the Produce call to the ack (as in
// kafka-producer-perf-test, so it includes time queued in the client);
// end-to-end latency from the Produce call to the consumer receiving the
// record, read from the send time the first 8 bytes of every value carry.
// Both go into a lock-free log-linear histogram (Histogram: exact below
// 64 µs, ~3% relative error above). Values come from a free list and go back
// after the ack: the load loop allocates only kgo's Record.
//
// The peer (--peer nats) is a 3-node NATS JetStream cluster of nats-server
// processes on 127.0.0.1 with file storage. nats-server is found on PATH or
// next to bin/sluice, else installed there with `go install` at a pinned
// version; it is a separate program, not a dependency of this module (only
// the client, nats.go, is; the install runs with GOTOOLCHAIN=local). JetStream's
// fsync setting is server-wide, so the peer cluster is restarted between
// its page-cache-like and sync-like cells. Each acks=all Sluice cell maps to one peer cell
// (PeerCell): RF replicas per stream, one stream per partition, async
// publish with kgo's window of 50,000 unacknowledged records and an ack
// per message, the same
// record sizes, duration and offered load. What is not equivalent:
//   - fsync: JetStream's sync_interval is server-wide and defaults to 2
//     minutes, so its default is closest to page-cache; sync and
//     flush.messages=1 both map to sync_interval=always, which fsyncs after
//     every write (per message, unlike sync's group commit);
//   - a JetStream ack means the stream's Raft quorum (2 of 3) stored the
//     message; Sluice's acks=all waits for every ISR member;
//   - batching: kgo batches records per partition into one request; the
//     NATS client sends each message on its own (pipelined), so the
//     batching axis has no peer counterpart;
//   - acks=0 and acks=1 have no peer cell.
//
// The failover bench (`sluice bench --failover N`, RunFailover, `make
// bench-failover`) measures something else: how long the partitions of a
// leader are unwritable when it is SIGKILLed or SIGTERMed. Per mode (today's
// settings; the baseline with sluice.broker.probe.interval.ms=0 and
// controlled.shutdown.enable=false) it starts a fresh 3-node cluster, an
// RF=3 topic of 3 partitions (min.insync.replicas=2) and a paced acks=all
// load (idempotent franz-go, metadata refreshed at most every 100 ms,
// delivery timeout 30 s), then N times each fault kind signals the leader
// of one partition (in turn), waits until each partition it led took a
// write sent after it exited, restarts it and waits until it is back in
// every ISR. A fault's time to writable is the longest an acks=all write to
// one of its partitions waited: from the fault (or the write's send, if
// later) to its ack. Faults of the active controller, which add a Raft
// election, are reported on lines of their own ("SIGKILL(ctrl)"). Failed
// sends are those kgo gave up on.
package bench
