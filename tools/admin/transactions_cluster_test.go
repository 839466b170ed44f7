package admin

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/segment"
	"github.com/sluice-log/sluice/tools/internal/cli"
)

// needTxns skips the test unless the cluster serves transactions (EndTxn
// and WriteTxnMarkers advertised in ApiVersions).
func needTxns(t *testing.T, bootstrap string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	has := map[int16]bool{}
	for _, k := range resp.ApiKeys {
		has[k.ApiKey] = true
	}
	for _, k := range []kmsg.Key{kmsg.EndTxn, kmsg.WriteTxnMarkers, kmsg.DescribeTransactions, kmsg.ListTransactions, kmsg.DescribeProducers} {
		if !has[int16(k)] {
			t.Skipf("the node does not serve transactions (%s not advertised)", k.Name())
		}
	}
}

// TestTransactionsCommandsOnNode: with a transaction open on a real node
// (franz-go's transactional producer), list and describe show it in
// Kafka's columns, describe-producers shows its first offset, find-hanging
// finds nothing (its coordinator knows it), abort --start-offset ends it
// (the last stable offset reaches the high watermark). A transactional
// batch written under an idempotent producer id that no coordinator knows
// (if the node accepts it at all: KIP-890's verification refuses it) is
// found hanging (exit status 2) and aborted.
func TestTransactionsCommandsOnNode(t *testing.T) {
	_, bootstrap := startClusterWith(t, 1, groupFlags...)
	needTxns(t, bootstrap)
	mustRun(t, bootstrap, "topics", "create", "tx", "--partitions", "1", "--replication-factor", "1")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	prod, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.TransactionalID("tx-app"), kgo.TransactionTimeout(time.Minute),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	if err := prod.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "tx", Partition: 0, Value: []byte{byte('a' + i)}}).FirstErr(); err != nil {
			t.Fatalf("transactional produce: %v", err)
		}
	}

	// list and describe: the transaction is Ongoing on tx-0.
	var listed []ListedTxnRow
	eventually(t, "tx-app listed as Ongoing", func() bool {
		out, err := run(t, bootstrap, "transactions", "list", "--format", "json")
		if err != nil {
			return false
		}
		listed = decode[[]ListedTxnRow](t, out)
		return len(listed) == 1 && listed[0].TransactionalID == "tx-app" && listed[0].State == "Ongoing"
	})
	if listed[0].Coordinator != 1 || listed[0].ProducerID < 0 {
		t.Fatalf("listed %+v", listed)
	}
	for _, c := range []struct {
		args []string
		n    int
	}{
		{[]string{"--transactional-id-pattern", "tx-.*"}, 1},
		{[]string{"--transactional-id-pattern", "other-.*"}, 0},
		{[]string{"--transactional-id-pattern", "tx"}, 0}, // a whole id, not a part
		{[]string{"--duration-filter", "3600000"}, 0},     // not running for an hour
	} {
		got := decode[[]ListedTxnRow](t, mustRun(t, bootstrap, append([]string{"transactions", "list", "--format", "json"}, c.args...)...))
		if len(got) != c.n {
			t.Fatalf("list %v: %+v, want %d", c.args, got, c.n)
		}
	}
	if out := mustRun(t, bootstrap, "transactions", "list"); !strings.HasPrefix(out, "TransactionalId\tCoordinator\tProducerId\tTransactionState\t\ntx-app") {
		t.Fatalf("list:\n%q", out)
	}
	d := decode[DescribedTxnRow](t, mustRun(t, bootstrap, "transactions", "describe", "--transactional-id", "tx-app", "--format", "json"))
	if d.State != "Ongoing" || d.ProducerID != listed[0].ProducerID || d.StartTimeMs == nil || len(d.Partitions) != 1 || d.Partitions[0] != "tx-0" || d.TimeoutMs != 60000 {
		t.Fatalf("describe: %+v", d)
	}
	if out := mustRun(t, bootstrap, "transactions", "describe", "--transactional-id", "tx-app"); !strings.Contains(out, "CurrentTransactionStartTimeMs") || !strings.Contains(out, "tx-0") {
		t.Fatalf("describe:\n%s", out)
	}
	if _, err := run(t, bootstrap, "transactions", "describe", "--transactional-id", "nobody"); err == nil || !strings.Contains(err.Error(), "transactional-id `nobody`") {
		t.Fatalf("describe of an unknown id: %v", err)
	}

	// describe-producers: the producer's open transaction starts at 0.
	ps := decode[[]ProducerRow](t, mustRun(t, bootstrap, "transactions", "describe-producers", "--topic", "tx", "--partition", "0", "--format", "json"))
	if len(ps) != 1 || ps[0].ProducerID != d.ProducerID || ps[0].CurrentTxnStartOffset != 0 || ps[0].LastSequence != 2 {
		t.Fatalf("describe-producers: %+v", ps)
	}
	out := mustRun(t, bootstrap, "transactions", "describe-producers", "--topic", "tx", "--partition", "0", "--broker-id", "1")
	if !strings.HasPrefix(out, "ProducerId") || len(strings.Split(strings.TrimSpace(out), "\n")) != 2 {
		t.Fatalf("describe-producers --broker-id 1:\n%s", out)
	}

	// find-hanging: open, older than 0 minutes, but its coordinator has it.
	eventually(t, "the transaction older than a millisecond", func() bool {
		return time.Now().UnixMilli() > ps[0].LastTimestamp+1
	})
	if out := mustRun(t, bootstrap, "transactions", "find-hanging", "--topic", "tx", "--max-transaction-timeout", "0"); strings.Count(out, "\n") != 1 {
		t.Fatalf("find-hanging found the coordinator's own transaction:\n%s", out)
	}

	// abort by start offset: the partition's LSO moves to its HW.
	mustRun(t, bootstrap, "transactions", "abort", "--topic", "tx", "--partition", "0", "--start-offset", "0")
	waitStable(t, bootstrap, "tx", 0)
	ps = decode[[]ProducerRow](t, mustRun(t, bootstrap, "transactions", "describe-producers", "--topic", "tx", "--partition", "0", "--format", "json"))
	if len(ps) != 1 || ps[0].CurrentTxnStartOffset != -1 {
		t.Fatalf("after the abort: %+v", ps)
	}
	if _, err := run(t, bootstrap, "transactions", "abort", "--topic", "tx", "--partition", "0", "--start-offset", "0"); err == nil || !strings.Contains(err.Error(), "could not find any open transactions starting at offset 0") {
		t.Fatalf("second abort: %v", err)
	}
	ectx, ecancel := context.WithTimeout(ctx, 30*time.Second)
	_ = prod.EndTransaction(ectx, kgo.TryAbort) // the coordinator's own abort; its markers may be refused now
	ecancel()

	// A hanging transaction: a transactional batch of a producer id no
	// coordinator knows.
	start, ok := ghostTransaction(t, bootstrap, "tx", 0)
	if !ok {
		return
	}
	out, err = run(t, bootstrap, "transactions", "find-hanging", "--topic", "tx", "--max-transaction-timeout", "0")
	for deadline := time.Now().Add(5 * time.Second); err == nil && time.Now().Before(deadline); {
		out, err = run(t, bootstrap, "transactions", "find-hanging", "--topic", "tx", "--max-transaction-timeout", "0")
	}
	if !errors.Is(err, cli.ErrProblem) || !strings.Contains(err.Error(), "--start-offset "+itoa(start)) {
		t.Fatalf("find-hanging: err %v, want the hanging transaction at %d\n%s", err, start, out)
	}
	hang := decode[[]HangingRow](t, mustRunErr(t, bootstrap, "transactions", "find-hanging", "--broker-id", "1", "--max-transaction-timeout", "0", "--format", "json"))
	if len(hang) != 1 || hang[0].Topic != "tx" || hang[0].CurrentTxnStartOffset != start {
		t.Fatalf("find-hanging --broker-id 1: %+v", hang)
	}
	mustRun(t, bootstrap, "transactions", "abort", "--topic", "tx", "--partition", "0", "--start-offset", itoa(start))
	waitStable(t, bootstrap, "tx", 0)
	if out, err := run(t, bootstrap, "transactions", "find-hanging", "--topic", "tx", "--max-transaction-timeout", "0"); err != nil || strings.Count(out, "\n") != 1 {
		t.Fatalf("find-hanging after the abort: %v\n%s", err, out)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// mustRunErr is run that returns the output whatever the error (a command
// that exits 2 on a finding still prints it).
func mustRunErr(t *testing.T, bootstrap string, args ...string) string {
	t.Helper()
	out, _ := run(t, bootstrap, args...)
	return out
}

// waitStable waits until the partition's last stable offset equals its
// high watermark.
func waitStable(t *testing.T, bootstrap, topic string, p int32) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	eventually(t, topic+": last stable offset at the high watermark", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ends, err1 := adm.ListEndOffsets(ctx, topic)
		stable, err2 := adm.ListCommittedOffsets(ctx, topic)
		e, ok1 := ends.Lookup(topic, p)
		s, ok2 := stable.Lookup(topic, p)
		return err1 == nil && err2 == nil && ok1 && ok2 && e.Err == nil && s.Err == nil && s.Offset == e.Offset
	})
}

