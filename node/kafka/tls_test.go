package kafka

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/node/tlstest"
)

// tlsPKI is a CA, the server's certificate (127.0.0.1) and a client's.
type tlsPKI struct {
	ca             *tlstest.CA
	server, client tlstest.Cert
}

func newPKI(t *testing.T) tlsPKI {
	t.Helper()
	ca, err := tlstest.NewCA("test CA")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ca.Issue("broker", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	cl, err := ca.Issue("client")
	if err != nil {
		t.Fatal(err)
	}
	return tlsPKI{ca: ca, server: srv, client: cl}
}

// startTLSServer serves an SSL listener with the fake broker: the PKI's
// server certificate, and its CA for clients with clientAuth.
func startTLSServer(t *testing.T, opts Options, pki tlsPKI, clientAuth tls.ClientAuthType) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{addr: ln.Addr().String(), logs: newLogSink()}
	ts.broker = newFakeBroker(ts.addr)
	opts.Logger = slog.New(ts.logs)
	if ts.Server, err = NewServer(ts.broker, opts); err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{pki.server.TLS()}, ClientAuth: clientAuth, ClientCAs: pki.ca.Pool()}
	served := make(chan error, 1)
	go func() { served <- ts.ServeListenerTLS("SSL", ln, cfg) }()
	t.Cleanup(func() {
		if err := ts.Close(); err != nil {
			t.Error(err)
		}
		if err := <-served; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
	})
	return ts
}

// dialTLS is dial over TLS with cfg (the handshake happens at the first
// read or write).
func dialTLS(t *testing.T, addr string, cfg *tls.Config) *wireClient {
	t.Helper()
	c := dial(t, addr)
	c.nc = tls.Client(c.nc, cfg)
	return c
}

// TestTLSListener: a real client (kgo with DialTLSConfig) and a hand-made
// one speak Kafka over TLS on an SSL listener; the Metadata query names
// the listener.
func TestTLSListener(t *testing.T) {
	pki := newPKI(t)
	ts := startTLSServer(t, Options{}, pki, tls.NoClientCert)
	dialTLS(t, ts.addr, &tls.Config{RootCAs: pki.ca.Pool(), ServerName: "127.0.0.1"}).apiVersions()

	cl := newClient(t, ts, kgo.DialTLSConfig(&tls.Config{RootCAs: pki.ca.Pool()}))
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := cl.Ping(ctx); err != nil {
		t.Fatalf("kgo over TLS: %v", err)
	}
	if q := ts.broker.lastQuery(); q.Listener != "SSL" {
		t.Fatalf("Metadata asked for listener %q, want SSL", q.Listener)
	}
	if st := ts.ConnStats(); st.HandshakeFailed != 0 {
		t.Fatalf("handshake failures %d, want 0", st.HandshakeFailed)
	}
}

// TestPlaintextClientOnTLSListener: a client speaking plaintext Kafka to
// an SSL listener has its connection closed, with a log line saying why;
// the connection goes away (no goroutine kept) and a TLS client is served
// after it.
func TestPlaintextClientOnTLSListener(t *testing.T) {
	pki := newPKI(t)
	ts := startTLSServer(t, Options{}, pki, tls.NoClientCert)
	c := dial(t, ts.addr)
	c.send(kmsg.NewPtrApiVersionsRequest())
	c.expectClosed()
	ts.logs.waitFor(t, "TLS handshake failed", "plaintext client", "listener=SSL")
	waitStats(t, ts, "the plaintext connection to be closed and counted", func(st ConnStats) bool { return st.Open == 0 && st.HandshakeFailed == 1 })
	dialTLS(t, ts.addr, &tls.Config{RootCAs: pki.ca.Pool(), ServerName: "127.0.0.1"}).apiVersions()
}

// TestTLSHandshakeTimeout: a client that connects and sends nothing is
// closed after HandshakeTimeout; one that closes at once (the
// controller's liveness probe) is neither logged nor counted.
func TestTLSHandshakeTimeout(t *testing.T) {
	pki := newPKI(t)
	ts := startTLSServer(t, Options{HandshakeTimeout: 200 * time.Millisecond}, pki, tls.NoClientCert)
	probe, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = probe.Close()
	waitStats(t, ts, "the probe to be forgotten", func(st ConnStats) bool { return st.Open == 0 })
	if st := ts.ConnStats(); st.HandshakeFailed != 0 {
		t.Fatalf("a probe counted as a failed handshake: %+v", st)
	}
	start := time.Now()
	dial(t, ts.addr).expectClosed()
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Fatalf("closed after %v, before the handshake timeout", d)
	}
	ts.logs.waitFor(t, "TLS handshake failed", "no TLS handshake within 200ms")
	waitStats(t, ts, "the silent connection to be counted", func(st ConnStats) bool { return st.Open == 0 && st.HandshakeFailed == 1 })
}

// TestTLSClientAuthRequired: with ssl.client.auth=required, a client
// without a certificate, or with one from another CA, is refused; one
// with a certificate from the truststore's CA is served.
func TestTLSClientAuthRequired(t *testing.T) {
	pki := newPKI(t)
	ts := startTLSServer(t, Options{}, pki, tls.RequireAndVerifyClientCert)
	other, err := tlstest.NewCA("another CA")
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := other.Issue("stranger")
	if err != nil {
		t.Fatal(err)
	}
	for i, certs := range [][]tls.Certificate{nil, {stranger.TLS()}} {
		c := dialTLS(t, ts.addr, &tls.Config{RootCAs: pki.ca.Pool(), ServerName: "127.0.0.1", Certificates: certs})
		// TLS 1.3: the client's handshake completes before the server
		// checks its certificate; the refusal arrives at the first read.
		b, _ := c.encode(kmsg.NewPtrApiVersionsRequest())
		_, _ = c.nc.Write(b)
		var one [1]byte
		if n, err := c.nc.Read(one[:]); n > 0 || err == nil || isTimeout(err) {
			t.Fatalf("client %d: read %d bytes, err %v: want the connection refused", i, n, err)
		}
		waitStats(t, ts, "the refusal to be counted", func(st ConnStats) bool { return st.HandshakeFailed == int64(i+1) })
	}
	ts.logs.waitFor(t, "TLS handshake failed", "certificate")
	dialTLS(t, ts.addr, &tls.Config{RootCAs: pki.ca.Pool(), ServerName: "127.0.0.1", Certificates: []tls.Certificate{pki.client.TLS()}}).apiVersions()
	// kgo, the same way.
	cl := newClient(t, ts, kgo.DialTLSConfig(&tls.Config{RootCAs: pki.ca.Pool(), Certificates: []tls.Certificate{pki.client.TLS()}}))
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := cl.Ping(ctx); err != nil {
		t.Fatalf("kgo with a client certificate: %v", err)
	}
	if !strings.Contains(ts.broker.lastQuery().Listener, "SSL") {
		t.Fatal("kgo's Metadata did not come through the SSL listener")
	}
}
