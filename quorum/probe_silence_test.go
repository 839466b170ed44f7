package quorum

import (
	"errors"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// silentListener is a TCP listener on 127.0.0.1 whose accept queue is
// full (listen backlog 0, one connection queued, none accepted): the
// kernel drops further SYNs, so a connect times out as to a host that is
// gone. It returns its address.
func silentListener(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
	for range 2 { // fill the queue; the second may already time out
		if c, err := net.DialTimeout("tcp", addr, 300*time.Millisecond); err == nil {
			t.Cleanup(func() { c.Close() })
		}
	}
	var ne net.Error
	if c, err := net.DialTimeout("tcp", addr, 300*time.Millisecond); err == nil || !errors.As(err, &ne) || !ne.Timeout() {
		if c != nil {
			c.Close()
		}
		t.Skipf("a connect to a full accept queue did not time out here (%v): cannot make a silent listener", err)
	}
	return addr
}

func endpoint(t *testing.T, addr string) []Endpoint {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(port)
	return []Endpoint{{Name: "PLAINTEXT", Host: host, Port: int32(p)}}
}

// TestProbeSilenceFences: the active controller fences a broker whose
// listener lets its probes time out, but only while another broker's
// listener answers the same rounds: alone, the silence could be the
// controller's own (starved, or its network down), and fences nobody.
func TestProbeSilenceFences(t *testing.T) {
	nodes := startQuorum(t, 1, nil)
	leader := leaderOf(t, nodes)
	silent := silentListener(t)
	answering, err := net.Listen("tcp", "127.0.0.1:0") // the kernel accepts; nobody needs to
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { answering.Close() })
	register := func(id int32, addr string) {
		r := propose(t, leader, &RegisterBroker{ID: id, Endpoints: endpoint(t, addr)}).(*RegisterBrokerReply)
		propose(t, leader, &UnfenceBroker{ID: id, Epoch: r.Epoch})
	}
	register(3, silent)
	g, err := StartGossip(GossipConfig{NodeID: 1, BindAddr: "127.0.0.1", SessionTimeout: time.Minute, Tick: 50 * time.Millisecond,
		ProbeListener: "PLAINTEXT", ProbeInterval: 250 * time.Millisecond, Tune: fastGossip}, leader.c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	waitFor(t, 20*time.Second, "probes of the silent broker alone", func() bool { return g.Probes.Load() >= 3*SilentRoundsToFence })
	deadline := time.Now().Add(SilenceToFence + time.Second)
	waitFor(t, 20*time.Second, "longer than SilenceToFence", func() bool { return time.Now().After(deadline) })
	if b := leader.c.Image().Brokers[3]; b.Fenced || g.ProbesSilent.Load() != 0 {
		t.Fatalf("with no listener answering, silence fenced broker 3 (fenced %v, silent probes %d)", b.Fenced, g.ProbesSilent.Load())
	}
	start := time.Now()
	register(2, answering.Addr().String())
	waitFor(t, 20*time.Second, "broker 3 fenced for silence", func() bool { return leader.c.Image().Brokers[3].Fenced })
	t.Logf("silent broker fenced %v after another broker answered the probes (%d silent probes)", time.Since(start).Round(time.Millisecond), g.ProbesSilent.Load())
	if time.Since(start) < SilenceToFence {
		t.Fatalf("fenced after %v, before SilenceToFence %v", time.Since(start), SilenceToFence)
	}
	if leader.c.Image().Brokers[2].Fenced {
		t.Fatal("the answering broker 2 was fenced")
	}
	// A fenced broker is still probed: a cut that heals (same process,
	// same epoch) ends only when a probe is answered again, so probes
	// that skipped fenced brokers would keep it fenced for good.
	fenced := g.ProbesSilent.Load()
	waitFor(t, 20*time.Second, "the fenced broker still probed", func() bool { return g.ProbesSilent.Load() >= fenced+2 })
}