// ghostTransaction writes one transactional batch to topic/p under an
// idempotent producer id (InitProducerId without a transactional id) and
// the transactional id "ghost", which no coordinator has: a transaction
// nobody will end. It returns the batch's offset, or false (logged) when
// the node refuses it.
func ghostTransaction(t *testing.T, bootstrap, topic string, p int32) (int64, bool) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ipid := kmsg.NewPtrInitProducerIDRequest()
	ipid.TransactionTimeoutMillis = -1
	iresp, err := ipid.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(iresp.ErrorCode)
	}
	if err != nil {
		t.Fatalf("InitProducerId: %v", err)
	}
	b := segment.BuildBatch(time.Now().UnixMilli(), nil, []byte("ghost"))
	be := binary.BigEndian
	be.PutUint16(b[21:], 0x10) // attributes: transactional
	be.PutUint64(b[43:], uint64(iresp.ProducerID))
	be.PutUint16(b[51:], uint16(iresp.ProducerEpoch))
	be.PutUint32(b[53:], 0) // base sequence
	be.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	req := kmsg.NewPtrProduceRequest()
	req.TransactionID = kmsg.StringPtr("ghost")
	req.Acks, req.TimeoutMillis = -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = p, b
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl.Broker(1))
	if err == nil && (len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1) {
		err = errors.New("no answer for the partition")
	}
	if err == nil {
		err = kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
	}
	if err != nil {
		t.Logf("the node refused a transactional batch no coordinator knows (%v): no hanging transaction to find", err)
		return 0, false
	}
	return resp.Topics[0].Partitions[0].BaseOffset, true
}
