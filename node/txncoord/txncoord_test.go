package txncoord

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/node/kafka"
	"github.com/sluice-log/sluice/node/txn"
)

// These tests run the driver over a fake Host: the real node cannot make
// one WriteTxnMarkers answer fail, move a leader between two answers or
// count the requests one destination got. The shards are real node/txn
// ones, the log an in-memory list of the batches node/coord encodes, the
// destinations real TCP servers speaking kmsg.

// fakeHost is one node leading state partitions, with brokers 1 and 2
// as marker destinations.
type fakeHost struct {
	mu      sync.Mutex
	log     map[int32][][]byte // state partition → batches, in order
	epochs  map[int32]int32    // state partition → the epoch it is led at
	leaders map[txn.TopicPartition]int32
	nextPID int64
	servers map[int32]*markerServer
}

func newFakeHost(t *testing.T) *fakeHost {
	h := &fakeHost{log: map[int32][][]byte{}, epochs: map[int32]int32{}, leaders: map[txn.TopicPartition]int32{},
		nextPID: 1000, servers: map[int32]*markerServer{}}
	for _, id := range []int32{1, 2} {
		h.servers[id] = startMarkerServer(t)
	}
	return h
}

func (h *fakeHost) Append(_ context.Context, p int32, batch []byte) kafka.ProduceResult {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := append([]byte(nil), batch...)
	binary.BigEndian.PutUint64(b, uint64(len(h.log[p])))
	h.log[p] = append(h.log[p], b)
	return kafka.ProduceResult{}
}

// Read returns batch i at offset i (every batch holds one record).
func (h *fakeHost) Read(p int32, offset, upTo int64, _ int, _ []byte) ([]byte, int64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []byte
	next := offset
	for ; next < upTo && next < int64(len(h.log[p])); next++ {
		out = append(out, h.log[p][next]...)
	}
	return out, next, nil
}

func (h *fakeHost) Offsets(p, epoch int32) (int64, int64, int64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := int64(len(h.log[p]))
	return 0, n, n, h.epochs[p] == epoch
}

func (h *fakeHost) Changed() <-chan struct{} { return make(chan struct{}) }

// NextSequence: the state partitions hold no producer's batches.
func (h *fakeHost) NextSequence(int32, int64, int16) int32 { return 0 }

func (h *fakeHost) AllocateProducerIDs(context.Context) (int64, int64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.nextPID += 1000
	return h.nextPID - 1000, 1000, nil
}

func (h *fakeHost) Leader(topic string, partition int32) (int32, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	l, ok := h.leaders[txn.TopicPartition{Topic: topic, Partition: partition}]
	return l, ok
}

func (h *fakeHost) setLeader(topic string, partition, leader int32) {
	h.mu.Lock()
	h.leaders[txn.TopicPartition{Topic: topic, Partition: partition}] = leader
	h.mu.Unlock()
}

func (h *fakeHost) Dial(id int32) (*kafka.ClientConn, error) {
	s := h.servers[id]
	if s == nil {
		return nil, io.ErrClosedPipe
	}
	return kafka.Dial(s.ln.Addr().String(), 5*time.Second)
}

// markerServer answers WriteTxnMarkers: every partition 0, but for the
// codes queued in fail; hold, while set, delays each answer until it is
// closed.
type markerServer struct {
	ln net.Listener
	mu sync.Mutex
	// reqs are the requests received, in order.
	reqs []*kmsg.WriteTxnMarkersRequest
	fail map[txn.TopicPartition][]int16
	hold chan struct{}
}

func startMarkerServer(t *testing.T) *markerServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &markerServer{ln: ln, fail: map[txn.TopicPartition][]int16{}}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c)
		}
	}()
	return s
}

func (s *markerServer) serve(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		var size [4]byte
		if _, err := io.ReadFull(r, size[:]); err != nil {
			return
		}
		frame := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(r, frame); err != nil {
			return
		}
		// Request header v2: key, version, correlation id, client id,
		// tags (none).
		version := int16(binary.BigEndian.Uint16(frame[2:]))
		corr := binary.BigEndian.Uint32(frame[4:])
		n := int(int16(binary.BigEndian.Uint16(frame[8:])))
		body := frame[10+max(n, 0)+1:]
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		req.Version = version
		if err := req.ReadFrom(body); err != nil {
			return
		}
		s.mu.Lock()
		s.reqs = append(s.reqs, req)
		hold := s.hold
		resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
		for _, m := range req.Markers {
			rm := kmsg.NewWriteTxnMarkersResponseMarker()
			rm.ProducerID = m.ProducerID
			for _, t := range m.Topics {
				rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
					rp.Partition = p
					tp := txn.TopicPartition{Topic: t.Topic, Partition: p}
					if q := s.fail[tp]; len(q) > 0 {
						rp.ErrorCode, s.fail[tp] = q[0], q[1:]
					}
					rt.Partitions = append(rt.Partitions, rp)
				}
				rm.Topics = append(rm.Topics, rt)
			}
			resp.Markers = append(resp.Markers, rm)
		}
		s.mu.Unlock()
		if hold != nil {
			<-hold
		}
		out := binary.BigEndian.AppendUint32(nil, corr)
		out = append(out, 0) // response header v1: no tags
		out = resp.AppendTo(out)
		if _, err := c.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(out))), out...)); err != nil {
			return
		}
	}
}

