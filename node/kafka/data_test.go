package kafka

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/segment"
)

func startDataServer(t *testing.T) (*testServer, *fakeData) {
	t.Helper()
	var fd *fakeData
	ts := startServerWith(t, Options{}, func(fb *fakeBroker) Broker {
		fd = &fakeData{fakeAdmin: &fakeAdmin{fakeBroker: fb}, logs: map[int32][][]byte{}, sig: make(chan struct{})}
		return fd
	})
	return ts, fd
}

func produceReq(acks int16, partition int32, batch []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, acks, 1000
	t := kmsg.NewProduceRequestTopic()
	t.Topic = "orders"
	p := kmsg.NewProduceRequestTopicPartition()
	p.Partition, p.Records = partition, batch
	t.Partitions = []kmsg.ProduceRequestTopicPartition{p}
	req.Topics = []kmsg.ProduceRequestTopic{t}
	return req
}

// TestProduceWire: bad acks and a transactional batch without a
// transactional id are refused per partition without reaching the log; acks=0 gets no response, and the
// next request on the connection is answered in order.
func TestProduceWire(t *testing.T) {
	ts, fd := startDataServer(t)
	c := dial(t, ts.addr)
	batch := segment.BuildBatch(1, []byte("v"))

	resp := c.roundTrip(produceReq(2, 0, batch)).(*kmsg.ProduceResponse)
	if got := resp.Topics[0].Partitions[0].ErrorCode; got != kerr.InvalidRequiredAcks.Code {
		t.Fatalf("acks=2: error %d", got)
	}
	// A transactional batch without a transactional id.
	resp = c.roundTrip(produceReq(-1, 0, txnBatch(7, 1, "v"))).(*kmsg.ProduceResponse)
	if got := resp.Topics[0].Partitions[0].ErrorCode; got != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("transactional without an id: error %d", got)
	}
	fd.dmu.Lock()
	n := len(fd.logs[0])
	fd.dmu.Unlock()
	if n != 0 {
		t.Fatalf("refused produces reached the log: %d batches", n)
	}

	c.send(produceReq(0, 0, batch)) // no response
	md := c.roundTrip(kmsg.NewPtrMetadataRequest()).(*kmsg.MetadataResponse)
	if len(md.Brokers) == 0 {
		t.Fatal("metadata after acks=0: no brokers")
	}
	fd.dmu.Lock()
	n = len(fd.logs[0])
	fd.dmu.Unlock()
	if n != 1 {
		t.Fatalf("acks=0 produce: %d batches, want 1", n)
	}
}

// TestFetchWire: a fetch session id answers FETCH_SESSION_ID_NOT_FOUND; a
// long poll is woken by an append on another connection.
func TestFetchWire(t *testing.T) {
	ts, _ := startDataServer(t)
	c := dial(t, ts.addr)
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.SessionID, req.SessionEpoch = 12, 99, 1
	resp := c.roundTrip(req).(*kmsg.FetchResponse)
	if resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("session fetch: error %d", resp.ErrorCode)
	}

	poll := kmsg.NewPtrFetchRequest()
	poll.Version, poll.MaxWaitMillis, poll.MinBytes, poll.MaxBytes = 12, 60_000, 1, 1<<20
	pt := kmsg.NewFetchRequestTopic()
	pt.Topic = "orders"
	pp := kmsg.NewFetchRequestTopicPartition()
	pp.PartitionMaxBytes, pp.CurrentLeaderEpoch = 1<<20, -1
	pt.Partitions = []kmsg.FetchRequestTopicPartition{pp}
	poll.Topics = []kmsg.FetchRequestTopic{pt}
	start := time.Now()
	corr := c.send(poll)
	p2 := dial(t, ts.addr)
	if r := p2.roundTrip(produceReq(1, 0, segment.BuildBatch(1, []byte("wake")))).(*kmsg.ProduceResponse); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("produce: %+v", r)
	}
	fresp := c.recv(poll, corr, poll.Version).(*kmsg.FetchResponse)
	fp := fresp.Topics[0].Partitions[0]
	if fp.ErrorCode != 0 || fp.HighWatermark != 1 || len(fp.RecordBatches) == 0 {
		t.Fatalf("long poll: %+v", fp)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("long poll answered after %v: not woken by the append", d)
	}
}

// TestFetchEmptyIsNotNull: a partition with nothing to return carries an
// empty record set, not null (size -1), in every Fetch version: librdkafka
// refuses null ("invalid MessageSetSize -1"), so kcat at the log end never
// reached it and never exited with -e.
func TestFetchEmptyIsNotNull(t *testing.T) {
	ts, _ := startDataServer(t)
	c := dial(t, ts.addr)
	for v := int16(4); v <= 12; v++ {
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.MaxBytes = v, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "orders"
		for _, p := range []int32{0, 99} { // empty, and unknown (an error)
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = p, 1<<20, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = []kmsg.FetchRequestTopic{rt}
		resp := c.roundTrip(req).(*kmsg.FetchResponse)
		for _, p := range resp.Topics[0].Partitions {
			if p.RecordBatches == nil {
				t.Errorf("Fetch v%d partition %d (error %d): null record set", v, p.Partition, p.ErrorCode)
			}
		}
	}
}

// TestProduceListedFromV0: ApiVersions lists Produce 0-12, as Kafka 4
// does, so that librdkafka compresses (it checks for Produce v0 before
// using gzip, snappy or lz4); a v2 request still closes the connection.
func TestProduceListedFromV0(t *testing.T) {
	ts, _ := startDataServer(t)
	c := dial(t, ts.addr)
	resp := c.roundTrip(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse)
	found := false
	for _, k := range resp.ApiKeys {
		if k.ApiKey == kmsg.Produce.Int16() {
			found = true
			if k.MinVersion != 0 || k.MaxVersion != 12 {
				t.Errorf("Produce listed %d-%d, want 0-12", k.MinVersion, k.MaxVersion)
			}
		}
	}
	if !found {
		t.Fatal("Produce not listed")
	}
	req := produceReq(1, 0, segment.BuildBatch(1, []byte("old")))
	req.Version = 2
	c.send(req)
	c.expectClosed()
	ts.logs.waitFor(t, "closing connection", "Produce v2 (supported 3-12)")
}
