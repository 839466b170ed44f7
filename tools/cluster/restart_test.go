package cluster

import (
	"context"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets this test binary be a real `sluice node`: the cluster's
// node processes are started as `<this binary> node --config F`.
func TestMain(m *testing.M) {
	ServeAsNode()
	os.Exit(m.Run())
}

// TestRestartChecksTheNodeIsUp: a one-node cluster of a real node process.
// Restarting it with a setting the node refuses is an error that quotes
// the node's log, and leaves cluster.json alone; with the setting fixed,
// the restart succeeds, the process runs, and cluster.json (written
// atomically, like server.properties) records its pid.
func TestRestartChecksTheNodeIsUp(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node process")
	}
	base, err := FreeBasePort(25200, 150, 1)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	l, err := Start(ctx, io.Discard, Options{Dir: t.TempDir(), Nodes: 1, BasePort: base, Executable: exe})
	t.Cleanup(func() { _ = Stop(context.Background(), io.Discard, l) })
	if err != nil {
		t.Fatal(err)
	}
	n := l.Nodes[0]
	good, err := os.ReadFile(n.Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeFileAtomic(n.Config, append(good, []byte("num.partitions=0\n")...)); err != nil {
		t.Fatal(err)
	}
	err = RestartWith(ctx, l, n.ID, exe)
	if err == nil || !strings.Contains(err.Error(), "exited at once") || !strings.Contains(err.Error(), "num.partitions") {
		t.Fatalf("restart with num.partitions=0: %v, want an error quoting the node's complaint", err)
	}
	if cur, err := readLayout(l.Dir); err != nil || cur.Nodes[0].PID != n.PID {
		t.Fatalf("cluster.json after the failed restart: %+v %v, want the old pid %d", cur.Nodes, err, n.PID)
	}

	if err := writeFileAtomic(n.Config, good); err != nil {
		t.Fatal(err)
	}
	if err := RestartWith(ctx, l, n.ID, exe); err != nil {
		t.Fatal(err)
	}
	cur, err := readLayout(l.Dir)
	if err != nil {
		t.Fatal(err)
	}
	l = cur
	if pid := cur.Nodes[0].PID; pid == n.PID || !alive(pid) {
		t.Fatalf("after the restart: pid %d (was %d), alive %v", pid, n.PID, alive(pid))
	}
	if err := syscall.Kill(cur.Nodes[0].PID, 0); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(l.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}
