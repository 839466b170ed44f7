package node

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/node/replica"
	"github.com/sluice-log/sluice/quorum"
	"github.com/sluice-log/sluice/segment"
)

// The transactional data path on real nodes, at the wire: the test is the
// transactional producer (raw Produce with a transactional id) and the
// transaction coordinator (raw WriteTxnMarkers).

// txnBatchOf is producer pid's transactional batch at epoch and sequence
// seq, one record per value, stamped now.
func txnBatchOf(pid int64, epoch int16, seq int32, values ...string) []byte {
	vs := make([][]byte, len(values))
	for i, v := range values {
		vs[i] = []byte(v)
	}
	b := segment.BuildBatch(time.Now().UnixMilli(), vs...)
	binary.BigEndian.PutUint16(b[21:], binary.BigEndian.Uint16(b[21:])|0x10) // transactional
	return idempotent(b, pid, epoch, seq)                                    // producer, CRC
}

// txnWire is a client that sends raw requests to one broker.
type txnWire struct {
	t      testing.TB
	ctx    context.Context
	cl     *kgo.Client
	topic  string
	id     [16]byte // the topic's id
	broker int32
}

func newTxnWire(ctx context.Context, t testing.TB, cl *kgo.Client, topic string, broker int32) *txnWire {
	t.Helper()
	td, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	if err != nil || td.Error() != nil {
		t.Fatalf("topic id of %s: %v %v", topic, err, td.Error())
	}
	return &txnWire{t: t, ctx: ctx, cl: cl, topic: topic, id: td[topic].ID, broker: broker}
}

// produce sends batch to partition 0 with acks=all and txnID ("": none).
func (w *txnWire) produce(txnID string, batch []byte) kmsg.ProduceResponseTopicPartition {
	w.t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10_000
	if txnID != "" {
		req.TransactionID = kmsg.StringPtr(txnID)
	}
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = w.topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = []kmsg.ProduceRequestTopicPartition{rp}
	req.Topics = []kmsg.ProduceRequestTopic{rt}
	resp, err := req.RequestWith(w.ctx, w.cl.Broker(int(w.broker)))
	if err != nil {
		w.t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0]
}

// marker writes one marker to partition 0 (as the coordinator) and
// returns its error code.
func (w *txnWire) marker(pid int64, epoch int16, commit bool, coordEpoch int32) int16 {
	w.t.Helper()
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = pid, epoch, commit, coordEpoch
	m.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: w.topic, Partitions: []int32{0}}}
	req.Markers = []kmsg.WriteTxnMarkersRequestMarker{m}
	resp, err := req.RequestWith(w.ctx, w.cl.Broker(int(w.broker)))
	if err != nil {
		w.t.Fatal(err)
	}
	return resp.Markers[0].Topics[0].Partitions[0].ErrorCode
}

// fetch reads partition 0 from offset at isolation level iso (0 or 1),
// long-polling up to maxWait for minBytes.
func (w *txnWire) fetch(offset int64, iso int8, maxWait, minBytes int32) kmsg.FetchResponseTopicPartition {
	w.t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.IsolationLevel = maxWait, minBytes, 1<<20, iso
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = w.topic, w.id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes = offset, 1<<20
	rt.Partitions = []kmsg.FetchRequestTopicPartition{rp}
	req.Topics = []kmsg.FetchRequestTopic{rt}
	resp, err := req.RequestWith(w.ctx, w.cl.Broker(int(w.broker)))
	if err != nil {
		w.t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0]
}

// listOffset is partition 0's latest offset at isolation level iso.
func (w *txnWire) listOffset(iso int8) int64 {
	w.t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.IsolationLevel = iso
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = w.topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = -1
	rt.Partitions = []kmsg.ListOffsetsRequestTopicPartition{rp}
	req.Topics = []kmsg.ListOffsetsRequestTopic{rt}
	resp, err := req.RequestWith(w.ctx, w.cl.Broker(int(w.broker)))
	if err != nil {
		w.t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		w.t.Fatalf("ListOffsets isolation %d: error %d", iso, p.ErrorCode)
	}
	return p.Offset
}

