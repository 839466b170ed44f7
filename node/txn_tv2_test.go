package node

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// tv1Versions caps a kgo client below transaction.version 2's requests
// (Produce v12, EndTxn v5, TxnOffsetCommit v5): kgo then stays on
// KIP-890 part 1 (AddPartitionsToTxn, AddOffsetsToTxn, EndTxn v4) even
// where the cluster finalizes version 2.
func tv1Versions() *kversion.Versions {
	v := kversion.Stable()
	v.SetMaxKeyVersion(int16(kmsg.Produce), 11)
	v.SetMaxKeyVersion(int16(kmsg.EndTxn), 4)
	v.SetMaxKeyVersion(int16(kmsg.TxnOffsetCommit), 4)
	return v
}

// requestCount sums kafka_network_requestmetrics_requests_total over the
// nodes for request at the versions keep accepts.
func requestCount(t testing.TB, c *replCluster, request string, keep func(version int) bool) float64 {
	var sum float64
	for _, rn := range c.nodes {
		mf := gatherNode(t, rn.Node)["kafka_network_requestmetrics_requests_total"]
		if mf == nil {
			continue
		}
		for _, m := range mf.Metric {
			var name string
			version := -1
			for _, l := range m.Label {
				switch l.GetName() {
				case "request":
					name = l.GetValue()
				case "version":
					version, _ = strconv.Atoi(l.GetValue())
				}
			}
			if name == request && keep(version) {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// TestTxnVersion2: the cluster finalizes transaction.version 2 and
// franz-go uses KIP-890 part 2 against it on three nodes: no client
// AddPartitionsToTxn (the partition leaders add the partitions), EndTxn
// v5 bumps the epoch at every transaction's end (DescribeTransactions
// shows one bump per transaction), a late batch at an ended
// transaction's epoch is fenced at the partition, and read_committed
// sees the committed records only. A client capped below the version 2
// requests on the same cluster keeps version 1: its epoch does not move.
// A broker set to transaction.version=1 finalizes what the cluster does.
func TestTxnVersion2(t *testing.T) {
	// Node 3 is set to transaction.version=1: the setting is only the
	// bootstrap level of the first controller; the cluster finalizes
	// one level (the quorum's feature record) on every broker.
	c := newReplCluster(t, 3, false, txnSettings...)
	c.nodes[2].extra = append(slices.Clone(c.nodes[2].extra), "transaction.version=1")
	c.start()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	const topic = "tv2"
	c.createTopic(ctx, topic, 2, nil)
	cl := c.client()
	adm := kadm.NewClient(cl)
	want := finalized(c.apiVersionsOf(ctx, t, c.nodes[0]), "transaction.version")
	for _, rn := range c.nodes {
		if level := finalized(c.apiVersionsOf(ctx, t, rn), "transaction.version"); level != want || level < 1 {
			t.Fatalf("node %d finalizes transaction.version %d, node 1 %d: want one level, 1 or 2", rn.id, level, want)
		}
	}
	if want != 2 {
		// Node 3 bootstrapped the cluster: upgrade it.
		res, err := adm.UpdateFeatures(ctx, false, kadm.FeatureUpdate{Feature: "transaction.version", MaxVersionLevel: 2, UpgradeType: 1})
		if err == nil {
			err = res.Error()
		}
		if err != nil {
			t.Fatalf("upgrading transaction.version to 2: %v", err)
		}
	}

	adds0 := requestCount(t, c, "AddPartitionsToTxn", func(v int) bool { return v < 4 })
	p := c.client(kgo.TransactionalID("tv2-a"), kgo.TransactionTimeout(30*time.Second))
	for i, commit := range []bool{true, false, true} {
		if err := produceTxn(ctx, t, p, topic, fmt.Sprintf("a%d-%v", i, commit), 20, commit); err != nil {
			t.Fatalf("transaction %d: %v", i, err)
		}
	}
	d, err := adm.DescribeTransactions(ctx, "tv2-a")
	if err != nil {
		t.Fatal(err)
	}
	first := d["tv2-a"]
	if !strings.HasSuffix(first.State, "Commit") || first.ProducerEpoch != 3 { // its markers may be in flight
		t.Errorf("after 3 transactions: %s at epoch %d, want a commit at epoch 3 (one bump per EndTxn v5)", first.State, first.ProducerEpoch)
	}
	if adds := requestCount(t, c, "AddPartitionsToTxn", func(v int) bool { return v < 4 }) - adds0; adds != 0 {
		t.Errorf("%v client AddPartitionsToTxn requests under transaction.version 2, want 0", adds)
	}
	if ends := requestCount(t, c, "EndTxn", func(v int) bool { return v == 5 }); ends < 3 {
		t.Errorf("%v EndTxn v5 requests, want 3 or more", ends)
	}

	// A late batch of the last transaction (the epoch before its end)
	// reaches partition 0 after the marker: fenced there.
	late := kmsg.NewPtrProduceRequest()
	late.Acks, late.TimeoutMillis, late.TransactionID = -1, 10000, kmsg.StringPtr("tv2-a")
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = txnBatch(first.ProducerID, first.ProducerEpoch-1, 1000, "late")
	rt.Partitions = append(rt.Partitions, rp)
	late.Topics = append(late.Topics, rt)
	lr, err := cl.Broker(int(c.leaderOf(topic, 0).id)).Request(ctx, late)
	if err != nil {
		t.Fatal(err)
	}
	if code := lr.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.InvalidProducerEpoch.Code && code != kerr.ProducerFenced.Code {
		t.Errorf("a late batch at the ended transaction's epoch: %v, want INVALID_PRODUCER_EPOCH", kerr.ErrorForCode(code))
	}

	old := c.client(kgo.TransactionalID("tv1-b"), kgo.TransactionTimeout(30*time.Second), kgo.MaxVersions(tv1Versions()))
	adds1 := requestCount(t, c, "AddPartitionsToTxn", func(v int) bool { return v < 4 })
	for i, commit := range []bool{true, false} {
		if err := produceTxn(ctx, t, old, topic, fmt.Sprintf("b%d-%v", i, commit), 20, commit); err != nil {
			t.Fatalf("version 1 transaction %d: %v", i, err)
		}
	}
	if d, err = adm.DescribeTransactions(ctx, "tv1-b"); err != nil {
		t.Fatal(err)
	}
	// EndTxn v4 returns once PrepareAbort is written; the markers may
	// still be in flight.
	if b := d["tv1-b"]; !strings.HasSuffix(b.State, "Abort") || b.ProducerEpoch != 0 {
		t.Errorf("the version 1 client: %s at epoch %d, want an abort at epoch 0", b.State, b.ProducerEpoch)
	}
	if adds := requestCount(t, c, "AddPartitionsToTxn", func(v int) bool { return v < 4 }) - adds1; adds == 0 {
		t.Errorf("the version 1 client sent no AddPartitionsToTxn: is it capped?")
	}

	got := readTopic(ctx, t, c, topic, kgo.ReadCommitted(), 60)
	for v, n := range got {
		if strings.Contains(v, "-false-") || strings.HasPrefix(v, "late") || n != 1 {
			t.Errorf("read_committed got %q %d times", v, n)
		}
	}
	if len(got) != 60 {
		t.Errorf("read_committed: %d distinct records, want 60", len(got))
	}

}

// finalized is feature name's finalized level in an ApiVersions answer
// (0: not finalized).
func finalized(resp *kmsg.ApiVersionsResponse, name string) int16 {
	if resp.FinalizedFeaturesEpoch < 0 {
		return 0
	}
	for _, f := range resp.FinalizedFeatures {
		if f.Name == name {
			return f.MaxVersionLevel
		}
	}
	return 0
}
