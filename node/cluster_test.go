package node

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-log/sluice/node/config"
	"github.com/sluice-log/sluice/node/meta"
	"github.com/sluice-log/sluice/quorum"
)

// startCluster starts n nodes, every one a controller (Raft voter) and a
// broker, on 127.0.0.1.
func startCluster(t *testing.T, n int) []*testNode {
	t.Helper()
	return startClusterWith(t, n, config.ListenerKafka)
}

// startClusterWith is startCluster with the Kafka listener called
// listener (the inter-broker one) and extra key=value settings.
func startClusterWith(t *testing.T, n int, listener string, extra ...string) []*testNode {
	t.Helper()
	nodes := make([]*testNode, n)
	var voters []quorum.Voter
	for i := range nodes {
		nodes[i] = &testNode{dir: t.TempDir(), kl: listen(t), ctrlL: listen(t), http: listen(t)}
		voters = append(voters, quorum.Voter{ID: int32(i + 1), Addr: nodes[i].ctrlL.Addr().String()})
	}
	clusterID := quorum.NewUUID().String()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, tn := range nodes {
		if _, err := meta.Format(tn.dir, meta.Meta{ClusterID: clusterID, NodeID: int32(i + 1), InitialControllers: voters}); err != nil {
			t.Fatal(err)
		}
		fs := pflag.NewFlagSet("node", pflag.ContinueOnError)
		config.Flags(fs)
		args := []string{fmt.Sprintf("--node.id=%d", i+1), "--log.dirs=" + tn.dir,
			"--listeners=" + listener + "://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
			"--advertised.listeners=" + listener + "://127.0.0.1:" + port(tn.kl) + ",CONTROLLER://127.0.0.1:" + port(tn.ctrlL),
			"--inter.broker.listener.name=" + listener}
		// "{id}" in an extra setting is the node's id (broker.rack=r{id});
		// "{{id}}" stays "{id}" (sluice.node.principal.pattern).
		ex := make([]string, len(extra))
		for j, e := range extra {
			e = strings.ReplaceAll(e, "{{id}}", "\x00")
			ex[j] = strings.ReplaceAll(strings.ReplaceAll(e, "{id}", strconv.Itoa(i+1)), "\x00", "{id}")
		}
		args, env := splitExtra(t, tn.dir, args, ex)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Load(fs, env)
		if err != nil {
			t.Fatal(err)
		}
		tn.cfg = cfg
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Open waits for a quorum: the nodes start together.
			tn.Node, errs[i] = Open(cfg, Options{KafkaListener: tn.kl, ControllerListener: tn.ctrlL, HTTPListener: tn.http})
		}()
	}
	wg.Wait()
	for i, tn := range nodes {
		if errs[i] != nil {
			t.Fatalf("node %d: %v", i+1, errs[i])
		}
		t.Cleanup(func() { tn.close(t) })
	}
	return nodes
}

// TestThreeNodeCluster: three nodes, a topic of six RF=1 partitions spread
// over them; kgo produces to every leader and reads everything back.
func TestThreeNodeCluster(t *testing.T) {
	nodes := startCluster(t, 3)
	ctx := testCtx(t)
	// Seed with one node only: the client learns the others from Metadata.
	cl := newClient(t, nodes[2])
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 6, 1, nil, "spread"); err != nil {
		t.Fatal(err)
	}
	// CreateTopics answered once the topic applied on the node asked;
	// wait until every node has applied it.
	for _, tn := range nodes {
		waitUntil(ctx, t, tn, func() bool {
			var ok bool
			tn.ctrl.View(func(im *quorum.Image) { ok = im.Topics["spread"] != nil })
			return ok
		})
	}
	md, err := kadm.NewClient(newClient(t, nodes[0])).Metadata(ctx, "spread")
	if err != nil {
		t.Fatal(err)
	}
	if len(md.Brokers) != 3 {
		t.Fatalf("brokers: %+v", md.Brokers)
	}
	leaders := map[int32]bool{}
	for _, p := range md.Topics["spread"].Partitions {
		leaders[p.Leader] = true
	}
	if len(leaders) != 3 {
		t.Fatalf("six partitions led by %v, want all three nodes", leaders)
	}

	prod := newClient(t, nodes[0], kgo.DefaultProduceTopic("spread"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	const per = 50
	var recs []*kgo.Record
	for i := range 6 * per {
		recs = append(recs, &kgo.Record{Partition: int32(i % 6), Value: fmt.Appendf(nil, "%d", i)})
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	offsets := map[int32]kgo.Offset{}
	for p := range int32(6) {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	cons := newClient(t, nodes[1], kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"spread": offsets}))
	got := map[int32]int{}
	for total := 0; total < 6*per; {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if want := fmt.Sprint(int(r.Offset)*6 + int(r.Partition)); string(r.Value) != want || r.Offset != int64(got[r.Partition]) {
				t.Fatalf("partition %d offset %d: %q, want %q at offset %d", r.Partition, r.Offset, r.Value, want, got[r.Partition])
			}
			got[r.Partition]++
			total++
		})
	}
}

// waitUntil waits for cond, rechecking after every reconciliation and
// append of tn (no polling), until ctx ends.
func waitUntil(ctx context.Context, t *testing.T, tn *testNode, cond func() bool) {
	t.Helper()
	for {
		changed := (*broker)(tn.Node).Appended()
		if cond() {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("condition not met: %v", ctx.Err())
		}
	}
}
