package kafka

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/segment"
)

// txnBatch is a transactional batch of producer pid at epoch with one
// record per value: segment.BuildBatch's batch with the transactional
// bit, the producer and sequence 0, its CRC-32C recomputed.
func txnBatch(pid int64, epoch int16, values ...string) []byte {
	vs := make([][]byte, len(values))
	for i, v := range values {
		vs[i] = []byte(v)
	}
	b := segment.BuildBatch(1, vs...)
	be := binary.BigEndian
	be.PutUint16(b[21:], be.Uint16(b[21:])|0x10) // attributes: transactional
	be.PutUint64(b[43:], uint64(pid))            // producer id
	be.PutUint16(b[51:], uint16(epoch))          // producer epoch
	be.PutUint32(b[53:], 0)                      // base sequence
	be.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// TestTxnBatchIsTransactional holds txnBatch to the header codec.
func TestTxnBatchIsTransactional(t *testing.T) {
	it := segment.NewBatchIter(txnBatch(7, 3, "a", "b"))
	h, _, ok := it.Next()
	if !ok || !h.IsTransactional() || h.ProducerID != 7 || h.ProducerEpoch != 3 || h.RecordCount != 2 {
		t.Fatalf("header %+v ok %v", h, ok)
	}
	if _, _, err := segment.ValidateBatches(txnBatch(7, 3, "a"), 1<<20); err != nil {
		t.Fatalf("CRC: %v", err)
	}
}

// TestProduceTransactionalWire: a transactional batch with its id reaches
// the log with the id; a non-transactional batch with an id too; without
// WRITE on the transactional id every partition is refused
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED and nothing is written.
func TestProduceTransactionalWire(t *testing.T) {
	ts, fd := startDataServer(t)
	c := dial(t, ts.addr)
	req := produceReq(-1, 0, txnBatch(7, 1, "v"))
	req.TransactionID = kmsg.StringPtr("tx-1")
	resp := c.roundTrip(req).(*kmsg.ProduceResponse)
	if got := resp.Topics[0].Partitions[0].ErrorCode; got != 0 {
		t.Fatalf("transactional produce: error %d", got)
	}
	plain := produceReq(-1, 1, segment.BuildBatch(1, []byte("p")))
	plain.TransactionID = kmsg.StringPtr("tx-1")
	if got := c.roundTrip(plain).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; got != 0 {
		t.Fatalf("plain batch with an id: error %d", got)
	}
	fd.dmu.Lock()
	ids := slices.Clone(fd.txnIDs)
	fd.dmu.Unlock()
	if !slices.Equal(ids, []string{"tx-1", "tx-1"}) {
		t.Fatalf("transactional ids passed on: %q", ids)
	}

	// WRITE on topics but not on transactional ids.
	var fa *fakeData
	as := startServerWith(t, Options{Authorizer: denyAll{allow: map[kmsg.ACLOperation]kmsg.ACLResourceType{
		kmsg.ACLOperationWrite: kmsg.ACLResourceTypeTopic}}}, func(fb *fakeBroker) Broker {
		fa = &fakeData{fakeAdmin: &fakeAdmin{fakeBroker: fb}, logs: map[int32][][]byte{}, sig: make(chan struct{})}
		return fa
	})
	ac := dial(t, as.addr)
	two := produceReq(-1, 0, txnBatch(7, 1, "v"))
	two.TransactionID = kmsg.StringPtr("tx-1")
	p1 := kmsg.NewProduceRequestTopicPartition()
	p1.Partition, p1.Records = 1, segment.BuildBatch(1, []byte("plain"))
	two.Topics[0].Partitions = append(two.Topics[0].Partitions, p1)
	resp = ac.roundTrip(two).(*kmsg.ProduceResponse)
	for _, p := range resp.Topics[0].Partitions {
		if p.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
			t.Fatalf("partition %d: error %d, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", p.Partition, p.ErrorCode)
		}
	}
	// The plain batch alone needs no transactional id permission.
	plain = produceReq(-1, 1, segment.BuildBatch(1, []byte("p")))
	if got := ac.roundTrip(plain).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; got != 0 {
		t.Fatalf("plain batch under ACLs: error %d", got)
	}
	fa.dmu.Lock()
	n := len(fa.logs[0]) + len(fa.logs[1])
	fa.dmu.Unlock()
	if n != 1 {
		t.Fatalf("%d batches written, want only the plain one", n)
	}
}

