package node

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-log/sluice/quorum"
	"github.com/sluice-log/sluice/segment"
)

// scrape GETs /metrics from tn and parses it.
func scrape(t *testing.T, tn *testNode) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + tn.http.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %s", resp.Status)
	}
	var p expfmt.TextParser
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

// value returns the value of the series of family name whose labels
// include labels ("k=v" each); it fails the test when there is none.
func value(t *testing.T, mfs map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	mf := mfs[name]
	if mf == nil {
		t.Fatalf("no metric %s", name)
	}
next:
	for _, m := range mf.Metric {
		for _, l := range labels {
			k, v, _ := strings.Cut(l, "=")
			found := false
			for _, lp := range m.Label {
				if lp.GetName() == k && lp.GetValue() == v {
					found = true
				}
			}
			if !found && v != "" {
				continue next
			}
		}
		switch {
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Summary != nil:
			return float64(m.Summary.GetSampleCount())
		}
	}
	t.Fatalf("no series %s%v", name, labels)
	return 0
}

// scrapeUntil scrapes until cond holds of the result, for up to 10s.
func scrapeUntil(t *testing.T, tn *testNode, cond func(map[string]*dto.MetricFamily) bool) map[string]*dto.MetricFamily {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		mfs := scrape(t, tn)
		if cond(mfs) {
			return mfs
		}
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting for the metrics")
		}
		<-tick.C
	}
}

