package bench

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"github.com/sluice-log/sluice/tools/internal/stats"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestFullMatrixHasEveryCombination(t *testing.T) {
	cells := FullDimensions().Cells()
	if len(cells) != 3*3*2*2*2*2 {
		t.Fatalf("%d cells, want 144", len(cells))
	}
	seen := map[string]bool{}
	for _, c := range cells {
		if seen[c.Name()] {
			t.Fatalf("cell %q twice", c.Name())
		}
		seen[c.Name()] = true
	}
	narrowed := Dimensions{RF: []int{1}, Acks: []string{"all"}}.Filter(cells)
	if len(narrowed) != 24 {
		t.Fatalf("rf=1 acks=all leaves %d cells, want 24", len(narrowed))
	}
}

func TestPlan(t *testing.T) {
	cells, peer := Plan(Options{Quick: true, Rate: 20, Peer: "nats", Dims: Dimensions{RF: []int{1}}})
	// 4 quick cells at RF 1 and one fixed-load cell.
	if len(cells) != 5 || cells[4].RateMBps != 20 || cells[4].RF != 1 {
		t.Fatalf("cells: %+v", cells)
	}
	// page-cache 100B, 1KiB, sync-class 1KiB (sync and flush1 share it), the rate cell.
	if len(peer) != 4 {
		t.Fatalf("peer cells: %+v", peer)
	}
	for i := 1; i < len(peer); i++ {
		if peer[i-1].Durability > peer[i].Durability {
			t.Fatalf("peer cells not grouped by the server-wide sync setting: %+v", peer)
		}
	}
	full, _ := Plan(Options{Dims: Dimensions{Durability: []string{DurSync}, Sizes: []int{1024}}})
	if len(full) != 3*2*2*2 {
		t.Fatalf("full matrix narrowed to sync 1KiB: %d cells, want 24", len(full))
	}
	if c := (Cell{Acks: "1", Durability: DurPageCache, Size: 100, RF: 3, Partitions: 6}); peerKey(c) != "" {
		t.Fatal("acks=1 has no peer cell")
	}
}

func TestParseFlags(t *testing.T) {
	got, err := parseInts("sizes", []string{"100", "1KiB", "4k"})
	if err != nil || len(got) != 3 || got[0] != 100 || got[1] != 1024 || got[2] != 4096 {
		t.Fatalf("parseInts = %v, %v", got, err)
	}
	if _, err := parseInts("rf", []string{"zero"}); err == nil {
		t.Fatal("a word is not a number")
	}
	if _, err := parseAxis("acks", []string{"2"}, []string{"0", "1", "all"}); err == nil || !strings.Contains(err.Error(), "0,1,all") {
		t.Fatalf("acks=2: %v", err)
	}
	if cfg := (Cell{Durability: DurFlush1}).TopicConfigs(); *cfg["flush.messages"] != "1" {
		t.Fatal("flush1 sets flush.messages=1")
	}
	if cfg := (Cell{Durability: DurSync}).TopicConfigs(); *cfg["sluice.durability"] != "sync" {
		t.Fatal("sync sets sluice.durability=sync")
	}
}

func sampleReport() *Report {
	ok := Result{System: "sluice", Cell: Cell{Acks: "all", Durability: DurPageCache, Size: 1024, RF: 3, Partitions: 6, Batching: BatchDefault},
		Records: 200000, Bytes: 200000 * 1024, Consumed: 200000,
		Produce: stats.Latency{Count: 200000, Avg: 3.5, Max: 41.2, P50: 2.9, P95: 7.4, P99: 12.25, P999: 30.1},
		E2E:     stats.Latency{Count: 200000, P50: 4, P99: 15, P999: 33}}
	ok.Name = ok.Cell.Name()
	ok.finish(10 * time.Second)
	bad := Result{System: "sluice", Cell: Cell{Acks: "all", Durability: DurSync, Size: 1024, RF: 3, Partitions: 6, Batching: BatchDefault},
		Err: "create topic: INVALID_CONFIG: unknown topic config sluice.durability"}
	bad.Name = bad.Cell.Name()
	peer := Result{System: "nats", Cell: PeerCell(ok.Cell), Records: 50000, Bytes: 50000 * 1024,
		Produce: stats.Latency{Count: 50000, P50: 5, P99: 24.5, P999: 40}}
	peer.Name = peer.Cell.Name()
	peer.finish(10 * time.Second)
	return &Report{Nodes: 3, CellSeconds: 10, Sluice: []Result{ok, bad}, Peer: []Result{peer}, PeerName: "nats"}
}

func TestPerfLineIsKafkas(t *testing.T) {
	rep := sampleReport()
	got := PerfLine(rep.Sluice[0])
	want := "200000 records sent, 20000.0 records/sec (19.53 MB/sec), 3.50 ms avg latency, 41.20 ms max latency, 2 ms 50th, 7 ms 95th, 12 ms 99th, 30 ms 99.9th."
	if got != want {
		t.Fatalf("perf line\n got %s\nwant %s", got, want)
	}
	if got := PerfLine(rep.Sluice[1]); !strings.HasPrefix(got, "FAILED: create topic") {
		t.Fatalf("a failed cell says so: %s", got)
	}
	if !strings.Contains(DetailLine(rep.Sluice[0]), "end-to-end p50 4.000 ms, p99 15.000 ms") {
		t.Fatalf("detail: %s", DetailLine(rep.Sluice[0]))
	}
}

func TestTableShowsRatiosAndFailures(t *testing.T) {
	var b bytes.Buffer
	if err := WriteTable(&b, sampleReport()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"rec/s sluice/nats", "4.00x", "0.50x", "FAILED sluice rf3 acks=all sync 1KiB p6 default: create topic: INVALID_CONFIG"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestCSVAndJSONRoundTrip(t *testing.T) {
	rep := sampleReport()
	var b bytes.Buffer
	if err := WriteCSV(&b, rep); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 || len(rows[1]) != len(csvHeader) {
		t.Fatalf("%d rows of %d columns, want 4 of %d", len(rows), len(rows[0]), len(csvHeader))
	}
	col := func(name string) int {
		for i, h := range csvHeader {
			if h == name {
				return i
			}
		}
		t.Fatalf("no column %s", name)
		return -1
	}
	if rows[1][col("records_per_sec")] != "20000.000" || rows[2][col("error")] == "" || rows[3][col("system")] != "nats" {
		t.Fatalf("rows: %v", rows)
	}
	b.Reset()
	if err := WriteJSON(&b, rep); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Sluice) != 2 || back.Sluice[0].Produce.P99 != 12.25 || back.Peer[0].Cell.Durability != natsSyncDefault {
		t.Fatalf("json round trip: %+v", back)
	}
}

func TestPlotWritesAPNG(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bench.png")
	if err := WritePlot(path, sampleReport()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) || len(b) < 5000 {
		t.Fatalf("not a PNG picture: %d bytes", len(b))
	}
	if err := WritePlot(path, &Report{Sluice: []Result{sampleReport().Sluice[1]}}); err == nil {
		t.Fatal("nothing measured, nothing to plot: want an error")
	}
}
