package quorum

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestPublishReachesEveryBroker: with a CommitTimeout far above the test's
// deadlines, followers learn of a commit only from the next entry. A
// command proposed without a nudge is therefore not confirmed by the
// followers within half a second (AwaitBrokers fails, naming them); a
// published one, sent through a follower, is confirmed by every broker
// at once, and every image holds it.
func TestPublishReachesEveryBroker(t *testing.T) {
	nodes := startQuorum(t, 3, func(c *Config) { c.CommitTimeout = 30 * time.Second })
	leader := leaderOf(t, nodes)
	registerBrokers(t, leader, 1, 2, 3)
	term := leader.c.raft.CurrentTerm()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// Without a nudge: only the leader has it in effect.
	if _, err := leader.c.Propose(ctx, &CreateTopics{Topics: []TopicSpec{{Name: "quiet", Partitions: 1, ReplicationFactor: 3}}}); err != nil {
		t.Fatal(err)
	}
	index := leader.c.AppliedIndex()
	short, cancelShort := context.WithTimeout(ctx, 500*time.Millisecond)
	err := leader.c.AwaitBrokers(short, index)
	cancelShort()
	switch {
	case leader.c.raft.CurrentTerm() != term:
		t.Logf("leadership changed during the check (a loaded machine): the new term's entry told the followers; skipping the negative check")
	case !errors.Is(err, ErrNotPublished):
		t.Fatalf("AwaitBrokers of an un-nudged commit: %v, want ErrNotPublished", err)
	default:
		t.Logf("without a nudge: %v", err)
	}

	// Published through a follower: every broker confirms promptly.
	via := followerOf(nodes, leader)
	start := time.Now()
	reply, index, err := via.c.Publish(ctx, &CreateTopics{Topics: []TopicSpec{{Name: "loud", Partitions: 1, ReplicationFactor: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	if r := reply.(*TopicsReply).Topics[0]; r.Code != 0 {
		t.Fatalf("create: %+v", r)
	}
	if index == 0 {
		t.Fatal("Publish returned index 0")
	}
	if err := via.c.AwaitBrokers(ctx, index); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	for _, n := range nodes {
		var ok bool
		n.c.View(func(im *Image) { ok = im.Topics["loud"] != nil && im.Topics["quiet"] != nil })
		if !ok {
			t.Fatalf("node %d confirmed index %d but its image lacks the topics", n.id, index)
		}
	}
	if took > 10*time.Second {
		t.Fatalf("publishing took %v: the followers waited for the commit timeout", took)
	}
	t.Logf("published and confirmed by 3 brokers in %v", took)
}
