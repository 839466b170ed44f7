package deploy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-log/sluice/quorum"
)

// project is the compose project of the tests; `make cluster-up` uses
// "sluice", so the two never share containers (they do share the host
// ports and the subnet: run make cluster-down first).
const project = "sluice-test"

// hostSeeds are the EXTERNAL listeners compose.yaml publishes.
var hostSeeds = []string{"127.0.0.1:19092", "127.0.0.1:19093", "127.0.0.1:19094"}

// dockerCluster is deploy/compose.yaml started as the project sluice-test.
type dockerCluster struct {
	t     *testing.T
	image string
	files []string
	net   string
}

func skipUnlessDocker(t *testing.T) {
	t.Helper()
	if os.Getenv("SLUICE_DOCKER") == "" {
		t.Skip("set SLUICE_DOCKER=1 (make test-docker) to run the container tests; they need Docker, docker-compose and the image of make image")
	}
	for _, bin := range []string{"docker", "docker-compose", "kcat"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s not found on PATH: make test-docker needs it", bin)
		}
	}
}

func imageName() string {
	if s := os.Getenv("SLUICE_IMAGE"); s != "" {
		return s
	}
	return "sluice:dev"
}

// run runs a command and returns its combined output.
func run(ctx context.Context, stdin string, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

func (d *dockerCluster) compose(ctx context.Context, args ...string) (string, error) {
	full := []string{"-p", project}
	for _, f := range d.files {
		full = append(full, "-f", f)
	}
	return run(ctx, "", "docker-compose", append(full, args...)...)
}

// startCluster brings the compose cluster up (after removing what a
// failed earlier run left) and waits until every node is healthy.
func startCluster(t *testing.T, ctx context.Context) *dockerCluster {
	for _, a := range hostSeeds {
		ln, err := net.Listen("tcp", a)
		if err != nil {
			t.Fatalf("%s is taken (%v): is `make cluster-up` running? Run make cluster-down first", a, err)
		}
		ln.Close()
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	d := &dockerCluster{t: t, image: imageName(), files: []string{filepath.Join(root, "deploy", "compose.yaml")}, net: project + "_net"}
	t.Setenv("SLUICE_IMAGE", d.image)
	if _, err := run(ctx, "", "docker", "image", "inspect", d.image); err != nil {
		t.Fatalf("no image %s: run make image first (make test-docker does): %v", d.image, err)
	}
	if out, err := d.compose(ctx, "down", "-v", "--remove-orphans"); err != nil {
		t.Fatalf("compose down: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if t.Failed() {
			out, _ := d.compose(cctx, "logs", "--no-color", "--tail", "40")
			t.Logf("container logs (tail):\n%s", out)
		}
		if out, err := d.compose(cctx, "down", "-v", "--remove-orphans"); err != nil {
			t.Errorf("compose down: %v\n%s", err, out)
		}
	})
	if out, err := d.compose(ctx, "up", "-d"); err != nil {
		t.Fatalf("compose up: %v\n%s", err, out)
	}
	for i := 1; i <= 3; i++ {
		d.waitHealthy(ctx, i)
	}
	return d
}

// container is the id of node n's container.
func (d *dockerCluster) container(ctx context.Context, n int) string {
	out, err := d.compose(ctx, "ps", "-q", fmt.Sprintf("sluice-%d", n))
	if err != nil || strings.TrimSpace(out) == "" {
		d.t.Fatalf("no container for sluice-%d: %v %s", n, err, out)
	}
	return strings.TrimSpace(out)
}

func (d *dockerCluster) docker(ctx context.Context, args ...string) string {
	d.t.Helper()
	out, err := run(ctx, "", "docker", args...)
	if err != nil {
		d.t.Fatal(err)
	}
	return strings.TrimSpace(out)
}

// waitHealthy waits until node n's container passes its HEALTHCHECK
// (sluice healthcheck: /readyz).
func (d *dockerCluster) waitHealthy(ctx context.Context, n int) {
	d.t.Helper()
	id := d.container(ctx, n)
	waitFor(d.t, ctx, 2*time.Minute, fmt.Sprintf("sluice-%d healthy", n), func() (bool, string) {
		out, err := run(ctx, "", "docker", "inspect", "-f", "{{.State.Status}} {{.State.Health.Status}}", id)
		return err == nil && strings.TrimSpace(out) == "running healthy", out
	})
}

// waitFor polls cond until it holds or within passes; what names the
// condition and cond's text is the last state seen.
func waitFor(t *testing.T, ctx context.Context, within time.Duration, what string, cond func() (bool, string)) time.Duration {
	t.Helper()
	start := time.Now()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	last := ""
	for {
		ok, state := cond()
		if ok {
			return time.Since(start)
		}
		last = state
		if time.Since(start) > within {
			t.Fatalf("%s: not after %v (last: %s)", what, within, last)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %v (last: %s)", what, ctx.Err(), last)
		case <-tick.C:
		}
	}
}

// ackedRecord is one record the cluster acknowledged.
type ackedRecord struct {
	partition int32
	offset    int64
	seq       int
	// sent is when its ProduceSync began, at when it returned.
	sent, at time.Time
}

// workload is an idempotent acks=all producer from the host, writing
// "w-<seq>" round-robin over the partitions, and what it was told.
type workload struct {
	mu      sync.Mutex
	acked   []ackedRecord
	failed  int
	lastErr error
}

func (w *workload) run(ctx context.Context, cl *kgo.Client, topic string, partitions int32) {
	for seq := 0; ctx.Err() == nil; {
		var recs []*kgo.Record
		for range 30 {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(seq) % partitions, Value: fmt.Appendf(nil, "w-%d", seq)})
			seq++
		}
		sent := time.Now()
		res := cl.ProduceSync(ctx, recs...)
		now := time.Now()
		w.mu.Lock()
		for _, r := range res {
			if r.Err != nil {
				w.failed++
				w.lastErr = r.Err
				continue
			}
			s, _ := strconv.Atoi(strings.TrimPrefix(string(r.Record.Value), "w-"))
			w.acked = append(w.acked, ackedRecord{r.Record.Partition, r.Record.Offset, s, sent, now})
		}
		w.mu.Unlock()
	}
}