// producers describes partition 0's producers.
func (w *txnWire) producers() kmsg.DescribeProducersResponseTopicPartition {
	w.t.Helper()
	req := kmsg.NewPtrDescribeProducersRequest()
	req.Topics = []kmsg.DescribeProducersRequestTopic{{Topic: w.topic, Partitions: []int32{0}}}
	resp, err := req.RequestWith(w.ctx, w.cl.Broker(int(w.broker)))
	if err != nil {
		w.t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0]
}

// batchesOf lists the base offsets of a fetch answer's batches, control
// batches as "c<offset>".
func batchesOf(t testing.TB, p kmsg.FetchResponseTopicPartition) []string {
	t.Helper()
	var out []string
	it := segment.NewBatchIter(p.RecordBatches)
	for h, _, ok := it.Next(); ok; h, _, ok = it.Next() {
		if h.IsControl() {
			out = append(out, fmt.Sprintf("c%d", h.BaseOffset))
		} else {
			out = append(out, fmt.Sprint(h.BaseOffset))
		}
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func abortedOf(p kmsg.FetchResponseTopicPartition) []string {
	var out []string
	for _, a := range p.AbortedTransactions {
		out = append(out, fmt.Sprintf("%d@%d", a.ProducerID, a.FirstOffset))
	}
	return out
}

// consumeValues reads partition 0 of topic from the start with a kgo
// consumer at isolation iso until it has seen last, and returns the values.
func consumeValues(ctx context.Context, t testing.TB, seeds []string, topic string, iso kgo.IsolationLevel, last string) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.FetchIsolationLevel(iso), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var vs []string
	for !slices.Contains(vs, last) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consuming until %q: %v (read %q)", last, ctx.Err(), vs)
		}
		fs.EachRecord(func(r *kgo.Record) { vs = append(vs, string(r.Value)) })
	}
	return vs
}

