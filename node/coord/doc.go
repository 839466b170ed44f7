// Package coord is the group coordinator's driver: it runs one node/group
// Shard for each partition of __consumer_offsets this node leads, and does
// the I/O the pure state machine asks for, the way node/replica drives
// partition/. It sees the node through a small Host: appends through the
// path clients' Produce takes, reads of the local replica, its offsets.
//
// # A shard's life
//
//	reconciler: replicas become leaders → Coordinator.Sync(led partitions → epochs)
//	new (partition, epoch): shard{Machine: group.NewShard} ─ load goroutine:
//	    wait until HW ≥ the log end this leader started with (what the old
//	    leader committed is committed here too), read log start → there
//	    (Host.Read; batches decoded here, records.go), Replay each record,
//	    LoadDone ─ requests meanwhile: COORDINATOR_LOAD_IN_PROGRESS
//	request (node/kafka handler → Groups.Coordinate → Do):
//	    shard.mu: TickTo, Step, then Ready: each Append written at once, in
//	    order, as one uncompressed batch (Host.Append, acks=all, bounded by
//	    offsets.commit.timeout.ms); each Response to its waiting request
//	append acknowledged (or failed): reported to the machine with Appended
//	    in write order (a queue of in-flight appends), then Ready again
//	clock: one time.AfterFunc per shard at the machine's NextDue; none while
//	    nothing is due, so an idle shard costs no wake-ups
//	partition no longer led (or a new epoch): the shard is dropped: waiting
//	    requests answer NOT_COORDINATOR, its timer stops, its load and
//	    appends are abandoned (a new epoch loads again from scratch)
//
// Transactions: a TxnOffsetCommit's Append (Transactional) is framed as
// a transactional batch of the client's producer id and epoch, at the
// base sequence the log's producer state expects next (the Host's
// optional Sequencer: the shard writes one Append at a time and nothing
// else writes under that producer id here), so the log fences an older
// epoch as for the client's own batches. At load a transactional batch's
// records go to ReplayTxn and a control batch (an EndTransactionMarker)
// to ReplayMarker, if the machine is a TxnMachine (*group.Shard is).
// CompleteTxn(partition, producer, commit), which the node calls when
// WriteTxnMarkers' marker is committed in the partition
// (kafka.GroupTxns), reaches the shard's machine, or, while it loads,
// the machine that loads (before LoadDone).
//
// Topics: SetTopics keeps the cluster's topics and hands them to every
// loaded shard, and to each shard when it has loaded, if its machine is a
// TopicSetter (KIP-848 groups assign from them).
//
// The driver is not only the group coordinator's: any Machine runs in it
// (Options.NewMachine gets the shard's leader epoch), and outcomes that
// arrive from elsewhere go in through Run, which takes the shard's lock,
// calls the machine and acts on its Ready. node/txncoord runs node/txn's
// transaction coordinator this way.
//
// Lock order: Coordinator.mu → shard.mu → whatever Host takes (the
// replica's lock, in Append). Machine methods run only under shard.mu.
//
// Records: Kafka's __consumer_offsets schemas, made and read by node/group;
// this package only frames them (records.go: RecordBatch v2, no
// compression, no producer id but for transactional batches; a
// compressed batch is logged and skipped, since this coordinator writes
// none and clients cannot produce to the topic). FuzzDecodeBatch covers
// the decoder.
package coord