func (s *markerServer) requests() []*kmsg.WriteTxnMarkersRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*kmsg.WriteTxnMarkersRequest(nil), s.reqs...)
}

// testCfg has one state partition: every id is coordinated by shard 0.
func testCfg() txn.Config {
	cfg := txn.DefaultConfig()
	cfg.StatePartitions, cfg.RetryBackoff = 1, 10*time.Millisecond
	return cfg
}

func startCoordinator(t *testing.T, h *fakeHost, epoch int32) *Coordinator {
	t.Helper()
	c := New(h, Options{Config: testCfg()})
	t.Cleanup(c.Close)
	h.mu.Lock()
	h.epochs[0] = epoch
	h.mu.Unlock()
	c.Sync(map[int32]int32{0: epoch})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.WaitLoaded(ctx, 0); err != nil {
		t.Fatal(err)
	}
	return c
}

func do[R kmsg.Response](t *testing.T, c *Coordinator, req kmsg.Request) R {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.Do(ctx, 0, kafka.GroupRequest{Body: req})
	if err != nil {
		t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp.(R)
}

// begin starts a transaction of id on topic's partitions; it returns the
// producer id and epoch.
func begin(t *testing.T, c *Coordinator, id, topic string, parts ...int32) (int64, int16) {
	t.Helper()
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.Version, ip.TransactionalID, ip.TransactionTimeoutMillis = 4, kmsg.StringPtr(id), 60000
	ir := do[*kmsg.InitProducerIDResponse](t, c, ip)
	if ir.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v", kerr.ErrorForCode(ir.ErrorCode))
	}
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.Version, add.TransactionalID, add.ProducerID, add.ProducerEpoch = 3, id, ir.ProducerID, ir.ProducerEpoch
	rt := kmsg.NewAddPartitionsToTxnRequestTopic()
	rt.Topic, rt.Partitions = topic, parts
	add.Topics = append(add.Topics, rt)
	ar := do[*kmsg.AddPartitionsToTxnResponse](t, c, add)
	if code := ar.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("AddPartitionsToTxn: %v", kerr.ErrorForCode(code))
	}
	return ir.ProducerID, ir.ProducerEpoch
}