// TestTxnDataPath: on one node, a transactional producer's batches hold
// the LSO at their first offset (read_committed fetches stop there,
// ListOffsets says so, DescribeProducers shows the open transaction, the
// metrics its lag and age) until the coordinator's commit marker, which
// wakes a read_committed long poll; an aborted transaction is listed
// with the data it overlaps; marker epochs are checked; kgo consumers see
// the committed records only (read_committed) or all (read_uncommitted).
func TestTxnDataPath(t *testing.T) {
	// Batches and markers by hand: no coordinator knows them, so every
	// batch is accepted without asking one.
	tn := startNodeWith(t, t.TempDir(), Options{txnVerifier: acceptVerifier{}})
	ctx := testCtx(t)
	cl := newClient(t, tn)
	createTopic(ctx, t, cl, "tx", 1)
	w := newTxnWire(ctx, t, cl, "tx", 1)
	const pid, other = 4000, 4001
	plain := func(v string) []byte { return segment.BuildBatch(time.Now().UnixMilli(), []byte(v)) }

	if p := w.produce("", plain("p0")); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("p0: %+v", p)
	}
	if p := w.produce("tx-a", txnBatchOf(pid, 0, 0, "a1", "a2")); p.ErrorCode != 0 || p.BaseOffset != 1 {
		t.Fatalf("transactional batch: %+v", p)
	}
	// A plain batch of the producer while its transaction is open.
	if p := w.produce("", idempotent(plain("x"), pid, 0, 2)); p.ErrorCode != kerr.InvalidTxnState.Code {
		t.Fatalf("plain batch inside a transaction: %+v", p)
	}
	if p := w.produce("", idempotent(plain("p1"), other, 0, 0)); p.ErrorCode != 0 || p.BaseOffset != 3 {
		t.Fatalf("p1: %+v", p)
	}

	// Open: the LSO stays at the transaction's first offset.
	rc := w.fetch(0, 1, 0, 0)
	if got := batchesOf(t, rc); rc.ErrorCode != 0 || rc.HighWatermark != 4 || rc.LastStableOffset != 1 ||
		!slices.Equal(got, []string{"0"}) || rc.AbortedTransactions == nil || len(rc.AbortedTransactions) != 0 {
		t.Fatalf("read_committed while open: error %d HW %d LSO %d batches %v aborted %v", rc.ErrorCode, rc.HighWatermark, rc.LastStableOffset, got, rc.AbortedTransactions)
	}
	ru := w.fetch(0, 0, 0, 0)
	if got := batchesOf(t, ru); ru.LastStableOffset != 1 || !slices.Equal(got, []string{"0", "1", "3"}) || ru.AbortedTransactions != nil {
		t.Fatalf("read_uncommitted while open: LSO %d batches %v aborted %v", ru.LastStableOffset, got, ru.AbortedTransactions)
	}
	if c, u := w.listOffset(1), w.listOffset(0); c != 1 || u != 4 {
		t.Fatalf("ListOffsets latest: read_committed %d, read_uncommitted %d; want 1, 4", c, u)
	}
	dp := w.producers()
	i := slices.IndexFunc(dp.ActiveProducers, func(p kmsg.DescribeProducersResponseTopicPartitionActiveProducer) bool { return p.ProducerID == pid })
	if dp.ErrorCode != 0 || i < 0 || dp.ActiveProducers[i].CurrentTxnStartOffset != 1 || dp.ActiveProducers[i].ProducerEpoch != 0 {
		t.Fatalf("DescribeProducers while open: %+v", dp)
	}
	stats := (*metricsSource)(tn.Node).Partitions(nil)
	if len(stats) != 1 || stats[0].HighWatermark-stats[0].LastStable != 3 || stats[0].OpenTxnSince.IsZero() {
		t.Fatalf("metrics while open: %+v", stats)
	}

	// A read_committed long poll at the LSO, woken by the commit.
	polled := make(chan kmsg.FetchResponseTopicPartition, 1)
	go func() { polled <- w.fetch(1, 1, 40_000, 1) }()
	if code := w.marker(pid, 0, true, 1); code != 0 {
		t.Fatalf("commit marker: error %d", code)
	}
	select {
	case p := <-polled:
		if got := batchesOf(t, p); p.LastStableOffset != 5 || !slices.Equal(got, []string{"1", "3", "c4"}) || len(p.AbortedTransactions) != 0 {
			t.Fatalf("long poll after the commit: LSO %d batches %v aborted %v", p.LastStableOffset, got, abortedOf(p))
		}
	case <-time.After(35 * time.Second):
		t.Fatal("read_committed long poll not woken by the commit marker")
	}
	stats = (*metricsSource)(tn.Node).Partitions(nil)
	if stats[0].LastStable != stats[0].HighWatermark || !stats[0].OpenTxnSince.IsZero() {
		t.Fatalf("metrics after the commit: %+v", stats[0])
	}

	// A second transaction at a bumped epoch, aborted.
	if p := w.produce("tx-a", txnBatchOf(pid, 1, 0, "b1")); p.ErrorCode != 0 || p.BaseOffset != 5 {
		t.Fatalf("second transaction: %+v", p)
	}
	if code := w.marker(pid, 0, false, 1); code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("marker at an old producer epoch: error %d", code)
	}
	if code := w.marker(pid, 1, false, 0); code != kerr.TransactionCoordinatorFenced.Code {
		t.Fatalf("marker from an old coordinator epoch: error %d", code)
	}
	if code := w.marker(pid, 1, false, 1); code != 0 {
		t.Fatalf("abort marker: error %d", code)
	}
	if p := w.produce("", idempotent(plain("p2"), other, 0, 1)); p.ErrorCode != 0 || p.BaseOffset != 7 {
		t.Fatalf("p2: %+v", p)
	}
	rc = w.fetch(5, 1, 0, 0)
	if got := batchesOf(t, rc); rc.LastStableOffset != 8 || !slices.Equal(got, []string{"5", "c6", "7"}) ||
		!slices.Equal(abortedOf(rc), []string{fmt.Sprintf("%d@5", pid)}) {
		t.Fatalf("read_committed over the aborted transaction: LSO %d batches %v aborted %v", rc.LastStableOffset, got, abortedOf(rc))
	}
	if got := abortedOf(w.fetch(7, 1, 0, 0)); len(got) != 0 {
		t.Fatalf("a fetch after the aborted transaction lists %v", got)
	}
	if c := w.listOffset(1); c != 8 {
		t.Fatalf("ListOffsets read_committed after the abort: %d", c)
	}
	wrong := *w
	wrong.topic = "nope"
	if code := wrong.marker(pid, 1, true, 1); code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("marker for an unknown topic: error %d", code)
	}

	seeds := []string{tn.KafkaAddr()}
	if got := consumeValues(ctx, t, seeds, "tx", kgo.ReadCommitted(), "p2"); !slices.Equal(got, []string{"p0", "a1", "a2", "p1", "p2"}) {
		t.Fatalf("kgo read_committed read %q", got)
	}
	if got := consumeValues(ctx, t, seeds, "tx", kgo.ReadUncommitted(), "p2"); !slices.Equal(got, []string{"p0", "a1", "a2", "p1", "b1", "p2"}) {
		t.Fatalf("kgo read_uncommitted read %q", got)
	}
}

