package metrics

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// desc builds the Desc of a metric this package collects.
func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

// Descs of the source collector, by Kafka name (see the package doc).
var (
	underReplicated = desc("kafka_server_replicamanager_underreplicatedpartitions", "Kafka ReplicaManager UnderReplicatedPartitions: partitions led here whose ISR is smaller than their replica set, or that cannot serve (a fenced leader).")
	underMinISR     = desc("kafka_server_replicamanager_underminisrpartitioncount", "Kafka ReplicaManager UnderMinIsrPartitionCount: partitions led here whose ISR is below min.insync.replicas (acks=all fails).")
	atMinISR        = desc("kafka_server_replicamanager_atminisrpartitioncount", "Kafka ReplicaManager AtMinIsrPartitionCount: partitions led here whose ISR is exactly min.insync.replicas (one more loss stops acks=all).")
	reassigning     = desc("kafka_server_replicamanager_reassigningpartitions", "Kafka ReplicaManager ReassigningPartitions: partitions led here whose reassignment is in progress.")
	leaderCount     = desc("kafka_server_replicamanager_leadercount", "Kafka ReplicaManager LeaderCount: partitions led here.")
	partitionCount  = desc("kafka_server_replicamanager_partitioncount", "Kafka ReplicaManager PartitionCount: partition replicas hosted here.")
	isrShrinks      = desc("kafka_server_replicamanager_isrshrinks_total", "Kafka ReplicaManager IsrShrinksPerSec: ISR shrinks of partitions led here.")
	isrExpands      = desc("kafka_server_replicamanager_isrexpands_total", "Kafka ReplicaManager IsrExpandsPerSec: ISR expansions of partitions led here.")
	connCount       = desc("kafka_server_socket_server_metrics_connection_count", "Kafka socket-server-metrics connection-count: open client connections.", "listener")
	connRefused     = desc("sluice_kafka_connections_refused_total", "Client connections closed when accepted, by the limit they were over (max.connections, max.connections.per.ip).", "listener", "limit")
	failedAuth      = desc("kafka_server_socket_server_metrics_failed_authentication_total", "Kafka socket-server-metrics failed-authentication-total: connections closed by a failed TLS handshake (a plaintext client, an untrusted or missing client certificate, a timeout) or a failed SASL authentication (a wrong password, an unknown user or mechanism, a request before authenticating).", "listener")
	expiredKilled   = desc("kafka_server_socket_server_metrics_expired_connections_killed_count", "Kafka socket-server-metrics expired-connections-killed-count: connections closed because their SASL session (connections.max.reauth.ms) ended without re-authentication.")
	authzAllowed    = desc("kafka_security_authorizer_metrics_authorization_allowed_total", "Kafka authorizer-metrics authorization-allowed: authorization checks the ACLs allowed (a request checks one or more resources).")
	authzDenied     = desc("kafka_security_authorizer_metrics_authorization_denied_total", "Kafka authorizer-metrics authorization-denied: authorization checks the ACLs refused.")
	okAuth          = desc("kafka_server_socket_server_metrics_successful_authentication_total", "Kafka socket-server-metrics successful-authentication-total: SASL authentications that succeeded.", "listener")
	quotaThrottled  = desc("sluice_client_quota_throttled_total", "Requests answered with a client-quota throttle (throttle_time_ms > 0), by quota key.", "quota")
	quotaThrottleS  = desc("sluice_client_quota_throttle_seconds_total", "Time clients were throttled by client quotas, by quota key.", "quota")
	connIdleClosed  = desc("sluice_kafka_connections_idle_closed_total", "Client connections closed by connections.max.idle.ms.", "listener")
	reassignIn      = desc("kafka_server_brokertopicmetrics_reassignmentbytesin_total", "Kafka BrokerTopicMetrics ReassignmentBytesInPerSec: record bytes fetched here for replicas a reassignment adds (topic=\"\": all).", "topic")
	reassignOut     = desc("kafka_server_brokertopicmetrics_reassignmentbytesout_total", "Kafka BrokerTopicMetrics ReassignmentBytesOutPerSec: record bytes sent from here to replicas a reassignment adds (topic=\"\": all).", "topic")
	throttledBytes  = desc("sluice_replication_throttled_bytes_total", "Record bytes of throttled replicas (out of the ISR, named by leader/follower.replication.throttled.replicas) this broker sent as leader or fetched as follower: the bytes Kafka's LeaderReplication and FollowerReplication byte-rate measure.", "throttle")
	lostOnRecovery  = desc("sluice_log_lost_on_recovery_records_total", "Committed records the local logs no longer held when opened (below their checkpointed high watermark): a power cut took unflushed data.")
	openSegFiles    = desc("kafka_log_logmanager_opensegmentfiles", "Segment files the node's logs hold open now (Sluice opens them on use and closes idle ones past sluice.log.max.open.files).")
	maxSegFiles     = desc("sluice_log_max_open_files", "sluice.log.max.open.files: the budget of open segment files (0: none).")
	segFilesOpened  = desc("sluice_log_segment_files_opened_total", "Segment files opened, first opens and reopens of closed ones: a rate near the fetch rate means the budget is too small for the partitions in use.")
	segFilesEvicted = desc("sluice_log_segment_files_evicted_total", "Idle segment files closed to keep within sluice.log.max.open.files.")
	offlineLogDirs  = desc("kafka_log_logmanager_offlinelogdirectorycount", "Kafka LogManager OfflineLogDirectoryCount: log directories of this broker that failed (I/O error, full disk); their replicas serve nothing until a restart.")
	maxLag          = desc("kafka_server_replicafetchermanager_maxlag", "Kafka ReplicaFetcherManager MaxLag: the largest lag, in offsets, of a follower of a partition led here behind the log end (the leader's view).", "clientId")

	partUnderReplicated = desc("kafka_cluster_partition_underreplicated", "Kafka Partition UnderReplicated (1/0), on the leader; 1 also when it cannot serve (fenced).", "topic", "partition")
	partISR             = desc("kafka_cluster_partition_insyncreplicascount", "Kafka Partition InSyncReplicasCount, on the leader.", "topic", "partition")
	partReplicas        = desc("kafka_cluster_partition_replicascount", "Kafka Partition ReplicasCount, on the leader.", "topic", "partition")
	logEnd              = desc("kafka_log_log_logendoffset", "Kafka Log LogEndOffset of the local replica.", "topic", "partition")
	logStart            = desc("kafka_log_log_logstartoffset", "Kafka Log LogStartOffset of the local replica.", "topic", "partition")
	logSize             = desc("kafka_log_log_size", "Kafka Log Size: bytes of the local replica's log.", "topic", "partition")
	highWatermark       = desc("sluice_partition_high_watermark", "High watermark of the local replica: records below it are committed.", "topic", "partition")
	flushedOffset       = desc("sluice_log_flushed_offset", "Every offset below it is fsynced on this node.", "topic", "partition")
	unflushedBytes      = desc("sluice_log_unflushed_bytes", "Bytes of the local log past the flushed offset: what a power cut of this node would take from this replica.", "topic", "partition")
	unwrittenBytes      = desc("sluice_log_unwritten_bytes", "Page-cache bytes of the local log not yet written to disk by the kernel (dirty or under writeback): what a power cut of this node would take now, as opposed to sluice_log_unflushed_bytes, which counts since the last fsync. Absent where the kernel cannot tell (cachestat(2), Linux 6.5).", "topic", "partition")
	unflushedAge        = desc("sluice_log_unflushed_age_seconds", "Age of the oldest record of the local log not yet fsynced (0: none).", "topic", "partition")
	lsoLag              = desc("sluice_partition_lso_lag", "Offsets between the high watermark and the last stable offset on the leader (HW - LSO): committed records read_committed consumers cannot see yet, held back by an open transaction.", "topic", "partition")
	openTxnAge          = desc("sluice_partition_open_transaction_age_seconds", "Age of the oldest open transaction on the leader, by its first batch's timestamp (0: none): what holds the last stable offset back.", "topic", "partition")
	lateTxns            = desc("kafka_server_replicamanager_partitionswithlatetransactionscount", "Kafka ReplicaManager PartitionsWithLateTransactionsCount: partitions led here whose oldest open transaction is older than transaction.max.timeout.ms plus 5 min (KIP-664): likely hanging.")
	dirtyRatio          = desc("sluice_log_cleaner_dirty_ratio", "Share of the cleanable bytes of a compacted local log not yet compacted, as the cleaner last measured it (compare min.cleanable.dirty.ratio).", "topic", "partition")

	cleanerMaxDirty    = desc("kafka_log_logcleaner_max_dirty_percent", "Kafka LogCleaner max-dirty-percent: the largest dirty percentage of the compacted logs, as last measured.")
	cleanerRecopy      = desc("kafka_log_logcleaner_cleaner_recopy_percent", "Kafka LogCleaner cleaner-recopy-percent: bytes written as a percentage of bytes read by each cleaner thread's latest clean.")
	cleanerMaxTime     = desc("kafka_log_logcleaner_max_clean_time_secs", "Kafka LogCleaner max-clean-time-secs: the longest of each cleaner thread's latest clean, in seconds.")
	cleanerUncleanable = desc("kafka_log_logcleanermanager_uncleanable_partitions_count", "Kafka LogCleanerManager uncleanable-partitions-count: compacted logs the cleaner gave up on after repeated errors (see the node's log); cleaned again after a restart.")
	cleanerCleans      = desc("sluice_log_cleaner_cleans_total", "Cleans of a compacted log that moved its cleaner checkpoint, since the node started.")
	cleanerFailures    = desc("sluice_log_cleaner_failures_total", "Cleans of a compacted log that failed (the node's log says why), since the node started.")
	cleanerSinceRun    = desc("kafka_log_logcleanermanager_time_since_last_run_ms", "Kafka LogCleanerManager time-since-last-run-ms: milliseconds since a cleaner thread last looked for a log to clean.")

	activeController  = desc("kafka_controller_kafkacontroller_activecontrollercount", "Kafka KafkaController ActiveControllerCount: 1 on the active controller.")
	offlinePartitions = desc("kafka_controller_kafkacontroller_offlinepartitionscount", "Kafka KafkaController OfflinePartitionsCount: partitions without a leader (active controller only).")
	activeBrokers     = desc("kafka_controller_kafkacontroller_activebrokercount", "Kafka KafkaController ActiveBrokerCount: registered, unfenced brokers (active controller only).")
	fencedBrokers     = desc("kafka_controller_kafkacontroller_fencedbrokercount", "Kafka KafkaController FencedBrokerCount (active controller only).")
	uncleanElections  = desc("kafka_controller_controllerstats_uncleanleaderelections_total", "Kafka ControllerStats UncleanLeaderElectionsPerSec: unclean elections recorded in the metadata (active controller only).")

	raftState        = desc("kafka_server_raftmetrics_current_state", "Kafka raft-metrics current-state: 1 for this node's Raft state.", "current_state")
	raftLeader       = desc("kafka_server_raftmetrics_current_leader", "Kafka raft-metrics current-leader: the quorum leader's node id, -1 if unknown.")
	raftEpoch        = desc("kafka_server_raftmetrics_current_epoch", "Kafka raft-metrics current-epoch: the Raft term.")
	raftHW           = desc("kafka_server_raftmetrics_high_watermark", "Kafka raft-metrics high-watermark: the Raft commit index.")
	raftLEO          = desc("kafka_server_raftmetrics_log_end_offset", "Kafka raft-metrics log-end-offset: the last Raft log index.")
	raftApplied      = desc("kafka_server_brokermetadatametrics_last_applied_record_offset", "Kafka broker-metadata-metrics last-applied-record-offset: the Raft index applied to the local metadata image.")
	raftCommitAvg    = desc("kafka_server_raftmetrics_commit_latency_avg", "Kafka raft-metrics commit-latency-avg: mean milliseconds from proposal to commit over the last 30-60 s, on the leader.")
	raftCommitsTotal = desc("sluice_raft_commits_total", "Metadata commands committed by this node as Raft leader.")
	raftCommitSecs   = desc("sluice_raft_commit_seconds_total", "Total seconds from proposal to commit of sluice_raft_commits_total.")
	raftRefused      = desc("sluice_raft_refused_connections_total", "Connections the controller port closed: a malformed hello, another cluster id, or (CONTROLLER over SSL) a failed TLS handshake or a peer certificate not admitted; also counts forwarded requests refused because a node may speak only for itself (see the node's log for which peer).")
)

