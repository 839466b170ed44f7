package quorum

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func TestHelloRoundTrip(t *testing.T) {
	for _, h := range []hello{{}, {ClusterID: "MkU3OEVBNTcwNTJENDM2Qk", NodeID: 3}, {ClusterID: strings.Repeat("x", maxClusterIDLen), NodeID: -1}} {
		b := appendHello(nil, h)
		if len(b) > maxHello {
			t.Fatalf("%+v: %d bytes > maxHello", h, len(b))
		}
		got, err := readHello(bytes.NewReader(append(b, forwardMagic)))
		if err != nil || got != h {
			t.Fatalf("%+v: got %+v, %v", h, got, err)
		}
	}
	for _, tc := range []struct {
		in   []byte
		want error
	}{
		{nil, io.EOF},
		{[]byte{helloMagic, helloVersion}, io.ErrUnexpectedEOF},
		{[]byte{helloMagic, helloVersion, 3, 'a', 'b', 'c', 0}, io.ErrUnexpectedEOF},
		{[]byte{forwardMagic, 0, 0, 0, 0}, ErrBadHello},
		{[]byte{0}, ErrBadHello},
		{[]byte{'G', 'E', 'T'}, ErrBadHello},
		{[]byte{helloMagic, 9, 0, 0, 0, 0, 0}, ErrBadHello},
		{[]byte{helloMagic, helloVersion, maxClusterIDLen + 1}, ErrBadHello},
	} {
		if _, err := readHello(bytes.NewReader(tc.in)); !errors.Is(err, tc.want) {
			t.Errorf("% x: %v, want %v", tc.in, err, tc.want)
		}
	}
	h := appendHello(nil, hello{ClusterID: "b", NodeID: 2})
	if _, err := checkHello(bufio.NewReader(bytes.NewReader(h)), "a"); !errors.Is(err, ErrWrongCluster) {
		t.Fatalf("cluster b at a: %v", err)
	}
	if _, err := checkHello(bufio.NewReader(bytes.NewReader(h)), ""); err != nil {
		t.Fatalf("no cluster id accepts any: %v", err)
	}
}

// FuzzReadHello: any input decodes or fails without panicking, reads at
// most maxHello bytes, and what decodes encodes back to what was read.
func FuzzReadHello(f *testing.F) {
	f.Add(appendHello(nil, hello{ClusterID: "MkU3OEVBNTcwNTJENDM2Qk", NodeID: 1}))
	f.Add([]byte{helloMagic, helloVersion, 0xff})
	f.Add([]byte{forwardMagic, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, in []byte) {
		r := bytes.NewReader(in)
		h, err := readHello(r)
		read := len(in) - r.Len()
		if read > maxHello {
			t.Fatalf("read %d bytes", read)
		}
		if err == nil && !bytes.Equal(appendHello(nil, h), in[:read]) {
			t.Fatalf("%+v does not encode back to % x", h, in[:read])
		}
	})
}

func TestRefusalsRateLimited(t *testing.T) {
	var buf syncBuffer
	r := newRefusals(slog.New(slog.NewTextHandler(&buf, nil)))
	now := time.Unix(1000, 0)
	r.now = func() time.Time { return now }
	peer := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 7), Port: 40000}
	h := hello{ClusterID: "cluster-b", NodeID: 4}
	_, err := checkHello(bufio.NewReader(bytes.NewReader(appendHello(nil, h))), "cluster-a")
	for i := 0; i < 5; i++ {
		peer.Port++ // a retrying peer dials from a new port
		r.refused(peer, "cluster-a", h, err)
	}
	if n := strings.Count(buf.String(), "\n"); n != 1 {
		t.Fatalf("%d lines for 5 refusals in a minute:\n%s", n, buf.String())
	}
	for _, want := range []string{"this node is in cluster cluster-a; the peer at 10.0.0.7:40001 (node 4) says cluster cluster-b", "controller.quorum.voters", "meta.properties"} {
		if !strings.Contains(buf.String(), want) {
			t.Fatalf("missing %q in %s", want, buf.String())
		}
	}
	now = now.Add(time.Minute)
	r.refused(peer, "cluster-a", h, err)
	if !strings.Contains(buf.String(), "refused_since_last_line=4") {
		t.Fatalf("second line does not count the held-back refusals:\n%s", buf.String())
	}
	// Another reason from the same host is its own line.
	r.refused(peer, "cluster-a", hello{}, fmt.Errorf("%w: first byte 0x47", ErrBadHello))
	if n := strings.Count(buf.String(), "\n"); n != 3 {
		t.Fatalf("%d lines, want 3:\n%s", n, buf.String())
	}
}

