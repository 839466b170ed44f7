package cluster

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestRollUnderLoad: a rolling restart (Roll, `sluice cluster roll`) of
// all three nodes of a real process cluster, under a steady idempotent
// acks=all load on an RF=3 topic with min.insync.replicas=2. Every node
// runs again with a new pid, no send fails, and every acknowledged record
// reads back exactly once and in order in its partition.
func TestRollUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three node processes")
	}
	base, err := FreeBasePort(12000, 150, 3)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	l, err := Start(ctx, io.Discard, Options{Dir: t.TempDir(), Nodes: 3, BasePort: base, Executable: exe})
	t.Cleanup(func() { _ = Stop(context.Background(), io.Discard, l) })
	if err != nil {
		t.Fatal(err)
	}
	seeds := strings.Split(l.BootstrapServers, ",")
	admCl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	const topic, parts = "roll", 3
	if _, err := adm.CreateTopic(ctx, parts, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, topic); err != nil {
		t.Fatal(err)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordDeliveryTimeout(60*time.Second),
		kgo.MetadataMinAge(50*time.Millisecond), kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var (
		mu      sync.Mutex
		acked   [parts][]string
		nAcked  int
		failed  int
		slowest time.Duration
	)
	count := func() int { mu.Lock(); defer mu.Unlock(); return nAcked }
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			p := int32(i % parts)
			r := &kgo.Record{Partition: p, Value: []byte(fmt.Sprintf("v%07d", i))}
			sent := time.Now()
			err := cl.ProduceSync(ctx, r).FirstErr()
			took := time.Since(sent)
			mu.Lock()
			slowest = max(slowest, took)
			if err != nil {
				failed++
				t.Logf("send %d to partition %d failed after %v: %v", i, p, took, err)
			} else {
				acked[p] = append(acked[p], string(r.Value))
				nAcked++
			}
			mu.Unlock()
		}
	}()
	waitAcked := func(n int) {
		t.Helper()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for count() < n {
			select {
			case <-ctx.Done():
				t.Fatalf("only %d sends acknowledged, want %d", count(), n)
			case <-tick.C:
			}
		}
	}
	waitAcked(300)
	mu.Lock()
	slowest = 0
	mu.Unlock()

	var out bytes.Buffer
	pids := map[int32]int{}
	for _, n := range l.Nodes {
		pids[n.ID] = n.PID
	}
	rollStart := time.Now()
	err = Roll(ctx, &out, l, RollOptions{Executable: exe, NodeTimeout: 60 * time.Second})
	t.Logf("roll took %v:\n%s", time.Since(rollStart), out.String())
	if err != nil {
		t.Fatal(err)
	}
	waitAcked(count() + 300)
	close(stop)
	<-done

	cur, err := readLayout(l.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range cur.Nodes {
		if n.PID == pids[n.ID] || !alive(n.PID) {
			t.Errorf("node %d after the roll: pid %d (was %d), alive %v", n.ID, n.PID, pids[n.ID], alive(n.PID))
		}
	}
	for _, want := range []string{"back in every ISR", "rolled 3 nodes"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("roll output lacks %q", want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if failed > 0 {
		t.Errorf("%d sends failed during the rolling restart", failed)
	}
	t.Logf("%d sends acknowledged, slowest send during the roll: %v", nAcked, slowest)
	// 0.5 s here (a follower's first fetch from a new leader waits for
	// its long poll there, replica.fetch.wait.max.ms); a fence would be
	// seconds. Generous for a loaded machine.
	if slowest > 2*time.Second {
		t.Errorf("a send took %v during the roll: a node's stop should not wait for its fence", slowest)
	}
	for p := range int32(parts) {
		got := readPartition(ctx, t, seeds, topic, p, len(acked[p]))
		checkOnceInOrder(t, p, got, acked[p])
	}
}

// readPartition reads topic/p from its start up to its high watermark.
func readPartition(ctx context.Context, t *testing.T, seeds []string, topic string, p int32, atLeast int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	end, ok := ends.Lookup(topic, p)
	if !ok || end.Err != nil {
		t.Fatalf("end offset of %s/%d: %+v", topic, p, end)
	}
	var got []string
	for int64(len(got)) < end.Offset {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%s/%d: read %d of %d records (%d acknowledged) before the deadline", topic, p, len(got), end.Offset, atLeast)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

// checkOnceInOrder checks that every acknowledged value is in got exactly
// once, in the order it was acknowledged.
func checkOnceInOrder(t *testing.T, p int32, got, acked []string) {
	t.Helper()
	seen := map[string]int{}
	for _, v := range got {
		seen[v]++
	}
	j := 0
	for _, v := range got {
		if j < len(acked) && v == acked[j] {
			j++
		}
	}
	for _, v := range acked {
		if seen[v] != 1 {
			t.Errorf("partition %d: acknowledged %s read back %d times", p, v, seen[v])
		}
	}
	if j != len(acked) {
		t.Errorf("partition %d: only the first %d of %d acknowledged records read back in order (read %d)", p, j, len(acked), len(got))
	}
}

// TestRollRefusesADownNode: a roll keeps all but one node up, so it does
// not start while a node is down, and says how to bring it back.
func TestRollRefusesADownNode(t *testing.T) {
	l := newLayout(t.TempDir(), "c1", 3, KafkaPort)
	for i := range l.Nodes {
		l.Nodes[i].PID = os.Getpid() // running
	}
	l.Nodes[1].PID = 0 // down
	if err := writeLayout(l); err != nil {
		t.Fatal(err)
	}
	err := Roll(context.Background(), io.Discard, l, RollOptions{})
	if err == nil || !strings.Contains(err.Error(), "node 2") || !strings.Contains(err.Error(), "sluice cluster restart --dir "+l.Dir+" 2") {
		t.Fatalf("roll with node 2 down: %v, want an error naming it and the restart command", err)
	}
}
