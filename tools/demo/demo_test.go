package demo

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-log/sluice/tools/cluster"
)

// TestLocalClusterDemo is what `make demo` does, end to end: build
// bin/sluice, start three real node processes with the launcher, run the
// demo against them (kgo, idempotent acks=all, read back and compared), and
// stop the cluster. Each run kills the leader of partition 0, sees the new
// leaders, checks every acknowledged record and restarts the killed node
// until it is back in every ISR. In `make test` it is bounded and quiet:
// one run, 1,000 records, broker.session.timeout.ms=3000 so the failover
// takes seconds; with SLUICE_E2E=1 (make e2e) it runs the demo twice on
// the same cluster with the default session timeout, as `make demo` does.
func TestLocalClusterDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds bin/sluice and starts three node processes")
	}
	full := os.Getenv("SLUICE_E2E") != ""
	runs, records, props := 1, 1000, map[string]string{"broker.session.timeout.ms": "3000"}
	if full {
		runs, records, props = 2, 2000, nil
	}
	dir := t.TempDir()
	exe := filepath.Join(dir, "sluice")
	build := exec.Command("go", "build", "-o", exe, "../sluice")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	base := freeBase(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var log bytes.Buffer
	l, err := cluster.Start(ctx, &log, cluster.Options{Dir: filepath.Join(dir, "c"), Nodes: 3, BasePort: base, Executable: exe, Properties: props})
	defer func() {
		if err := cluster.Stop(context.Background(), &log, l); err != nil {
			t.Errorf("stop: %v", err)
		}
		// The demo restarted a node behind l's back: none may outlive
		// the test (they did, one per run, holding ports and CPU).
		if cur, err := cluster.ReadLayout(l.Dir); err == nil {
			for _, n := range cur.Nodes {
				if cluster.Alive(cur, n.ID) {
					t.Errorf("node %d (pid %d) still runs after stop", n.ID, n.PID)
				}
			}
		}
		if t.Failed() {
			t.Log(log.String())
			for _, n := range l.Nodes {
				b, _ := os.ReadFile(n.LogFile)
				t.Logf("node %d log:\n%s", n.ID, b)
			}
		}
	}()
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	for run := 0; run < runs; run++ {
		var out bytes.Buffer
		if err := run1(ctx, &out, l.Dir, exe, records); err != nil {
			t.Fatalf("demo run %d: %v\n%s", run, err, out.String())
		}
		if !strings.Contains(out.String(), "every acknowledged record is there") || !strings.Contains(out.String(), "new leaders") ||
			!strings.Contains(out.String(), "every replica is back in sync") {
			t.Fatalf("demo run %d said:\n%s", run, out.String())
		}
	}
}

func run1(ctx context.Context, w *bytes.Buffer, dir, exe string, records int) error {
	return options{dir: dir, topic: "demo", partitions: 3, rf: 3, records: records, timeout: time.Minute, exe: exe}.run(ctx, w)
}

// freeBase finds a base port whose twelve derived ports are free now. The
// ports stay below Linux's ephemeral range (32768+, where an outgoing
// connection could take one during a restart) and apart from the other
// suites' ranges (node tests 12000-17999, the soak test 25959-31847): the
// demo's run from 18954 to 25842.
func freeBase(t *testing.T) int {
	t.Helper()
	base, err := cluster.FreeBasePort(20000, 500, 3)
	if err != nil {
		t.Fatal(err)
	}
	return base
}