func getStatus(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestMetricsScrape: a real node and franz-go clients; after a produce and
// a consume, /metrics over HTTP shows the traffic, the request times, the
// replica counts and the controller; the durability window (unflushed,
// and the part the kernel has not written back) is there until a flush and
// drops to zero after it; /healthz and /readyz answer 200.
func TestMetricsScrape(t *testing.T) {
	tn := startNode(t, t.TempDir())
	ctx := testCtx(t)
	base := "http://" + tn.http.Addr().String()
	if code, body := getStatus(t, base+"/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz: %d %s", code, body)
	}
	if code, _ := getStatus(t, base+"/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz: %d", code)
	}

	createTopic(ctx, t, newClient(t, tn), "m", 2)
	prod := newClient(t, tn, kgo.DefaultProduceTopic("m"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	const records = 20
	for i := 0; i < records; i++ {
		if err := prod.ProduceSync(ctx, &kgo.Record{Partition: int32(i % 2), Value: []byte(fmt.Sprintf("value-%d", i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cons := newClient(t, tn, kgo.ConsumeTopics("m"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for got := 0; got < records; {
		fs := cons.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}

	// A request is observed once its response has left, which may be
	// just after the client read it: wait for the last ones.
	mfs := scrapeUntil(t, tn, func(mfs map[string]*dto.MetricFamily) bool {
		return value(t, mfs, "kafka_network_requestmetrics_totaltimems_count", "request=Produce") >= records &&
			value(t, mfs, "kafka_network_requestmetrics_localtimems_count", "request=FetchConsumer") >= 1
	})
	for _, topic := range []string{"m", ""} {
		if v := value(t, mfs, "kafka_server_brokertopicmetrics_messagesin_total", "topic="+topic); v != records {
			t.Errorf("MessagesIn{topic=%q} = %v, want %d", topic, v, records)
		}
		if v := value(t, mfs, "kafka_server_brokertopicmetrics_bytesin_total", "topic="+topic); v < records*61 {
			t.Errorf("BytesIn{topic=%q} = %v, want at least %d batch headers", topic, v, records)
		}
	}
	if v := value(t, mfs, "kafka_server_brokertopicmetrics_bytesout_total", "topic=m"); v <= 0 {
		t.Errorf("BytesOut{topic=m} = %v, want > 0", v)
	}
	if v := value(t, mfs, "kafka_network_requestmetrics_totaltimems_count", "request=Produce"); v < records {
		t.Errorf("TotalTimeMs{request=Produce} count = %v, want >= %d", v, records)
	}
	if v := value(t, mfs, "kafka_network_requestmetrics_localtimems_count", "request=FetchConsumer"); v < 1 {
		t.Errorf("LocalTimeMs{request=FetchConsumer} count = %v, want >= 1", v)
	}
	if v := value(t, mfs, "kafka_network_requestmetrics_totaltimems_count", "request=FetchFollower"); v != 0 {
		t.Errorf("TotalTimeMs{request=FetchFollower} count = %v on a node without followers, want 0", v)
	}
	for name, want := range map[string]float64{
		"kafka_server_replicamanager_partitioncount":              2,
		"kafka_server_replicamanager_leadercount":                 2,
		"kafka_server_replicamanager_underreplicatedpartitions":   0,
		"kafka_server_replicamanager_atminisrpartitioncount":      2, // ISR 1 = min.insync.replicas 1
		"kafka_controller_kafkacontroller_activecontrollercount":  1,
		"kafka_controller_kafkacontroller_activebrokercount":      1,
		"kafka_controller_kafkacontroller_offlinepartitionscount": 0,
	} {
		if v := value(t, mfs, name); v != want {
			t.Errorf("%s = %v, want %v", name, v, want)
		}
	}
	if v := value(t, mfs, "kafka_server_raftmetrics_current_state", "current_state=leader"); v != 1 {
		t.Errorf("raft current_state{leader} = %v", v)
	}
	if v := value(t, mfs, "sluice_raft_commits_total"); v < 2 {
		t.Errorf("raft commits = %v, want the registration and the topic at least", v)
	}
	if v := value(t, mfs, "sluice_raft_refused_connections_total"); v != 0 {
		t.Errorf("raft refused connections = %v before any foreign peer", v)
	}
	foreignHello(t, tn.ctrlL.Addr().String())
	scrapeUntil(t, tn, func(mfs map[string]*dto.MetricFamily) bool {
		return value(t, mfs, "sluice_raft_refused_connections_total") == 1
	})
	if v := value(t, mfs, "kafka_log_log_logendoffset", "topic=m", "partition=0"); v != records/2 {
		t.Errorf("LogEndOffset{m,0} = %v, want %d", v, records/2)
	}

	// The durability window: nothing is fsynced (flush.messages is off),
	// so every byte of the partition is in it, until a flush.
	r := tn.replica("m", 0)
	size := float64(r.Log().Size())
	if v := value(t, mfs, "sluice_log_unflushed_bytes", "topic=m", "partition=0"); v != size || v == 0 {
		t.Errorf("unflushed bytes = %v, want the log's %v", v, size)
	}
	// What the kernel has not written back is at most that; after the
	// flush it is 0 too. Kernels without cachestat(2) do not export it.
	haveUnwritten := mfs["sluice_log_unwritten_bytes"] != nil
	if _, err := r.Log().Unwritten(); errors.Is(err, segment.ErrUnwrittenUnsupported) {
		if haveUnwritten {
			t.Errorf("sluice_log_unwritten_bytes exported where the kernel cannot tell")
		}
		t.Logf("sluice_log_unwritten_bytes not checked: %v", err)
	} else if !haveUnwritten {
		t.Errorf("sluice_log_unwritten_bytes not exported on a kernel that can tell")
	} else if v := value(t, mfs, "sluice_log_unwritten_bytes", "topic=m", "partition=0"); v < 0 || v > size {
		t.Errorf("unwritten bytes = %v, want between 0 and the log's %v", v, size)
	}
	flushesBefore := value(t, mfs, "kafka_log_logflushstats_logflushrateandtimems_count")
	if err := r.Log().Flush(); err != nil {
		t.Fatal(err)
	}
	mfs = scrape(t, tn)
	if v := value(t, mfs, "sluice_log_unflushed_bytes", "topic=m", "partition=0"); v != 0 {
		t.Errorf("unflushed bytes after flush = %v, want 0", v)
	}
	if v := value(t, mfs, "sluice_log_unflushed_age_seconds", "topic=m", "partition=0"); v != 0 {
		t.Errorf("unflushed age after flush = %v, want 0", v)
	}
	if haveUnwritten {
		if v := value(t, mfs, "sluice_log_unwritten_bytes", "topic=m", "partition=0"); v != 0 {
			t.Errorf("unwritten bytes after flush = %v, want 0", v)
		}
	}
	if v := value(t, mfs, "sluice_log_flushed_offset", "topic=m", "partition=0"); v != records/2 {
		t.Errorf("flushed offset = %v, want %d", v, records/2)
	}
	if v := value(t, mfs, "kafka_log_logflushstats_logflushrateandtimems_count"); v != flushesBefore+1 {
		t.Errorf("LogFlushRateAndTimeMs count = %v, want %v", v, flushesBefore+1)
	}
}

// TestReadyzNotReady: a node whose broker the metadata shows fenced is
// not ready, and says why.
func TestReadyzNotReady(t *testing.T) {
	tn := startNode(t, t.TempDir())
	ctx := testCtx(t)
	if _, err := tn.ctrl.Propose(ctx, &quorum.FenceBroker{ID: 1, Epoch: tn.epoch.Load()}); err != nil {
		t.Fatalf("fence through the quorum: %v", err)
	}
	code, body := getStatus(t, "http://"+tn.http.Addr().String()+"/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "fenced") {
		t.Fatalf("/readyz of a fenced broker: %d %q", code, body)
	}
}

// TestMetricsWriteback: with sluice.log.writeback.interval.bytes set, the
// node's logs ask the kernel to write back as they grow (the node's
// runner, real files), and the requests show in the metrics without errors.
func TestMetricsWriteback(t *testing.T) {
	tn := startNode(t, t.TempDir(), "sluice.log.writeback.interval.bytes=4096")
	ctx := testCtx(t)
	createTopic(ctx, t, newClient(t, tn), "wb", 1)
	prod := newClient(t, tn, kgo.DefaultProduceTopic("wb"))
	for i := 0; i < 20; i++ {
		v := make([]byte, 1024) // incompressible: the producer compresses
		_, _ = rand.Read(v)
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: v}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	mfs := scrapeUntil(t, tn, func(mfs map[string]*dto.MetricFamily) bool {
		return value(t, mfs, "sluice_log_writeback_requested_bytes_total") >= 16<<10
	})
	if v := value(t, mfs, "sluice_log_writeback_errors_total"); v != 0 {
		t.Errorf("writeback errors = %v", v)
	}
	if size := float64(tn.replica("wb", 0).Log().Size()); value(t, mfs, "sluice_log_writeback_requested_bytes_total") > size {
		t.Errorf("requested more than the log's %v bytes", size)
	}
}

// foreignHello connects to a controller port as a node of another cluster
// would (quorum/hello.go: 0xC5, version 1, cluster id, node id) and waits
// for the controller to close the connection.
func foreignHello(t *testing.T, addr string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	id := "not-this-cluster"
	msg := append([]byte{0xC5, 1, byte(len(id))}, id...)
	msg = append(msg, 0, 0, 0, 9, 0) // node 9, then a raft RPC type byte
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.Copy(io.Discard, c); err != nil {
		t.Fatalf("the controller kept a foreign cluster's connection open: %v", err)
	}
}
