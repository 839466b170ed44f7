package kafka

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sluice-log/sluice/node/sasl"
)

// testSASL enables every mechanism: PLAIN user alice, SCRAM user bob
// (both mechanisms).
func testSASL(t *testing.T) *SASL {
	t.Helper()
	creds := map[string]sasl.Credential{}
	for _, name := range []string{sasl.MechanismScramSHA256, sasl.MechanismScramSHA512} {
		m, _ := sasl.Scram(name)
		c, err := m.NewCredential("bob-secret", nil, 4096)
		if err != nil {
			t.Fatal(err)
		}
		creds[name] = c
	}
	return &SASL{
		Mechanisms: []string{sasl.MechanismPlain, sasl.MechanismScramSHA256, sasl.MechanismScramSHA512},
		Plain:      sasl.Plain{"alice": "alice-secret"},
		Scram: func(mech, user string) (sasl.Credential, bool) {
			c, ok := creds[mech]
			return c, ok && user == "bob"
		},
	}
}

// startSASLServer serves a SASL_PLAINTEXT listener with the fake broker.
func startSASLServer(t *testing.T, opts Options, cfg *SASL) *testServer {
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
	served := make(chan error, 1)
	go func() { served <- ts.ServeListenerSecure("SASL", ln, Security{SASL: cfg}) }()
	t.Cleanup(func() {
		_ = ts.Close()
		if err := <-served; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
	})
	return ts
}

// TestSASLClients: franz-go authenticates with PLAIN, SCRAM-SHA-256 and
// SCRAM-SHA-512 and is served; wrong passwords and unknown users are
// refused with SASL_AUTHENTICATION_FAILED, counted per listener.
func TestSASLClients(t *testing.T) {
	ts := startSASLServer(t, Options{}, testSASL(t))
	ping := func(m kgo.Opt) error {
		cl := newClient(t, ts, m, kgo.RetryTimeout(0), kgo.RequestRetries(0))
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		return cl.Ping(ctx)
	}
	good := map[string]kgo.Opt{
		"PLAIN":         kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()),
		"SCRAM-SHA-256": kgo.SASL(scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha256Mechanism()),
		"SCRAM-SHA-512": kgo.SASL(scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha512Mechanism()),
	}
	for name, opt := range good {
		if err := ping(opt); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if q := ts.broker.lastQuery(); q.Listener != "SASL" {
		t.Fatalf("Metadata for listener %q", q.Listener)
	}
	bad := map[string]kgo.Opt{
		"PLAIN wrong password":   kgo.SASL(plain.Auth{User: "alice", Pass: "nope"}.AsMechanism()),
		"PLAIN unknown user":     kgo.SASL(plain.Auth{User: "mallory", Pass: "alice-secret"}.AsMechanism()),
		"SCRAM wrong password":   kgo.SASL(scram.Auth{User: "bob", Pass: "nope"}.AsSha256Mechanism()),
		"SCRAM unknown user":     kgo.SASL(scram.Auth{User: "mallory", Pass: "bob-secret"}.AsSha512Mechanism()),
		"SCRAM PLAIN's user":     kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism()),
		"PLAIN with SCRAM's one": kgo.SASL(plain.Auth{User: "bob", Pass: "bob-secret"}.AsMechanism()),
	}
	for name, opt := range bad {
		err := ping(opt)
		if !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Errorf("%s: %v, want SASL_AUTHENTICATION_FAILED", name, err)
		}
	}
	waitStats(t, ts, "the authentications to be counted", func(st ConnStats) bool {
		return st.SASLAuthenticatedBy["SASL"] >= 3 && st.SASLFailedBy["SASL"] >= int64(len(bad))
	})
	if ts.broker.queryCount() > 3*2 { // kgo pings with one Metadata, plus maybe a refresh
		t.Fatalf("%d Metadata requests served: a refused client was served", ts.broker.queryCount())
	}
}

// saslExchange drives the handshake and a PLAIN authentication by hand.
func (c *wireClient) handshake(mech string) *kmsg.SASLHandshakeResponse {
	c.t.Helper()
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.Version, req.Mechanism = 1, mech
	return c.roundTrip(req).(*kmsg.SASLHandshakeResponse)
}

func (c *wireClient) authenticate(token string) *kmsg.SASLAuthenticateResponse {
	c.t.Helper()
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.Version, req.SASLAuthBytes = 2, []byte(token)
	return c.roundTrip(req).(*kmsg.SASLAuthenticateResponse)
}

