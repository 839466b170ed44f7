package node

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

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
}