// sourceCollector turns a Source into metrics at each scrape.
type sourceCollector struct {
	src Source
	now func() time.Time
	// lateAge is LateTransactionAge of transaction.max.timeout.ms.
	lateAge time.Duration

	mu     sync.Mutex
	parts  []PartitionStat // reused between scrapes, under mu
	window commitWindow
}

func (c *sourceCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{underReplicated, reassigning, underMinISR, atMinISR, leaderCount, partitionCount, isrShrinks, isrExpands, maxLag, lostOnRecovery, offlineLogDirs, reassignIn, reassignOut, throttledBytes,
		openSegFiles, maxSegFiles, segFilesOpened, segFilesEvicted,
		partUnderReplicated, partISR, partReplicas, logEnd, logStart, logSize, highWatermark, flushedOffset, unflushedBytes, unwrittenBytes, unflushedAge, dirtyRatio,
		lsoLag, openTxnAge, lateTxns,
		cleanerMaxDirty, cleanerRecopy, cleanerMaxTime, cleanerUncleanable, cleanerSinceRun, cleanerCleans, cleanerFailures,
		activeController, offlinePartitions, activeBrokers, fencedBrokers, uncleanElections,
		raftState, raftLeader, raftEpoch, raftHW, raftLEO, raftApplied, raftCommitAvg, raftCommitsTotal, raftCommitSecs, raftRefused, authzAllowed, authzDenied} {
		ch <- d
	}
}