// TestWriteTxnMarkersWire: every partition of every marker is answered in
// request order with its own error; committed markers on
// __consumer_offsets, and only those that succeeded, reach GroupTxns.
func TestWriteTxnMarkersWire(t *testing.T) {
	ts, fd := startDataServer(t)
	c := dial(t, ts.addr)
	for _, v := range []int16{0, 1} {
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		req.Version = v
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = 7, 2, true, 5
		m.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{
			{Topic: "orders", Partitions: []int32{0, 9, 1}},
			{Topic: offsetsTopic, Partitions: []int32{0, 4}},
		}
		abort := kmsg.NewWriteTxnMarkersRequestMarker()
		abort.ProducerID, abort.ProducerEpoch, abort.Committed = 8, -1, false
		abort.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: offsetsTopic, Partitions: []int32{0}}}
		req.Markers = []kmsg.WriteTxnMarkersRequestMarker{m, abort}
		resp := c.roundTrip(req).(*kmsg.WriteTxnMarkersResponse)
		type row struct {
			pid   int64
			topic string
			p     int32
			code  int16
		}
		var got []row
		for _, rm := range resp.Markers {
			for _, rt := range rm.Topics {
				for _, rp := range rt.Partitions {
					got = append(got, row{rm.ProducerID, rt.Topic, rp.Partition, rp.ErrorCode})
				}
			}
		}
		unknown, epoch := kerr.UnknownTopicOrPartition.Code, kerr.InvalidProducerEpoch.Code
		want := []row{{7, "orders", 0, 0}, {7, "orders", 9, unknown}, {7, "orders", 1, 0},
			{7, offsetsTopic, 0, 0}, {7, offsetsTopic, 4, unknown}, {8, offsetsTopic, 0, epoch}}
		if !slices.Equal(got, want) {
			t.Fatalf("v%d: answers\n got %v\nwant %v", v, got, want)
		}
	}
	fd.dmu.Lock()
	defer fd.dmu.Unlock()
	if len(fd.markers) != 6 || fd.markers[0].CoordinatorEpoch != 5 || !fd.markers[0].Commit {
		t.Fatalf("markers written: %+v", fd.markers)
	}
	if !slices.Equal(fd.completed, []string{"0/7/true", "0/7/true"}) {
		t.Fatalf("CompleteTxn calls: %q", fd.completed)
	}
}

// TestFetchIsolationWire: a read_committed fetch answers the aborted
// transactions (a list, empty when none) and the LSO; a read_uncommitted
// one the LSO and no list (null), as Kafka.
func TestFetchIsolationWire(t *testing.T) {
	ts, _ := startDataServer(t)
	c := dial(t, ts.addr)
	c.roundTrip(produceReq(-1, 0, segment.BuildBatch(1, []byte("a"))))
	for _, tc := range []struct {
		level   int8
		offset  int64
		aborted []kmsg.FetchResponseTopicPartitionAbortedTransaction
	}{
		{1, 0, []kmsg.FetchResponseTopicPartitionAbortedTransaction{{ProducerID: 7, FirstOffset: 0}}},
		{1, 1, []kmsg.FetchResponseTopicPartitionAbortedTransaction{}},
		{0, 0, nil},
	} {
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.IsolationLevel, req.MaxBytes = 12, tc.level, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "orders"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.PartitionMaxBytes = tc.offset, 1<<20
		rt.Partitions = []kmsg.FetchRequestTopicPartition{rp}
		req.Topics = []kmsg.FetchRequestTopic{rt}
		p := c.roundTrip(req).(*kmsg.FetchResponse).Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.LastStableOffset != 1 || p.HighWatermark != 1 {
			t.Fatalf("level %d: error %d, HW %d, LSO %d", tc.level, p.ErrorCode, p.HighWatermark, p.LastStableOffset)
		}
		if (p.AbortedTransactions == nil) != (tc.aborted == nil) || len(p.AbortedTransactions) != len(tc.aborted) {
			t.Fatalf("level %d offset %d: aborted %+v, want %+v", tc.level, tc.offset, p.AbortedTransactions, tc.aborted)
		}
		for i, a := range tc.aborted {
			if got := p.AbortedTransactions[i]; got.ProducerID != a.ProducerID || got.FirstOffset != a.FirstOffset {
				t.Fatalf("aborted %d: %+v", i, got)
			}
		}
	}
}

