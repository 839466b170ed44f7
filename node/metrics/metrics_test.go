package metrics

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/node/kafka"
)

// staticSource is a Source with fixed answers: the collectors' input
// without a node, so the aggregation can be checked exactly.
type staticSource struct {
	parts []PartitionStat
	b     BrokerStat
	c     ControllerStat
}

func (s *staticSource) Partitions(buf []PartitionStat) []PartitionStat {
	return append(buf, s.parts...)
}
func (s *staticSource) Broker() BrokerStat         { return s.b }
func (s *staticSource) Controller() ControllerStat { return s.c }

// fakeProc writes a proc tree with writeback settings and meminfo.
func fakeProc(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	vm := filepath.Join(root, "sys", "vm")
	if err := os.MkdirAll(vm, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]string{"dirty_background_ratio": "10", "dirty_background_bytes": "0", "dirty_ratio": "20",
		"dirty_bytes": "0", "dirty_expire_centisecs": "3000", "dirty_writeback_centisecs": "500"} {
		if err := os.WriteFile(filepath.Join(vm, name), []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mi := "MemTotal: 1048576 kB\nMemAvailable: 524288 kB\nDirty: 4096 kB\nWriteback: 1024 kB\n"
	if err := os.WriteFile(filepath.Join(root, "meminfo"), []byte(mi), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

var now = time.Unix(10_000, 0)

func newTestMetrics(t *testing.T, src Source) *Metrics {
	t.Helper()
	return New(src, Options{ProcRoot: fakeProc(t), Now: func() time.Time { return now }})
}

func gather(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := m.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// get returns the value of the series of name with exactly these labels
// ("k=v" each), a summary's sample count; ok false when there is none.
func get(mfs map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	mf := mfs[name]
	if mf == nil {
		return 0, false
	}
	want := strings.Join(labels, ",")
	for _, m := range mf.Metric {
		var have []string
		for _, l := range m.Label {
			have = append(have, l.GetName()+"="+l.GetValue())
		}
		if strings.Join(have, ",") != want {
			continue
		}
		switch {
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Summary != nil:
			return float64(m.Summary.GetSampleCount()), true
		}
	}
	return 0, false
}

func expect(t *testing.T, mfs map[string]*dto.MetricFamily, want float64, name string, labels ...string) {
	t.Helper()
	v, ok := get(mfs, name, labels...)
	if !ok {
		t.Errorf("no series %s%v", name, labels)
		return
	}
	if v != want {
		t.Errorf("%s%v = %v, want %v", name, labels, v, want)
	}
}

// TestCollectorsAggregate: the ReplicaManager gauges count only the
// partitions led here, by their ISR against replicas and min ISR (a leader
// that cannot serve is under-replicated whatever its ISR); MaxLag is
// the worst follower; the window's age comes from the clock; the
// controller and raft values pass through.
func TestCollectorsAggregate(t *testing.T) {
	src := &staticSource{
		parts: []PartitionStat{
			{Topic: "a", Partition: 0, Leader: true, Replicas: 3, ISR: 3, MinISR: 2, LogEnd: 10, Flushed: 4, UnflushedBytes: 600, UnflushedSince: now.Add(-1500 * time.Millisecond), UnwrittenBytes: 300, UnwrittenKnown: true},
			{Topic: "a", Partition: 1, Leader: true, Replicas: 3, ISR: 2, MinISR: 2},
			{Topic: "b", Partition: 0, Leader: true, Replicas: 3, ISR: 1, MinISR: 2},
			{Topic: "b", Partition: 1, Leader: false, Replicas: 3, ISR: 1, MinISR: 2, FollowerLag: 42},
			{Topic: "c", Partition: 0, Leader: true, NotServing: true, Replicas: 3, ISR: 3, MinISR: 2},
		},
		b: BrokerStat{IsrShrinks: 3, IsrExpands: 1, LostOnRecovery: 5, OfflineLogDirs: 1},
		c: ControllerStat{Active: true, OfflinePartitions: 1, ActiveBrokers: 2, FencedBrokers: 1, UncleanElections: 1,
			Raft: RaftStat{State: "leader", Leader: 1, Term: 7, CommitIndex: 99, LastIndex: 100, AppliedIndex: 98, Commits: 4, CommitTime: 8 * time.Millisecond}},
	}
	mfs := gather(t, newTestMetrics(t, src))
	expect(t, mfs, 5, "kafka_server_replicamanager_partitioncount")
	expect(t, mfs, 4, "kafka_server_replicamanager_leadercount")
	expect(t, mfs, 3, "kafka_server_replicamanager_underreplicatedpartitions")
	expect(t, mfs, 1, "kafka_server_replicamanager_underminisrpartitioncount")
	expect(t, mfs, 1, "kafka_server_replicamanager_atminisrpartitioncount")
	expect(t, mfs, 3, "kafka_server_replicamanager_isrshrinks_total")
	expect(t, mfs, 1, "kafka_server_replicamanager_isrexpands_total")
	expect(t, mfs, 1, "kafka_log_logmanager_offlinelogdirectorycount")
	expect(t, mfs, 42, "kafka_server_replicafetchermanager_maxlag", "clientId=Replica")
	expect(t, mfs, 5, "sluice_log_lost_on_recovery_records_total")
	expect(t, mfs, 1, "kafka_cluster_partition_underreplicated", "partition=0", "topic=b")
	expect(t, mfs, 1, "kafka_cluster_partition_underreplicated", "partition=0", "topic=c") // full ISR, fenced
	expect(t, mfs, 600, "sluice_log_unflushed_bytes", "partition=0", "topic=a")
	expect(t, mfs, 1.5, "sluice_log_unflushed_age_seconds", "partition=0", "topic=a")
	expect(t, mfs, 300, "sluice_log_unwritten_bytes", "partition=0", "topic=a")
	if _, ok := get(mfs, "sluice_log_unwritten_bytes", "partition=1", "topic=a"); ok {
		t.Error("sluice_log_unwritten_bytes exported for a partition whose kernel cannot tell")
	}
	expect(t, mfs, 0, "sluice_log_unflushed_age_seconds", "partition=1", "topic=a")
	expect(t, mfs, 4, "sluice_log_flushed_offset", "partition=0", "topic=a")
	expect(t, mfs, 1, "kafka_controller_kafkacontroller_activecontrollercount")
	expect(t, mfs, 1, "kafka_controller_kafkacontroller_offlinepartitionscount")
	expect(t, mfs, 2, "kafka_controller_kafkacontroller_activebrokercount")
	expect(t, mfs, 1, "kafka_controller_kafkacontroller_fencedbrokercount")
	expect(t, mfs, 1, "kafka_controller_controllerstats_uncleanleaderelections_total")
	expect(t, mfs, 1, "kafka_server_raftmetrics_current_state", "current_state=leader")
	expect(t, mfs, 7, "kafka_server_raftmetrics_current_epoch")
	expect(t, mfs, 99, "kafka_server_raftmetrics_high_watermark")
	expect(t, mfs, 2, "kafka_server_raftmetrics_commit_latency_avg") // 8ms / 4
	expect(t, mfs, 4<<20, "sluice_memory_dirty_bytes")
	expect(t, mfs, 20, "sluice_vm_dirty_setting", "name=dirty_ratio")
	expect(t, mfs, 1<<30/5, "sluice_vm_dirty_threshold_bytes", "threshold=throttle")
}

// TestRequestsObserve: request timings land in their request's summaries
// (Fetch split by follower), RequestsPerSec counts by name and version, and
// the topic counters count records, bytes and failures, per topic and in
// the topic="" total.
func TestRequestsObserve(t *testing.T) {
	m := newTestMetrics(t, &staticSource{})
	r := m.Requests
	r.ObserveRequest(&kafka.RequestTiming{Key: int16(kmsg.Produce), Version: 9, Total: 3 * time.Millisecond, Local: time.Millisecond, Remote: 2 * time.Millisecond})
	r.ObserveRequest(&kafka.RequestTiming{Key: int16(kmsg.Fetch), Version: 12, Follower: true, Total: time.Millisecond})
	r.ObserveRequest(&kafka.RequestTiming{Key: int16(kmsg.Fetch), Version: 12, Total: time.Millisecond})
	r.ObserveRequest(&kafka.RequestTiming{Key: int16(kmsg.Fetch), Version: 12, Total: time.Millisecond})
	r.ObserveRequest(&kafka.RequestTiming{Key: int16(kmsg.Metadata), Version: 12})
	r.Produced("t", 5, 500, nil)
	r.Produced("t", 2, 100, kerr.CorruptMessage)
	r.Produced("t", 2, 100, kerr.NotLeaderForPartition)
	r.Produced("nosuchtopic", 1, 100, kerr.UnknownTopicOrPartition)
	r.Fetched("t", 300, false)
	r.Fetched("t", 700, true)
	mfs := gather(t, m)
	expect(t, mfs, 1, "kafka_network_requestmetrics_totaltimems_count", "request=Produce")
	expect(t, mfs, 1, "kafka_network_requestmetrics_remotetimems_count", "request=FetchFollower")
	expect(t, mfs, 2, "kafka_network_requestmetrics_totaltimems_count", "request=FetchConsumer")
	expect(t, mfs, 2, "kafka_network_requestmetrics_requests_total", "request=FetchConsumer", "version=12")
	expect(t, mfs, 1, "kafka_network_requestmetrics_requests_total", "request=Metadata", "version=12")
	expect(t, mfs, 2, "kafka_server_brokertopicmetrics_totalproducerequests_total", "topic=t")
	for _, topic := range []string{"t", ""} {
		expect(t, mfs, 5, "kafka_server_brokertopicmetrics_messagesin_total", "topic="+topic)
		expect(t, mfs, 500, "kafka_server_brokertopicmetrics_bytesin_total", "topic="+topic)
		expect(t, mfs, 1, "kafka_server_brokertopicmetrics_failedproducerequests_total", "topic="+topic)
		expect(t, mfs, 300, "kafka_server_brokertopicmetrics_bytesout_total", "topic="+topic)
		expect(t, mfs, 700, "kafka_server_brokertopicmetrics_replicationbytesout_total", "topic="+topic)
	}
	if _, ok := get(mfs, "kafka_server_brokertopicmetrics_totalproducerequests_total", "topic=nosuchtopic"); ok {
		t.Error("a produce to an unknown topic created per-topic series")
	}
	expect(t, mfs, 4, "kafka_server_brokertopicmetrics_totalproducerequests_total", "topic=")
	expect(t, mfs, 2, "kafka_network_requestmetrics_remotetimems_sum", "request=Produce") // ms
	expect(t, mfs, 1, "kafka_network_requestmetrics_totaltimems_count", "request=FetchFollower")
	expect(t, mfs, 2, "kafka_network_requestmetrics_remotetimems", "quantile=0.50", "request=Produce")
	expect(t, mfs, 2, "kafka_network_requestmetrics_remotetimems", "quantile=0.999", "request=Produce")
	r.ForgetTopic("t")
	if _, ok := get(gather(t, m), "kafka_server_brokertopicmetrics_messagesin_total", "topic=t"); ok {
		t.Error("a forgotten topic still has series")
	}
}

// TestQuantileLabels: the timers' quantiles carry Kafka's percentiles as
// jmx_exporter spells them ("0.50", not Prometheus's "0.5"), in the request
// metrics and LogFlushRateAndTimeMs alike, and every quantile the dashboard
// asks for is one of them.
func TestQuantileLabels(t *testing.T) {
	m := newTestMetrics(t, &staticSource{})
	m.ObserveFlush(3 * time.Millisecond)
	m.Requests.ObserveRequest(&kafka.RequestTiming{Key: int16(kmsg.Produce), Version: 9, Total: time.Millisecond})
	want := []string{"0.50", "0.75", "0.95", "0.98", "0.99", "0.999"}
	mfs := gather(t, m)
	for _, name := range []string{"kafka_network_requestmetrics_totaltimems", "kafka_log_logflushstats_logflushrateandtimems"} {
		var have []string
		for _, mm := range mfs[name].GetMetric() {
			for _, l := range mm.Label {
				if l.GetName() == "quantile" && !slices.Contains(have, l.GetValue()) {
					have = append(have, l.GetValue())
				}
			}
		}
		sort.Strings(have)
		if !slices.Equal(have, want) {
			t.Errorf("%s quantiles %v, want %v", name, have, want)
		}
	}
	expect(t, mfs, 3, "kafka_log_logflushstats_logflushrateandtimems", "quantile=0.50")
	expect(t, mfs, 1, "kafka_log_logflushstats_logflushrateandtimems_count")
	expect(t, mfs, 1, "kafka_network_requestmetrics_totaltimems", "quantile=0.99", "request=Produce")

	b, err := os.ReadFile("dashboards/sluice.json")
	if err != nil {
		t.Fatal(err)
	}
	qs := regexp.MustCompile(`quantile=\\"([^"\\]*)\\"`).FindAllSubmatch(b, -1)
	if len(qs) == 0 {
		t.Fatal("the dashboard queries no quantile: did the parsing break?")
	}
	for _, q := range qs {
		if !slices.Contains(want, string(q[1])) {
			t.Errorf("the dashboard asks for quantile %q, which no timer exports", q[1])
		}
	}
}

// metricName matches the metric names of this package in a PromQL query.
var metricName = regexp.MustCompile(`\b(?:kafka|sluice)_[a-z0-9_]+\b`)

// groupsSource is a Source with groups.
type groupsSource struct{ *staticSource }

func (groupsSource) Groups() GroupStat {
	return GroupStat{ByState: map[string]int{"Stable": 1}, Offsets: 1, Lag: []GroupLag{{Group: "g", Topic: "a", Records: 3}}}
}

// TestDashboardNames: every metric a query of the Grafana dashboard names
// is one the registry exports (a summary's _count and _sum included), so
// renaming a metric breaks this test rather than the dashboard.
func TestDashboardNames(t *testing.T) {
	b, err := os.ReadFile("dashboards/sluice.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatal(err)
	}
	src := &staticSource{parts: []PartitionStat{{Topic: "a", Leader: true, Replicas: 1, ISR: 1, MinISR: 1, UnwrittenKnown: true}}, c: ControllerStat{Raft: RaftStat{State: "leader"}}}
	m := newTestMetrics(t, groupsSource{src})
	m.Requests.Produced("a", 1, 1, nil)
	m.Requests.ObserveRequest(&kafka.RequestTiming{Key: int16(kmsg.Produce), Version: 9}) // series appear on first use
	m.ObserveFlush(time.Millisecond)
	registered := map[string]bool{}
	for name, mf := range gather(t, m) {
		registered[name] = true
		if mf.GetType() == dto.MetricType_SUMMARY {
			registered[name+"_count"], registered[name+"_sum"] = true, true
		}
	}
	used := map[string]bool{}
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			for _, name := range metricName.FindAllString(tg.Expr, -1) {
				used[name] = true
				if !registered[name] {
					t.Errorf("panel %q queries %s, which node/metrics does not export", p.Title, name)
				}
			}
		}
	}
	if len(used) < 30 {
		names := make([]string, 0, len(used))
		for n := range used {
			names = append(names, n)
		}
		sort.Strings(names)
		t.Errorf("the dashboard uses only %d metrics (%v): did the parsing break?", len(used), names)
	}
}

// BenchmarkObserveRequest is the metrics side of one observed Produce:
// six summary observations and a counter.
func BenchmarkObserveRequest(b *testing.B) {
	m := New(&staticSource{}, Options{})
	t := &kafka.RequestTiming{Key: int16(kmsg.Produce), Version: 9, Local: time.Millisecond, Total: 2 * time.Millisecond}
	b.ReportAllocs()
	for b.Loop() {
		m.Requests.ObserveRequest(t)
	}
}

// BenchmarkProduced is the per-partition topic accounting of a Produce.
func BenchmarkProduced(b *testing.B) {
	m := New(&staticSource{}, Options{})
	b.ReportAllocs()
	for b.Loop() {
		m.Requests.Produced("orders", 10, 1000, nil)
	}
}

// TestCleanerGauges: the log cleaner's gauges carry Kafka's names and
// units (percent, seconds, ms), the dirty ratio is exported for compacted
// logs only, and nothing of the cleaner is exported when it is off.
func TestCleanerGauges(t *testing.T) {
	src := &staticSource{
		parts: []PartitionStat{
			{Topic: "c", Partition: 0, Compacted: true, DirtyRatio: 0.25},
			{Topic: "d", Partition: 0},
		},
		b: BrokerStat{Cleaner: &CleanerStat{MaxDirtyRatio: 0.25, RecopyRatio: 0.4, MaxCleanTime: 1500 * time.Millisecond, Uncleanable: 1, SinceLastRun: 2 * time.Second, Cleans: 7, Failures: 3}},
	}
	mfs := gather(t, newTestMetrics(t, src))
	expect(t, mfs, 25, "kafka_log_logcleaner_max_dirty_percent")
	expect(t, mfs, 40, "kafka_log_logcleaner_cleaner_recopy_percent")
	expect(t, mfs, 1.5, "kafka_log_logcleaner_max_clean_time_secs")
	expect(t, mfs, 1, "kafka_log_logcleanermanager_uncleanable_partitions_count")
	expect(t, mfs, 2000, "kafka_log_logcleanermanager_time_since_last_run_ms")
	expect(t, mfs, 7, "sluice_log_cleaner_cleans_total")
	expect(t, mfs, 3, "sluice_log_cleaner_failures_total")
	expect(t, mfs, 0.25, "sluice_log_cleaner_dirty_ratio", "partition=0", "topic=c")
	if _, ok := get(mfs, "sluice_log_cleaner_dirty_ratio", "partition=0", "topic=d"); ok {
		t.Error("dirty ratio exported for a log that is not compacted")
	}
	src.b.Cleaner = nil
	if _, ok := get(gather(t, newTestMetrics(t, src)), "kafka_log_logcleaner_max_dirty_percent"); ok {
		t.Error("cleaner gauges exported with the cleaner off")
	}
}

// consumerGroupsSource has classic and KIP-848 groups.
type consumerGroupsSource struct{ *staticSource }

func (consumerGroupsSource) Groups() GroupStat {
	return GroupStat{ByState: map[string]int{"Stable": 1, "Empty": 1}, ConsumerByState: map[string]int{"Stable": 2, "Reconciling": 1}}
}

// TestConsumerGroupMetrics: KIP-848 groups are counted by state
// (consumer-group-count) and by protocol (group-count), and NumGroups
// counts both kinds.
func TestConsumerGroupMetrics(t *testing.T) {
	m := newTestMetrics(t, consumerGroupsSource{&staticSource{}})
	mfs := gather(t, m)
	get := func(name, label, value string) float64 {
		for _, s := range mfs[name].GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return s.GetGauge().GetValue()
				}
			}
			if label == "" {
				return s.GetGauge().GetValue()
			}
		}
		return -1
	}
	for _, c := range []struct {
		name, label, value string
		want               float64
	}{
		{"kafka_coordinator_group_group_coordinator_metrics_consumer_group_count", "state", "stable", 2},
		{"kafka_coordinator_group_group_coordinator_metrics_consumer_group_count", "state", "reconciling", 1},
		{"kafka_coordinator_group_group_coordinator_metrics_group_count", "protocol", "consumer", 3},
		{"kafka_coordinator_group_group_coordinator_metrics_group_count", "protocol", "classic", 2},
		{"kafka_coordinator_group_groupmetadatamanager_numgroups", "", "", 5},
		{"kafka_coordinator_group_groupmetadatamanager_numgroupsstable", "", "", 1},
	} {
		if got := get(c.name, c.label, c.value); got != c.want {
			t.Errorf("%s{%s=%q} = %v, want %v", c.name, c.label, c.value, got, c.want)
		}
	}
}