// acceptVerifier accepts every transactional batch.
type acceptVerifier struct{}

func (acceptVerifier) VerifyTxn(context.Context, string, int64, int16, string, int32, bool) error {
	return nil
}

// fakeVerifier stands in for the transaction coordinator's KIP-890
// verification: it answers by transactional id, counts the calls, and
// for "block" waits until released (telling entered first). A call to
// add (transaction.version 2) counts as the id with "+add".
type fakeVerifier struct {
	calls   chan string
	entered chan struct{}
	release chan struct{}
}

func (f *fakeVerifier) VerifyTxn(ctx context.Context, txnID string, _ int64, _ int16, _ string, _ int32, add bool) error {
	if add {
		f.calls <- txnID + "+add"
	} else {
		f.calls <- txnID
	}
	switch txnID {
	case "not-added":
		return kerr.InvalidTxnState
	case "zombie":
		return kerr.ProducerFenced
	case "coordinator-moving":
		return kerr.NotCoordinator
	case "block":
		f.entered <- struct{}{}
		select {
		case <-f.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// TestTxnVerification (KIP-890 part 1): a transactional batch that would
// open a transaction is verified with the coordinator, and only that one;
// the coordinator's refusals answer INVALID_TXN_STATE,
// INVALID_PRODUCER_EPOCH or (retriable) NOT_ENOUGH_REPLICAS and write
// nothing; a marker written while a batch is being verified makes the
// batch fail (INVALID_TXN_STATE) instead of opening a transaction no
// coordinator would end.
func TestTxnVerification(t *testing.T) {
	fv := &fakeVerifier{calls: make(chan string, 16), entered: make(chan struct{}, 1), release: make(chan struct{})}
	tn := startNodeWith(t, t.TempDir(), Options{txnVerifier: fv})
	ctx := testCtx(t)
	cl := newClient(t, tn, kgo.MaxVersions(tv1Versions())) // Produce v11: verified
	createTopic(ctx, t, cl, "vtx", 1)
	w := newTxnWire(ctx, t, cl, "vtx", 1)
	calls := func() []string {
		var out []string
		for {
			select {
			case c := <-fv.calls:
				out = append(out, c)
			default:
				return out
			}
		}
	}
	leo := func() int64 { return tn.replica("vtx", 0).Log().LogEndOffset() }

	if p := w.produce("ok", txnBatchOf(1, 0, 0, "a")); p.ErrorCode != 0 {
		t.Fatalf("verified batch: %+v", p)
	}
	if p := w.produce("ok", txnBatchOf(1, 0, 1, "b")); p.ErrorCode != 0 {
		t.Fatalf("second batch of the transaction: %+v", p)
	}
	if got := calls(); !slices.Equal(got, []string{"ok"}) {
		t.Fatalf("verifications %q, want one for the batch that opened the transaction", got)
	}
	for txnID, want := range map[string]*kerr.Error{"not-added": kerr.InvalidTxnState, "zombie": kerr.InvalidProducerEpoch,
		"coordinator-moving": kerr.NotEnoughReplicas} {
		before := leo()
		if p := w.produce(txnID, txnBatchOf(2, 0, 0, "x")); p.ErrorCode != want.Code {
			t.Fatalf("%s: error %d, want %s", txnID, p.ErrorCode, want.Message)
		}
		if leo() != before {
			t.Fatalf("%s: the refused batch was written", txnID)
		}
	}
	calls()

	// The guard: an abort marker lands while the batch is verified.
	answer := make(chan kmsg.ProduceResponseTopicPartition, 1)
	go func() { answer <- w.produce("block", txnBatchOf(3, 0, 0, "late")) }()
	select {
	case <-fv.entered:
	case <-ctx.Done():
		t.Fatal("the batch was never verified")
	}
	if code := w.marker(3, 0, false, 0); code != 0 {
		t.Fatalf("abort marker: error %d", code)
	}
	before := leo()
	close(fv.release)
	if p := <-answer; p.ErrorCode != kerr.InvalidTxnState.Code {
		t.Fatalf("batch verified across a marker: %+v", p)
	}
	if leo() != before {
		t.Fatal("the late batch was written")
	}
	if _, _, open := tn.replica("vtx", 0).Log().OngoingTxn(3); open {
		t.Fatal("the late batch opened a transaction")
	}

	// Transaction version 2 (Produce v12): the coordinator is asked to
	// add the partition, and no guard is kept: the previous
	// transaction's marker (at the bumped epoch 1) written while the add
	// is in flight does not fail the batch; a late batch of the ended
	// transaction (epoch 0) is fenced by the log.
	calls()
	w2 := newTxnWire(ctx, t, newClient(t, tn), "vtx", 1)
	fv.release = make(chan struct{})
	go func() { answer <- w2.produce("block", txnBatchOf(4, 1, 0, "tv2")) }()
	select {
	case <-fv.entered:
	case <-ctx.Done():
		t.Fatal("the batch was never added")
	}
	if code := w2.marker(4, 1, true, 0); code != 0 {
		t.Fatalf("commit marker: error %d", code)
	}
	close(fv.release)
	if p := <-answer; p.ErrorCode != 0 {
		t.Fatalf("version 2 batch across the previous transaction's marker: %+v", p)
	}
	if p := w2.produce("ok", txnBatchOf(4, 0, 1, "late")); p.ErrorCode != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("late batch at the ended transaction's epoch: %+v", p)
	}
	// The late batch's epoch is not its open transaction's: it asks too
	// (a real coordinator would answer PRODUCER_FENCED; the log refuses
	// it all the same).
	if got := calls(); !slices.Equal(got, []string{"block+add", "ok+add"}) {
		t.Fatalf("calls %q, want two adds", got)
	}
}

// TestTxnMarkersReplicated: RF=3. A committed transaction and an open one
// replicate with their marker and state; the leader is killed; the new
// leader holds the LSO at the open transaction's first offset (its state
// rebuilt from the replicated batches) until the coordinator's abort
// marker, written there; read_committed consumers then see the committed
// transaction only; the old leader restarts and its log agrees, aborted
// index included.
func TestTxnMarkersReplicated(t *testing.T) {
	// Batches and markers by hand: no coordinator knows them.
	c := newReplCluster(t, 3, false)
	c.verifier = acceptVerifier{}
	c.start()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	const topic = "rtx"
	c.createTopic(ctx, topic, 1, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")})
	var leader *replNode
	c.waitImage(ctx, "a leader with the full ISR", func(im *quorum.Image) bool {
		p := im.Topics[topic].Partitions[0]
		return p.Leader >= 0 && len(p.ISR) == 3
	})
	leader = c.leaderOf(topic, 0)
	cl := c.client()
	w := newTxnWire(ctx, t, cl, topic, leader.id)
	const pid = 9000
	if p := w.produce("t", txnBatchOf(pid, 0, 0, "a1", "a2")); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("transaction A: %+v", p)
	}
	if code := w.marker(pid, 0, true, 3); code != 0 {
		t.Fatalf("commit marker: error %d", code)
	}
	if p := w.produce("t", txnBatchOf(pid, 0, 2, "b1")); p.ErrorCode != 0 || p.BaseOffset != 3 {
		t.Fatalf("transaction B: %+v", p)
	}
	// Every replica holds both, with B open from offset 3.
	for _, rn := range c.nodes {
		waitUntilFn(ctx, t, fmt.Sprintf("node %d's copy", rn.id), func() bool {
			r := rn.replica(topic, 0)
			if r == nil {
				return false
			}
			first, _, open := r.Log().OngoingTxn(pid)
			return r.Log().LogEndOffset() == 4 && open && first == 3
		})
	}
	if c, u := w.listOffset(1), w.listOffset(0); c != 3 || u != 4 {
		t.Fatalf("before the kill: LSO %d, HW %d", c, u)
	}

	c.kill(leader)
	c.waitImage(ctx, "a new leader", func(im *quorum.Image) bool {
		l := im.Topics[topic].Partitions[0].Leader
		return l >= 0 && l != leader.id
	})
	next := c.leaderOf(topic, 0)
	cl2 := c.client()
	w2 := newTxnWire(ctx, t, cl2, topic, next.id)
	waitUntilFn(ctx, t, "the new leader's high watermark", func() bool { return w2.listOffset(0) == 4 })
	if got := w2.listOffset(1); got != 3 {
		t.Fatalf("new leader's LSO with B open: %d, want 3", got)
	}
	dp := w2.producers()
	if dp.ErrorCode != 0 || len(dp.ActiveProducers) != 1 || dp.ActiveProducers[0].CurrentTxnStartOffset != 3 ||
		dp.ActiveProducers[0].CoordinatorEpoch != 3 {
		t.Fatalf("new leader's producers: %+v", dp)
	}
	// The coordinator, at the same epoch, aborts B at the new leader.
	if code := w2.marker(pid, 0, false, 3); code != 0 {
		t.Fatalf("abort marker at the new leader: error %d", code)
	}
	if c, u := w2.listOffset(1), w2.listOffset(0); c != 5 || u != 5 {
		t.Fatalf("after the abort: LSO %d, HW %d", c, u)
	}
	rc := w2.fetch(0, 1, 0, 0)
	if got := batchesOf(t, rc); !slices.Equal(got, []string{"0", "c2", "3", "c4"}) || !slices.Equal(abortedOf(rc), []string{fmt.Sprintf("%d@3", pid)}) {
		t.Fatalf("read_committed at the new leader: batches %v aborted %v", got, abortedOf(rc))
	}
	var seeds []string
	for _, rn := range c.nodes {
		if rn.Node != nil {
			seeds = append(seeds, rn.KafkaAddr())
		}
	}
	if p := w2.produce("", segment.BuildBatch(time.Now().UnixMilli(), []byte("end"))); p.ErrorCode != 0 {
		t.Fatalf("end: %+v", p)
	}
	if got := consumeValues(ctx, t, seeds, topic, kgo.ReadCommitted(), "end"); !slices.Equal(got, []string{"a1", "a2", "end"}) {
		t.Fatalf("kgo read_committed read %q", got)
	}

	c.restart(leader)
	var r *replica.Replica
	waitUntilFn(ctx, t, "the old leader caught up", func() bool {
		if r = leader.replica(topic, 0); r == nil {
			return false
		}
		_, _, open := r.Log().OngoingTxn(pid)
		return r.Log().LogEndOffset() == 6 && !open
	})
	if got := r.Log().AbortedTxns(0, 6, nil); len(got) != 1 || got[0].ProducerID != pid || got[0].FirstOffset != 3 || got[0].LastOffset != 4 {
		t.Fatalf("old leader's aborted index: %+v", got)
	}
}

// waitUntilFn polls cond (every 20 ms) until it holds or ctx ends.
func waitUntilFn(ctx context.Context, t testing.TB, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-tick.C:
		}
	}
}
