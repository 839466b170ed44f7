package node

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-log/sluice/quorum"
)

// TestLeadershipReturnsToPreferred: a partition leader is killed, its
// partitions get new leaders, and it restarts; once it is back in their
// ISRs the active controller (auto.leader.rebalance.enable, a 1 s
// leader.imbalance.check.interval.seconds) moves their leadership back to
// it, the preferred replica, without an operator, and they take writes.
func TestLeadershipReturnsToPreferred(t *testing.T) {
	c := startReplCluster(t, 3, "leader.imbalance.check.interval.seconds=1")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c.createTopic(ctx, "pref", 3, nil)
	c.waitImage(ctx, "every partition led by its preferred replica", func(im *quorum.Image) bool {
		for _, p := range im.Topics["pref"].Partitions {
			if p.Leader != p.Replicas[0] {
				return false
			}
		}
		return true
	})
	var victim *replNode
	for p := range 3 {
		if l := c.leaderOf("pref", p); l != nil && !l.ctrl.IsLeader() {
			victim = l
			break
		}
	}
	if victim == nil {
		t.Fatal("every partition is led by the active controller")
	}
	prefers := func(im *quorum.Image) []int {
		var ps []int
		for i, p := range im.Topics["pref"].Partitions {
			if p.Replicas[0] == victim.id {
				ps = append(ps, i)
			}
		}
		return ps
	}
	cl := c.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.DefaultProduceTopic("pref"), kgo.MetadataMinAge(50*time.Millisecond), kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }))
	defer cl.Close()
	produce := func(what string) {
		t.Helper()
		for p := range int32(3) {
			if err := cl.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte(what)}).FirstErr(); err != nil {
				t.Fatalf("produce %s to pref/%d: %v", what, p, err)
			}
		}
	}
	produce("before")

	c.kill(victim)
	c.waitImage(ctx, "the killed leader's partitions led by others", func(im *quorum.Image) bool {
		for _, i := range prefers(im) {
			if p := im.Topics["pref"].Partitions[i]; p.Leader == victim.id || p.Leader < 0 {
				return false
			}
		}
		return true
	})
	produce("while down") // the restarted replica has to catch up
	c.restart(victim)
	var rejoined time.Time
	c.waitImage(ctx, "the restarted replica back in its preferred partitions' ISRs", func(im *quorum.Image) bool {
		for _, i := range prefers(im) {
			if !slices.Contains(im.Topics["pref"].Partitions[i].ISR, victim.id) {
				return false
			}
		}
		rejoined = time.Now()
		return true
	})
	c.waitImage(ctx, "leadership back at the preferred replica", func(im *quorum.Image) bool {
		for _, i := range prefers(im) {
			if im.Topics["pref"].Partitions[i].Leader != victim.id {
				return false
			}
		}
		return true
	})
	t.Logf("leadership back at node %d %v after it rejoined the ISRs", victim.id, time.Since(rejoined))
	produce("after")
}
