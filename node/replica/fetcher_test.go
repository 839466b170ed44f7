package replica

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/partition"
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
