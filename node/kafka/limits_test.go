package kafka

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// apiVersions does one ApiVersions round trip on c.
func (c *wireClient) apiVersions() {
	c.t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "limits-test", "1"
	if resp := c.roundTrip(req).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 {
		c.t.Fatalf("ApiVersions: error %d", resp.ErrorCode)
	}
}

// waitStats waits until cond holds on the server's connection counts.
func waitStats(t *testing.T, s *testServer, what string, cond func(ConnStats) bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond(s.ConnStats()) {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: %+v", what, s.ConnStats())
		}
		<-tick.C
	}
}

// TestMaxConnections: with max.connections 3, three connections are
// served; five more are closed at once and counted; the three still
// work, and once one leaves a new one is served.
func TestMaxConnections(t *testing.T) {
	s := startServer(t, Options{MaxConnections: 3})
	var kept []*wireClient
	for range 3 {
		c := dial(t, s.addr)
		c.apiVersions()
		kept = append(kept, c)
	}
	for range 5 {
		dial(t, s.addr).expectClosed()
	}
	if st := s.ConnStats(); st.RefusedMax != 5 || st.Open != 3 {
		t.Fatalf("after 5 over the limit: %+v, want 5 refused and 3 open", st)
	}
	for _, c := range kept {
		c.apiVersions()
	}
	_ = kept[0].nc.Close()
	waitStats(t, s, "the closed connection to be forgotten", func(st ConnStats) bool { return st.Open == 2 })
	dial(t, s.addr).apiVersions()
}

// TestMaxConnectionsPerIP: max.connections.per.ip bounds the connections
// from one address, an override replaces the bound for its address, and
// an override of 0 refuses the address.
func TestMaxConnectionsPerIP(t *testing.T) {
	local := netip.MustParseAddr("127.0.0.1")
	for _, tc := range []struct {
		name      string
		opts      Options
		admitted  int
		wantPerIP int64
	}{
		{"limit", Options{MaxConnectionsPerIP: 2}, 2, 1},
		{"override", Options{MaxConnectionsPerIP: 1, MaxConnectionsPerIPOverrides: map[netip.Addr]int{local: 3}}, 3, 1},
		{"refused address", Options{MaxConnectionsPerIPOverrides: map[netip.Addr]int{local: 0}}, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, tc.opts)
			for range tc.admitted {
				dial(t, s.addr).apiVersions()
			}
			dial(t, s.addr).expectClosed()
			if st := s.ConnStats(); st.RefusedPerIP != tc.wantPerIP || st.RefusedMax != 0 {
				t.Fatalf("%+v, want %d refused per address", st, tc.wantPerIP)
			}
		})
	}
}

// TestIdleConnectionClosed: with connections.max.idle.ms 300, a connection
// that sends nothing is closed (and counted); one with a request waiting
// for its answer longer than that is not, and gets its answer; one that
// keeps sending stays open.
func TestIdleConnectionClosed(t *testing.T) {
	s := startServer(t, Options{ConnectionsMaxIdle: 300 * time.Millisecond})
	entered, release := s.broker.hold()
	defer release()
	waiting := dial(t, s.addr)
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(9)
	corr := waiting.send(req)
	<-entered // its handler holds the request

	busy := dial(t, s.addr)
	busy.apiVersions()
	idle := dial(t, s.addr)
	start := time.Now() // the server's idle clock starts after it read the request
	idle.apiVersions()
	deadline := start.Add(testTimeout)
	for s.ConnStats().IdleClosed == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no connection closed as idle after %v: %+v", testTimeout, s.ConnStats())
		}
		busy.apiVersions() // busy is never idle for long
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Fatalf("idle connection closed after %v, before connections.max.idle.ms", took)
	}
	idle.expectClosed()
	if st := s.ConnStats(); st.IdleClosed != 1 {
		t.Fatalf("%+v, want exactly the idle connection closed", st)
	}
	busy.apiVersions()
	if time.Since(start) < 300*time.Millisecond {
		t.Fatal("the waiting request was not held past the idle timeout")
	}
	release()
	waiting.recv(req, corr, 9)
	waiting.apiVersions()
}

// TestConnStatsByListener: connections and refusals are counted by the
// listener they came in on (the connection metrics' listener label).
func TestConnStatsByListener(t *testing.T) {
	s := startServer(t, Options{MaxConnections: 3})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.ServeListener("EXTERNAL", ln) }()
	ext := ln.Addr().String()
	for _, addr := range []string{s.addr, ext, ext} {
		dial(t, addr).apiVersions()
	}
	dial(t, ext).expectClosed()
	waitStats(t, s, "counts by listener", func(st ConnStats) bool {
		return st.ByListener["EXTERNAL"] == ListenerConns{Open: 2, RefusedMax: 1} && st.ByListener[""] == ListenerConns{Open: 1}
	})
}