// TestTransactionGauges: on leaders, the LSO lag is HW - LSO and the
// oldest open transaction's age comes from the clock (0: none); one older
// than LateTransactionAge counts in PartitionsWithLateTransactionsCount;
// followers export neither. transaction.max.timeout.ms moves the late
// age: with 1 min, a 7 min old transaction is late.
func TestTransactionGauges(t *testing.T) {
	src := &staticSource{parts: []PartitionStat{
		{Topic: "a", Partition: 0, Leader: true, Replicas: 1, ISR: 1, MinISR: 1, HighWatermark: 10, LastStable: 4, OpenTxnSince: now.Add(-2 * time.Second)},
		{Topic: "a", Partition: 1, Leader: true, Replicas: 1, ISR: 1, MinISR: 1, HighWatermark: 10, LastStable: 10},
		{Topic: "a", Partition: 2, Leader: true, Replicas: 1, ISR: 1, MinISR: 1, HighWatermark: 7, LastStable: 3, OpenTxnSince: now.Add(-LateTransactionAge(DefaultMaxTransactionTimeout) - time.Minute)},
		{Topic: "b", Partition: 0, Replicas: 3, ISR: 3, MinISR: 2, HighWatermark: 10},
	}}
	mfs := gather(t, newTestMetrics(t, src))
	expect(t, mfs, 6, "sluice_partition_lso_lag", "partition=0", "topic=a")
	expect(t, mfs, 2, "sluice_partition_open_transaction_age_seconds", "partition=0", "topic=a")
	expect(t, mfs, 0, "sluice_partition_lso_lag", "partition=1", "topic=a")
	expect(t, mfs, 0, "sluice_partition_open_transaction_age_seconds", "partition=1", "topic=a")
	expect(t, mfs, 1, "kafka_server_replicamanager_partitionswithlatetransactionscount")
	if _, ok := get(mfs, "sluice_partition_lso_lag", "partition=0", "topic=b"); ok {
		t.Error("a follower exports the LSO lag")
	}

	src.parts[0].OpenTxnSince = now.Add(-7 * time.Minute)
	expect(t, gather(t, newTestMetrics(t, src)), 1, "kafka_server_replicamanager_partitionswithlatetransactionscount")
	short := New(src, Options{ProcRoot: fakeProc(t), Now: func() time.Time { return now }, MaxTransactionTimeout: time.Minute})
	expect(t, gather(t, short), 2, "kafka_server_replicamanager_partitionswithlatetransactionscount")
}

