package quorum

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestPipelinedProposals: many commands in flight at once, on the leader and
// forwarded from a follower, planned against the speculative image. Producer
// id blocks never overlap, every ISR change lands with consecutive partition
// epochs, and the speculative image ends equal to the committed one.
func TestPipelinedProposals(t *testing.T) {
	nodes := startQuorum(t, 3, nil)
	leader := leaderOf(t, nodes)
	follower := followerOf(nodes, leader)
	registerBrokers(t, leader, 1, 2, 3)
	const workers, rounds = 6, 15
	spec := TopicSpec{Name: "p", Assignments: make([][]int32, workers)}
	for i := range spec.Assignments {
		spec.Assignments[i] = []int32{1, 2, 3}
	}
	propose(t, leader, &CreateTopics{Topics: []TopicSpec{spec}})
	tid := leader.c.Image().Topics["p"].ID

	var mu sync.Mutex
	starts := map[int64]bool{}
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		via := leader
		if w%3 == 2 {
			via = follower
		}
		wg.Add(1)
		go func(w int, via *testNode) {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			pe := int32(0)
			for r := 0; r < rounds; r++ {
				blk, err := via.c.Propose(ctx, &AllocateProducerIDs{BrokerID: 1, BrokerEpoch: AnyEpoch})
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				starts[blk.(*ProducerIDBlock).Start] = true
				mu.Unlock()
				isr := []ISRMember{{ID: 1, Epoch: AnyEpoch}}
				if r%2 == 1 {
					isr = append(isr, ISRMember{ID: 2, Epoch: AnyEpoch}, ISRMember{ID: 3, Epoch: AnyEpoch})
				}
				rep, err := via.c.Propose(ctx, &AlterPartitions{BrokerID: 1, BrokerEpoch: AnyEpoch, Partitions: []AlterPartitionItem{
					{TopicID: tid, Partition: int32(w), PartitionEpoch: pe, NewISR: isr},
				}})
				if err != nil {
					errs <- err
					return
				}
				res := rep.(*AlterPartitionsReply).Partitions[0]
				if res.Code != 0 {
					errs <- fmt.Errorf("worker %d round %d: %s", w, r, res.Message)
					return
				}
				pe = res.State.PartitionEpoch
				if _, err := via.c.Propose(ctx, &CreateTopics{Topics: []TopicSpec{{Name: fmt.Sprintf("w%d-%d", w, r), Partitions: 1, ReplicationFactor: 2}}}); err != nil {
					errs <- err
					return
				}
			}
		}(w, via)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(starts) != workers*rounds {
		t.Fatalf("%d distinct producer id blocks for %d allocations", len(starts), workers*rounds)
	}
	waitSameImage(t, nodes, leader)
	im := leader.c.Image()
	if im.NextProducerID != int64(workers*rounds*DefaultProducerIDBlockSize) || len(im.Topics) != 1+workers*rounds {
		t.Fatalf("next producer id %d, %d topics", im.NextProducerID, len(im.Topics))
	}
	for i, p := range im.Topics["p"].Partitions {
		if p.PartitionEpoch != rounds {
			t.Fatalf("partition %d: epoch %d after %d changes", i, p.PartitionEpoch, rounds)
		}
	}
	if !leader.c.specMatches() {
		t.Fatal("the speculative image differs from the committed one")
	}
}

// TestPipelinedFailover kills the active controller while commands are in
// flight from every node. Commands may fail or end with an unknown outcome,
// but every block a command did get is unique and inside the committed
// range, the surviving images are identical, and the new leader's
// speculative image matches its committed one.
func TestPipelinedFailover(t *testing.T) {
	nodes := startQuorum(t, 3, nil)
	leader := leaderOf(t, nodes)
	registerBrokers(t, leader, 1)
	var mu sync.Mutex
	var got []int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, n := range nodes {
		for k := 0; k < 2; k++ {
			wg.Add(1)
			go func(c *Controller) {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
					blk, err := c.Propose(ctx, &AllocateProducerIDs{BrokerID: 1, BrokerEpoch: AnyEpoch})
					cancel()
					if err == nil {
						mu.Lock()
						got = append(got, blk.(*ProducerIDBlock).Start)
						mu.Unlock()
					} else if errors.Is(err, ErrClosed) {
						return
					}
				}
			}(n.c)
		}
	}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(got)
	}
	waitFor(t, 20*time.Second, "commands before the failover", func() bool { return count() >= 50 })
	old := leader
	old.stop(t)
	before := count()
	leader = leaderOf(t, nodes)
	waitFor(t, 20*time.Second, "commands after the failover", func() bool { return count() >= before+50 })
	close(stop)
	wg.Wait()

	waitSameImage(t, nodes, leader)
	im := leader.c.Image()
	seen := map[int64]bool{}
	for _, s := range got {
		if seen[s] || s%DefaultProducerIDBlockSize != 0 || s >= im.NextProducerID {
			t.Fatalf("block %d repeated, misaligned or beyond %d", s, im.NextProducerID)
		}
		seen[s] = true
	}
	if !leader.c.specMatches() {
		t.Fatal("the speculative image differs from the committed one")
	}
	t.Logf("%d blocks handed out, %d allocated in the image (the rest had unknown outcomes)", len(got), im.NextProducerID/DefaultProducerIDBlockSize)
}
