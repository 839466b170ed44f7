package node

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-log/sluice/node/metrics"
	"github.com/sluice-log/sluice/quorum"
)

// TestKilledLeaderFencedByProbe: a partition leader whose process dies
// (its Kafka listener refuses connections at once) is fenced by the active
// controller's probes (sluice.broker.probe.interval.ms, two refusals in a
// row) well inside 2 s, though broker.session.timeout.ms is 9 s and
// memberlist's default LAN settings need about 2.4 s at the least (a
// failed probe, then the suspicion timeout) to declare it dead; then the
// partition takes acks=all writes from its new leader.
func TestKilledLeaderFencedByProbe(t *testing.T) {
	c := startReplCluster(t, 3, "broker.session.timeout.ms=9000")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c.createTopic(ctx, "probe", 3, nil)
	c.waitImage(ctx, "every partition led", func(im *quorum.Image) bool {
		for _, p := range im.Topics["probe"].Partitions {
			if p.Leader < 0 {
				return false
			}
		}
		return true
	})
	// A leader that is not the active controller: killing the controller
	// would start a new controller's sessions, another story.
	var victim *replNode
	part := -1
	for p := range 3 {
		if l := c.leaderOf("probe", p); l != nil && !l.ctrl.IsLeader() {
			victim, part = l, p
			break
		}
	}
	if victim == nil {
		t.Fatal("every partition is led by the active controller")
	}
	cl := c.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.DefaultProduceTopic("probe"), kgo.RecordRetries(1000), kgo.MetadataMinAge(50*time.Millisecond), kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }))
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Partition: int32(part), Value: []byte("before")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	c.kill(victim)
	c.waitImage(ctx, "the killed leader fenced", func(im *quorum.Image) bool { return im.Brokers[victim.id].Fenced })
	fenced := time.Since(start)
	if err := cl.ProduceSync(ctx, &kgo.Record{Partition: int32(part), Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	writable := time.Since(start)
	t.Logf("killed leader of probe/%d: fenced after %v, writable after %v", part, fenced, writable)
	if fenced > 2*time.Second {
		t.Errorf("fenced after %v: the probes should fence a dead process's broker within 2 s", fenced)
	}
	// The active controller counted the fence by its cause and timed the
	// failover (sluice_controller_fences_total, _failover_seconds).
	for _, rn := range c.nodes {
		if rn.Node == nil || !rn.ctrl.IsLeader() {
			continue
		}
		mfs, err := rn.metrics.m.Gatherer().Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			switch mf.GetName() {
			case "sluice_controller_fences_total":
				for _, m := range mf.Metric {
					if m.Label[0].GetValue() == "probe_refused" && m.Counter.GetValue() < 1 {
						t.Errorf("fences by probe_refused: %v, want the kill counted", m.Counter.GetValue())
					}
				}
			case "sluice_controller_failover_seconds":
				h := mf.Metric[0].Histogram
				if h.GetSampleCount() < 1 || h.GetSampleSum() > fenced.Seconds()+1 {
					t.Errorf("failover histogram: %d samples, sum %.3fs (fenced after %v)", h.GetSampleCount(), h.GetSampleSum(), fenced)
				}
				t.Logf("failover seconds: %d samples, sum %.3f", h.GetSampleCount(), h.GetSampleSum())
			}
		}
	}
}

// TestFenceCausesAgree: node/metrics exports every cause quorum's
// liveness rule fences for, from the start.
func TestFenceCausesAgree(t *testing.T) {
	var want []string
	for _, c := range quorum.FenceCauses {
		want = append(want, string(c))
	}
	if fmt.Sprint(want) != fmt.Sprint(metrics.FenceCauses) {
		t.Fatalf("node/metrics fence causes %v, quorum's %v", metrics.FenceCauses, want)
	}
}

// TestCleanStopMovesLeadershipFirst: a node closed cleanly (SIGTERM) under
// a steady acks=all idempotent load first has its leaderships moved by the
// controller (controlled.shutdown.enable), so no send fails and every
// acknowledged record is there once, in order; and no send waits for the
// leader's fence.
func TestCleanStopMovesLeadershipFirst(t *testing.T) {
	c := startReplCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c.createTopic(ctx, "roll", 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")})
	victim := c.leaderOf("roll", 0)
	if victim == nil {
		t.Fatal("no leader of roll/0")
	}
	acks := newAckLog()
	cl := c.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("roll"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordDeliveryTimeout(30*time.Second), kgo.MetadataMinAge(50*time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }))
	defer cl.Close()
	var failed, slowest atomic.Int64
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
			r := &kgo.Record{Value: []byte(fmt.Sprintf("v%07d", i))}
			sent := time.Now()
			err := cl.ProduceSync(ctx, r).FirstErr()
			if d := int64(time.Since(sent)); d > slowest.Load() {
				slowest.Store(d)
			}
			if err != nil {
				failed.Add(1)
				t.Logf("send %d failed: %v", i, err)
				continue
			}
			acks.add(r)
		}
	}()
	waitAcked := func(n int) {
		t.Helper()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for acks.count() < n {
			select {
			case <-ctx.Done():
				t.Fatalf("only %d acknowledged, want %d", acks.count(), n)
			case <-tick.C:
			}
		}
	}
	waitAcked(200)
	slowest.Store(0)
	closeCtx, closeCancel := context.WithTimeout(ctx, 30*time.Second)
	closeStart := time.Now()
	if err := victim.Close(closeCtx); err != nil {
		t.Errorf("close: %v", err)
	}
	t.Logf("close took %v", time.Since(closeStart))
	closeCancel()
	victim.Node = nil
	before := acks.count()
	waitAcked(before + 200)
	close(stop)
	<-done
	if f := failed.Load(); f > 0 {
		t.Errorf("%d sends failed across a clean stop", f)
	}
	// Without the controlled shutdown the partition waits for the fence
	// (the listener's refusals, gossip's leave): 3.0-3.4 s here.
	if d := time.Duration(slowest.Load()); d > 2*time.Second {
		t.Errorf("a send took %v across the clean stop of its leader", d)
	} else {
		t.Logf("slowest send across the stop: %v", d)
	}
	c.checkAllAcked(ctx, "roll", 3, acks)
}
