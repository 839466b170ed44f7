package partition

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/sluice-log/sluice/segment"
)

// batchTs is the timestamp of every batch and the logs' clock.
const batchTs = 1_700_000_000_000

// segNode is a replica over a real segment.Log on an in-memory FS, driven
// the way the node will drive it: Ready's instructions become log calls.
type segNode struct {
	t       *testing.T
	id      int32
	r       *Replica
	log     *segment.Log
	fetch   *FetchRequest
	answers map[uint64]FetchAnswer
	done    map[uint64]error
	prop    *Proposal
}

func newSegNode(t *testing.T, id int32, cfg Config) *segNode {
	t.Helper()
	fs := vfs.NewMem()
	idx, err := segment.OpenIndex(fs, "/index", 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = idx.Close() })
	// A fixed clock matching the batch timestamps: segment.ms never rolls.
	opts := segment.Options{Now: func() time.Time { return time.UnixMilli(batchTs) }}
	l, _, err := segment.Open(fs, "/t-0", "t-0", idx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	cfg.ID = id
	r, err := New(cfg, l, LogState{LEO: l.LogEndOffset(), Flushed: l.FlushedOffset()})
	if err != nil {
		t.Fatal(err)
	}
	return &segNode{t: t, id: id, r: r, log: l, answers: map[uint64]FetchAnswer{}, done: map[uint64]error{}}
}

func (n *segNode) step(m Msg) {
	n.t.Helper()
	if err := n.r.Step(m); err != nil {
		n.t.Fatalf("n%d: %T: %v", n.id, m, err)
	}
	n.drain()
}

func (n *segNode) drain() {
	n.t.Helper()
	flushed := false
	for n.r.HasReady() {
		rd := n.r.Ready()
		if rd.Truncate != nil {
			if err := n.log.TruncateTo(rd.Truncate.Offset); err != nil {
				n.t.Fatalf("n%d: truncate: %v", n.id, err)
			}
		}
		if rd.Flush > 0 {
			if err := n.log.WaitFlushed(context.Background(), rd.Flush); err != nil {
				n.t.Fatal(err)
			}
			flushed = true // reported once this Ready is advanced
		}
		for _, a := range rd.FetchAnswers {
			n.answers[a.ReqID] = a
		}
		for _, c := range rd.Completed {
			n.done[c.ReqID] = c.Err
		}
		if rd.AlterPartition != nil {
			n.prop = rd.AlterPartition
		}
		if rd.Fetch != nil {
			n.fetch = rd.Fetch
		}
		n.r.Advance(rd)
	}
	if flushed {
		n.step(LocalFlush{Flushed: n.log.FlushedOffset()})
	}
}

func (n *segNode) produce(id uint64, acks int16, count int) {
	n.t.Helper()
	if err := n.r.CheckProduce(acks); err != nil {
		n.t.Fatalf("n%d: produce: %v", n.id, err)
	}
	vals := make([][]byte, count)
	for i := range vals {
		vals[i] = fmt.Appendf(nil, "n%d-req%d-%d", n.id, id, i)
	}
	info, err := n.log.Append(segment.BuildBatch(batchTs, vals...), n.r.LeaderEpoch())
	if err != nil {
		n.t.Fatal(err)
	}
	n.step(LocalAppend{ReqID: id, LastOffset: info.LastOffset, Acks: acks})
}

// fetchFrom delivers n's fetch to its leader l and the answer back, reading
// and appending real batches.
func (n *segNode) fetchFrom(l *segNode, reqID uint64) {
	n.t.Helper()
	f := n.fetch
	if f == nil {
		n.t.Fatalf("n%d has no fetch to send", n.id)
	}
	n.fetch = nil
	l.step(FollowerFetch{ReqID: reqID, Replica: n.id, BrokerEpoch: 1, FetchOffset: f.FetchOffset,
		LastFetchedEpoch: f.LastFetchedEpoch, CurrentLeaderEpoch: f.CurrentLeaderEpoch})
	a := l.answers[reqID]
	resp := FetchResponse{Seq: f.Seq, Err: a.Err, HW: a.HW, Diverging: a.Diverging}
	if a.Err == nil && a.Diverging == nil && n.r.ExpectsFetch(f.Seq) {
		c, err := l.log.Read(a.ReadFrom, 1<<20, l.log.LogEndOffset(), nil)
		if err != nil {
			n.t.Fatal(err)
		}
		if len(c.Data) > 0 {
			if _, err := n.log.AppendReplicated(c.Data); err != nil {
				n.t.Fatal(err)
			}
		}
		resp.LEO = n.log.LogEndOffset()
	}
	n.step(resp)
}

