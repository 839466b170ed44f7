package quorum

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
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
