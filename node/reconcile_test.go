package node

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluice-log/sluice/node/replica"
	"github.com/sluice-log/sluice/quorum"
)

// TestReconcileCostDoesNotGrowWithImage is the guard for the reconciler's
// cost per applied change (reconcile.go): the allocations of reconciling
// one partition change must not grow with the partitions in the image.
// The node hosts one partition; 1,000 and then 10,000 more live on a
// registered broker that does not run (they are only metadata here). A
// reconciler that copies or walks the whole image allocates per topic and
// fails the bound (a copy of 100 topics takes hundreds of allocations).
func TestReconcileCostDoesNotGrowWithImage(t *testing.T) {
	tn := startNode(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n := tn.Node
	propose := func(cmd quorum.Command) any {
		t.Helper()
		reply, err := n.ctrl.Propose(ctx, cmd)
		if err != nil {
			t.Fatalf("%T: %v", cmd, err)
		}
		return reply
	}
	// Broker 2 is registered and unfenced but never runs.
	reg := propose(&quorum.RegisterBroker{ID: 2, ClusterID: n.clusterID, CleanShutdown: true}).(*quorum.RegisterBrokerReply)
	propose(&quorum.UnfenceBroker{ID: 2, Epoch: reg.Epoch})
	propose(&quorum.CreateTopics{Topics: []quorum.TopicSpec{{Name: "hot", Assignments: [][]int32{{1}}}}})
	var hot quorum.UUID
	n.ctrl.View(func(im *quorum.Image) { hot = im.Topics["hot"].ID })
	cold := 0
	addCold := func(topics int) {
		specs := make([]quorum.TopicSpec, topics)
		for i := range specs {
			as := make([][]int32, 100)
			for p := range as {
				as[p] = []int32{2}
			}
			specs[i] = quorum.TopicSpec{Name: fmt.Sprintf("cold-%d", cold), Assignments: as}
			cold++
		}
		propose(&quorum.CreateTopics{Topics: specs})
	}
	// One applied change to the hosted partition, as OnApply notes it,
	// and the reconciliation it wakes.
	change := func() {
		n.noteChange(quorum.Change{Index: n.ctrl.AppliedIndex(), Records: []quorum.Record{
			&quorum.PartitionChangeRecord{TopicID: hot, Partition: 0},
		}})
		n.reconcile()
	}
	measure := func() float64 {
		n.reconcile() // settle: the topics just created
		if n.rm.Replica(replica.TP{Topic: "hot", Partition: 0}) == nil {
			t.Fatal("the hosted partition has no replica")
		}
		return testing.AllocsPerRun(50, change)
	}
	addCold(10)
	small := measure()
	addCold(90)
	var parts int
	n.ctrl.View(func(im *quorum.Image) { parts = im.PartitionCount() })
	if parts != 10_001 {
		t.Fatalf("image holds %d partitions, want 10,001", parts)
	}
	large := measure()
	t.Logf("allocations per reconciled change: %.0f with 1,001 partitions, %.0f with 10,001", small, large)
	// The node keeps running (raft, replica ticks) while this counts, so
	// allow some noise, far below what a copy of 90 more topics costs.
	if large > small+40 {
		t.Fatalf("a reconciled change allocates %.0f times with 10,001 partitions, %.0f with 1,001: its cost grows with the image", large, small)
	}
}