func (c *sourceCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	c.parts = c.src.Partitions(c.parts[:0])
	var under, underMin, atMin, leaders, late, moving int
	var lag int64
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for i := range c.parts {
		p := &c.parts[i]
		t, n := p.Topic, strconv.Itoa(int(p.Partition))
		if p.Leader {
			leaders++
			if p.Reassigning {
				moving++
			}
			ur := 0.0
			if p.ISR < p.Replicas || p.NotServing {
				under++
				ur = 1
			}
			if p.ISR < p.MinISR {
				underMin++
			} else if p.ISR == p.MinISR {
				atMin++
			}
			gauge(partUnderReplicated, ur, t, n)
			gauge(partISR, float64(p.ISR), t, n)
			gauge(partReplicas, float64(p.Replicas), t, n)
			gauge(lsoLag, float64(max(p.HighWatermark-p.LastStable, 0)), t, n)
			txnAge := 0.0
			if !p.OpenTxnSince.IsZero() {
				txnAge = max(now.Sub(p.OpenTxnSince).Seconds(), 0)
			}
			if txnAge > c.lateAge.Seconds() {
				late++
			}
			gauge(openTxnAge, txnAge, t, n)
		}
		lag = max(lag, p.FollowerLag)
		gauge(logEnd, float64(p.LogEnd), t, n)
		gauge(logStart, float64(p.LogStart), t, n)
		gauge(logSize, float64(p.Size), t, n)
		gauge(highWatermark, float64(p.HighWatermark), t, n)
		gauge(flushedOffset, float64(p.Flushed), t, n)
		gauge(unflushedBytes, float64(p.UnflushedBytes), t, n)
		if p.UnwrittenKnown {
			gauge(unwrittenBytes, float64(p.UnwrittenBytes), t, n)
		}
		age := 0.0
		if !p.UnflushedSince.IsZero() {
			age = max(now.Sub(p.UnflushedSince).Seconds(), 0)
		}
		gauge(unflushedAge, age, t, n)
		if p.Compacted {
			gauge(dirtyRatio, p.DirtyRatio, t, n)
		}
		p.Topic = "" // do not keep topic names alive between scrapes
	}
	gauge(underReplicated, float64(under))
	gauge(reassigning, float64(moving))
	gauge(underMinISR, float64(underMin))
	gauge(atMinISR, float64(atMin))
	gauge(leaderCount, float64(leaders))
	gauge(partitionCount, float64(len(c.parts)))
	gauge(lateTxns, float64(late))
	gauge(maxLag, float64(lag), "Replica")
	b := c.src.Broker()
	ch <- prometheus.MustNewConstMetric(isrShrinks, prometheus.CounterValue, float64(b.IsrShrinks))
	ch <- prometheus.MustNewConstMetric(isrExpands, prometheus.CounterValue, float64(b.IsrExpands))
	ch <- prometheus.MustNewConstMetric(lostOnRecovery, prometheus.CounterValue, float64(b.LostOnRecovery))
	ch <- prometheus.MustNewConstMetric(reassignIn, prometheus.CounterValue, float64(b.ReassignmentBytesIn), "")
	ch <- prometheus.MustNewConstMetric(reassignOut, prometheus.CounterValue, float64(b.ReassignmentBytesOut), "")
	ch <- prometheus.MustNewConstMetric(throttledBytes, prometheus.CounterValue, float64(b.ThrottledLeaderBytes), "leader")
	ch <- prometheus.MustNewConstMetric(throttledBytes, prometheus.CounterValue, float64(b.ThrottledFollowerBytes), "follower")
	gauge(offlineLogDirs, float64(b.OfflineLogDirs))
	gauge(openSegFiles, float64(b.SegmentFiles.Open))
	gauge(maxSegFiles, float64(b.SegmentFiles.Max))
	ch <- prometheus.MustNewConstMetric(segFilesOpened, prometheus.CounterValue, float64(b.SegmentFiles.Opened))
	ch <- prometheus.MustNewConstMetric(segFilesEvicted, prometheus.CounterValue, float64(b.SegmentFiles.Evicted))
	for l, lc := range b.Connections {
		gauge(connCount, float64(lc.Open), l)
		ch <- prometheus.MustNewConstMetric(connRefused, prometheus.CounterValue, float64(lc.RefusedMax), l, "max.connections")
		ch <- prometheus.MustNewConstMetric(connRefused, prometheus.CounterValue, float64(lc.RefusedPerIP), l, "max.connections.per.ip")
		ch <- prometheus.MustNewConstMetric(connIdleClosed, prometheus.CounterValue, float64(lc.IdleClosed), l)
	}
	for k, qt := range b.QuotaThrottles {
		ch <- prometheus.MustNewConstMetric(quotaThrottled, prometheus.CounterValue, float64(qt.Count), k)
		ch <- prometheus.MustNewConstMetric(quotaThrottleS, prometheus.CounterValue, qt.Time.Seconds(), k)
	}
	for l, n := range b.FailedAuthentication {
		ch <- prometheus.MustNewConstMetric(failedAuth, prometheus.CounterValue, float64(n), l)
	}
	ch <- prometheus.MustNewConstMetric(expiredKilled, prometheus.CounterValue, float64(b.ExpiredConnectionsKilled))
	ch <- prometheus.MustNewConstMetric(authzAllowed, prometheus.CounterValue, float64(b.AuthorizationAllowed))
	ch <- prometheus.MustNewConstMetric(authzDenied, prometheus.CounterValue, float64(b.AuthorizationDenied))
	for l, n := range b.SuccessfulAuthentication {
		ch <- prometheus.MustNewConstMetric(okAuth, prometheus.CounterValue, float64(n), l)
	}
	if cs := b.Cleaner; cs != nil {
		gauge(cleanerMaxDirty, 100*cs.MaxDirtyRatio)
		gauge(cleanerRecopy, 100*cs.RecopyRatio)
		gauge(cleanerMaxTime, cs.MaxCleanTime.Seconds())
		gauge(cleanerUncleanable, float64(cs.Uncleanable))
		gauge(cleanerSinceRun, float64(cs.SinceLastRun.Milliseconds()))
		ch <- prometheus.MustNewConstMetric(cleanerCleans, prometheus.CounterValue, float64(cs.Cleans))
		ch <- prometheus.MustNewConstMetric(cleanerFailures, prometheus.CounterValue, float64(cs.Failures))
	}

	ctl := c.src.Controller()
	active := 0.0
	if ctl.Active {
		active = 1
	}
	gauge(activeController, active)
	gauge(offlinePartitions, float64(ctl.OfflinePartitions))
	gauge(activeBrokers, float64(ctl.ActiveBrokers))
	gauge(fencedBrokers, float64(ctl.FencedBrokers))
	ch <- prometheus.MustNewConstMetric(uncleanElections, prometheus.CounterValue, float64(ctl.UncleanElections))
	r := ctl.Raft
	gauge(raftState, 1, r.State)
	gauge(raftLeader, float64(r.Leader))
	gauge(raftEpoch, float64(r.Term))
	gauge(raftHW, float64(r.CommitIndex))
	gauge(raftLEO, float64(r.LastIndex))
	gauge(raftApplied, float64(r.AppliedIndex))
	gauge(raftCommitAvg, c.window.avgMs(now, r.Commits, r.CommitTime))
	ch <- prometheus.MustNewConstMetric(raftCommitsTotal, prometheus.CounterValue, float64(r.Commits))
	ch <- prometheus.MustNewConstMetric(raftCommitSecs, prometheus.CounterValue, r.CommitTime.Seconds())
	ch <- prometheus.MustNewConstMetric(raftRefused, prometheus.CounterValue, float64(r.RefusedConns))
}