// ackedSince counts the acknowledgements on partition p of records sent at
// or after t, and returns the first one's time.
func (w *workload) ackedSince(p int32, t time.Time) (int, time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, first := 0, time.Time{}
	for _, a := range w.acked {
		if a.partition == p && !a.sent.Before(t) {
			if n == 0 {
				first = a.at
			}
			n++
		}
	}
	return n, first
}

// partitionState is a partition's leader and ISR as the metadata says.
// ackedTopic returns a kgo client for idempotent acks=all produce through
// the host's listeners (closed at the test's end), its admin client, and
// creates topic with RF=3 and min.insync.replicas=2.
func ackedTopic(t *testing.T, ctx context.Context, topic string, partitions int32) (*kgo.Client, *kadm.Client) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(hostSeeds...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	if r, err := adm.CreateTopic(ctx, partitions, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, topic); err != nil || r.Err != nil {
		t.Fatalf("create topic: %v %v", err, r.Err)
	}
	return cl, adm
}

func partitionState(ctx context.Context, adm *kadm.Client, topic string) (map[int32]kadm.PartitionDetail, error) {
	td, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return nil, err
	}
	t, ok := td[topic]
	if !ok || t.Err != nil {
		return nil, fmt.Errorf("topic %s: %v", topic, t.Err)
	}
	return t.Partitions, nil
}

// waitFullISR waits until every partition of topic has all 3 replicas in
// its ISR and a leader.
func waitFullISR(t *testing.T, ctx context.Context, adm *kadm.Client, topic string) time.Duration {
	t.Helper()
	return waitFor(t, ctx, 3*time.Minute, topic+": every ISR back to 3", func() (bool, string) {
		ps, err := partitionState(ctx, adm, topic)
		if err != nil {
			return false, err.Error()
		}
		for _, p := range ps {
			if len(p.ISR) != 3 || p.Leader < 0 {
				return false, fmt.Sprintf("partition %d leader %d ISR %v", p.Partition, p.Leader, p.ISR)
			}
		}
		return true, ""
	})
}

