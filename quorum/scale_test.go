package quorum

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

// TestScaleFailover measures, on a 3-voter quorum on loopback, creating
// 10,000 topics x 10 partitions and the controller failover with that image:
// time from killing the active controller to the first command committed by
// the next one, and a snapshot install to a new non-voter. It is slow, so it
// runs only with SLUICE_SCALE=1:
//
//	SLUICE_SCALE=1 go test -run TestScaleFailover -v ./quorum/
func TestScaleFailover(t *testing.T) {
	if os.Getenv("SLUICE_SCALE") == "" {
		t.Skip("set SLUICE_SCALE=1 to run the scale measurement")
	}
	topics := 10000
	nodes := startQuorum(t, 3, func(c *Config) { c.ApplyTimeout = time.Minute; c.SnapshotThreshold = 1 << 30; c.TrailingLogs = 10 })
	leader := leaderOf(t, nodes)
	registerBrokers(t, leader, 1, 2, 3, 4, 5, 6)
	start := time.Now()
	for i := 0; i < topics; i += 100 {
		cmd := &CreateTopics{}
		for j := i; j < i+100; j++ {
			cmd.Topics = append(cmd.Topics, TopicSpec{Name: fmt.Sprintf("topic-%05d", j), Partitions: 10, ReplicationFactor: 3})
		}
		propose(t, leader, cmd)
	}
	t.Logf("created %d partitions through 3 voters in %v", topics*10, time.Since(start).Round(time.Millisecond))
	start = time.Now()
	waitSameImage(t, nodes, leader)
	t.Logf("followers identical %v later (includes 3 image clones + JSON compares)", time.Since(start).Round(time.Millisecond))

	old := leader
	start = time.Now()
	old.stop(t)
	leader = leaderOf(t, nodes)
	elected := time.Since(start)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := leader.c.Propose(ctx, &AllocateProducerIDs{BrokerID: 1, BrokerEpoch: AnyEpoch}); err != nil {
		t.Fatal(err)
	}
	t.Logf("failover: new leader after %v, first command committed after %v", elected.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))

	start = time.Now()
	if err := leader.c.Snapshot(); err != nil {
		t.Fatal(err)
	}
	t.Logf("raft snapshot on the new leader: %v", time.Since(start).Round(time.Millisecond))
	b := &testNode{id: 10, dir: t.TempDir()}
	b.start(t, listen(t), nil, func(c *Config) { c.ApplyTimeout = time.Minute })
	t.Cleanup(func() { b.stop(t) })
	start = time.Now()
	if err := leader.c.AddNonvoter(ctx, b.id, b.addr); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the non-voter caught up", func() bool { return b.c.Image().PartitionCount() == topics*10 })
	t.Logf("new non-voter caught up (snapshot install: %d) in %v", b.restored.Load(), time.Since(start).Round(time.Millisecond))
}
