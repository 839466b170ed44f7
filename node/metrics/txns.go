package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// TxnSource is the optional Source capability to describe the
// transaction coordinator; without it no transaction coordinator metric
// is exported. Its method is called like Source's.
type TxnSource interface {
	// Transactions describes the transaction coordinator as this node
	// runs it.
	Transactions() TxnStat
}

// TxnStat is the transaction coordinator of the __transaction_state
// partitions this node leads.
type TxnStat struct {
	// Partitions led and loaded; Loading those still loading.
	Partitions, Loading int
	// ByState counts the transactional ids by Kafka's state name.
	ByState map[string]int
	// Committed, Aborted count the transactions completed, TimedOut
	// those the coordinator aborted (since each partition loaded).
	Committed, Aborted, TimedOut int64
	// LoadMaxMs and LoadLastMs are the longest and the last partition
	// load (ms).
	LoadMaxMs, LoadLastMs float64
	// MarkersQueued are the partition markers waiting to be sent or for
	// their answer; MarkersWritten and MarkersFailed count those
	// answered without and with an error; MarkerSeconds sums their time
	// from queueing to answer; MarkerRequests counts the WriteTxnMarkers
	// requests sent and MarkersPerRequest sums the markers they carried.
	MarkersQueued                    int
	MarkersWritten, MarkersFailed    int64
	MarkerSeconds                    float64
	MarkerRequests, MarkersInRequest int64
}

// txnStates are the states with a gauge each, always exported.
var txnStates = []string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort"}

var (
	txnLoadMax  = desc("kafka_server_transaction_coordinator_metrics_partition_load_time_max", "Kafka transaction-coordinator-metrics partition-load-time-max: the longest load of a __transaction_state partition here (ms).")
	txnLoadLast = desc("sluice_txn_coordinator_partition_load_time_last_ms", "The last load of a __transaction_state partition here (ms).")
	txnParts    = desc("sluice_txn_coordinator_partitions", "__transaction_state partitions led here, by load state (loaded, loading).", "state")
	txnByState  = desc("sluice_txn_coordinator_transactional_ids", "Transactional ids coordinated here, by Kafka's transaction state.", "state")
	txnDone     = desc("sluice_txn_coordinator_transactions_completed_total", "Transactions completed here (commit, abort; timeout: aborted by the coordinator at transaction.timeout.ms), since each partition loaded.", "outcome")
	txnMarkersQ = desc("kafka_coordinator_transaction_transactionmarkerchannelmanager_queuesize", "Partition markers (WriteTxnMarkers) waiting to be sent or answered (Kafka's TransactionMarkerChannelManager queues).")
	txnMarkers  = desc("sluice_txn_markers_total", "Partition markers answered (written, failed: sent again after the backoff).", "outcome")
	txnMarkerS  = desc("sluice_txn_marker_seconds_total", "Sum of the answered partition markers' time from queueing to answer (rate over sluice_txn_markers_total: the mean latency).")
	txnMarkReqs = desc("sluice_txn_marker_requests_total", "WriteTxnMarkers requests sent (one per destination broker and round).")
	txnMarkIn   = desc("sluice_txn_marker_request_markers_total", "Transactions' markers carried by the WriteTxnMarkers requests sent (over sluice_txn_marker_requests_total: the batching).")
)

// txnCollector exports a TxnSource.
type txnCollector struct{ src TxnSource }

func (c txnCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{txnLoadMax, txnLoadLast, txnParts, txnByState, txnDone, txnMarkersQ, txnMarkers, txnMarkerS, txnMarkReqs, txnMarkIn} {
		ch <- d
	}
}

func (c txnCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.src.Transactions()
	g := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	n := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	g(txnLoadMax, s.LoadMaxMs)
	g(txnLoadLast, s.LoadLastMs)
	g(txnParts, float64(s.Partitions), "loaded")
	g(txnParts, float64(s.Loading), "loading")
	for _, st := range txnStates {
		g(txnByState, float64(s.ByState[st]), st)
	}
	n(txnDone, float64(s.Committed), "commit")
	n(txnDone, float64(s.Aborted), "abort")
	n(txnDone, float64(s.TimedOut), "timeout")
	g(txnMarkersQ, float64(s.MarkersQueued))
	n(txnMarkers, float64(s.MarkersWritten), "written")
	n(txnMarkers, float64(s.MarkersFailed), "failed")
	n(txnMarkerS, s.MarkerSeconds)
	n(txnMarkReqs, float64(s.MarkerRequests))
	n(txnMarkIn, float64(s.MarkersInRequest))
}
