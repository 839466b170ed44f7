package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/node/meta"
	"github.com/sluice-log/sluice/quorum"
)

// TestReplaceLostController: a controller of a 3-voter quorum is lost
// with its disk (killed, its directory wiped). A replacement formatted
// without initial controllers under the same id is refused while the old
// voter is still in the quorum (it would count for entries it no longer
// has); after RemoveRaftVoter it joins as an observer, AddRaftVoter
// (through the Kafka API, kgo) makes it a voter, and it counts: with
// another of the original voters killed, the quorum of the replacement and
// the last original still elects and commits. Every acknowledged record
// is read back.
func TestReplaceLostController(t *testing.T) {
	c := startReplCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	const topic, parts = "voters", 3
	c.createTopic(ctx, topic, parts, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")})
	prod := c.client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	acks := newAckLog()
	produce := func(from, n int) {
		t.Helper()
		for i := from; i < from+n; i++ {
			r := &kgo.Record{Value: fmt.Appendf(nil, "v%05d", i)}
			if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", r.Value, err)
			}
			acks.add(r)
		}
	}
	produce(0, 200)

	voters := func() []int32 {
		t.Helper()
		ids, err := c.live().ctrl.Voters()
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	waitVoters := func(want ...int32) {
		t.Helper()
		waitFor(ctx, t, fmt.Sprintf("voters %v", want), func() bool { return slices.Equal(voters(), want) })
	}
	admin := func() *kgo.Client { return c.client() }
	addVoter := func(id int32) error {
		req := kmsg.NewPtrAddRaftVoterRequest()
		req.VoterID, req.TimeoutMillis = id, 30000
		resp, err := req.RequestWith(ctx, admin())
		if err != nil {
			return err
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil && resp.ErrorMessage != nil {
			return fmt.Errorf("%w: %s", err, *resp.ErrorMessage)
		}
		return kerr.ErrorForCode(resp.ErrorCode)
	}
	removeVoter := func(id int32) error {
		req := kmsg.NewPtrRemoveRaftVoterRequest()
		req.VoterID = id
		resp, err := req.RequestWith(ctx, admin())
		if err != nil {
			return err
		}
		return kerr.ErrorForCode(resp.ErrorCode)
	}
	// lose kills rn and wipes its disk; replace formats its directory
	// again without initial controllers, as id at ctrlAddr, and the
	// caller starts it.
	lose := func(rn *replNode) {
		t.Helper()
		c.kill(rn)
		if err := os.RemoveAll(rn.dir); err != nil {
			t.Fatal(err)
		}
		rn.fs = vfs.NewCrashableMem()
	}
	var clusterID string
	c.live().ctrl.View(func(im *quorum.Image) { clusterID = im.ClusterID })
	quorumVoters := func(extra ...*replNode) string {
		var vs []string
		for _, rn := range append(slices.Clone(c.nodes), extra...) {
			vs = append(vs, fmt.Sprintf("%d@%s", rn.id, rn.ctrlAddr))
		}
		return "controller.quorum.voters=" + strings.Join(vs, ",")
	}
	format := func(rn *replNode, voters string) {
		t.Helper()
		if _, err := meta.Format(rn.dir, meta.Meta{ClusterID: clusterID, NodeID: rn.id}); err != nil {
			t.Fatal(err)
		}
		rn.extra = append(slices.Clone(rn.extra), voters)
	}

	// Node 3 is lost with its disk; the two left are a majority.
	lost := c.nodes[2]
	lose(lost)
	produce(200, 100)
	format(lost, quorumVoters())
	err := c.open(lost)
	if !errors.Is(err, kerr.DuplicateVoter) {
		t.Fatalf("a replacement with an empty log under voter 3's id started (err %v): want DUPLICATE_VOTER until voter 3 is removed", err)
	}
	t.Logf("refused while voter 3 is in the quorum: %v", err)
	if err := removeVoter(9); !errors.Is(err, kerr.VoterNotFound) {
		t.Fatalf("RemoveRaftVoter of no voter: %v, want VOTER_NOT_FOUND", err)
	}
	if err := removeVoter(3); err != nil {
		t.Fatalf("RemoveRaftVoter 3: %v", err)
	}
	waitVoters(1, 2)
	if err := os.RemoveAll(lost.dir); err != nil { // the refused start's
		t.Fatal(err)
	}
	lost.fs, lost.extra = vfs.NewCrashableMem(), nil
	format(lost, quorumVoters())
	c.restart(lost)
	if err := addVoter(3); err != nil {
		t.Fatalf("AddRaftVoter 3: %v", err)
	}
	waitVoters(1, 2, 3)
	if err := c.live().ctrl.AddVoter(ctx, 3, "", quorum.UUID{}); !errors.Is(err, kerr.DuplicateVoter) {
		t.Fatalf("AddVoter of a voter: %v, want DUPLICATE_VOTER", err)
	}
	produce(300, 100)
	c.waitImage(ctx, "node 3 back in every ISR", func(im *quorum.Image) bool {
		for _, p := range im.Topics[topic].Partitions {
			if !slices.Contains(p.ISR, 3) {
				return false
			}
		}
		return true
	})

	// The replacement counts: with node 1 killed, nodes 2 and 3 are the
	// majority that elects and commits.
	first := c.nodes[0]
	c.kill(first)
	produce(400, 100)
	c.restart(first)

	c.checkAllAcked(ctx, topic, parts, acks)
	if got := acks.count(); got != 500 {
		t.Fatalf("%d acknowledged records, want 500", got)
	}
}