// TestObserveFence: every cause is exported at zero from the start; a
// fence counts under its cause, and only one that moved leaderships is
// timed as a failover.
func TestObserveFence(t *testing.T) {
	m := New(&staticSource{}, Options{})
	mfs := gather(t, m)
	for _, c := range FenceCauses {
		expect(t, mfs, 0, "sluice_controller_fences_total", "cause="+c)
	}
	m.ObserveFence("probe_refused", 300*time.Millisecond, 2)
	m.ObserveFence("session_timeout", 9*time.Second, 0) // led nothing
	m.ObserveFence("gossip_dead", 4*time.Second, 1)
	mfs = gather(t, m)
	expect(t, mfs, 1, "sluice_controller_fences_total", "cause=probe_refused")
	expect(t, mfs, 1, "sluice_controller_fences_total", "cause=session_timeout")
	expect(t, mfs, 1, "sluice_controller_fences_total", "cause=gossip_dead")
	expect(t, mfs, 0, "sluice_controller_fences_total", "cause=new_incarnation")
	h := mfs["sluice_controller_failover_seconds"].Metric[0].Histogram
	if h.GetSampleCount() != 2 || h.GetSampleSum() != 4.3 {
		t.Errorf("failover histogram: %d samples, sum %v; want 2, 4.3", h.GetSampleCount(), h.GetSampleSum())
	}
	for _, b := range h.Bucket {
		if b.GetUpperBound() == 0.5 && b.GetCumulativeCount() != 1 {
			t.Errorf("failovers within 0.5 s: %d, want 1", b.GetCumulativeCount())
		}
	}
}

// TestReplicationBytes: the reassignment and throttled-replica byte
// counts pass through under Kafka's BrokerTopicMetrics names (topic=""
// for all) and sluice_replication_throttled_bytes_total by throttle.
func TestReplicationBytes(t *testing.T) {
	m := New(&staticSource{b: BrokerStat{ReassignmentBytesIn: 10, ReassignmentBytesOut: 20, ThrottledLeaderBytes: 30, ThrottledFollowerBytes: 40}}, Options{ProcRoot: fakeProc(t)})
	mfs := gather(t, m)
	expect(t, mfs, 10, "kafka_server_brokertopicmetrics_reassignmentbytesin_total", "topic=")
	expect(t, mfs, 20, "kafka_server_brokertopicmetrics_reassignmentbytesout_total", "topic=")
	expect(t, mfs, 30, "sluice_replication_throttled_bytes_total", "throttle=leader")
	expect(t, mfs, 40, "sluice_replication_throttled_bytes_total", "throttle=follower")
}
