package bench

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/sluice-log/sluice/node"
	"github.com/sluice-log/sluice/node/config"
	"github.com/sluice-log/sluice/node/meta"
	"github.com/sluice-log/sluice/quorum"
)

// startNode runs a real one-node cluster in this process and returns its
// Kafka address.
func startNode(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	listen := func() net.Listener {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		return ln
	}
	kl, cl, hl := listen(), listen(), listen()
	if _, err := meta.Format(dir, meta.Meta{ClusterID: quorum.NewUUID().String(), NodeID: 1,
		InitialControllers: []quorum.Voter{{ID: 1, Addr: cl.Addr().String()}}}); err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("node", pflag.ContinueOnError)
	config.Flags(fs)
	if err := fs.Parse([]string{"--node.id=1", "--log.dirs=" + dir,
		"--listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"--advertised.listeners=PLAINTEXT://" + kl.Addr().String() + ",CONTROLLER://" + cl.Addr().String()}); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(fs, []string{})
	if err != nil {
		t.Fatal(err)
	}
	n, err := node.Open(cfg, node.Options{KafkaListener: kl, ControllerListener: cl, HTTPListener: hl})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := n.Close(ctx); err != nil {
			t.Errorf("close node: %v", err)
		}
	})
	return kl.Addr().String()
}

// TestSmokeAgainstOneNode runs real cells for a moment against a real node:
// an unpaced acks=all cell measures and reads every record back, a paced
// cell stays near its offered load, and a cell the cluster refuses (RF 3
// on one broker) is reported instead of stopping the run.
func TestSmokeAgainstOneNode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node and produces for a few seconds")
	}
	addr := startNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	k := &KafkaTarget{Seeds: []string{addr}, Prefix: "smoke"}
	var out bytes.Buffer

	c := Cell{Acks: "all", Durability: DurPageCache, Size: 100, RF: 1, Partitions: 2, Batching: BatchDefault}
	r := k.Run(ctx, &out, c, 2*time.Second)
	if !r.OK() {
		t.Fatalf("%s: %s\n%s", c.Name(), PerfLine(r), out.String())
	}
	if r.Consumed != r.Records || r.E2E.Count != uint64(r.Records) || r.Produce.Count != uint64(r.Records) {
		t.Fatalf("%s: %d acknowledged, %d read back, %d produce and %d end-to-end latencies", c.Name(), r.Records, r.Consumed, r.Produce.Count, r.E2E.Count)
	}
	if r.Produce.P99 <= 0 || r.Produce.P99 > r.Produce.Max || r.E2E.P50 <= 0 || r.Bytes != 100*r.Records {
		t.Fatalf("%s: implausible numbers %+v", c.Name(), r)
	}

	paced := Cell{Acks: "1", Durability: DurFlush1, Size: 1024, RF: 1, Partitions: 1, Batching: BatchLinger, RateMBps: 1}
	r = k.Run(ctx, &out, paced, 2*time.Second)
	if !r.OK() {
		t.Fatalf("%s: %s", paced.Name(), PerfLine(r))
	}
	// 1 MB/s of 1 KiB for 2 s is 2,048 records; the pacer never runs ahead.
	if r.Records > 2048+256 || r.Records < 200 {
		t.Fatalf("%s: %d records at 1 MB/s for 2 s, want about 2048", paced.Name(), r.Records)
	}

	bad := Cell{Acks: "all", Durability: DurPageCache, Size: 100, RF: 3, Partitions: 1, Batching: BatchDefault}
	r = k.Run(ctx, &out, bad, 2*time.Second)
	if r.OK() || !strings.Contains(r.Err, "create topic") {
		t.Fatalf("RF 3 on one broker: want a create-topic error, got %+v", r)
	}

	// sync-before-ack: measured where the broker knows the config, else
	// reported as the broker's refusal, never a hang or a half result.
	sync := Cell{Acks: "all", Durability: DurSync, Size: 100, RF: 1, Partitions: 1, Batching: BatchDefault}
	r = k.Run(ctx, &out, sync, time.Second)
	if !r.OK() && !strings.Contains(r.Err, "sluice.durability") {
		t.Fatalf("%s: %+v", sync.Name(), r)
	}
	t.Logf("%s: %s", sync.Name(), PerfLine(r))
}
