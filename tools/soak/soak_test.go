package soak

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sluice-log/sluice/tools/cluster"
)

// TestSoakShort is `make soak` in a bounded form for `make test`: it builds
// bin/sluice, starts three real node processes, runs the soak for 75 s with
// a fixed seed (3 s session timeout so failovers take seconds, a shorter
// recovery bound) and checks that every invariant held, that every fault
// kind was injected and showed its effect, that the live consumer read
// every partition, that the workload's poison records (over
// max.message.bytes) failed definitely, and that the bad client's forged
// fetches and poison batches were all refused, and that the compacted
// topic was written and cleaned under the faults (offsets compacted away,
// latest values and tombstones checked). Network partitions need root,
// iptables and cgroup v2; without them that kind is left out, with a log
// line saying why, except in CI (env CI set), where that fails the test.
func TestSoakShort(t *testing.T) {
	if testing.Short() {
		t.Skip("builds bin/sluice and runs a 75 s soak of three node processes")
	}
	dir := t.TempDir()
	exe := sluiceBinary(t)
	o := Options{
		Dir: filepath.Join(dir, "c"), Nodes: 3, BasePort: freeBase(t), Duration: 75 * time.Second,
		Seed: 20261130, Topic: "soak", Partitions: 4, RF: 3, MinISR: 2,
		Producers: 2, Rate: 600, ValueSize: 64, InFlight: 1000, DeliveryTimeout: 20 * time.Second,
		Faults: AllFaults, FaultGap: 2 * time.Second, RecoveryBound: 20 * time.Second,
		PowerLoss: true, NetFaults: true, Durability: "sync", PoisonEvery: 3 * time.Second,
		BadClientEvery:    time.Second,
		NodeConfigs:       map[string]string{"broker.session.timeout.ms": "3000"},
		Executable:        exe,
		CompactPartitions: 2, CompactTopic: "soak-compacted", CompactRate: 200, CompactKeys: 500,
		Groups: 2, GroupMembers: 2, GroupChurn: 10 * time.Second, GroupCommitEvery: 500 * time.Millisecond, GroupSession: 6 * time.Second,
		EOSMembers: 2, EOSTopic: "soak-eos-out", EOSChurn: 10 * time.Second, EOSTxnTimeout: 10 * time.Second, EOSIfServed: true,
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
	want := []string{FaultKillLeader, FaultKillController, FaultPause, FaultPowerLoss, FaultKillCoordinator}
	switch {
	case fr.NetFaultsOff != "" && os.Getenv("CI") != "":
		t.Errorf("network partitions not injected, and CI is set (.ci/run installs iptables): %s", fr.NetFaultsOff)
	case fr.NetFaultsOff != "":
		t.Logf("network partitions not injected: %s", fr.NetFaultsOff)
	default:
		want = append(want, FaultPartition)
	}
	switch {
	case fr.EOSOff != "" && os.Getenv("CI") != "":
		t.Errorf("the exactly-once pipeline did not run, and CI is set: %s", fr.EOSOff)
	case fr.EOSOff != "":
		t.Logf("the exactly-once pipeline did not run: %s", fr.EOSOff)
	default:
		want = append(want, FaultKillTxnCoordinator)
		// The pipeline committed transactions, read its output back
		// and covered input, so that its invariants checked something.
		if e := fr.EOS; e == nil || e.Committed == 0 || e.Output == 0 || e.Covered == 0 {
			t.Errorf("exactly-once pipeline: %+v: want committed transactions, output read back, input covered", e)
		} else {
			t.Logf("exactly-once pipeline: %d transactions (%d committed, %d aborted, %d unknown), %s", e.Txns, e.Committed, e.Aborted, e.Unknown, e.TxnTime)
		}
	}
	for _, k := range want {
		if fr.Report.Faults[k] == 0 {
			t.Errorf("no %s fault injected (faults %v, skipped %v)", k, fr.Report.Faults, fr.Skipped)
		}
	}
	if fr.Counts.Acked == 0 || fr.Counts.Failed == 0 {
		t.Errorf("acknowledged %d, definitely failed %d: want both > 0 (the poison records must fail)", fr.Counts.Acked, fr.Counts.Failed)
	}
	// The bad client's forged fetches and poison batches were sent and
	// refused (an accepted one is a bad-accepted violation above).
	if fr.Counts.BadSent == 0 || fr.Counts.BadRefused == 0 {
		t.Errorf("bad client: sent %d, refused %d: want both > 0", fr.Counts.BadSent, fr.Counts.BadRefused)
	}
	// Every injected fault showed its effect (a fault without one is a
	// no-effect violation, so the report would have failed; this says
	// which).
	for _, f := range fr.Faults {
		if f.Kind == NodeExited {
			// Not a verdict of the soak (no acknowledged record needs
			// it), but a node must not die of anything the soak does.
			t.Errorf("%s: %s", f.Target, f.Effect)
			continue
		}
		if f.Skipped == "" && (f.Effect == "" || f.NoEffect != "") {
			t.Errorf("fault %s %s: effect %q, no effect %q", f.Kind, f.Target, f.Effect, f.NoEffect)
		}
	}
	// The compacted topic: written with overwrites and tombstones, and
	// cleaned (offsets compacted away), so that its invariants checked
	// something.
	if cc := fr.Compact; cc == nil || cc.Acked == 0 || cc.Tombstones == 0 || cc.Holes == 0 || cc.LatestPresent == 0 || cc.Cleans == 0 {
		t.Errorf("compacted topic: %+v: want acknowledged records and tombstones, offsets compacted away, cleans counted, latest values present", cc)
	}
	// The consumer groups consumed and committed, and rebalanced, so that
	// their invariants checked something.
	if g := fr.Groups; g == nil || g.Deliveries == 0 || g.CommitAcked == 0 || g.Checked == 0 || g.Snapshots == 0 || g.RebalanceTime.N == 0 {
		t.Errorf("consumer groups: %+v: want deliveries, acknowledged commits, checked records, offsets read back and settled rebalances", g)
	} else {
		t.Logf("consumer groups: rebalance time %s, commit latency %s", g.RebalanceTime, g.CommitLatency)
	}
	// The live consumer read every partition during the run, so that the
	// vanished, above-hw and live-conflict checks checked something.
	for tp, c := range fr.PerTP {
		if c.Live == 0 {
			t.Errorf("%s: the live consumer read nothing (acknowledged %d): vanished, above-hw and offset-conflict of live reads checked nothing", tp, c.Acked)
		}
	}
}

// sluiceBinary builds bin/sluice once for every test of the package.
func sluiceBinary(t *testing.T) string {
	t.Helper()
	build.once.Do(func() {
		dir, err := os.MkdirTemp("", "sluice-soak-test-")
		if err != nil {
			build.err = err
			return
		}
		build.exe = filepath.Join(dir, "sluice")
		out, err := exec.Command("go", "build", "-o", build.exe, "../sluice").CombinedOutput()
		if err != nil {
			build.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if build.err != nil {
		t.Fatal(build.err)
	}
	return build.exe
}

var build struct {
	once sync.Once
	exe  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if build.exe != "" {
		os.RemoveAll(filepath.Dir(build.exe))
	}
	os.Exit(code)
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