// TestSASLRefusals: each wrong step gets Kafka's answer (or none) and a
// closed connection, and nothing is served.
func TestSASLRefusals(t *testing.T) {
	ts := startSASLServer(t, Options{}, testSASL(t))
	meta := kmsg.NewPtrMetadataRequest()
	meta.Version = 12

	// A request before authentication: closed, unanswered.
	c := dial(t, ts.addr)
	c.send(meta)
	c.expectClosed()
	ts.logs.waitFor(t, "request before SASL authentication", "api=Metadata")

	// An unsupported mechanism: the enabled list, then closed.
	c = dial(t, ts.addr)
	c.apiVersions()
	hs := c.handshake("GSSAPI")
	if hs.ErrorCode != kerr.UnsupportedSaslMechanism.Code || strings.Join(hs.SupportedMechanisms, ",") != "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512" {
		t.Fatalf("GSSAPI: %+v", hs)
	}
	c.expectClosed()

	// A wrong password: SASL_AUTHENTICATION_FAILED with a message that
	// says nothing of the user, then closed; the Metadata pipelined
	// behind it is not served.
	c = dial(t, ts.addr)
	if hs := c.handshake("PLAIN"); hs.ErrorCode != 0 {
		t.Fatalf("PLAIN handshake: %+v", hs)
	}
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.Version, auth.SASLAuthBytes = 2, []byte("\x00alice\x00nope")
	corr := c.send(auth)
	c.send(meta)
	resp := c.recv(auth, corr, 2).(*kmsg.SASLAuthenticateResponse)
	if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil || *resp.ErrorMessage != "Authentication failed: Invalid username or password" {
		t.Fatalf("wrong password: %+v", resp)
	}
	c.expectClosed()

	// ApiVersions or a second handshake after the handshake: ILLEGAL_SASL_STATE.
	c = dial(t, ts.addr)
	c.handshake("SCRAM-SHA-256")
	if hs := c.handshake("PLAIN"); hs.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("second handshake: %+v", hs)
	}
	c.expectClosed()

	// A SCRAM exchange cut short by garbage: refused.
	c = dial(t, ts.addr)
	c.handshake("SCRAM-SHA-512")
	if r := c.authenticate("not scram"); r.ErrorCode != kerr.SaslAuthenticationFailed.Code ||
		*r.ErrorMessage != "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512" {
		t.Fatalf("garbage: %+v", r)
	}
	c.expectClosed()

	// SaslHandshake v0 (dropped by Kafka 4, KIP-896): closed.
	c = dial(t, ts.addr)
	v0 := kmsg.NewPtrSASLHandshakeRequest()
	v0.Mechanism = "PLAIN"
	c.send(v0)
	c.expectClosed()

	// A frame over sasl.server.max.receive.size before authentication.
	c = dial(t, ts.addr)
	c.write([]byte{0, 0x08, 0, 1}) // 512 KiB + 1
	c.expectClosed()

	// Authenticated: served; a handshake now is ILLEGAL_SASL_STATE and
	// the connection stays.
	c = dial(t, ts.addr)
	c.handshake("PLAIN")
	if r := c.authenticate("\x00alice\x00alice-secret"); r.ErrorCode != 0 {
		t.Fatalf("alice: %+v", r)
	}
	if hs := c.handshake("PLAIN"); hs.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("handshake after authentication: %+v", hs)
	}
	if r := c.roundTrip(meta).(*kmsg.MetadataResponse); len(r.Brokers) == 0 {
		t.Fatalf("metadata after authentication: %+v", r)
	}
	if n := ts.broker.queryCount(); n != 1 {
		t.Fatalf("%d Metadata requests served, want the authenticated one only", n)
	}
}

// TestSASLHandshakeOnPlaintext: a listener without SASL answers
// SaslHandshake ILLEGAL_SASL_STATE, and ApiVersions lists SaslHandshake
// from v0 (librdkafka's sake) and SaslAuthenticate 0-2.
func TestSASLHandshakeOnPlaintext(t *testing.T) {
	ts := startServer(t, Options{})
	c := dial(t, ts.addr)
	avReq := kmsg.NewPtrApiVersionsRequest()
	avReq.SetVersion(3)
	avReq.ClientSoftwareName, avReq.ClientSoftwareVersion = "sasl-test", "1"
	av := c.roundTrip(avReq).(*kmsg.ApiVersionsResponse)
	var hs, au *kmsg.ApiVersionsResponseApiKey
	for i, k := range av.ApiKeys {
		switch k.ApiKey {
		case kmsg.SASLHandshake.Int16():
			hs = &av.ApiKeys[i]
		case kmsg.SASLAuthenticate.Int16():
			au = &av.ApiKeys[i]
		}
	}
	if hs == nil || hs.MinVersion != 0 || hs.MaxVersion != 1 || au == nil || au.MinVersion != 0 || au.MaxVersion != 2 {
		t.Fatalf("ApiVersions: SaslHandshake %+v, SaslAuthenticate %+v", hs, au)
	}
	if r := c.handshake("PLAIN"); r.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("handshake on PLAINTEXT: %+v", r)
	}
	c.apiVersions() // still open
}

