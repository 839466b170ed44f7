package node

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/quorum"
	"github.com/sluice-log/sluice/segment"
)

// TestIdempotentRetryAfterFullRestart: an idempotent producer's batch is
// written, then 40,000 offsets of other writes follow, then every replica
// of the partition is killed and restarted at once. The producer's retry of
// its batch (same producer id, epoch and sequence: its answer was lost) is
// recognised as a duplicate: it answers the original offset and the log
// does not grow. This failed while a restart rebuilt producer state from
// only the last 20,000 offsets of the log.
func TestIdempotentRetryAfterFullRestart(t *testing.T) {
	c := startReplCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	const topic = "dedup"
	// sync: every replica fsyncs before acknowledging, so the controller
	// elects a leader again after all three restart uncleanly.
	cfg := map[string]*string{"min.insync.replicas": kadm.StringPtr("2"), "sluice.durability": kadm.StringPtr("sync"),
		"segment.bytes": kadm.StringPtr("262144")}
	if _, err := kadm.NewClient(c.client()).CreateTopic(ctx, 1, 3, cfg, topic); err != nil {
		t.Fatal(err)
	}
	c.waitImage(ctx, "the topic with a leader", func(im *quorum.Image) bool {
		tp := im.Topics[topic]
		return tp != nil && tp.Partitions[0].Leader != quorum.NoLeader
	})
	const pid, filler, perBatch = 4242, 40, 1000
	retry := func() []byte { return idempotent(segment.BuildBatch(1, []byte("once")), pid, 0, 0) }
	cl := c.client()
	produce := func(batch []byte) kmsg.ProduceResponseTopicPartition {
		t.Helper()
		for {
			pr := produceToLeader(ctx, c, cl, topic, batch)
			if pr.ErrorCode == 0 {
				return pr
			}
			// NOT_LEADER and the like while leadership settles: retry.
			select {
			case <-ctx.Done():
				t.Fatalf("produce: error %d", pr.ErrorCode)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	if pr := produce(retry()); pr.BaseOffset != 0 {
		t.Fatalf("first write of the batch: %+v", pr)
	}
	vals := make([][]byte, perBatch)
	for i := range vals {
		vals[i] = []byte{byte(i)}
	}
	for range filler {
		produce(segment.BuildBatch(2, vals...))
	}
	const leo = 1 + filler*perBatch
	for _, rn := range c.nodes {
		c.kill(rn)
	}
	c.reopenAll(t)
	c.waitImage(ctx, "a leader after the restart", func(im *quorum.Image) bool {
		return im.Topics[topic].Partitions[0].Leader != quorum.NoLeader
	})
	cl = c.client() // the restarted nodes listen on new ports
	pr := produce(retry())
	if pr.BaseOffset != 0 {
		t.Errorf("retry after restarting every replica: written at offset %d, want the original offset 0 (a duplicate)", pr.BaseOffset)
	}
	for _, rn := range c.nodes {
		if r := rn.replica(topic, 0); r != nil && r.Log().LogEndOffset() > leo {
			t.Errorf("node %d: log end %d after the retry, want %d", rn.id, r.Log().LogEndOffset(), leo)
		}
	}
}

// produceToLeader sends batch with acks=all to the partition 0 leader of
// topic as the metadata image of a live node names it.
func produceToLeader(ctx context.Context, c *replCluster, cl *kgo.Client, topic string, batch []byte) kmsg.ProduceResponseTopicPartition {
	rn := c.leaderOf(topic, 0)
	if rn == nil || rn.Node == nil {
		return kmsg.ProduceResponseTopicPartition{ErrorCode: -1}
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = 0, append([]byte(nil), batch...)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl.Broker(int(rn.id)))
	if err != nil {
		return kmsg.ProduceResponseTopicPartition{ErrorCode: -1, ErrorMessage: kmsg.StringPtr(fmt.Sprint(err))}
	}
	return resp.Topics[0].Partitions[0]
}
