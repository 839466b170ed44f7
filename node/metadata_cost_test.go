package node

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/sluice-log/sluice/node/config"
	"github.com/sluice-log/sluice/node/kafka"
	"github.com/sluice-log/sluice/quorum"
)

// TestMetadataCostIndependentOfImage: a Metadata request for one topic
// costs the same with 10 topics in the image as with 2,000 (20,000
// partitions): the broker reads the topics asked for, never every
// partition (issue 21). Counted in allocations, not time.
func TestMetadataCostIndependentOfImage(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c, err := quorum.Open(quorum.Config{NodeID: 1, Dir: t.TempDir(), Listener: ln,
		InitialVoters: []quorum.Voter{{ID: 1, Addr: ln.Addr().String()}}, ApplyTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !c.IsLeader() {
		if time.Now().After(deadline) {
			t.Fatal("no leader after 30 s")
		}
		<-tick.C
	}
	ctx := context.Background()
	for id := int32(1); id <= 3; id++ {
		r, err := c.Propose(ctx, &quorum.RegisterBroker{ID: id, Endpoints: []quorum.Endpoint{{Name: "PLAINTEXT", Host: "h", Port: 9092 + id}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Propose(ctx, &quorum.UnfenceBroker{ID: id, Epoch: r.(*quorum.RegisterBrokerReply).Epoch}); err != nil {
			t.Fatal(err)
		}
	}
	create := func(from, to int) {
		for i := from; i < to; i += 100 {
			cmd := &quorum.CreateTopics{}
			for j := i; j < min(i+100, to); j++ {
				cmd.Topics = append(cmd.Topics, quorum.TopicSpec{Name: fmt.Sprintf("t-%05d", j), Partitions: 10, ReplicationFactor: 3})
			}
			if _, err := c.Propose(ctx, cmd); err != nil {
				t.Fatal(err)
			}
		}
	}
	n := &Node{cfg: &config.Config{InterBrokerListener: "PLAINTEXT"}, ctrl: c, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	q := kafka.MetadataQuery{Topics: []kafka.TopicRef{{Name: "t-00003"}}, Listener: "PLAINTEXT"}
	cost := func() float64 {
		md, err := (*broker)(n).Metadata(ctx, q)
		if err != nil || len(md.Topics) != 1 || len(md.Topics[0].Partitions) != 10 || len(md.Brokers) != 3 {
			t.Fatalf("metadata: %v %+v", err, md)
		}
		return testing.AllocsPerRun(20, func() { _, _ = (*broker)(n).Metadata(ctx, q) })
	}
	create(0, 10)
	small := cost()
	create(10, 2000)
	if large := cost(); large > small {
		t.Fatalf("Metadata for one topic: %.0f allocations with 10 topics in the image, %.0f with 2,000", small, large)
	}
}