// TestForeignClusterRefused: a cluster whose voters list names another
// cluster's controller (a wrong controller.quorum.voters) elects without
// it; the foreign controller refuses its raft and forwarding connections,
// logs why, and its own state does not move.
func TestForeignClusterRefused(t *testing.T) {
	var logA syncBuffer
	a := startQuorum(t, 1, func(c *Config) {
		c.ClusterID = "cluster-a"
		c.PeerLog = slog.New(slog.NewTextHandler(&logA, nil))
	})[0]
	leaderOf(t, []*testNode{a})
	registerBrokers(t, a, 1)
	waitFor(t, 10*time.Second, "cluster-a's cluster id", func() bool { return a.c.Image().ClusterID == "cluster-a" })
	termA, imageA := a.c.RaftStats().Term, imageJSON(t, a.c.Image())

	// Cluster b: two nodes and, by mistake, a's controller as third voter.
	var bs []*testNode
	voters := []Voter{{ID: 3, Addr: a.addr}}
	var lns []net.Listener
	for i := int32(1); i <= 2; i++ {
		ln := listen(t)
		n := &testNode{id: i, dir: t.TempDir(), addr: ln.Addr().String()}
		bs, lns = append(bs, n), append(lns, ln)
		voters = append(voters, Voter{ID: i, Addr: n.addr})
	}
	for i, n := range bs {
		n.start(t, lns[i], voters, func(c *Config) { c.ClusterID = "cluster-b" })
	}
	t.Cleanup(func() {
		for _, n := range bs {
			n.stop(t)
		}
	})
	lb := leaderOf(t, bs)
	registerBrokers(t, lb, 2) // b's leader replicates to a's address too
	// A forwarded command and a Join from b to a's address get a clear error.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	fb := followerOf(bs, lb)
	_, _, err := fb.c.forwardCommand(ctx, a.addr, &RegisterBroker{ID: 9}, false)
	if !errors.Is(err, ErrWrongCluster) || !strings.Contains(err.Error(), "(node 1) is in cluster cluster-a; this node is in cluster cluster-b") {
		t.Fatalf("forward from b to a: %v", err)
	}
	if err := fb.c.Join(ctx, []string{a.addr}); !errors.Is(err, ErrWrongCluster) {
		t.Fatalf("join from b to a: %v", err)
	}
	waitFor(t, 10*time.Second, "a's refusal line", func() bool {
		return strings.Contains(logA.String(), "this node is in cluster cluster-a; the peer at 127.0.0.1:")
	})
	if !strings.Contains(logA.String(), "says cluster cluster-b: check controller.quorum.voters") {
		t.Fatalf("refusal line:\n%s", logA.String())
	}
	if n := strings.Count(logA.String(), "\n"); n != 1 {
		t.Fatalf("%d lines for one misconfigured host in a minute (rate limit):\n%s", n, logA.String())
	}
	if a.c.RaftStats().RefusedConns == 0 {
		t.Fatal("RefusedConns is 0")
	}
	// a: still the only voter and leader of its own term; image unchanged.
	if !a.c.IsLeader() || a.c.RaftStats().Term != termA {
		t.Fatalf("a moved: leader %v, term %d (was %d)", a.c.IsLeader(), a.c.RaftStats().Term, termA)
	}
	f := a.c.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		t.Fatal(err)
	}
	if s := f.Configuration().Servers; len(s) != 1 || s[0].ID != raft.ServerID("1") {
		t.Fatalf("a's configuration: %+v", s)
	}
	if got := imageJSON(t, a.c.Image()); got != imageA {
		t.Fatalf("a's image changed:\n%s\nwas\n%s", got, imageA)
	}
	if lb.c.Image().ClusterID != "cluster-b" {
		t.Fatalf("b's cluster id: %q", lb.c.Image().ClusterID)
	}
}

// syncBuffer is a bytes.Buffer for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
