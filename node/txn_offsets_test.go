package node

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/node/group"
)

// txnOffsets drives one group's transactional offset commits with raw
// requests, as a transactional producer and its transaction coordinator
// would send them.
type txnOffsets struct {
	t     *testing.T
	ctx   context.Context
	cl    *kgo.Client
	group string
	shard int32 // the group's partition of __consumer_offsets
}

// commit sends TxnOffsetCommit for producer (pid, epoch) with offsets
// partition → offset of topic "in", retrying while the coordinator is
// being created or loads; it returns each partition's error code.
func (x *txnOffsets) commit(pid int64, epoch int16, offsets map[int32]int64) map[int32]int16 {
	x.t.Helper()
	var codes map[int32]int16
	waitFor(x.ctx, x.t, "TxnOffsetCommit answered by a loaded coordinator", func() bool {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.Version = 3
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = "tx", x.group, pid, epoch
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = "in"
		for p, o := range offsets {
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = p, o
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(x.ctx, x.cl)
		if err != nil {
			return false
		}
		codes = map[int32]int16{}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				switch p.ErrorCode {
				case kerr.CoordinatorNotAvailable.Code, kerr.NotCoordinator.Code, kerr.CoordinatorLoadInProgress.Code:
					return false
				}
				codes[p.Partition] = p.ErrorCode
			}
		}
		return true
	})
	return codes
}

// fetch is OffsetFetch v8 of partitions 0 and 1 of "in", with
// require_stable if stable: "p=offset" or "p:ERROR" each.
func (x *txnOffsets) fetch(stable bool) string {
	x.t.Helper()
	var out string
	waitFor(x.ctx, x.t, "OffsetFetch answered by a loaded coordinator", func() bool {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version, req.RequireStable = 8, stable
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = x.group
		rt := kmsg.NewOffsetFetchRequestGroupTopic()
		rt.Topic, rt.Partitions = "in", []int32{0, 1}
		rg.Topics = append(rg.Topics, rt)
		req.Groups = append(req.Groups, rg)
		resp, err := req.RequestWith(x.ctx, x.cl)
		if err != nil || len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
			return false
		}
		out = ""
		for _, t := range resp.Groups[0].Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					out += fmt.Sprintf("%d:%s ", p.Partition, kerr.ErrorForCode(p.ErrorCode).(*kerr.Error).Message)
				} else {
					out += fmt.Sprintf("%d=%d ", p.Partition, p.Offset)
				}
			}
		}
		return true
	})
	return out
}

// marker writes the marker ending pid's transaction on the group's
// offsets partition with WriteTxnMarkers, as the transaction coordinator
// does; the node tells the group coordinator once it is committed.
func (x *txnOffsets) marker(pid int64, epoch int16, commit bool) {
	x.t.Helper()
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Version = 1
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed = pid, epoch, commit
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = group.OffsetsTopic, []int32{x.shard}
	m.Topics = append(m.Topics, mt)
	req.Markers = append(req.Markers, m)
	resp, err := req.RequestWith(x.ctx, x.cl)
	if err != nil {
		x.t.Fatalf("WriteTxnMarkers: %v", err)
	}
	for _, rm := range resp.Markers {
		for _, rt := range rm.Topics {
			for _, rp := range rt.Partitions {
				if rp.ErrorCode != 0 {
					x.t.Fatalf("WriteTxnMarkers: %s/%d: %v", rt.Topic, rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
				}
			}
		}
	}
}

// TestTxnOffsetCommit: on a real node, with raw TxnOffsetCommit,
// WriteTxnMarkers and OffsetFetch requests (no transaction coordinator:
// KIP-890's check of TxnOffsetCommit accepts all), a transaction's offsets are
// invisible (UNSTABLE_OFFSET_COMMIT with require_stable) until its commit
// marker, never visible after an abort, and a restarted node (the
// coordinator loading the partition again) rebuilds both the pending and
// the committed offsets from the transactional and control batches. A
// producer's later transactions continue its sequence in the offsets
// partition; an older epoch after a newer one is fenced by the log.
func TestTxnOffsetCommit(t *testing.T) {
	dir := t.TempDir()
	settings := []string{"offsets.topic.num.partitions=3"}
	tn := startNodeWith(t, dir, Options{txnVerifier: acceptVerifier{}}, settings...)
	ctx := testCtx(t)
	cl := newClient(t, tn)
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, "in"); err != nil {
		t.Fatal(err)
	}
	ip, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, cl)
	if err != nil || ip.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v %v", err, ip)
	}
	pid, epoch := ip.ProducerID, ip.ProducerEpoch
	x := &txnOffsets{t: t, ctx: ctx, cl: cl, group: "eos", shard: group.Partition("eos", 3)}

	if codes := x.commit(pid, epoch, map[int32]int64{0: 5, 1: 6}); codes[0] != 0 || codes[1] != 0 {
		t.Fatalf("TxnOffsetCommit: %v", codes)
	}
	if got := x.fetch(false); got != "0=-1 1=-1 " {
		t.Errorf("pending offsets visible: %s", got)
	}
	if got := x.fetch(true); got != "0:UNSTABLE_OFFSET_COMMIT 1:UNSTABLE_OFFSET_COMMIT " {
		t.Errorf("require_stable with pending offsets: %s", got)
	}

	// A restart: the coordinator loads the transactional batch as pending.
	tn.close(t)
	tn = startNodeWith(t, dir, Options{txnVerifier: acceptVerifier{}}, settings...)
	x.cl = newClient(t, tn)
	if got := x.fetch(true); got != "0:UNSTABLE_OFFSET_COMMIT 1:UNSTABLE_OFFSET_COMMIT " {
		t.Errorf("after a restart, require_stable: %s", got)
	}
	x.marker(pid, epoch, true)
	waitFor(ctx, t, "the committed transaction's offsets", func() bool { return x.fetch(true) == "0=5 1=6 " })

	// The next transaction (same epoch: the sequence continues) aborts.
	if codes := x.commit(pid, epoch, map[int32]int64{0: 9}); codes[0] != 0 {
		t.Fatalf("second TxnOffsetCommit: %v", codes)
	}
	if got := x.fetch(true); got != "0:UNSTABLE_OFFSET_COMMIT 1=6 " {
		t.Errorf("second transaction pending: %s", got)
	}
	x.marker(pid, epoch, false)
	waitFor(ctx, t, "the aborted transaction's offsets dropped", func() bool { return x.fetch(true) == "0=5 1=6 " })

	// A new epoch commits; the old epoch is fenced by the log.
	if codes := x.commit(pid, epoch+1, map[int32]int64{1: 20}); codes[1] != 0 {
		t.Fatalf("TxnOffsetCommit at a new epoch: %v", codes)
	}
	if codes := x.commit(pid, epoch, map[int32]int64{1: 21}); codes[1] != kerr.InvalidProducerEpoch.Code {
		t.Errorf("TxnOffsetCommit at the old epoch: %v, want INVALID_PRODUCER_EPOCH", codes)
	}
	x.marker(pid, epoch+1, true)
	waitFor(ctx, t, "the new epoch's offsets", func() bool { return x.fetch(true) == "0=5 1=20 " })

	// Another restart replays all of it: commits, the abort, the markers.
	tn.close(t)
	tn = startNodeWith(t, dir, Options{txnVerifier: acceptVerifier{}}, settings...)
	x.cl = newClient(t, tn)
	if got := x.fetch(true); got != "0=5 1=20 " {
		t.Errorf("after the second restart: %s, want 0=5 1=20", got)
	}
}

