package node

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/node/group"
)

// TestTxnOffsetsLeaderMove: a transaction's offsets are pending on a
// __consumer_offsets partition when its leader (the group coordinator) is
// killed. The new leader's coordinator loads them as pending
// (UNSTABLE_OFFSET_COMMIT with require_stable, absent without), the
// commit marker it then writes makes them visible, and a later
// transaction aborted there leaves them as they were.
func TestTxnOffsetsLeaderMove(t *testing.T) {
	// Raw requests, no transaction coordinator: KIP-890's check of
	// TxnOffsetCommit accepts all.
	c := newReplCluster(t, 3, false, txnSettings...)
	c.verifier = acceptVerifier{}
	c.start()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	c.createTopic(ctx, "in", 2, nil)
	cl := c.client(kgo.MetadataMinAge(500*time.Millisecond), kgo.MetadataMaxAge(2*time.Second))
	var ip *kmsg.InitProducerIDResponse
	waitFor(ctx, t, "InitProducerId", func() bool {
		r, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, cl)
		ip = r
		return err == nil && r.ErrorCode == 0
	})
	pid, epoch := ip.ProducerID, ip.ProducerEpoch
	x := &txnOffsets{t: t, ctx: ctx, cl: cl, group: "eos-move", shard: group.Partition("eos-move", 3)}
	if codes := x.commit(pid, epoch, map[int32]int64{0: 5, 1: 6}); codes[0] != 0 || codes[1] != 0 {
		t.Fatalf("TxnOffsetCommit: %v", codes)
	}
	if got := x.fetch(true); got != "0:UNSTABLE_OFFSET_COMMIT 1:UNSTABLE_OFFSET_COMMIT " {
		t.Fatalf("require_stable with pending offsets: %s", got)
	}
	victim := c.leaderOf(group.OffsetsTopic, int(x.shard))
	c.kill(victim)
	waitFor(ctx, t, "a new leader of the group's offsets partition", func() bool {
		l := c.leaderOf(group.OffsetsTopic, int(x.shard))
		return l != nil && l != victim
	})
	if got := x.fetch(true); got != "0:UNSTABLE_OFFSET_COMMIT 1:UNSTABLE_OFFSET_COMMIT " {
		t.Errorf("after the leader moved, require_stable: %s", got)
	}
	if got := x.fetch(false); got != "0=-1 1=-1 " {
		t.Errorf("after the leader moved, pending offsets visible: %s", got)
	}
	leaderMarker(ctx, t, c, cl, x.shard, pid, epoch, true)
	waitFor(ctx, t, "the committed transaction's offsets", func() bool { return x.fetch(true) == "0=5 1=6 " })

	if codes := x.commit(pid, epoch, map[int32]int64{0: 9}); codes[0] != 0 {
		t.Fatalf("second TxnOffsetCommit: %v", codes)
	}
	c.restart(victim)
	leaderMarker(ctx, t, c, cl, x.shard, pid, epoch, false)
	waitFor(ctx, t, "the aborted transaction's offsets dropped", func() bool { return x.fetch(true) == "0=5 1=6 " })
}

// leaderMarker writes pid's marker on __consumer_offsets partition shard
// with WriteTxnMarkers sent to its leader, retrying while leadership moves.
func leaderMarker(ctx context.Context, t *testing.T, c *replCluster, cl *kgo.Client, shard int32, pid int64, epoch int16, commit bool) {
	t.Helper()
	waitFor(ctx, t, "WriteTxnMarkers on the offsets partition's leader", func() bool {
		l := c.leaderOf(group.OffsetsTopic, int(shard))
		if l == nil || l.Node == nil {
			return false
		}
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		req.Version = 1
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.ProducerEpoch, m.Committed = pid, epoch, commit
		mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		mt.Topic, mt.Partitions = group.OffsetsTopic, []int32{shard}
		m.Topics = append(m.Topics, mt)
		req.Markers = append(req.Markers, m)
		resp, err := cl.Broker(int(l.id)).Request(ctx, req)
		if err != nil {
			return false
		}
		code := resp.(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0].ErrorCode
		if code != 0 && !kerr.IsRetriable(kerr.ErrorForCode(code)) {
			t.Fatalf("WriteTxnMarkers: %v", kerr.ErrorForCode(code))
		}
		return code == 0
	})
}
