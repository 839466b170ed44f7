package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sluice-log/sluice/node/writeback"
)

// Options configure New.
type Options struct {
	// ProcRoot is where /proc is ("/proc" when empty); tests point it at a
	// fake tree.
	ProcRoot string
	// Now is the clock of the age and window metrics; time.Now when nil.
	Now func() time.Time
	// MaxTransactionTimeout is transaction.max.timeout.ms: an open
	// transaction older than it plus 5 minutes counts in
	// PartitionsWithLateTransactionsCount (KIP-664). Kafka's default
	// (15 min) when zero.
	MaxTransactionTimeout time.Duration
}

// Metrics is one node's registry: the request observer, the flush
// observer and the collectors over its Source. Safe for concurrent use.
type Metrics struct {
	reg *prometheus.Registry
	// Requests is the kafka.Observer to put in kafka.Options.
	Requests *Requests
	flush    prometheus.Observer
	// wbBytes and wbErrors count batched writeback requests (ObserveWriteback).
	wbBytes, wbErrors prometheus.Counter
	// corrupt counts bad batches found in local logs (ObserveCorruptBatch).
	corrupt *prometheus.CounterVec
	// fences and failover are the active controller's fences by cause
	// and their time to new leader (ObserveFence).
	fences   *prometheus.CounterVec
	failover prometheus.Histogram
}

// FenceCauses are the cause labels of sluice_controller_fences_total,
// exported at zero from the start (quorum.FenceCauses).
var FenceCauses = []string{"probe_refused", "probe_silent", "gossip_dead", "new_incarnation", "session_timeout"}

// New builds the registry of a node whose state src describes.
func New(src Source, opts Options) *Metrics {
	if opts.ProcRoot == "" {
		opts.ProcRoot = "/proc"
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxTransactionTimeout <= 0 {
		opts.MaxTransactionTimeout = DefaultMaxTransactionTimeout
	}
	reg := prometheus.NewRegistry()
	m := &Metrics{reg: reg, Requests: newRequests(reg)}
	flush := newTimer("kafka_log_logflushstats_logflushrateandtimems", "Kafka LogFlushStats LogFlushRateAndTimeMs: log fsync passes.", "", nil)
	m.flush = flush.child(0)
	m.wbBytes = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "sluice_log_writeback_requested_bytes_total",
		Help: "Bytes the logs asked the kernel to start writing back (sluice.log.writeback.interval.bytes).",
	})
	m.wbErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "sluice_log_writeback_errors_total",
		Help: "Batched writeback requests the kernel refused (a hint: nothing else changes).",
	})
	m.corrupt = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_log_corrupt_batches_total",
		Help: "Bad batches (CRC or framing) found in this node's logs by the scrub or a read; each is repaired from another replica where one is in sync.",
	}, []string{"topic", "partition"})
	m.fences = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_controller_fences_total",
		Help: "Brokers this node fenced as the active controller, by the evidence: probe_refused (its Kafka listener refused connections), probe_silent (its listener's probes timed out while other brokers answered), gossip_dead, new_incarnation (seen alive with another epoch), session_timeout (broker.session.timeout.ms).",
	}, []string{"cause"})
	for _, c := range FenceCauses {
		m.fences.WithLabelValues(c)
	}
	m.failover = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "sluice_controller_failover_seconds",
		Help:    "Per fence of a broker that led partitions, on the active controller: time from the first evidence it was gone to the commit that gave its partitions new leaders.",
		Buckets: []float64{0.1, 0.25, 0.5, 1, 2, 3, 5, 10, 20, 30},
	})
	reg.MustRegister(flush, m.wbBytes, m.wbErrors, m.corrupt, m.fences, m.failover,
		&sourceCollector{src: src, now: opts.Now, lateAge: LateTransactionAge(opts.MaxTransactionTimeout)},
		&writebackCollector{procRoot: opts.ProcRoot},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	if gs, ok := src.(GroupSource); ok {
		reg.MustRegister(groupCollector{gs})
	}
	if ts, ok := src.(TxnSource); ok {
		reg.MustRegister(txnCollector{ts})
	}
	return m
}

// ObserveFlush records one log fsync pass; give it to segment.Options.OnFlush.
func (m *Metrics) ObserveFlush(d time.Duration) { m.flush.Observe(ms(d)) }

// ObserveCorruptBatch counts one bad batch found in a local log.
func (m *Metrics) ObserveCorruptBatch(topic string, partition int32) {
	m.corrupt.WithLabelValues(topic, strconv.Itoa(int(partition))).Inc()
}

// ObserveFence counts one fence the active controller committed, by
// cause; when moved partitions got a new leader in it, it also observes
// the failover's time to new leader, sinceGone (from the first evidence
// that the broker was gone to the commit).
func (m *Metrics) ObserveFence(cause string, sinceGone time.Duration, moved int) {
	m.fences.WithLabelValues(cause).Inc()
	if moved > 0 {
		m.failover.Observe(sinceGone.Seconds())
	}
}

// ObserveWriteback counts one batched writeback request; give it to
// segment.Options.OnWriteback.
func (m *Metrics) ObserveWriteback(bytes int64, err error) {
	m.wbBytes.Add(float64(bytes))
	if err != nil {
		m.wbErrors.Inc()
	}
}

// Handler serves the registry in the Prometheus text format (/metrics).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// Gatherer is the registry, for tests and embedding.
func (m *Metrics) Gatherer() prometheus.Gatherer { return m.reg }

var (
	vmSetting      = desc("sluice_vm_dirty_setting", "A vm.dirty_* sysctl of this machine (name: without vm.), read at each scrape.", "name")
	vmThreshold    = desc("sluice_vm_dirty_threshold_bytes", "The effective dirty thresholds in bytes: background (writeback starts) and throttle (writers stall).", "threshold")
	memDirty       = desc("sluice_memory_dirty_bytes", "Page cache dirty bytes (/proc/meminfo Dirty).")
	memWriteback   = desc("sluice_memory_writeback_bytes", "Page cache bytes under writeback (/proc/meminfo Writeback).")
	writebackWarns = desc("sluice_vm_writeback_warnings", "How many of the writeback stall rules (node/writeback) the current vm.dirty_* settings break.")
)

// writebackCollector reads the vm.dirty_* sysctls and /proc/meminfo at each
// scrape; on a machine without them it reports nothing.
type writebackCollector struct{ procRoot string }

func (c *writebackCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{vmSetting, vmThreshold, memDirty, memWriteback, writebackWarns} {
		ch <- d
	}
}

func (c *writebackCollector) Collect(ch chan<- prometheus.Metric) {
	mem, err := writeback.ReadMemory(c.procRoot)
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(memDirty, prometheus.GaugeValue, float64(mem.Dirty))
	ch <- prometheus.MustNewConstMetric(memWriteback, prometheus.GaugeValue, float64(mem.Writeback))
	s, err := writeback.Read(c.procRoot)
	if err != nil {
		return
	}
	for _, name := range writeback.Names {
		ch <- prometheus.MustNewConstMetric(vmSetting, prometheus.GaugeValue, float64(s[name]), name)
	}
	th := writeback.Effective(s, mem.Total)
	ch <- prometheus.MustNewConstMetric(vmThreshold, prometheus.GaugeValue, float64(th.Background), "background")
	ch <- prometheus.MustNewConstMetric(vmThreshold, prometheus.GaugeValue, float64(th.Throttle), "throttle")
	ch <- prometheus.MustNewConstMetric(writebackWarns, prometheus.GaugeValue, float64(len(writeback.Check(s, mem.Total))))
}