// TestGroupTransactSession: franz-go's GroupTransactSession on one node
// reads "in" and writes "out" with its group's offsets committed in each
// transaction (AddOffsetsToTxn, TxnOffsetCommit, the markers on
// __consumer_offsets). Its first transaction aborts: the session goes
// back to the group's committed offsets, and in the end the group has
// committed every input record and "out", read_committed, holds each
// input exactly once.
func TestGroupTransactSession(t *testing.T) {
	tn := startNode(t, t.TempDir(), "group.initial.rebalance.delay.ms=0", "offsets.topic.num.partitions=3",
		"transaction.state.log.num.partitions=3")
	ctx := testCtx(t)
	adm := kadm.NewClient(newClient(t, tn))
	for _, topic := range []string{"in", "out"} {
		if _, err := adm.CreateTopic(ctx, 2, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	const total = 200
	prod := newClient(t, tn, kgo.DefaultProduceTopic("in"))
	for i := range total {
		prod.Produce(ctx, &kgo.Record{Value: fmt.Appendf(nil, "%d", i)}, nil)
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(tn.KafkaAddr()), kgo.TransactionalID("eos-1"),
		kgo.TransactionTimeout(30*time.Second), kgo.ConsumerGroup("eos"), kgo.ConsumeTopics("in"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.DefaultProduceTopic("out"), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.RequireStableFetchOffsets())
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	aborted, consumed := false, 0
	for consumed < total {
		fs := sess.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d", consumed, total)
		}
		if err := fs.Err0(); err != nil {
			t.Fatalf("poll: %v", err)
		}
		if fs.NumRecords() == 0 {
			continue
		}
		if err := sess.Begin(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) { sess.Produce(ctx, &kgo.Record{Value: r.Value}, nil) })
		end := kgo.TryCommit
		if !aborted {
			end, aborted = kgo.TryAbort, true
		}
		committed, err := sess.End(ctx, end)
		if err != nil {
			t.Fatalf("End: %v", err)
		}
		if committed {
			consumed += fs.NumRecords()
		}
	}
	// EndTxn is answered once the commit is decided; the markers, and so
	// the offsets, land after it (clients read with require_stable).
	waitFor(ctx, t, "the group's offsets committed up to every input", func() bool {
		offs, err := adm.FetchOffsets(ctx, "eos")
		if err != nil {
			return false
		}
		var sum int64
		offs.Each(func(o kadm.OffsetResponse) { sum += o.At })
		if sum > total {
			t.Fatalf("the group's committed offsets sum to %d, past %d: %v", sum, total, offs)
		}
		return sum == total
	})
	cl := newClient(t, tn, kgo.ConsumeTopics("out"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	seen := map[string]int{}
	n := 0
	for n < total {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d from out", n, total)
		}
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++; n++ })
	}
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	cl.PollFetches(pctx).EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
	cancel()
	for i := range total {
		if c := seen[fmt.Sprint(i)]; c != 1 {
			t.Errorf("input %d is in out %d times", i, c)
		}
	}
	if len(seen) != total {
		t.Errorf("out holds %d distinct values, want %d", len(seen), total)
	}
}