func (f *fakeBroker) queryCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.queries)
}

// TestSASLReauthentication (KIP-368): with a session lifetime, franz-go
// re-authenticates on its connection and goes on being served; a
// connection that lets its session expire is closed at its next
// request; a re-authentication may not change the mechanism or the
// principal; the replica fetcher's ClientConn re-authenticates by itself.
func TestSASLReauthentication(t *testing.T) {
	cfg := testSASL(t)
	cfg.Plain["carol"] = "carol-secret"
	cfg.ReauthAfter = 2 * time.Second
	ts := startSASLServer(t, Options{}, cfg)

	cl := newClient(t, ts, kgo.SASL(scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha256Mechanism()))
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for ts.ConnStats().SASLAuthenticatedBy["SASL"] < 3 { // first authentication, two re-authentications
		if err := cl.Ping(ctx); err != nil {
			t.Fatalf("ping across re-authentications: %v", err)
		}
		<-tick.C
	}
	for _, l := range ts.logs.snapshot() {
		if strings.Contains(l, "session expired") {
			t.Fatalf("franz-go's session expired: %s", l)
		}
	}

	// By hand: the lifetime is answered (v1+), and enforced.
	short := testSASL(t)
	short.Plain["carol"] = "carol-secret"
	short.ReauthAfter = 300 * time.Millisecond
	ts = startSASLServer(t, Options{}, short)
	c := dial(t, ts.addr)
	c.handshake("PLAIN")
	r := c.authenticate("\x00alice\x00alice-secret")
	if r.ErrorCode != 0 || r.SessionLifetimeMillis != 300 {
		t.Fatalf("authenticate v2: %+v", r)
	}
	meta := kmsg.NewPtrMetadataRequest()
	meta.Version = 12
	c.roundTrip(meta)
	<-time.After(400 * time.Millisecond) // past the session's end: the condition under test
	c.send(meta)
	c.expectClosed()
	ts.logs.waitFor(t, "SASL session expired without re-authentication")
	if st := ts.ConnStats(); st.ExpiredClosed != 1 {
		t.Fatalf("expired sessions closed: %d, want 1", st.ExpiredClosed)
	}

	// Re-authentication as another principal, or with another mechanism: refused.
	for _, tc := range []struct{ mech, token, why string }{
		{"PLAIN", "\x00carol\x00carol-secret", "Cannot change principals during re-authentication"},
		{"SCRAM-SHA-256", "", ""},
	} {
		c := dial(t, ts.addr)
		c.handshake("PLAIN")
		c.authenticate("\x00alice\x00alice-secret")
		hs := c.handshake(tc.mech)
		if tc.token == "" {
			if hs.ErrorCode != kerr.UnsupportedSaslMechanism.Code {
				t.Fatalf("re-authentication with %s: %+v", tc.mech, hs)
			}
			c.expectClosed()
			continue
		}
		if r := c.authenticate(tc.token); r.ErrorCode != kerr.SaslAuthenticationFailed.Code || *r.ErrorMessage != tc.why {
			t.Fatalf("re-authentication as carol: %+v", r)
		}
		c.expectClosed()
	}

	// The broker-side client re-authenticates before a request past
	// nine tenths of the lifetime, on the same connection.
	cc, err := Dial(ts.addr, testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	if err := cc.Authenticate(ClientSASL{Mechanism: "SCRAM-SHA-512", User: "bob", Password: "bob-secret"}, testTimeout); err != nil {
		t.Fatal(err)
	}
	before := ts.ConnStats().SASLAuthenticatedBy["SASL"]
	<-time.After(400 * time.Millisecond)
	if err := cc.RoundTrip(meta, kmsg.NewPtrMetadataResponse(), testTimeout); err != nil {
		t.Fatalf("request after the lifetime: %v", err)
	}
	if got := ts.ConnStats().SASLAuthenticatedBy["SASL"]; got != before+1 {
		t.Fatalf("authentications %d, want %d: the client did not re-authenticate", got, before+1)
	}
}

// snapshot returns the log lines so far.
func (l *logSink) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}
