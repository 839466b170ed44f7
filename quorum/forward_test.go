package quorum

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestForwardProtocolAbuse: malformed forwarding traffic on the controller
// port gets an error answer or a closed connection, and the quorum keeps
// working.
func TestForwardProtocolAbuse(t *testing.T) {
	nodes := startQuorum(t, 1, nil)
	n := leaderOf(t, nodes)
	dial := func() net.Conn {
		conn, err := net.DialTimeout("tcp", n.addr, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		return conn
	}
	hi := appendHello(nil, hello{ClusterID: "test-cluster", NodeID: 99})
	closed := func(what string, conn net.Conn) {
		t.Helper()
		if _, err := conn.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("%s: read %v, want the connection closed", what, err)
		}
		conn.Close()
	}
	// No hello, a garbage first byte, a truncated hello, a newer version,
	// an oversized cluster id: closed before any protocol byte is read.
	for what, b := range map[string][]byte{
		"forwarding without a hello": {forwardMagic, 0, 0, 0, 2, '{', '}'},
		"raft without a hello":       {1, 0x80},
		"garbage":                    []byte("GET / HTTP/1.1\r\n\r\n"),
		"truncated hello":            hi[:5],
		"version 2":                  {helloMagic, 2, 0, 0, 0, 0, 1, forwardMagic},
		"oversized cluster id":       {helloMagic, helloVersion, 0xff},
	} {
		conn := dial()
		_, _ = conn.Write(b)
		if what == "truncated hello" {
			_ = conn.(*net.TCPConn).CloseWrite()
		}
		closed(what, conn)
	}
	// An oversized frame: the connection is closed without an answer.
	conn := dial()
	_, _ = conn.Write(append(hi, forwardMagic, 0xff, 0xff, 0xff, 0xff))
	if _, err := conn.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("oversized frame: read %v, want EOF", err)
	}
	conn.Close()
	// Not JSON: closed.
	conn = dial()
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], 3)
	_, _ = conn.Write(append(append(append(hi, forwardMagic), hdr[:]...), "{{{"...))
	if _, err := conn.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("bad json: read %v, want EOF", err)
	}
	conn.Close()
	// Unknown op and unknown command: INVALID_REQUEST.
	for _, req := range []forwardRequest{{Op: "explode"}, {Op: opPropose, Type: "nope"}, {Op: opPropose, Type: CmdCreateTopics, Cmd: []byte(`[1]`)}} {
		conn = dial()
		w := bufio.NewWriter(conn)
		_, _ = w.Write(hi)
		_ = w.WriteByte(forwardMagic)
		if err := writeFrame(w, &req); err != nil {
			t.Fatal(err)
		}
		_ = w.Flush()
		var resp forwardResponse
		if err := readFrame(conn, &resp); err != nil {
			t.Fatal(err)
		}
		if resp.Code != kerr.InvalidRequest.Code {
			t.Fatalf("%+v: %+v", req, resp)
		}
		conn.Close()
	}
	// A silent connection and a half-sent frame do not block others.
	silent := dial()
	defer silent.Close()
	half := dial()
	defer half.Close()
	_, _ = half.Write(append(hi, forwardMagic, 0, 0, 0, 9, '{'))
	halfHello := dial()
	defer halfHello.Close()
	_, _ = halfHello.Write(hi[:4])
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, _, err := n.c.forwardCommand(ctx, n.addr, &SetClusterID{ClusterID: "test-cluster"}, false); err != nil {
		t.Fatal(err)
	}
	registerBrokers(t, n, 1)
}

// TestForwardReusesConnections: forwards from a follower to the leader
// over mutual TLS share kept connections, so twenty forwards cost a
// handshake or two instead of twenty; ResetForwardConns (the node's
// answer to reloaded certificates) makes the next forward handshake
// again; without reuse every forward handshakes.
func TestForwardReusesConnections(t *testing.T) {
	ca := newTestCA(t)
	var handshakes [4]atomic.Int64 // by node id
	nodes := startQuorum(t, 3, func(c *Config) {
		ca.mtls(c, ca.issue(t, "controller"))
		id := c.NodeID
		c.ServerTLS.VerifyConnection = func(tls.ConnectionState) error {
			handshakes[id].Add(1)
			return nil
		}
	})
	leader := leaderOf(t, nodes)
	f := followerOf(nodes, leader)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	forward := func(n int) int64 {
		t.Helper()
		before := handshakes[leader.id].Load()
		for range n {
			if err := f.c.forward(ctx, leader.addr, &forwardRequest{Op: opStatus}, nil); err != nil {
				t.Fatal(err)
			}
		}
		return handshakes[leader.id].Load() - before
	}
	forward(1) // the first one dials
	if got := forward(20); got > 2 {
		t.Fatalf("20 forwards made %d handshakes, want the kept connection reused", got)
	}
	f.c.ResetForwardConns()
	if got := forward(1); got < 1 {
		t.Fatal("a forward after ResetForwardConns reused a connection made with the old certificates")
	}
	f.c.pool.noReuse = true
	if got := forward(5); got < 5 {
		t.Fatalf("5 forwards without reuse made %d handshakes", got)
	}
	f.c.pool.noReuse = false
	registerBrokers(t, f, 1, 2) // proposals go over the kept connection too
}

// TestForwardPoolServerCloses: a server that does not offer keep_alive
// (an older node) gets a new connection per forward; one that offered it
// and then closed the connection (a restart) is noticed before the next
// forward, which goes on a new connection and succeeds.
func TestForwardPoolServerCloses(t *testing.T) {
	n := &testNode{id: 1, dir: t.TempDir()}
	n.start(t, listen(t), []Voter{{ID: 1, Addr: "127.0.0.1:1"}}, nil)
	defer n.stop(t)
	for _, keepAlive := range []bool{false, true} {
		ln := listen(t)
		accepted := make(chan struct{}, 4)
		closed := make(chan struct{}, 4)
		go func() {
			for {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				accepted <- struct{}{}
				br := bufio.NewReader(conn)
				var req forwardRequest
				if _, err := checkHello(br, ""); err == nil {
					if b, err := br.ReadByte(); err == nil && b == forwardMagic && readFrame(br, &req) == nil {
						_ = writeFrame(conn, &forwardResponse{KeepAlive: keepAlive})
					}
				}
				conn.Close()
				closed <- struct{}{}
			}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		for i := range 2 {
			if err := n.c.forward(ctx, ln.Addr().String(), &forwardRequest{Op: opStatus}, nil); err != nil {
				t.Fatalf("keep_alive %v, forward %d: %v", keepAlive, i, err)
			}
			<-closed
		}
		cancel()
		ln.Close()
		if len(accepted) != 2 {
			t.Fatalf("keep_alive %v: %d connections for 2 forwards", keepAlive, len(accepted))
		}
	}
}