// readAll returns every batch of l, across segments.
func readAll(t *testing.T, l *segment.Log) []byte {
	t.Helper()
	var out []byte
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		c, err := l.Read(off, 1<<20, l.LogEndOffset(), nil)
		if err != nil {
			t.Fatal(err)
		}
		out, off = append(out, c.Data...), c.Next
	}
	return out
}

// catchUp fetches until n acknowledged l's whole log (segment's Read may
// return fewer batches than asked for).
func (n *segNode) catchUp(l *segNode, reqID uint64) {
	n.t.Helper()
	for i := 0; ; i++ {
		if i > 100 {
			n.t.Fatalf("n%d does not catch up with n%d", n.id, l.id)
		}
		end := n.fetch != nil && n.fetch.FetchOffset == l.log.LogEndOffset()
		n.fetchFrom(l, reqID+uint64(i))
		if end {
			return
		}
	}
}

// TestOverSegmentLogs runs the KIP-101 divergence with real segment logs:
// the epoch caches segment keeps answer the replica's questions, and after
// the truncation both logs hold the same bytes.
func TestOverSegmentLogs(t *testing.T) {
	cfg := Config{MinInsyncReplicas: 1, LagTicks: 10}
	n1, n2 := newSegNode(t, 1, cfg), newSegNode(t, 2, cfg)
	n1.step(BecomeLeader{LeaderEpoch: 1, ISR: []int32{1, 2}, Replicas: []int32{1, 2}})
	n2.step(BecomeFollower{Leader: 1, LeaderEpoch: 1})
	for i := range uint64(3) {
		n1.produce(i, AcksAll, 2)
	}
	n2.catchUp(n1, 100)
	for i := range uint64(3) {
		if err, ok := n1.done[i]; !ok || err != nil {
			t.Fatalf("produce %d: done %v err %v", i, ok, err)
		}
	}
	if n1.r.HW() != 6 {
		t.Fatalf("HW %d, want 6", n1.r.HW())
	}
	n1.produce(3, AcksLeader, 2) // 6..7, epoch 1, only on n1

	// n2 takes over (n1 unreachable) and writes 6..8 in epoch 2.
	n2.step(BecomeLeader{LeaderEpoch: 2, PartitionEpoch: 1, ISR: []int32{2}, Replicas: []int32{1, 2}})
	n2.produce(4, AcksAll, 3)
	// n1 comes back as follower: its 6..7 diverge from n2's.
	n1.step(BecomeFollower{Leader: 2, LeaderEpoch: 2, PartitionEpoch: 1})
	n1.fetchFrom(n2, 200) // diverging: epoch 1 ends at 6
	if got := n1.log.LogEndOffset(); got != 6 {
		t.Fatalf("n1 truncated to %d, want 6", got)
	}
	n1.catchUp(n2, 201)
	if !slices.Equal(n1.log.Epochs(), n2.log.Epochs()) {
		t.Fatalf("epoch caches differ: %v vs %v", n1.log.Epochs(), n2.log.Epochs())
	}
	if b1, b2 := readAll(t, n1.log), readAll(t, n2.log); !bytes.Equal(b1, b2) || n1.log.LogEndOffset() != 9 {
		t.Fatalf("logs differ (%d and %d bytes, log end %d)", len(b1), len(b2), n1.log.LogEndOffset())
	}
	if n2.prop == nil || !slices.Equal(n2.prop.ids(), []int32{2, 1}) {
		t.Fatalf("n2 did not propose n1 back: %v", n2.prop)
	}
}

// TestOverSegmentLogsSync: in sync mode the Flush instructions drive
// segment's group commit and the HW follows the fsynced offsets.
func TestOverSegmentLogsSync(t *testing.T) {
	cfg := Config{MinInsyncReplicas: 2, LagTicks: 10, Durability: Sync}
	n1, n2 := newSegNode(t, 1, cfg), newSegNode(t, 2, cfg)
	n1.step(BecomeLeader{LeaderEpoch: 1, ISR: []int32{1, 2}, Replicas: []int32{1, 2}})
	n2.step(BecomeFollower{Leader: 1, LeaderEpoch: 1})
	n1.produce(1, AcksAll, 4)
	if n1.log.FlushedOffset() != 4 {
		t.Fatalf("leader flushed %d", n1.log.FlushedOffset())
	}
	n2.fetchFrom(n1, 10)
	if n2.log.FlushedOffset() != 4 || n2.fetch == nil || n2.fetch.FetchOffset != 4 {
		t.Fatalf("follower flushed %d, next fetch %+v", n2.log.FlushedOffset(), n2.fetch)
	}
	n2.fetchFrom(n1, 11)
	if err, ok := n1.done[1]; !ok || err != nil || n1.r.HW() != 4 {
		t.Fatalf("produce done %v err %v hw %d", ok, err, n1.r.HW())
	}
}