func end(t *testing.T, c *Coordinator, id string, pid int64, epoch int16, commit bool) {
	t.Helper()
	req := kmsg.NewPtrEndTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = 3, id, pid, epoch, commit
	if r := do[*kmsg.EndTxnResponse](t, c, req); r.ErrorCode != 0 {
		t.Fatalf("EndTxn: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}

func state(t *testing.T, c *Coordinator, id string) string {
	t.Helper()
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{id}
	return do[*kmsg.DescribeTransactionsResponse](t, c, req).TransactionStates[0].State
}

func waitState(t *testing.T, c *Coordinator, id, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for got := state(t, c, id); got != want; got = state(t, c, id) {
		if time.Now().After(deadline) {
			t.Fatalf("%s is %s, want %s", id, got, want)
		}
		<-time.After(10 * time.Millisecond)
	}
}

// TestMarkersPerBroker: a transaction over partitions led by two brokers
// gets one WriteTxnMarkers at each, carrying only that broker's
// partitions, with the state partition's leader epoch as coordinator
// epoch; markers queued while a request is out go together in the next.
func TestMarkersPerBroker(t *testing.T) {
	h := newFakeHost(t)
	h.setLeader("t", 0, 1)
	h.setLeader("t", 1, 2)
	h.setLeader("t", 2, 1)
	c := startCoordinator(t, h, 7)

	pid, epoch := begin(t, c, "a", "t", 0, 1, 2)
	end(t, c, "a", pid, epoch, true)
	waitState(t, c, "a", "CompleteCommit")
	for id, want := range map[int32][]int32{1: {0, 2}, 2: {1}} {
		reqs := h.servers[id].requests()
		if len(reqs) != 1 || len(reqs[0].Markers) != 1 {
			t.Fatalf("broker %d got %d requests, want 1 with 1 marker", id, len(reqs))
		}
		m := reqs[0].Markers[0]
		if m.CoordinatorEpoch != 7 || !m.Committed || m.ProducerID != pid || len(m.Topics) != 1 || len(m.Topics[0].Partitions) != len(want) {
			t.Fatalf("broker %d got marker %+v, want partitions %v, coordinator epoch 7", id, m, want)
		}
	}

	// Hold broker 1's answers: the markers of the transactions ended
	// meanwhile wait in its queue and go out in one request.
	hold := make(chan struct{})
	h.servers[1].mu.Lock()
	h.servers[1].hold = hold
	h.servers[1].mu.Unlock()
	ids := []string{"b", "c", "d", "e"}
	pids := map[string]int64{}
	for _, id := range ids {
		p, e := begin(t, c, id, "t", 0)
		pids[id] = p
		end(t, c, id, p, e, false)
	}
	h.servers[1].mu.Lock()
	h.servers[1].hold = nil
	h.servers[1].mu.Unlock()
	close(hold)
	for _, id := range ids {
		waitState(t, c, id, "CompleteAbort")
	}
	most := 0
	for _, r := range h.servers[1].requests() {
		most = max(most, len(r.Markers))
	}
	if most < 2 {
		t.Errorf("no request to broker 1 carried more than one marker: %d requests", len(h.servers[1].requests()))
	}
	if st := c.Stats(); st.MarkersSent < 7 || st.MarkersQueued != 0 {
		t.Errorf("stats: %d markers sent, %d queued", st.MarkersSent, st.MarkersQueued)
	}
}

// TestMarkersRetried: a partition answering NOT_LEADER_OR_FOLLOWER, and
// then led by another broker, gets its marker there; a partition without
// a leader gets it once it has one; a deleted topic's partition counts
// as written.
func TestMarkersRetried(t *testing.T) {
	h := newFakeHost(t)
	h.setLeader("t", 0, 1)
	h.setLeader("t", 1, -1)
	// Broker 1 no longer leads t-0, whatever its metadata said.
	notLeader := make([]int16, 10000)
	for i := range notLeader {
		notLeader[i] = kerr.NotLeaderForPartition.Code
	}
	h.servers[1].fail[txn.TopicPartition{Topic: "t", Partition: 0}] = notLeader
	c := startCoordinator(t, h, 1)
	pid, epoch := begin(t, c, "a", "t", 0, 1)
	begin(t, c, "gone", "deleted", 0)
	h.setLeader("deleted", 0, 1)
	// "gone" began while its topic existed (no leader known here yet:
	// set above after), then the topic is deleted before the markers.
	h.mu.Lock()
	delete(h.leaders, txn.TopicPartition{Topic: "deleted", Partition: 0})
	h.mu.Unlock()

	end(t, c, "a", pid, epoch, true)
	waitFor(t, "the first marker to broker 1", func() bool { return len(h.servers[1].requests()) >= 1 })
	h.setLeader("t", 0, 2)
	h.setLeader("t", 1, 2)
	waitState(t, c, "a", "CompleteCommit")
	got := map[int32]bool{}
	for _, r := range h.servers[2].requests() {
		for _, m := range r.Markers {
			for _, p := range m.Topics[0].Partitions {
				got[p] = true
			}
		}
	}
	if !got[0] || !got[1] {
		t.Fatalf("broker 2 got markers for %v, want partitions 0 and 1", got)
	}

	ip := kmsg.NewPtrDescribeTransactionsRequest()
	ip.TransactionalIDs = []string{"gone"}
	st := do[*kmsg.DescribeTransactionsResponse](t, c, ip).TransactionStates[0]
	req := kmsg.NewPtrEndTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = 3, "gone", st.ProducerID, st.ProducerEpoch, false
	if r := do[*kmsg.EndTxnResponse](t, c, req); r.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(r.ErrorCode))
	}
	waitState(t, c, "gone", "CompleteAbort")
}

// TestFailoverResendsMarkers: markers that cannot be written (no leader)
// when the shard is dropped are sent by the next coordinator, which
// loads the prepared transaction from the log, with its own epoch.
func TestFailoverResendsMarkers(t *testing.T) {
	h := newFakeHost(t)
	h.setLeader("t", 0, -1)
	c := startCoordinator(t, h, 3)
	pid, epoch := begin(t, c, "a", "t", 0)
	end(t, c, "a", pid, epoch, true)
	if got := state(t, c, "a"); got != "PrepareCommit" {
		t.Fatalf("with no leader for the partition: %s, want PrepareCommit", got)
	}
	c.Close()

	h.setLeader("t", 0, 2)
	c2 := startCoordinator(t, h, 4)
	waitState(t, c2, "a", "CompleteCommit")
	reqs := h.servers[2].requests()
	if len(reqs) == 0 || reqs[0].Markers[0].CoordinatorEpoch != 4 || reqs[0].Markers[0].ProducerID != pid {
		t.Fatalf("the new coordinator's markers: %d requests %+v", len(reqs), reqs)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s", what)
		}
		<-time.After(10 * time.Millisecond)
	}
}
