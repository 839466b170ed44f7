package kafka

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/segment"
)

// recorder is an Observer and TopicObserver that hands every call to the
// test through channels.
type recorder struct {
	timings  chan RequestTiming
	produced chan [3]int // records, bytes, error (1) or not (0)
	fetched  chan [2]int // bytes, follower (1) or not (0)
}

func newRecorder() *recorder {
	return &recorder{timings: make(chan RequestTiming, 64), produced: make(chan [3]int, 64), fetched: make(chan [2]int, 64)}
}

func (r *recorder) ObserveRequest(t *RequestTiming) { r.timings <- *t }
func (r *recorder) Produced(_ string, records, bytes int, err error) {
	e := 0
	if err != nil {
		e = 1
	}
	r.produced <- [3]int{records, bytes, e}
}
func (r *recorder) Fetched(_ string, bytes int, follower bool) {
	f := 0
	if follower {
		f = 1
	}
	r.fetched <- [2]int{bytes, f}
}

func (r *recorder) next(t *testing.T) RequestTiming {
	t.Helper()
	select {
	case tm := <-r.timings:
		return tm
	case <-time.After(10 * time.Second):
		t.Fatal("no request observed")
	}
	return RequestTiming{}
}

func fetchReq(replica int32, partition int32, maxWait int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 12, replica, maxWait, 1, 1<<20
	pt := kmsg.NewFetchRequestTopic()
	pt.Topic = "orders"
	pp := kmsg.NewFetchRequestTopicPartition()
	pp.Partition, pp.PartitionMaxBytes, pp.CurrentLeaderEpoch = partition, 1<<20, -1
	pt.Partitions = []kmsg.FetchRequestTopicPartition{pp}
	req.Topics = []kmsg.FetchRequestTopic{pt}
	return req
}

// checkSum: the phases add up to the total, as Kafka's do.
func checkSum(t *testing.T, tm RequestTiming) {
	t.Helper()
	sum := tm.RequestQueue + tm.Local + tm.Remote + tm.ResponseQueue + tm.ResponseSend
	if sum != tm.Total || tm.Total <= 0 {
		t.Errorf("%s: phases %v+%v+%v+%v+%v = %v, total %v", tm.Name(), tm.RequestQueue, tm.Local, tm.Remote, tm.ResponseQueue, tm.ResponseSend, sum, tm.Total)
	}
}

// TestObserver: over real TCP, each request is observed once with phases
// that add up to its total; a long-polling fetch's wait is remote time; a
// replica's fetch is FetchFollower; acks=0 is observed without a response;
// the topic observer hears records, bytes and errors.
func TestObserver(t *testing.T) {
	rec := newRecorder()
	var fd *fakeData
	ts := startServerWith(t, Options{Observer: rec}, func(fb *fakeBroker) Broker {
		fd = &fakeData{fakeAdmin: &fakeAdmin{fakeBroker: fb}, logs: map[int32][][]byte{}, sig: make(chan struct{})}
		return fd
	})
	c := dial(t, ts.addr)

	batch := segment.BuildBatch(1, []byte("a"), []byte("b"), []byte("c"))
	c.roundTrip(produceReq(1, 0, batch))
	tm := rec.next(t)
	if tm.Name() != "Produce" || tm.Version != 9 || tm.NoResponse || tm.Remote != 0 {
		t.Errorf("produce: %+v", tm)
	}
	checkSum(t, tm)
	if p := <-rec.produced; p != [3]int{3, len(batch), 0} {
		t.Errorf("Produced(records, bytes, err) = %v, want [3 %d 0]", p, len(batch))
	}
	bad := produceReq(1, 7, batch)
	c.roundTrip(bad)
	rec.next(t)
	if p := <-rec.produced; p[2] != 1 {
		t.Errorf("a produce to an unknown partition was not reported failed: %v", p)
	}

	c.send(produceReq(0, 0, segment.BuildBatch(2, []byte("d"))))
	if tm := rec.next(t); !tm.NoResponse || tm.ResponseSend != 0 || tm.Name() != "Produce" {
		t.Errorf("acks=0: %+v", tm)
	}
	<-rec.produced

	// Partition 1 is empty: the fetch waits its 100ms out, remotely.
	const wait = 100 * time.Millisecond
	c.roundTrip(fetchReq(-1, 1, int32(wait/time.Millisecond)))
	tm = rec.next(t)
	if tm.Name() != "FetchConsumer" || tm.Remote < wait {
		t.Errorf("long poll: %s remote %v, want at least %v", tm.Name(), tm.Remote, wait)
	}
	checkSum(t, tm)
	if f := <-rec.fetched; f != [2]int{0, 0} {
		t.Errorf("Fetched = %v, want no bytes, consumer", f)
	}

	c.roundTrip(fetchReq(2, 0, 0))
	tm = rec.next(t)
	if tm.Name() != "FetchFollower" || !tm.Follower {
		t.Errorf("replica fetch: %+v", tm)
	}
	checkSum(t, tm)
	if f := <-rec.fetched; f[0] != len(batch) || f[1] != 1 {
		t.Errorf("Fetched = %v, want %d bytes, follower", f, len(batch))
	}
	unknown := fetchReq(-1, 0, 0)
	unknown.Topics[0].Topic = "no-such-topic"
	c.roundTrip(unknown)
	rec.next(t)
	select {
	case f := <-rec.fetched:
		t.Errorf("a fetch of an unknown topic was reported: %v", f)
	default:
	}
	c.roundTrip(kmsg.NewPtrMetadataRequest())
	if tm := rec.next(t); tm.Name() != "Metadata" {
		t.Errorf("metadata observed as %q", tm.Name())
	}
	select {
	case tm := <-rec.timings:
		t.Errorf("an extra observation: %+v", tm)
	default:
	}
}

// TestBeginRemoteWithoutObserver: outside a server with an Observer,
// BeginRemote measures nothing and End is harmless.
func TestBeginRemoteWithoutObserver(t *testing.T) {
	w := BeginRemote(context.Background())
	if w.clock != nil || !w.start.IsZero() {
		t.Fatalf("BeginRemote without an observer: %+v", w)
	}
	w.End()
	if n := testing.AllocsPerRun(100, func() { BeginRemote(context.Background()).End() }); n != 0 {
		t.Errorf("BeginRemote allocates %v times", n)
	}
}

// BenchmarkStamps is the server's own cost per observed request: the
// timestamps the connection takes (received, dequeued, handled, picked,
// sent) and the RequestTiming built from them.
func BenchmarkStamps(b *testing.B) {
	r := &request{key: int16(kmsg.Produce), version: 9, body: kmsg.NewPtrProduceRequest()}
	var t RequestTiming
	var c atomic.Int64
	b.ReportAllocs()
	for b.Loop() {
		r.stamps.received = time.Now()
		r.stamps.dequeued = time.Now()
		c.Store(0)
		r.stamps.handled = time.Now()
		r.stamps.remote = time.Duration(c.Load())
		r.stamps.picked = time.Now()
		r.timing(&t, time.Now())
	}
}
