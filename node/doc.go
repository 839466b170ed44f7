// Package node is the Sluice process: it wires the metadata quorum, the
// partition logs and the Kafka protocol server together.
//
// # Start and stop
//
// Open checks the data directory (meta.properties, written by sluice init),
// binds the Kafka (PLAINTEXT) and controller (CONTROLLER) listeners, opens
// the node's one segment Index (Pebble, <log.dirs>/index), starts the quorum
// Controller (<log.dirs>/quorum; a voter bootstrapping with
// controller.quorum.voters, or the initial controllers of meta.properties,
// when the node is one of them), registers the broker (saying whether the
// previous run shut down cleanly: the .clean_shutdown marker), unfences it,
// and serves the Kafka protocol. Close stops the Kafka server (answering what
// was read), closes every log (checkpoint and per-log clean marker), closes
// the Index, writes the node's clean-shutdown marker, and stops the quorum.
//
// # Partitions
//
// Every applied metadata change (quorum OnApply) wakes the reconciler, which
// compares the image with the logs open and opens, re-epochs or deletes
// logs: a partition this node leads gets a replica (replica.go) that owns
// its *segment.Log and answers produce, fetch and offset requests. The
// replica is the seam where the replication state machine (partition/,
// issue 5) slots in: today it only leads, and its high watermark is its log
// end offset, which is right for replication factor 1 (the ISR is the leader
// alone). acks=all still checks min.insync.replicas against the ISR of the
// metadata (NOT_ENOUGH_REPLICAS).
//
// Idempotent producers: a replica keeps, per producer id, its epoch and the
// sequence ranges and offsets of its last five batches (producer.go): a
// duplicate answers the original offsets without writing, a gap answers
// OUT_OF_ORDER_SEQUENCE_NUMBER. This state lives in memory only and is not
// rebuilt from the log after a restart (a restarted producer starts a new
// sequence anyway; a retry across a broker restart may be written twice).
//
// # Goroutines and locks
//
// Besides the quorum's and the Kafka server's: the reconciler (one), the
// maintenance ticker (flush.ms, retention) and the Serve loop. Lock order:
// Node.reconcileMu → Node.mu → replica.mu. Node.sigMu is a leaf.
package node
