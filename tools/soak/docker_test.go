package soak

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSoakDocker is `make soak-docker` in a bounded form for `make
// test-docker` (not make test: it needs Docker, docker-compose and the
// image of make image; SLUICE_DOCKER=1 runs it): the soak against the
// five containers of deploy/compose.yaml and compose.brokers.yaml, every
// docker fault kind once (docker kill, docker stop, docker pause, a
// network disconnect, an iptables cut and packet loss in a container's
// namespace, a host lost with its disk and replaced by a new broker),
// each showing its effect, and every invariant holding.
func TestSoakDocker(t *testing.T) {
	if os.Getenv("SLUICE_DOCKER") == "" {
		t.Skip("set SLUICE_DOCKER=1 (make test-docker) to run the soak against the compose cluster; it needs Docker, docker-compose, iptables and the image of make image")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	image := os.Getenv("SLUICE_IMAGE")
	if image == "" {
		image = "sluice:dev"
	}
	o := Options{
		Dir: t.TempDir(), Docker: true, Image: image, ComposeProject: "sluice-soak-test",
		ComposeFiles: []string{filepath.Join(root, "deploy", "compose.yaml"), filepath.Join(root, "deploy", "compose.brokers.yaml")},
		Duration:     150 * time.Second, Seed: 20261202, Topic: "soak", Partitions: 4, RF: 3, MinISR: 2,
		Producers: 2, Rate: 400, ValueSize: 64, InFlight: 1000, DeliveryTimeout: 20 * time.Second,
		Faults: DockerFaults, FaultGap: time.Second, RecoveryBound: 20 * time.Second,
		Durability: "sync", PoisonEvery: 3 * time.Second, BadClientEvery: time.Second,
		CompactPartitions: 1, CompactTopic: "soak-compacted", CompactRate: 100, CompactKeys: 300,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var out bytes.Buffer
	fr, err := run(ctx, &out, o)
	if err != nil || !fr.OK {
		t.Fatalf("soak --docker: err %v\n%s", err, out.String())
	}
	t.Logf("soak --docker output:\n%s", out.String())
	for _, k := range DockerFaults {
		if fr.Report.Faults[k] == 0 {
			t.Errorf("no %s fault injected (faults %v, skipped %v)", k, fr.Report.Faults, fr.Skipped)
		}
	}
	for _, f := range fr.Faults {
		if f.Kind == NodeExited {
			t.Errorf("%s: %s", f.Target, f.Effect)
			continue
		}
		if f.Skipped == "" && (f.Effect == "" || f.NoEffect != "") {
			t.Errorf("fault %s %s: effect %q, no effect %q", f.Kind, f.Target, f.Effect, f.NoEffect)
		}
	}
	if fr.Counts.Acked == 0 || fr.Counts.Failed == 0 || fr.Counts.Lost != 0 {
		t.Errorf("acknowledged %d, definitely failed %d, lost %d: want both > 0 and none lost", fr.Counts.Acked, fr.Counts.Failed, fr.Counts.Lost)
	}
	if !strings.Contains(out.String(), "share the host's clock") {
		t.Errorf("the run did not say its containers share the host's clock")
	}
}

// TestDockerOptions: --docker refuses what only node processes can do, and
// its quota gives the ten docker kills and ten disconnects per 10 minutes
// whose time to writable the note reports.
func TestDockerOptions(t *testing.T) {
	base := Options{Docker: true, ComposeFiles: []string{"c.yaml"}, ComposeProject: "p", Image: "i", Faults: DockerFaults}
	for _, c := range []struct {
		name string
		set  func(*Options)
		want string // "" valid
	}{
		{"defaults", func(*Options) {}, ""},
		{"negative control", func(o *Options) { o.NegativeControl = NegAcks1 }, "runs on node processes"},
		{"power loss", func(o *Options) { o.Faults = []string{FaultPowerLoss} }, "no fault of the docker backend"},
		{"node config", func(o *Options) { o.NodeConfigs = map[string]string{"a": "b"} }, "SLUICE_* variables"},
		{"no image", func(o *Options) { o.Image = "" }, "--image"},
	} {
		o := base
		o.PowerLoss, o.NetFaults = true, true
		c.set(&o)
		err := o.validateDocker()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: got %v, want an error saying %q", c.name, err, c.want)
		case c.want == "" && (o.PowerLoss || o.NetFaults):
			t.Errorf("%s: power loss %v, process net faults %v: want both off", c.name, o.PowerLoss, o.NetFaults)
		}
	}
	o := base
	o.Duration = 10 * time.Minute
	q := o.quota()
	if q[FaultKillLeader] != 10 || q[FaultDisconnect] != 10 || q[FaultHostLoss] != 2 || q[FaultPowerLoss] != 0 {
		t.Errorf("docker quota for 10m: %v: want 10 kill-leader, 10 net-disconnect, 2 host-loss, no power-loss", q)
	}
	o.Docker = false
	o.Faults = AllFaults
	if q := o.quota(); q[FaultKillLeader] != 21 {
		t.Errorf("process quota for 10m: %v: want the process backend's 21 kill-leader", q)
	}
}