// TestDescribeProducersWire: the producers of a known partition, an
// unknown one's error with its message, and TOPIC_AUTHORIZATION_FAILED
// without READ.
func TestDescribeProducersWire(t *testing.T) {
	ts, _ := startDataServer(t)
	c := dial(t, ts.addr)
	req := kmsg.NewPtrDescribeProducersRequest()
	req.Topics = []kmsg.DescribeProducersRequestTopic{{Topic: "orders", Partitions: []int32{0, 5}}}
	resp := c.roundTrip(req).(*kmsg.DescribeProducersResponse)
	ps := resp.Topics[0].Partitions
	if len(ps) != 2 || ps[0].ErrorCode != 0 || len(ps[0].ActiveProducers) != 1 {
		t.Fatalf("answer %+v", resp.Topics)
	}
	if ap := ps[0].ActiveProducers[0]; ap.ProducerID != 7 || ap.ProducerEpoch != 2 || ap.LastSequence != 9 ||
		ap.CoordinatorEpoch != 3 || ap.CurrentTxnStartOffset != 4 || ap.LastTimestamp != 1000 {
		t.Fatalf("producer %+v", ap)
	}
	if ps[1].ErrorCode != kerr.UnknownTopicOrPartition.Code || ps[1].ErrorMessage == nil {
		t.Fatalf("unknown partition: %+v", ps[1])
	}

	as := startServerWith(t, Options{Authorizer: denyAll{}}, func(fb *fakeBroker) Broker {
		return &fakeData{fakeAdmin: &fakeAdmin{fakeBroker: fb}, logs: map[int32][][]byte{}, sig: make(chan struct{})}
	})
	resp = dial(t, as.addr).roundTrip(req).(*kmsg.DescribeProducersResponse)
	for _, p := range resp.Topics[0].Partitions {
		if p.ErrorCode != kerr.TopicAuthorizationFailed.Code || len(p.ActiveProducers) != 0 {
			t.Fatalf("without READ: %+v", p)
		}
	}
}

// TestVerifyError: the verifier's errors as a produce answers them.
func TestVerifyError(t *testing.T) {
	for _, tc := range []struct{ in, want error }{
		{nil, nil},
		{kerr.ProducerFenced, kerr.InvalidProducerEpoch},
		{kerr.InvalidProducerEpoch, kerr.InvalidProducerEpoch},
		{kerr.InvalidTxnState, kerr.InvalidTxnState},
		{kerr.TransactionAbortable, kerr.InvalidTxnState},
		{kerr.NotCoordinator, kerr.NotEnoughReplicas},
		{kerr.CoordinatorLoadInProgress, kerr.NotEnoughReplicas},
		{kerr.ConcurrentTransactions, kerr.NotEnoughReplicas},
		{errors.New("dial tcp: refused"), kerr.NotEnoughReplicas},
		{kerr.TransactionalIDAuthorizationFailed, kerr.TransactionalIDAuthorizationFailed},
	} {
		if got := VerifyError(tc.in); got != tc.want {
			t.Errorf("VerifyError(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