// commitWindow turns cumulative commit counts into Kafka's windowed
// average: over the time since a mark at least 30 s old (at most about
// 60 s), like Kafka's two 30 s samples.
type commitWindow struct {
	prev, cur commitMark
}

type commitMark struct {
	at    time.Time
	count int64
	total time.Duration
}

const commitWindowLen = 30 * time.Second

func (w *commitWindow) avgMs(now time.Time, count int64, total time.Duration) float64 {
	if w.cur.at.IsZero() {
		w.cur = commitMark{at: now}
		w.prev = w.cur
	}
	if now.Sub(w.cur.at) >= commitWindowLen {
		w.prev, w.cur = w.cur, commitMark{at: now, count: count, total: total}
	}
	n := count - w.prev.count
	if n <= 0 {
		return 0
	}
	return ms((total - w.prev.total) / time.Duration(n))
}

// DefaultMaxTransactionTimeout is Kafka's default transaction.max.timeout.ms.
const DefaultMaxTransactionTimeout = 15 * time.Minute

// LateTransactionAge is the age past which an open transaction counts in
// PartitionsWithLateTransactionsCount: transaction.max.timeout.ms plus
// the 5 min Kafka adds (KIP-664). A coordinator aborts a transaction past
// its timeout, so one older than this has no coordinator that will end it.
func LateTransactionAge(maxTimeout time.Duration) time.Duration {
	return maxTimeout + 5*time.Minute
}
