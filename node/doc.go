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
// when the node is one of them; any other node, a broker-only one
// included, joins the running quorum as a Raft non-voter through
// quorum.Join: join.go), starts liveness gossip when a GOSSIP
// listener is configured, registers the broker (saying whether the previous
// run shut down cleanly: the .clean_shutdown marker; retried while the
// outcome is unknown), gets it unfenced (by the active controller's gossip
// liveness once it advertises its new epoch, or, without gossip, by
// proposing UnfenceBroker itself), serves the Kafka protocol and, with an
// HTTP listener, /health. Close stops the Kafka server (answering what was
// read), stops /health, leaves gossip, closes every log (checkpoint and
// per-log clean marker), closes the Index, stops the quorum and writes the
// node's clean-shutdown marker.
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
// metadata (NOT_ENOUGH_REPLICAS), and is refused the same way while the ISR
// names followers, which would otherwise be claimed to hold copies they do
// not have.
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
// Besides the quorum's, gossip's and the Kafka server's: the reconciler
// (one), the maintenance ticker (flush.ms, retention), the Serve loop and
// the HTTP server. Lock order:
// Node.reconcileMu → Node.mu → replica.mu. Node.sigMu is a leaf.
package node
