// Package txncoord is the transaction coordinator's driver: it runs one
// node/txn Shard for each partition of __transaction_state this node
// leads, and does the I/O the pure state machine asks for. It is
// node/coord's driver with node/txn's machine in it, plus what only
// transactions need: markers, producer ids and KIP-890 verification.
//
// # A shard's life
//
//	reconciler → Coordinator.Sync(led state partitions → leader epochs)
//	node/coord: per (partition, epoch) a shard whose machine is a txn.Shard
//	    (machine.go adapts it): load once the high watermark reached the
//	    leader's start, Replay, LoadDone; requests meanwhile
//	    COORDINATOR_LOAD_IN_PROGRESS; each Append written in order with
//	    acks=all (bounded by WriteTimeout, request.timeout.ms); one timer
//	    at NextDue (none while idle); dropped on leadership loss (waiting
//	    requests NOT_COORDINATOR)
//	Ready's Markers      → markers.go: split by partition leader, one queue
//	                       and sender per destination broker, one
//	                       WriteTxnMarkers (v1) per round with every queued
//	                       marker (one per producer id), coordinator epoch
//	                       = the state partition's leader epoch
//	                       → when every destination answered:
//	                       coord.Coordinator.Run → MarkersWritten(failed)
//	Ready's NeedProducerIDs → Host.AllocateProducerIDs (the controller's
//	                       AllocateProducerIds) → Run → ProducerIDs
//
// Failed markers (NOT_LEADER_OR_FOLLOWER, a leader unknown, a lost
// connection) come back to the shard as failed partitions; it sends them
// again after its backoff, split by the leaders of the metadata then, so
// a moved leader is found. A partition of a deleted topic counts as
// written, as in Kafka; INVALID_PRODUCER_EPOCH too (the partition saw a
// newer epoch of the producer: the transaction is over there). Outcomes
// for a shard that was dropped meanwhile are discarded (Run finds no
// shard at that epoch): the next coordinator loads the prepared
// transactions and sends their markers again.
//
// Verify (verify.go) is KIP-890 part 1's check for the produce path:
// AddPartitionsToTxn v4 with VerifyOnly, answered by the local shard or
// sent to the coordinator's node on a pooled connection.
//
// Lock order: node/coord's (Coordinator.mu → shard.mu → the Host's);
// the marker queues' and the verifier's locks are leaves, and outcomes
// go back to the shards with none of them held.
//
// # Tests
//
// txncoord_test.go runs the driver over a fake Host (real node/txn
// shards, a real in-memory log per state partition, a fake
// WriteTxnMarkers server on TCP speaking kmsg): the real node cannot
// inject a marker failure or count one destination's requests. node/'s
// txns_test.go runs it on three real nodes with franz-go clients.
package txncoord
