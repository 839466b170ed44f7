package bench

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sluice-log/sluice/tools/cluster"
)

// TestMain lets this test binary be a real `sluice node`: the failover
// bench's node processes are started (and restarted) as
// `<this binary> node --config F`.
func TestMain(m *testing.M) {
	cluster.ServeAsNode()
	os.Exit(m.Run())
}

// TestFaultWindow: the measure of one fault is the longest wait of a
// write to one of the victim's partitions, counted from the fault for a
// write sent before it; the fault is over once every such partition
// acknowledged a write sent after the victim exited.
func TestFaultWindow(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	var f faultWindow
	f.start(t0, []int32{0, 2})
	f.ack(0, at(-50), at(-10), nil) // before the fault: not counted
	f.ack(1, at(10), at(900), nil)  // not the victim's partition
	f.ack(0, at(-20), at(300), nil) // in flight at the fault: 300 ms
	f.exited(at(5))
	f.ack(0, at(6), at(400), nil) // 394 ms, after the exit
	if ok, _ := f.done(); ok {
		t.Fatal("done before partition 2 took a write")
	}
	f.ack(2, at(1), at(700), errors.New("timeout")) // failed: a wait, not a write
	f.ack(2, at(20), at(650), nil)
	ok, d := f.done()
	if !ok || d != 699*time.Millisecond {
		t.Fatalf("done %v after %v, want true after 699ms", ok, d)
	}
	if q := durationQuantile([]time.Duration{3, 1, 2, 4}, 0.5); q != 2 {
		t.Errorf("p50 of 1..4: %v, want 2", q)
	}
	if q := durationQuantile([]time.Duration{3, 1, 2, 4}, 0.99); q != 4 {
		t.Errorf("p99 of 1..4: %v, want 4", q)
	}
}

// TestFailoverSmoke runs the failover bench once of each fault on a real
// process cluster with today's settings: every fault ends with its
// partitions writable within a few seconds and no send fails.
func TestFailoverSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three node processes")
	}
	base, err := cluster.FreeBasePort(13600, 100, 3)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out bytes.Buffer
	rs, err := RunFailover(ctx, &out, FailoverOptions{Faults: 1, RateMBps: 0.5, BasePort: base, Modes: FailoverModes()[:1]})
	t.Log(out.String())
	if err != nil {
		t.Fatal(err)
	}
	measured := map[string]int{}
	for _, r := range rs {
		measured[strings.TrimSuffix(r.Fault, "(ctrl)")] += len(r.Writable)
		if r.Failed != 0 {
			t.Errorf("%s %s: %d sends failed", r.Mode, r.Fault, r.Failed)
		}
		for _, d := range r.Writable {
			if d > 5*time.Second {
				t.Errorf("%s %s: writable after %v, want well under the 9 s session timeout", r.Mode, r.Fault, d)
			}
		}
	}
	if measured["SIGKILL"] != 1 || measured["SIGTERM"] != 1 {
		t.Errorf("measures per fault: %v, want one SIGKILL and one SIGTERM", measured)
	}
	if !strings.Contains(out.String(), "P99(s)") {
		t.Error("no table in the output")
	}
}