// TestDocker is make test-docker: see the package doc.
func TestDocker(t *testing.T) {
	skipUnlessDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	d := startCluster(t, ctx)

	// kcat (librdkafka) from the host: the EXTERNAL listener's metadata
	// names every broker at its published 127.0.0.1 port.
	out, err := run(ctx, "", "kcat", "-b", hostSeeds[0], "-L", "-m", "10")
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range hostSeeds {
		if !strings.Contains(out, fmt.Sprintf("broker %d at %s", i+1, a)) {
			t.Fatalf("kcat -L from the host does not show broker %d at %s:\n%s", i+1, a, out)
		}
	}

	const topic, partitions = "acked", 3
	cl, adm := ackedTopic(t, ctx, topic, partitions)

	// A client in another container on the network: bin/sluice (franz-go)
	// through the INTERNAL listeners, produce and consume; kcat reads the
	// same records from the host.
	if !t.Run("client in a container", func(t *testing.T) {
		var lines []string
		for i := range 200 {
			lines = append(lines, fmt.Sprintf("c-%d", i))
		}
		in := strings.Join(lines, "\n") + "\n"
		boot := "sluice-1:9092,sluice-2:9092,sluice-3:9092"
		if _, err := run(ctx, "", "docker", "run", "--rm", "--network", d.net, d.image, "topics", "create", "fromcontainer",
			"--partitions", "3", "--replication-factor", "3", "--bootstrap-server", boot); err != nil {
			t.Fatal(err)
		}
		out, err := run(ctx, in, "docker", "run", "--rm", "-i", "--network", d.net, d.image, "produce", "fromcontainer", "--bootstrap-server", boot)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(out, "fromcontainer/"); n != 200 {
			t.Fatalf("produce in a container acknowledged %d of 200:\n%s", n, out)
		}
		out, err = run(ctx, "", "docker", "run", "--rm", "--network", d.net, d.image, "consume", "fromcontainer", "--from-beginning", "--max-records", "200", "--bootstrap-server", boot)
		if err != nil {
			t.Fatal(err)
		}
		if got := sortedLines(out, "c-"); !slices.Equal(got, sortedLines(in, "c-")) {
			t.Fatalf("consume in a container read %d records, want the 200 produced:\n%s", len(got), out)
		}
		out, err = run(ctx, "", "kcat", "-b", hostSeeds[1], "-C", "-t", "fromcontainer", "-e", "-q")
		if err != nil {
			t.Fatal(err)
		}
		if got := sortedLines(out, "c-"); !slices.Equal(got, sortedLines(in, "c-")) {
			t.Fatalf("kcat from the host read %d records, want the 200 produced in the container", len(got))
		}
	}) {
		return
	}

	var w workload
	wctx, stopWorkload := context.WithCancel(ctx)
	wdone := make(chan struct{})
	go func() { defer close(wdone); w.run(wctx, cl, topic, partitions) }()
	defer func() { stopWorkload(); <-wdone }()
	waitFor(t, ctx, time.Minute, "first acknowledgements on every partition", func() (bool, string) {
		for p := range int32(partitions) {
			if n, _ := w.ackedSince(p, time.Time{}); n == 0 {
				return false, fmt.Sprintf("none on partition %d", p)
			}
		}
		return true, ""
	})

	// docker kill (SIGKILL) the leader of partition 0, wait until the
	// partition takes writes again, restart the container, wait for the
	// ISR to be whole.
	if !t.Run("kill and restart a leader", func(t *testing.T) {
		ttw := killLeader(t, ctx, d, adm, &w, topic, 0)
		t.Logf("time to writable after docker kill of the leader of partition 0: %v", ttw.Round(time.Millisecond))
	}) {
		return
	}

	// Disconnect the leader of partition 1 from the network (a host that
	// drops off the network with its process running): the others fence
	// it and elect another leader; reconnected with its address and name,
	// it is unfenced, catches up and rejoins every ISR.
	if !t.Run("disconnect and reconnect a leader", func(t *testing.T) {
		ps, err := partitionState(ctx, adm, topic)
		if err != nil {
			t.Fatal(err)
		}
		leader := int(ps[1].Leader)
		ttw := disconnectLeader(t, ctx, d, adm, &w, topic, 1)
		t.Logf("network disconnect of node %d (leader of partition 1): first write acknowledged %v after it; reconnected, healthy, ISR whole", leader, ttw.Round(time.Millisecond))
		// Its published EXTERNAL port works again from the host.
		if out, err := run(ctx, "", "kcat", "-b", hostSeeds[leader-1], "-L", "-m", "10"); err != nil || !strings.Contains(out, "3 brokers") {
			t.Fatalf("kcat -L through %s after the reconnect: %v\n%s", hostSeeds[leader-1], err, out)
		}
	}) {
		return
	}

	// Everything acknowledged is there, once, at its offset and in order.
	stopWorkload()
	<-wdone
	checkAcked(t, ctx, &w, topic, partitions)

	t.Run("another cluster's volume", func(t *testing.T) { refuseOtherCluster(t, ctx, d.image) })
}

