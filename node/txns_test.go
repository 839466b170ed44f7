package node

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/node/txn"
)

// txnSettings keep transaction tests fast: three state partitions (and
// three offsets partitions).
var txnSettings = []string{"transaction.state.log.num.partitions=3", "offsets.topic.num.partitions=3",
	"group.initial.rebalance.delay.ms=0"}

// txnRequest sends req through cl (kgo routes the transaction APIs to the
// id's coordinator) until it is answered with a code other than the
// retriable coordinator ones, and returns the answer.
func txnRequest[R kmsg.Response](ctx context.Context, t *testing.T, cl *kgo.Client, req kmsg.Request, code func(R) int16) R {
	t.Helper()
	for {
		resp, err := cl.Request(ctx, req)
		if err == nil {
			r := resp.(R)
			switch kerr.ErrorForCode(code(r)) {
			case kerr.CoordinatorNotAvailable, kerr.NotCoordinator, kerr.CoordinatorLoadInProgress, kerr.ConcurrentTransactions:
			default:
				return r
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %v (last error %v)", kmsg.NameForKey(req.Key()), ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func initPID(ctx context.Context, t *testing.T, cl *kgo.Client, id string) (int64, int16) {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(id), 60000
	resp := txnRequest(ctx, t, cl, req, func(r *kmsg.InitProducerIDResponse) int16 { return r.ErrorCode })
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatalf("InitProducerId %s: %v", id, err)
	}
	return resp.ProducerID, resp.ProducerEpoch
}

func addPartitions(ctx context.Context, t *testing.T, cl *kgo.Client, id string, pid int64, epoch int16, topic string, parts ...int32) error {
	t.Helper()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 3
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, epoch
	rt := kmsg.NewAddPartitionsToTxnRequestTopic()
	rt.Topic, rt.Partitions = topic, parts
	req.Topics = append(req.Topics, rt)
	resp := txnRequest(ctx, t, cl, req, func(r *kmsg.AddPartitionsToTxnResponse) int16 {
		return r.Topics[0].Partitions[0].ErrorCode
	})
	return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
}

func describeTxn(ctx context.Context, t *testing.T, cl *kgo.Client, id string) kmsg.DescribeTransactionsResponseTransactionState {
	t.Helper()
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{id}
	resp := txnRequest(ctx, t, cl, req, func(r *kmsg.DescribeTransactionsResponse) int16 { return r.TransactionStates[0].ErrorCode })
	return resp.TransactionStates[0]
}

// TestTxnCoordinatorThreeNodes drives the transaction coordinator with
// the transaction APIs' requests on three nodes: FindCoordinator creates
// __transaction_state (internal, compacted, two copies), InitProducerId
// bumps the epoch of a known id and so fences the older incarnation,
// AddPartitionsToTxn starts a transaction that DescribeTransactions and
// ListTransactions show, EndTxn ends it, and the clients' write and
// delete of the internal topic are refused.
func TestTxnCoordinatorThreeNodes(t *testing.T) {
	c := startReplCluster(t, 3, txnSettings...)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl := c.client()
	adm := kadm.NewClient(cl)
	c.createTopic(ctx, "orders", 2, nil)

	const id = "tx-a"
	pid, epoch := initPID(ctx, t, cl, id)
	if epoch != 0 {
		t.Fatalf("a new id got epoch %d, want 0", epoch)
	}
	// InitProducerId is served up to v5 (KIP-890), kmsg's highest: kgo
	// sends the highest both sides know.
	if v := c.apiMax(ctx, t, kmsg.InitProducerID); v != 5 {
		t.Fatalf("ApiVersions lists InitProducerId up to v%d, want 5", v)
	}
	pid2, epoch2 := initPID(ctx, t, cl, id)
	if pid2 != pid || epoch2 != 1 {
		t.Fatalf("InitProducerId again: producer %d epoch %d, want %d epoch 1", pid2, epoch2, pid)
	}
	if err := addPartitions(ctx, t, cl, id, pid, 0, "orders", 0); err != kerr.ProducerFenced {
		t.Fatalf("AddPartitionsToTxn with the fenced epoch: %v, want PRODUCER_FENCED", err)
	}
	if err := addPartitions(ctx, t, cl, id, pid, 1, "orders", 0, 1); err != nil {
		t.Fatalf("AddPartitionsToTxn: %v", err)
	}
	if err := addPartitions(ctx, t, cl, id, pid, 1, "nope", 0); err != kerr.UnknownTopicOrPartition {
		t.Fatalf("AddPartitionsToTxn of an unknown topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}
	st := describeTxn(ctx, t, cl, id)
	if st.ErrorCode != 0 || st.State != "Ongoing" || st.ProducerID != pid || len(st.Topics) != 1 || len(st.Topics[0].Partitions) != 2 {
		t.Fatalf("DescribeTransactions: %+v", st)
	}
	if st := describeTxn(ctx, t, cl, "never-seen"); st.ErrorCode != kerr.TransactionalIDNotFound.Code {
		t.Fatalf("DescribeTransactions of an unknown id: %v", kerr.ErrorForCode(st.ErrorCode))
	}
	lt, err := adm.ListTransactions(ctx, nil, []string{"Ongoing"})
	if err != nil {
		t.Fatal(err)
	}
	if got := lt.TransactionalIDs(); len(got) != 1 || got[0] != id {
		t.Fatalf("ListTransactions Ongoing: %v", got)
	}

	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = id, pid, 1, false
	er := txnRequest(ctx, t, cl, end, func(r *kmsg.EndTxnResponse) int16 { return r.ErrorCode })
	if er.ErrorCode != 0 {
		t.Fatalf("EndTxn: %v", kerr.ErrorForCode(er.ErrorCode))
	}
	if st := describeTxn(ctx, t, cl, id); st.State != "PrepareAbort" && st.State != "CompleteAbort" {
		t.Fatalf("after EndTxn(abort): %s", st.State)
	}

	// The state topic: internal, compacted, two copies; clients may not
	// write or delete it.
	rcs, err := adm.DescribeTopicConfigs(ctx, txn.StateTopic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(txn.StateTopic, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"cleanup.policy": "compact", "min.insync.replicas": "2"}
	for _, cfg := range rc.Configs {
		if w, ok := want[cfg.Key]; ok && cfg.Value != nil && *cfg.Value == w {
			delete(want, cfg.Key)
		}
	}
	if len(want) > 0 {
		t.Errorf("%s configs not as expected: %v", txn.StateTopic, want)
	}
	tds, err := adm.ListTopicsWithInternal(ctx, txn.StateTopic)
	if err != nil {
		t.Fatal(err)
	}
	if td := tds[txn.StateTopic]; !td.IsInternal || len(td.Partitions) != 3 {
		t.Errorf("%s: internal %v, %d partitions", txn.StateTopic, td.IsInternal, len(td.Partitions))
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: txn.StateTopic, Value: []byte("x")}).FirstErr(); err == nil {
		t.Errorf("a client's produce to %s succeeded", txn.StateTopic)
	}
	if r, err := adm.DeleteTopics(ctx, txn.StateTopic); err == nil && r[txn.StateTopic].Err == nil {
		t.Errorf("a client deleted %s", txn.StateTopic)
	}
}

// readTopic reads every partition of topic from the start with the
// isolation level until want records arrived (or ctx ends) and a second
// poll brings nothing more; it returns the values by count.
func readTopic(ctx context.Context, t *testing.T, c *replCluster, topic string, level kgo.IsolationLevel, want int) map[string]int {
	t.Helper()
	cl := c.client(kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(level), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200*time.Millisecond))
	defer cl.Close()
	got := map[string]int{}
	n := 0
	for n < want {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil {
			t.Fatalf("reading %s: %d of %d records: %v", topic, n, want, got)
		}
		fs.EachRecord(func(r *kgo.Record) { got[string(r.Value)]++; n++ })
	}
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	cl.PollFetches(pctx).EachRecord(func(r *kgo.Record) { got[string(r.Value)]++ })
	cancel()
	return got
}

// produceTxn produces n records value prefix-i in one transaction of cl
// and ends it with commit.
func produceTxn(ctx context.Context, t *testing.T, cl *kgo.Client, topic, prefix string, n int, commit bool) error {
	t.Helper()
	if err := cl.BeginTransaction(); err != nil {
		return err
	}
	for i := range n {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "%s-%d", prefix, i)}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	return cl.EndTransaction(ctx, kgo.TransactionEndTry(commit))
}

// TestTxnProducerThreeNodes: franz-go's transactional producer commits
// and aborts transactions over three partitions on three nodes; a
// read_committed consumer sees every committed record once and none of
// the aborted ones, a read_uncommitted one sees both; the coordinator
// describes the id CompleteCommit with its producer.
func TestTxnProducerThreeNodes(t *testing.T) {
	c := startReplCluster(t, 3, txnSettings...)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	const topic = "txn-data"
	c.createTopic(ctx, topic, 3, nil)
	p := c.client(kgo.TransactionalID("tp-1"), kgo.TransactionTimeout(30*time.Second))
	if err := produceTxn(ctx, t, p, topic, "c1", 30, true); err != nil {
		t.Fatalf("first transaction: %v", err)
	}
	if err := produceTxn(ctx, t, p, topic, "a", 30, false); err != nil {
		t.Fatalf("aborted transaction: %v", err)
	}
	if err := produceTxn(ctx, t, p, topic, "c2", 30, true); err != nil {
		t.Fatalf("second transaction: %v", err)
	}
	committed := readTopic(ctx, t, c, topic, kgo.ReadCommitted(), 60)
	for v, k := range committed {
		if strings.HasPrefix(v, "a-") || k != 1 {
			t.Errorf("read_committed got %q %d times", v, k)
		}
	}
	if len(committed) != 60 {
		t.Errorf("read_committed got %d distinct records, want 60", len(committed))
	}
	all := readTopic(ctx, t, c, topic, kgo.ReadUncommitted(), 90)
	if len(all) != 90 {
		t.Errorf("read_uncommitted got %d distinct records, want 90 (aborted included)", len(all))
	}
	dt, err := kadm.NewClient(c.client()).DescribeTransactions(ctx, "tp-1")
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := dt["tp-1"]; !ok || d.State != "CompleteCommit" || d.Err != nil {
		t.Errorf("DescribeTransactions: %+v", d)
	}

	// The coordinator's metrics, over the three nodes: every state
	// partition loaded somewhere, the transactions' outcomes, markers
	// written and none waiting.
	var loaded, commits, aborts, written, queued, requests float64
	for _, rn := range c.nodes {
		mfs := gatherNode(t, rn.Node)
		loaded += seriesValue(mfs, "sluice_txn_coordinator_partitions", "loaded")
		commits += seriesValue(mfs, "sluice_txn_coordinator_transactions_completed_total", "commit")
		aborts += seriesValue(mfs, "sluice_txn_coordinator_transactions_completed_total", "abort")
		written += seriesValue(mfs, "sluice_txn_markers_total", "written")
		queued += seriesValue(mfs, "kafka_coordinator_transaction_transactionmarkerchannelmanager_queuesize", "")
		requests += seriesValue(mfs, "sluice_txn_marker_requests_total", "")
	}
	if loaded != 3 || commits != 2 || aborts != 1 || written < 3 || queued != 0 || requests < 3 {
		t.Errorf("metrics: %v state partitions loaded, %v commits, %v aborts, %v markers written, %v queued, %v requests",
			loaded, commits, aborts, written, queued, requests)
	}
}

// seriesValue is the value (gauge or counter) of family name's series
// whose one label has value label (any series when label is empty), or
// their sum when several match.
func seriesValue(mfs map[string]*dto.MetricFamily, name, label string) float64 {
	var sum float64
	if mf := mfs[name]; mf != nil {
		for _, m := range mf.Metric {
			if label != "" && (len(m.Label) == 0 || m.Label[0].GetValue() != label) {
				continue
			}
			sum += m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	return sum
}

// TestTxnZombieFenced: a second producer with the same transactional.id
// fences the first: the first one's transaction is aborted and its next
// write or commit fails with PRODUCER_FENCED or INVALID_PRODUCER_EPOCH;
// the second one commits, and read_committed shows only its records.
func TestTxnZombieFenced(t *testing.T) {
	c := startReplCluster(t, 3, txnSettings...)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	const topic = "zombie"
	c.createTopic(ctx, topic, 2, nil)
	old := c.client(kgo.TransactionalID("z"), kgo.TransactionTimeout(30*time.Second))
	if err := old.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := old.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("zombie-0")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	fresh := c.client(kgo.TransactionalID("z"), kgo.TransactionTimeout(30*time.Second))
	if err := produceTxn(ctx, t, fresh, topic, "fresh", 10, true); err != nil {
		t.Fatalf("the new incarnation: %v", err)
	}
	err := old.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("zombie-1")}).FirstErr()
	if err == nil {
		err = old.EndTransaction(ctx, kgo.TryCommit)
	}
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("the zombie's write and commit: %v, want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH", err)
	}
	got := readTopic(ctx, t, c, topic, kgo.ReadCommitted(), 10)
	for v := range got {
		if strings.HasPrefix(v, "zombie") {
			t.Errorf("read_committed shows the zombie's %q", v)
		}
	}
	if len(got) != 10 {
		t.Errorf("read_committed: %d records, want 10", len(got))
	}
}

// txnCoordinator is the node coordinating id (retried until found).
func txnCoordinator(ctx context.Context, t *testing.T, c *replCluster, adm *kadm.Client, id string) *replNode {
	t.Helper()
	for {
		r := adm.FindTxnCoordinators(ctx, id)[id]
		if r.Err == nil {
			for _, rn := range c.nodes {
				if rn.id == r.NodeID && rn.Node != nil {
					return rn
				}
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("finding the coordinator of %s: %v", id, r.Err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TestTxnCoordinatorFailover: the node coordinating two transactional
// ids is killed while both have a transaction open with records
// written. The producer still running commits at the new coordinator
// (which loaded the ongoing transaction from __transaction_state); the
// abandoned one's transaction is aborted by the new coordinator when it
// times out. read_committed then sees the committed records only, and
// the last stable offset moves on (a later record is read).
func TestTxnCoordinatorFailover(t *testing.T) {
	c := startReplCluster(t, 3, append([]string{"transaction.abort.timed.out.transaction.cleanup.interval.ms=500"}, txnSettings...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	const topic = "failover"
	c.createTopic(ctx, topic, 3, nil)
	adm := kadm.NewClient(c.client(kgo.MetadataMinAge(500*time.Millisecond), kgo.MetadataMaxAge(2*time.Second)))
	victim := txnCoordinator(ctx, t, c, adm, "fo-live")
	// An id coordinated by the same node (three state partitions).
	abandoned := ""
	for i := 0; abandoned == ""; i++ {
		id := fmt.Sprintf("fo-gone-%d", i)
		if txnCoordinator(ctx, t, c, adm, id) == victim {
			abandoned = id
		}
	}
	opts := []kgo.Opt{kgo.MetadataMinAge(500 * time.Millisecond), kgo.MetadataMaxAge(2 * time.Second)}
	live := c.client(append(opts, kgo.TransactionalID("fo-live"), kgo.TransactionTimeout(60*time.Second))...)
	gone := c.client(append(opts, kgo.TransactionalID(abandoned), kgo.TransactionTimeout(3*time.Second))...)
	for _, p := range []struct {
		cl     *kgo.Client
		prefix string
	}{{live, "live"}, {gone, "gone"}} {
		if err := p.cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range 20 {
			p.cl.Produce(ctx, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "%s-%d", p.prefix, i)}, nil)
		}
		if err := p.cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}

	c.kill(victim)
	if err := live.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit after the coordinator was killed: %v", err)
	}
	if next := txnCoordinator(ctx, t, c, adm, "fo-live"); next == victim {
		t.Fatalf("node %d still coordinates after its kill", victim.id)
	}
	waitFor(ctx, t, "the abandoned transaction aborted by the new coordinator", func() bool {
		d, err := adm.DescribeTransactions(ctx, abandoned)
		return err == nil && d[abandoned].State == "CompleteAbort"
	})
	plain := c.client()
	if err := plain.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	got := readTopic(ctx, t, c, topic, kgo.ReadCommitted(), 21)
	for v, k := range got {
		if strings.HasPrefix(v, "gone-") || k != 1 {
			t.Errorf("read_committed got %q %d times", v, k)
		}
	}
	if len(got) != 21 || got["after"] != 1 {
		t.Errorf("read_committed got %d records (want the 20 committed and the later one): %v", len(got), got)
	}
}

// txnBatch is one transactional record batch (value v) of producer pid
// at epoch, first sequence seq.
func txnBatch(pid int64, epoch int16, seq int32, v string) []byte {
	b := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, Attributes: 0x10, FirstTimestamp: time.Now().UnixMilli(),
		MaxTimestamp: time.Now().UnixMilli(), ProducerID: pid, ProducerEpoch: epoch, FirstSequence: seq,
		NumRecords: 1, Records: kRecords(v)}
	b.Length = int32(len(b.AppendTo(nil)) - 12)
	enc := b.AppendTo(nil)
	b.CRC = int32(crc32.Checksum(enc[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b.AppendTo(nil)
}

// TestTxnProduceVerified: KIP-890 part 1 on three nodes (Produce v11). A transactional
// batch to a partition its transaction never added is refused by the
// partition leader after asking the coordinator (INVALID_TXN_STATE: no
// hanging transaction); once AddPartitionsToTxn added it, the same
// batch is appended, and the transaction commits.
func TestTxnProduceVerified(t *testing.T) {
	c := startReplCluster(t, 3, txnSettings...)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl := c.client(kgo.MaxVersions(tv1Versions())) // Produce v11: verified, not added
	const topic, id = "verified", "v-1"
	c.createTopic(ctx, topic, 1, nil)
	pid, epoch := initPID(ctx, t, cl, id)
	produce := func() int16 {
		t.Helper()
		for {
			req := kmsg.NewPtrProduceRequest()
			req.Acks, req.TimeoutMillis, req.TransactionID = -1, 10000, kmsg.StringPtr(id)
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Records = txnBatch(pid, epoch, 0, "v")
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			leader := c.leaderOf(topic, 0)
			resp, err := cl.Broker(int(leader.id)).Request(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
			if code != kerr.NotEnoughReplicas.Code && code != kerr.NotLeaderForPartition.Code {
				return code
			}
			select {
			case <-ctx.Done():
				t.Fatal(ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	if code := produce(); code != kerr.InvalidTxnState.Code {
		t.Fatalf("a transactional batch to a partition not in the transaction: %v, want INVALID_TXN_STATE", kerr.ErrorForCode(code))
	}
	if err := addPartitions(ctx, t, cl, id, pid, epoch, topic, 0); err != nil {
		t.Fatal(err)
	}
	if code := produce(); code != 0 {
		t.Fatalf("the batch once its partition was added: %v", kerr.ErrorForCode(code))
	}
	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = id, pid, epoch, true
	if r := txnRequest(ctx, t, cl, end, func(r *kmsg.EndTxnResponse) int16 { return r.ErrorCode }); r.ErrorCode != 0 {
		t.Fatalf("EndTxn: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if got := readTopic(ctx, t, c, topic, kgo.ReadCommitted(), 1); got["v"] != 1 || len(got) != 1 {
		t.Fatalf("read_committed: %v", got)
	}
}

// TestTxnGroupTransactSession: franz-go's GroupTransactSession runs a
// read-process-write pipeline on three nodes: every input record is
// copied to the output topic in a transaction that also commits the
// group's offsets (AddOffsetsToTxn, TxnOffsetCommit). read_committed
// shows each input value exactly once in the output, and the group's
// committed offsets cover the whole input.
func TestTxnGroupTransactSession(t *testing.T) {
	c := startReplCluster(t, 3, txnSettings...)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	const in, out, n = "eos-in", "eos-out", 200
	c.createTopic(ctx, in, 2, nil)
	c.createTopic(ctx, out, 2, nil)
	p := c.client()
	for i := range n {
		p.Produce(ctx, &kgo.Record{Topic: in, Value: fmt.Appendf(nil, "v-%d", i)}, nil)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var seeds []string
	for _, rn := range c.nodes {
		seeds = append(seeds, rn.KafkaAddr())
	}
	sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(seeds...), kgo.TransactionalID("eos"),
		kgo.TransactionTimeout(30*time.Second), kgo.ConsumerGroup("eos-g"), kgo.ConsumeTopics(in),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RequireStableFetchOffsets(),
		kgo.FetchMaxWait(200*time.Millisecond), kgo.SessionTimeout(6*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	copied := 0
	for copied < n {
		if ctx.Err() != nil {
			t.Fatalf("copied %d of %d: %v", copied, n, ctx.Err())
		}
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		fs := sess.PollFetches(pctx)
		pcancel()
		if err := sess.Begin(); err != nil {
			t.Fatal(err)
		}
		k := 0
		fs.EachRecord(func(r *kgo.Record) {
			k++
			sess.Produce(ctx, &kgo.Record{Topic: out, Value: r.Value}, nil)
		})
		committed, err := sess.End(ctx, kgo.TryCommit)
		if err != nil {
			t.Fatalf("End: %v", err)
		}
		if committed {
			copied += k
		}
	}
	got := readTopic(ctx, t, c, out, kgo.ReadCommitted(), n)
	for v, k := range got {
		if k != 1 {
			t.Errorf("output %q %d times", v, k)
		}
	}
	if len(got) != n {
		t.Errorf("output has %d distinct values, want %d", len(got), n)
	}
	offs, err := kadm.NewClient(c.client()).FetchOffsets(ctx, "eos-g")
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	offs.Each(func(o kadm.OffsetResponse) { sum += o.At })
	if sum != n {
		t.Errorf("the group's committed offsets sum to %d, want %d", sum, n)
	}
}
