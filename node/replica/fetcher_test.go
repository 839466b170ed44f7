package replica

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/partition"
	"github.com/sluice-log/sluice/quorum"
)

// leaderHost is a Host whose every broker's Kafka listener is addr.
type leaderHost struct {
	testHost
	addr string
}

func (h leaderHost) KafkaEndpoint(int32) string { return h.addr }

// TestFetchRedialsAClosedIdleConnection: a fetcher's connection that the
// leader's process closed while no fetch was in flight (the leader
// restarted) costs the next fetch a fresh connection, not a failure and
// replica.fetch.backoff.ms (1 s) of acks=all produce waiting on it.
func TestFetchRedialsAClosedIdleConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	first := make(chan net.Conn, 1)
	served := make(chan int, 2)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		first <- c // the "old process": closed by the test while idle
		for i := 1; ; i++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go answerFetches(c, i, served)
		}
	}()
	m, err := NewManager(leaderHost{addr: ln.Addr().String()}, Options{NodeID: 1, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	f := &fetcher{m: m, leader: 2, queue: newQueue[partition.FetchRequest]()}
	if _, _, err := f.dial(); err != nil {
		t.Fatal(err)
	}
	old := <-first
	old.Close()
	// Wait until the close reached the fetcher's socket: its reads see EOF.
	f.mu.Lock()
	conn := f.mu.conn
	f.mu.Unlock()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("read on the closed connection: %v, want EOF", err)
	}
	start := time.Now()
	req, _ := f.request(&fetchSession{}, nil)
	if _, err := f.fetch(req); err != nil {
		t.Fatalf("fetch after the leader closed the idle connection: %v", err)
	}
	if n := <-served; n != 1 {
		t.Fatalf("answered on connection %d, want the first fresh one", n)
	}
	t.Logf("fetch on a fresh connection took %v", time.Since(start))
	f.closeConn()
}

// answerFetches answers every request on c with an empty Fetch v15
// response (correlation id 1, as ClientConn sends), reporting conn id.
func answerFetches(c net.Conn, id int, served chan<- int) {
	defer c.Close()
	for {
		var size [4]byte
		if _, err := io.ReadFull(c, size[:]); err != nil {
			return
		}
		if _, err := io.CopyN(io.Discard, c, int64(binary.BigEndian.Uint32(size[:]))); err != nil {
			return
		}
		resp := kmsg.NewPtrFetchResponse()
		resp.SetVersion(15)
		body := binary.BigEndian.AppendUint32(nil, 1) // correlation id
		body = append(body, 0)                        // response header v1: no tags
		body = resp.AppendTo(body)
		frame := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
		if _, err := c.Write(append(frame, body...)); err != nil {
			return
		}
		served <- id
	}
}

// TestFetchSessionRequests: the fetcher's requests in a fetch session
// (KIP-227). The first is full at epoch 0; once the leader's answer named
// a session, a request carries only the partitions whose fetch position
// moved and forgets those no longer pending, so an idle follower's
// request carries nothing; a session error starts over with a full
// request that closes the old session.
func TestFetchSessionRequests(t *testing.T) {
	m, err := NewManager(testHost{}, Options{NodeID: 1, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	f := &fetcher{m: m, leader: 2, queue: newQueue[partition.FetchRequest]()}
	tA, tB := quorum.UUID{1}, quorum.UUID{2}
	ra, rb := &Replica{topicID: tA, partition: 0}, &Replica{topicID: tB, partition: 3}
	pending := map[fetchKey]fetchItem{
		{tA, 0}: {r: ra, req: partition.FetchRequest{Seq: 1, FetchOffset: 10, CurrentLeaderEpoch: 4, LastFetchedEpoch: 4}, maxBytes: replicaFetchMaxBytes},
		{tB, 3}: {r: rb, req: partition.FetchRequest{Seq: 1, FetchOffset: 20, CurrentLeaderEpoch: 4, LastFetchedEpoch: 4}, maxBytes: replicaFetchMaxBytes},
	}
	count := func(req *kmsg.FetchRequest) (parts, forgotten int) {
		for _, t := range req.Topics {
			parts += len(t.Partitions)
		}
		for _, t := range req.ForgottenTopics {
			forgotten += len(t.Partitions)
		}
		return
	}
	var sess fetchSession
	req, full := f.request(&sess, pending)
	if p, _ := count(req); !full || req.SessionID != 0 || req.SessionEpoch != 0 || p != 2 {
		t.Fatalf("first request: full %v, session %d epoch %d, %d partitions", full, req.SessionID, req.SessionEpoch, p)
	}
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	resp.SessionID = 77
	sess.answered(req, resp, full, pending)

	// Idle: nothing moved.
	req, full = f.request(&sess, pending)
	if p, fg := count(req); full || req.SessionID != 77 || req.SessionEpoch != 1 || p != 0 || fg != 0 {
		t.Fatalf("idle request: full %v, session %d epoch %d, %d partitions, %d forgotten", full, req.SessionID, req.SessionEpoch, p, fg)
	}
	resp = req.ResponseKind().(*kmsg.FetchResponse)
	resp.SessionID = 77
	sess.answered(req, resp, full, pending)

	// A moved, B gone.
	pending[fetchKey{tA, 0}] = fetchItem{r: ra, req: partition.FetchRequest{Seq: 2, FetchOffset: 15, CurrentLeaderEpoch: 4, LastFetchedEpoch: 4}, maxBytes: replicaFetchMaxBytes}
	delete(pending, fetchKey{tB, 3})
	req, full = f.request(&sess, pending)
	if p, fg := count(req); full || req.SessionEpoch != 2 || p != 1 || fg != 1 ||
		req.Topics[0].TopicID != tA || req.Topics[0].Partitions[0].FetchOffset != 15 || req.ForgottenTopics[0].TopicID != tB {
		t.Fatalf("request after a move and a removal: %+v", req)
	}
	resp = req.ResponseKind().(*kmsg.FetchResponse)
	resp.SessionID = 77
	sess.answered(req, resp, full, pending)
	if len(sess.sent) != 1 || sess.epoch != 3 {
		t.Fatalf("session after it: epoch %d, %d partitions", sess.epoch, len(sess.sent))
	}

	// The leader lost the session: a full request closing it.
	sess.reset()
	req, full = f.request(&sess, pending)
	if p, _ := count(req); !full || req.SessionID != 77 || req.SessionEpoch != 0 || p != 1 {
		t.Fatalf("request after a reset: full %v, session %d epoch %d, %d partitions", full, req.SessionID, req.SessionEpoch, p)
	}
}