// killLeader SIGKILLs the container of partition p's leader, waits until
// p is writable again, restarts the container and waits for the ISR; it
// returns the time from the kill command to the first acknowledgement on p
// of a record sent after the container was seen dead.
func killLeader(t *testing.T, ctx context.Context, d *dockerCluster, adm *kadm.Client, w *workload, topic string, p int32) time.Duration {
	t.Helper()
	ps, err := partitionState(ctx, adm, topic)
	if err != nil {
		t.Fatal(err)
	}
	leader := int(ps[p].Leader)
	id := d.container(ctx, leader)
	kill := time.Now()
	d.docker(ctx, "kill", id)
	// docker kill returns before the process is gone (tens of ms): count
	// only records sent once the container is seen exited.
	waitFor(t, ctx, time.Minute, fmt.Sprintf("sluice-%d exited", leader), func() (bool, string) {
		out, err := run(ctx, "", "docker", "inspect", "-f", "{{.State.Running}}", id)
		return err == nil && strings.TrimSpace(out) == "false", out
	})
	dead := time.Now()
	waitFor(t, ctx, 2*time.Minute, fmt.Sprintf("partition %d writable after its leader %d was killed", p, leader), func() (bool, string) {
		n, _ := w.ackedSince(p, dead)
		return n > 0, fmt.Sprintf("%d acks since the kill", n)
	})
	_, first := w.ackedSince(p, dead)
	waitFor(t, ctx, time.Minute, fmt.Sprintf("partition %d: a leader other than the killed %d in the metadata", p, leader), func() (bool, string) {
		ps, err := partitionState(ctx, adm, topic)
		if err != nil {
			return false, err.Error()
		}
		return int(ps[p].Leader) != leader, fmt.Sprintf("leader %d", ps[p].Leader)
	})
	d.docker(ctx, "start", id)
	d.waitHealthy(ctx, leader)
	waitFullISR(t, ctx, adm, topic)
	return first.Sub(kill)
}

// checkAcked reads every partition from its start to its end from the
// host and checks each acknowledged record: present at its offset, its
// value nowhere else, and a producer's later records at later offsets.
func checkAcked(t *testing.T, ctx context.Context, w *workload, topic string, partitions int32) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(hostSeeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	offsets := map[int32]kgo.Offset{}
	want := map[int32]int64{}
	for p := range partitions {
		o, _ := ends.Lookup(topic, p)
		want[p] = o.Offset
		offsets[p] = kgo.NewOffset().AtStart()
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(hostSeeds...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	logs := map[int32]map[int64]string{}
	where := map[string]int{}
	read := map[int32]int64{}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for done := false; !done; {
		fs := cons.PollFetches(rctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("reading back: %v (read %v of %v)", err, read, want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if logs[r.Partition] == nil {
				logs[r.Partition] = map[int64]string{}
			}
			logs[r.Partition][r.Offset] = string(r.Value)
			where[string(r.Value)]++
			read[r.Partition] = r.Offset + 1
		})
		done = true
		for p := range partitions {
			done = done && read[p] >= want[p]
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	last := map[int32]ackedRecord{}
	for _, a := range w.acked {
		v := fmt.Sprintf("w-%d", a.seq)
		if got := logs[a.partition][a.offset]; got != v {
			t.Fatalf("acknowledged %s at %d/%d, the log has %q there", v, a.partition, a.offset, got)
		}
		if where[v] != 1 {
			t.Fatalf("acknowledged %s is in the log %d times", v, where[v])
		}
		if l, ok := last[a.partition]; ok && a.seq > l.seq && a.offset <= l.offset {
			t.Fatalf("partition %d: w-%d acknowledged at %d, after w-%d at %d", a.partition, a.seq, a.offset, l.seq, l.offset)
		}
		last[a.partition] = a
	}
	t.Logf("%d acknowledged records all read back once and in order (%d sends failed; last error %v); log ends %v", len(w.acked), w.failed, w.lastErr, want)
	if len(w.acked) == 0 {
		t.Fatal("nothing was acknowledged")
	}
}

// refuseOtherCluster formats a volume for one cluster (sluice init in a
// container), then starts a node on it with another cluster's id: the
// container must exit 1 with the reason.
func refuseOtherCluster(t *testing.T, ctx context.Context, image string) {
	vol := "sluice-test-other-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if _, err := run(ctx, "", "docker", "volume", "create", vol); err != nil {
		t.Fatal(err)
	}
	defer run(context.Background(), "", "docker", "volume", "rm", "-f", vol)
	mine, other := quorum.NewUUID().String(), quorum.NewUUID().String()
	if _, err := run(ctx, "", "docker", "run", "--rm", "-v", vol+":/var/lib/sluice", image,
		"init", "--dir", "/var/lib/sluice", "--cluster-id", mine, "--node-id", "1", "--initial-controllers", "1@n1:9093"); err != nil {
		t.Fatal(err)
	}
	out, err := run(ctx, "", "docker", "run", "--rm", "-v", vol+":/var/lib/sluice",
		"-e", "SLUICE_NODE_ID=1", "-e", "SLUICE_CLUSTER_ID="+other, "-e", "SLUICE_INITIAL_CONTROLLERS=1@n1:9093",
		"-e", "SLUICE_ADVERTISED_LISTENERS=PLAINTEXT://n1:9092,CONTROLLER://n1:9093", image)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("node on another cluster's volume: %v, want exit status 1:\n%s", err, out)
	}
	if want := "was formatted for cluster " + mine + ", not " + other; !strings.Contains(out, want) {
		t.Fatalf("the container's output does not say %q:\n%s", want, out)
	}
}

// sortedLines are the lines of s that start with prefix, sorted.
func sortedLines(s, prefix string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return out
}
