package soak

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluice-log/sluice/tools/cluster"
)

// TestSoakShort is `make soak` in a bounded form for `make test`: it builds
// bin/sluice, starts three real node processes, runs the soak for 75 s with
// a fixed seed (3 s session timeout so failovers take seconds, a shorter
// recovery bound) and checks that every invariant held, that every fault
// kind was injected and that the workload's poison records (over
// max.message.bytes) failed definitely. Network partitions need root,
// iptables and cgroup v2; without them that kind is left out, with a log
// line saying why.
func TestSoakShort(t *testing.T) {
	if testing.Short() {
		t.Skip("builds bin/sluice and runs a 75 s soak of three node processes")
	}
	dir := t.TempDir()
	exe := filepath.Join(dir, "sluice")
	build := exec.Command("go", "build", "-o", exe, "../sluice")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	o := Options{
		Dir: filepath.Join(dir, "c"), Nodes: 3, BasePort: freeBase(t), Duration: 75 * time.Second,
		Seed: 20261130, Topic: "soak", Partitions: 4, RF: 3, MinISR: 2,
		Producers: 2, Rate: 600, ValueSize: 64, InFlight: 1000, DeliveryTimeout: 20 * time.Second,
		Faults: AllFaults, FaultGap: 2 * time.Second, RecoveryBound: 20 * time.Second,
		PowerLoss: true, NetFaults: true, Durability: "sync", PoisonEvery: 3 * time.Second,
		NodeConfigs: map[string]string{"broker.session.timeout.ms": "3000"},
		Executable:  exe,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	var out bytes.Buffer
	fr, err := run(ctx, &out, o) // run serializes its writers; out is read once it returned
	if err != nil || !fr.OK {
		t.Errorf("soak: err %v\n%s", err, out.String())
		logNodes(t, o.Dir)
		return
	}
	t.Logf("soak output:\n%s", out.String())
	want := []string{FaultKillLeader, FaultKillController, FaultPause, FaultPowerLoss}
	if fr.NetFaultsOff != "" {
		t.Logf("network partitions not injected: %s", fr.NetFaultsOff)
	} else {
		want = append(want, FaultPartition)
	}
	for _, k := range want {
		if fr.Report.Faults[k] == 0 {
			t.Errorf("no %s fault injected (faults %v, skipped %v)", k, fr.Report.Faults, fr.Skipped)
		}
	}
	if fr.Counts.Acked == 0 || fr.Counts.Failed == 0 {
		t.Errorf("acknowledged %d, definitely failed %d: want both > 0 (the poison records must fail)", fr.Counts.Acked, fr.Counts.Failed)
	}
}

func logNodes(t *testing.T, dir string) {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(dir, "node-*", "node.log"))
	for _, f := range logs {
		b, _ := os.ReadFile(f)
		if len(b) > 20000 {
			b = b[len(b)-20000:]
		}
		t.Logf("%s (tail):\n%s", f, b)
	}
}

// freeBase finds a base port whose derived ports (every node's Kafka,
// controller, gossip and HTTP ports) are free now. Bases end in 5, so they
// never meet tools/demo's test (bases end in 0) even when both run at once:
// the four port offsets differ by 0, 1, 2, 3, 4, 6, 7, 8 or 9 mod 10.
func freeBase(t *testing.T) int {
	t.Helper()
	base, err := cluster.FreeBasePort(27005, 400, 3)
	if err != nil {
		t.Fatal(err)
	}
	return base
}
