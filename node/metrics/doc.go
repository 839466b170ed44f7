// Package metrics is a node's Prometheus registry (prometheus/client_golang),
// served as text on the node's HTTP listener at /metrics.
//
// # Names
//
// Metrics that Kafka has carry Kafka's names as Prometheus sees them through
// the jmx_exporter rules of Strimzi's kafka-metrics.yaml (lowercased
// "kafka_<domain>_<type>_<name>", "PerSec" meters as "_total" counters,
// histograms as gauges of Kafka's percentiles labelled quantile="0.50",
// "0.75", "0.95", "0.98", "0.99", "0.999" (jmx_exporter's "0.$N" of
// NthPercentile; a Prometheus summary would say "0.5") plus _count and _sum
// counters, see timer.go), so existing dashboards and alerts fit. Ours
// start with "sluice_".
//
//	Kafka MBean                                                   Prometheus name
//	kafka.network:type=RequestMetrics,name=<X>TimeMs,request=R    kafka_network_requestmetrics_<x>timems{request,quantile} (+ _count, _sum; ms)
//	  X: RequestQueue, Local, Remote, ResponseQueue, ResponseSend, Total; R: Produce, FetchConsumer, FetchFollower
//	kafka.network:type=RequestMetrics,name=RequestsPerSec          kafka_network_requestmetrics_requests_total{request,version}
//	kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec     kafka_server_brokertopicmetrics_messagesin_total{topic}
//	  also BytesIn, BytesOut, ReplicationBytesOut, FailedProduceRequests, TotalProduceRequests, TotalFetchRequests
//	  (topic="" is the broker-wide total, Kafka's MBean without a topic)
//	kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions kafka_server_replicamanager_underreplicatedpartitions
//	  also UnderMinIsrPartitionCount, AtMinIsrPartitionCount, LeaderCount, PartitionCount
//	kafka.server:type=ReplicaManager,name=ReassigningPartitions      kafka_server_replicamanager_reassigningpartitions
//	kafka.server:type=ReplicaManager,name=IsrShrinksPerSec         kafka_server_replicamanager_isrshrinks_total (and isrexpands_total)
//	kafka.log:type=LogManager,name=OfflineLogDirectoryCount        kafka_log_logmanager_offlinelogdirectorycount
//	kafka.server:type=ReplicaFetcherManager,name=MaxLag,clientId=Replica  kafka_server_replicafetchermanager_maxlag{clientId}
//	  (measured on the leaders here: their furthest-behind follower; Kafka measures it on the followers)
//	kafka.cluster:type=Partition,name=UnderReplicated,topic,partition     kafka_cluster_partition_underreplicated{topic,partition}
//	  also InSyncReplicasCount, ReplicasCount (on the leader)
//	kafka.log:type=Log,name=LogEndOffset,topic,partition           kafka_log_log_logendoffset{topic,partition} (and logstartoffset, size)
//	kafka.log:type=LogCleaner,name=max-dirty-percent               kafka_log_logcleaner_max_dirty_percent (0-100)
//	  also cleaner-recopy-percent, max-clean-time-secs           _cleaner_recopy_percent, _max_clean_time_secs
//	kafka.log:type=LogCleanerManager,name=uncleanable-partitions-count kafka_log_logcleanermanager_uncleanable_partitions_count
//	  also time-since-last-run-ms (without Kafka's logDirectory tag: a node has one)  _time_since_last_run_ms
//	  (the cleaner's metrics are absent when log.cleaner.enable=false)
//	kafka.log:type=LogFlushStats,name=LogFlushRateAndTimeMs        kafka_log_logflushstats_logflushrateandtimems{quantile} (+ _count, _sum; ms)
//	kafka.controller:type=KafkaController,name=ActiveControllerCount kafka_controller_kafkacontroller_activecontrollercount
//	  also OfflinePartitionsCount, ActiveBrokerCount, FencedBrokerCount (active controller only)
//	kafka.controller:type=ControllerStats,name=UncleanLeaderElectionsPerSec kafka_controller_controllerstats_uncleanleaderelections_total
//	kafka.server:type=raft-metrics current-state, current-leader,  kafka_server_raftmetrics_current_state{current_state}, _current_leader,
//	  current-epoch, high-watermark, log-end-offset, commit-latency-avg  _current_epoch, _high_watermark, _log_end_offset, _commit_latency_avg
//	kafka.server:type=broker-metadata-metrics last-applied-record-offset kafka_server_brokermetadatametrics_last_applied_record_offset
//	kafka.server:type=socket-server-metrics,listener=L connection-count  kafka_server_socket_server_metrics_connection_count{listener}
//	kafka.coordinator.group:type=GroupMetadataManager,name=NumGroups kafka_coordinator_group_groupmetadatamanager_numgroups
//	  also NumGroups<State> for PreparingRebalance, CompletingRebalance, Stable, Dead, Empty (_numgroupsstable, ...), NumOffsets
//	kafka.coordinator.group:type=group-coordinator-metrics offset-commit-count, offset-expiration-count
//	                                                              kafka_coordinator_group_group_coordinator_metrics_offset_commit_total, _offset_expiration_total
//	  consumer-group-count{state}, group-count{protocol}           _consumer_group_count{state: empty, assigning, reconciling, stable},
//	                                                              _group_count{protocol: classic, consumer}; NumGroups counts both kinds,
//	                                                              NumGroups<State> the classic groups
//	  (the group metrics come from a Source that is a GroupSource: the groups of the offsets partitions this node leads)
//	kafka.server:type=transaction-coordinator-metrics partition-load-time-max
//	                                                              kafka_server_transaction_coordinator_metrics_partition_load_time_max (ms)
//	kafka.coordinator.transaction:type=TransactionMarkerChannelManager (its queues)
//	                                                              kafka_coordinator_transaction_transactionmarkerchannelmanager_queuesize
//	  (the transaction metrics come from a Source that is a TxnSource: the __transaction_state partitions this node leads)
//	kafka.server:type=ReplicaManager,name=PartitionsWithLateTransactionsCount  kafka_server_replicamanager_partitionswithlatetransactionscount
//	  (KIP-664: partitions led here whose oldest open transaction is older than LateTransactionAge:
//	  Options.MaxTransactionTimeout (the node's transaction.max.timeout.ms) plus 5 minutes: transactions no coordinator will end; see sluice transactions find-hanging)
//
// Ours:
//
//	sluice_txn_coordinator_partitions{state}           __transaction_state partitions led here (loaded, loading)
//	sluice_txn_coordinator_partition_load_time_last_ms the last load of one
//	sluice_txn_coordinator_transactional_ids{state}    transactional ids coordinated here by Kafka's state
//	sluice_txn_coordinator_transactions_completed_total{outcome} commit, abort, timeout (aborted at transaction.timeout.ms)
//	sluice_txn_markers_total{outcome}                  partition markers answered: written, failed (sent again)
//	sluice_txn_marker_seconds_total                    their time from queueing to answer (mean: rate over markers_total)
//	sluice_txn_marker_requests_total                   WriteTxnMarkers requests sent (one per broker and round)
//	sluice_txn_marker_request_markers_total            transactions' markers they carried (the batching)
//	sluice_log_unflushed_bytes{topic,partition}        bytes of the local log not yet fsynced
//	sluice_log_unflushed_age_seconds{topic,partition}  age of the oldest of them (0: none)
//	sluice_log_unwritten_bytes{topic,partition}        of those, bytes the kernel has not written back (cachestat; Linux 6.5+)
//	sluice_log_flushed_offset{topic,partition}         every offset below is fsynced on this node
//	sluice_partition_high_watermark{topic,partition}   records below are committed
//	sluice_partition_lso_lag{topic,partition}          on the leader, HW - LSO: committed records read_committed consumers
//	                                                   cannot see yet, held back by an open transaction
//	sluice_partition_open_transaction_age_seconds{topic,partition}  on the leader, age of the oldest open transaction by its
//	                                                   first batch's timestamp (the producer's clock; 0: none)
//	sluice_log_lost_on_recovery_records_total          committed records a log no longer held when opened (power cut)
//	sluice_kafka_connections_refused_total{listener,limit}  connections closed at accept by max.connections or max.connections.per.ip
//	sluice_kafka_connections_idle_closed_total{listener}   connections closed by connections.max.idle.ms
//	kafka_server_socket_server_metrics_failed_authentication_total{listener}  connections closed by a failed TLS handshake or SASL authentication
//	kafka_server_socket_server_metrics_successful_authentication_total{listener}  SASL authentications that succeeded
//	kafka_server_socket_server_metrics_expired_connections_killed_count  connections closed at the end of their SASL session
//	kafka_security_authorizer_metrics_authorization_allowed_total  authorization checks allowed (authorizer.class.name)
//	kafka_security_authorizer_metrics_authorization_denied_total   authorization checks refused (each also logged)
//	sluice_log_writeback_requested_bytes_total         bytes the logs asked the kernel to write back (batched writeback)
//	sluice_log_writeback_errors_total                  such requests that failed
//	sluice_log_cleaner_dirty_ratio{topic,partition}    a compacted log's dirty share (0-1) as the cleaner last measured it
//	sluice_log_cleaner_cleans_total, _failures_total   cleans that moved a log's checkpoint, and failed cleans, since the node started
//	sluice_log_corrupt_batches_total{topic,partition}  bad batches the scrub or a read found in a local log
//	sluice_raft_commits_total, sluice_raft_commit_seconds_total  metadata commit latency, as counters
//	sluice_group_lag_records{group,topic,partition}    high watermark minus the group's committed offset, by its coordinator
//	sluice_memory_dirty_bytes, sluice_memory_writeback_bytes     /proc/meminfo Dirty, Writeback
//	sluice_vm_dirty_setting{name}                      each vm.dirty_* sysctl (name without "vm.")
//	sluice_vm_dirty_threshold_bytes{threshold}         effective background and throttle thresholds
//	sluice_vm_writeback_warnings                       stall rules of node/writeback the settings break
//
// plus the Go runtime and process collectors (go_*, process_*).
//
// # The durability window
//
// The per-partition unflushed metrics are this replica's window: what a
// power cut of this node alone would take. Acknowledged data is lost only
// when every replica that has it loses power before writeback, so the
// partition's window is the part of the log above the highest flushed
// offset of any replica, in records:
//
//	max by (topic, partition) (sluice_partition_high_watermark)
//	  - max by (topic, partition) (sluice_log_flushed_offset)
//
// which the dashboard (dashboards/sluice.json) plots next to the bytes and
// age of each replica. Its age and (about) its bytes are those of the
// replica that flushed furthest, the smallest of each:
//
//	min by (topic, partition) (sluice_log_unflushed_age_seconds)
//	min by (topic, partition) (sluice_log_unflushed_bytes)
//
// (a replica's tail above the high watermark, not yet acknowledged, is
// counted too). "Flushed" means fsynced: batched writeback
// (sluice.log.writeback.interval.bytes) and the kernel's own writeback put
// most of the window on disk sooner without these metrics seeing it, so
// they bound the exposure from above. sluice_log_unwritten_bytes is the
// exposure itself: the part of a replica's unflushed bytes whose page-cache
// pages are still dirty or under writeback, asked of the kernel at each
// scrape (cachestat(2); absent where the kernel cannot tell). What a power
// cut of every replica would take is roughly
//
//	min by (topic, partition) (sluice_log_unwritten_bytes)
//
// It is an estimate, not a bound: recovery cuts at the first missing byte,
// so a page written back out of order does not save what follows it (the
// kernel writes an append-only file back mostly in order), and the file's
// size reaches the disk with the file system's journal commit (ext4: every
// 5 s), which can lag the data pages.
//
// In page-cache mode the only fsync is the 60 s checkpoint, so the
// unflushed bytes can show gigabytes while the unwritten ones show the
// tens of MiB the kernel still holds. The unwritten gauge costs one
// cachestat(2) per unfsynced segment per scrape (no I/O); where the kernel
// cannot tell it is not exported, and the node logs that once.
//
// Measured by `make bench-writeback` (node/bench_writeback_test.go: one
// in-process node, a producer paced at 150 MiB/s, rounds with batched
// writeback off and on interleaved, vm.dirty_* lowered for the run as root
// and restored after), on the shared 2-core dev VM: with writeback on
// (1 MiB) the log's not-written-back pages average 0.04–0.09× of off, their
// peak 0.6–0.7× (the device's busy moments); the fsync window is unchanged
// (it is not an fsync); produce tail latency is within the machine's noise
// (per-round p99.9 from 22 ms to 10 s in both modes: other work on the box
// reaches the global dirty limit too).
//
// At start the node logs vm.dirty_* and warns for each stall rule of
// node/writeback the settings break; the settings, the effective
// thresholds and Dirty/Writeback are gauges. `sluice tune writeback` shows
// and applies the streaming profile.
//
// # Health
//
// kafka_log_logmanager_offlinelogdirectorycount is 1 once the node's log
// dir failed. A leader that cannot serve (its log did not open, or the
// controller fenced it) counts in UnderReplicatedPartitions whatever its
// ISR, and makes the node's /readyz answer 503 with the partitions;
// `sluice cluster health` finds it by asking every leader for its
// partitions' end offsets at the metadata's leader epochs ("Not-serving
// partitions", leaders_not_serving).
//
// # Open segment files
//
// kafka_log_logmanager_opensegmentfiles (ours: Kafka keeps every segment
// open and has no such gauge) is the segment files the node's logs hold
// open now, sluice_log_max_open_files its budget
// (sluice.log.max.open.files; 0: none), sluice_log_segment_files_opened_total
// the opens (first and reopens) and sluice_log_segment_files_evicted_total
// the idle files the budget closed. Reopens at about the fetch rate mean
// the partitions in use outnumber the budget.
//
// # How values are gathered
//
// Request timings arrive through Requests, the node/kafka Observer (one
// call per request, a few summary observations, no allocation), and log
// flush times through ObserveFlush (segment.Options.OnFlush). Everything
// else is pulled at scrape time from a Source the node implements:
// collectors, not gauges set by the code they describe, so the state is
// read in one place and costs nothing between scrapes. The node's Source
// (node/metrics.go) reads each replica's partition.Status (role, ISR, LEO,
// HW, the followers' acknowledged offsets for MaxLag) and log (Unflushed,
// Unwritten), the metadata image (replica sets, brokers, offline
// partitions, unclean elections), quorum RaftStats and the node's
// lost-on-recovery count. ISR shrinks and expands are events: counted from
// the applied metadata stream (a partition_change that keeps this node as
// leader). Request metrics: Produce, FetchConsumer and FetchFollower (a
// Fetch with replica id ≥ 0) get the six phase summaries, every API
// RequestsPerSec; remote time is reported by whoever waits
// (kafka.BeginRemote/End, node/kafka's doc).
package metrics
