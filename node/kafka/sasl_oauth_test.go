package kafka

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/oauth"

	"github.com/sluice-log/sluice/node/sasl"
	"github.com/sluice-log/sluice/node/tlstest"
)

// oauthSASL serves OAUTHBEARER (and PLAIN) with tokens of iss, audience kafka.
func oauthSASL(t *testing.T, iss *tlstest.Issuer) *SASL {
	t.Helper()
	set, err := sasl.ParseJWKS(tlstest.JWKS(iss))
	if err != nil {
		t.Fatal(err)
	}
	cfg := testSASL(t)
	cfg.Mechanisms = append(cfg.Mechanisms, sasl.MechanismOAuthBearer)
	cfg.OAuth = &sasl.OAuthValidator{Keys: set, Audience: []string{"kafka"}, Issuer: iss.Name, ClockSkew: time.Second}
	return cfg
}

// TestSASLOAuthBearer: franz-go's OAUTHBEARER client is served with a
// valid token (principal User:<sub>, session lifetime = the token's
// remaining life); an expired token, a wrong audience and a signature by
// another key are refused with SASL_AUTHENTICATION_FAILED after RFC
// 7628's status, each logged with the reason.
func TestSASLOAuthBearer(t *testing.T) {
	iss, err := tlstest.NewIssuer("k1", "ES256")
	if err != nil {
		t.Fatal(err)
	}
	ts := startSASLServer(t, Options{}, oauthSASL(t, iss))
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	token := func(sub, aud string, ttl time.Duration) string {
		tok, err := iss.Token(sub, aud, ttl)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	cl := newClient(t, ts, kgo.SASL(oauth.Auth{Token: token("alice", "kafka", time.Hour)}.AsMechanism()))
	if err := cl.Ping(ctx); err != nil {
		t.Fatalf("a valid token: %v", err)
	}

	forger, _ := tlstest.NewIssuer("k1", "ES256") // same kid, another key
	forged, _ := forger.Token("alice", "kafka", time.Hour)
	for name, tc := range map[string]struct{ tok, log string }{
		"expired":         {token("alice", "kafka", -time.Minute), "expired at"},
		"wrong audience":  {token("alice", "elsewhere", time.Hour), "expected.audience"},
		"wrong signature": {forged, "verification error"},
	} {
		cl := newClient(t, ts, kgo.SASL(oauth.Auth{Token: tc.tok}.AsMechanism()), kgo.RetryTimeout(0), kgo.RequestRetries(0))
		if err := cl.Ping(ctx); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Errorf("%s: %v, want SASL_AUTHENTICATION_FAILED", name, err)
		}
		ts.logs.waitFor(t, tc.log)
	}

	// By hand: the status first, then the failure; the session lifetime
	// is the token's.
	c := dial(t, ts.addr)
	c.handshake("OAUTHBEARER")
	r := c.authenticate("n,,\x01auth=Bearer " + token("bob", "kafka", 90*time.Second) + "\x01\x01")
	if r.ErrorCode != 0 || r.SessionLifetimeMillis < 80_000 || r.SessionLifetimeMillis > 90_000 {
		t.Fatalf("valid token: %+v", r)
	}
	ts.logs.waitFor(t, "SASL authenticated", "mechanism=OAUTHBEARER", "principal=User:bob")
	c = dial(t, ts.addr)
	c.handshake("OAUTHBEARER")
	r = c.authenticate("n,,\x01auth=Bearer " + token("bob", "elsewhere", time.Minute) + "\x01\x01")
	if r.ErrorCode != 0 || string(r.SASLAuthBytes) != `{"status":"invalid_token"}` {
		t.Fatalf("invalid token, first answer: %+v", r)
	}
	if r := c.authenticate("\x01"); r.ErrorCode != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("invalid token, second answer: %+v", r)
	}
	c.expectClosed()
}

// TestSASLOAuthBearerReauth: the session ends when the token expires
// (KIP-368 with connections.max.reauth.ms unset): franz-go asks its
// callback for a new token and re-authenticates on the connection, and
// goes on being served; a connection that does not is closed.
func TestSASLOAuthBearerReauth(t *testing.T) {
	iss, err := tlstest.NewIssuer("k1", "RS256")
	if err != nil {
		t.Fatal(err)
	}
	cfg := oauthSASL(t, iss)
	cfg.OAuth.ClockSkew = 0
	ts := startSASLServer(t, Options{}, cfg)
	var calls atomic.Int32
	cl := newClient(t, ts, kgo.SASL(oauth.Oauth(func(context.Context) (oauth.Auth, error) {
		calls.Add(1)
		tok, err := iss.Token("alice", "kafka", 3*time.Second)
		return oauth.Auth{Token: tok}, err
	})))
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for ts.ConnStats().SASLAuthenticatedBy["SASL"] < 3 {
		if err := cl.Ping(ctx); err != nil {
			t.Fatalf("ping across token expiries: %v", err)
		}
		<-tick.C
	}
	if calls.Load() < 3 {
		t.Fatalf("token callback called %d times for 3 authentications", calls.Load())
	}
	for _, l := range ts.logs.snapshot() {
		if strings.Contains(l, "session expired") {
			t.Fatalf("franz-go's session expired: %s", l)
		}
	}
	// A connection that keeps its expired token is closed.
	c := dial(t, ts.addr)
	c.handshake("OAUTHBEARER")
	tok, _ := iss.Token("alice", "kafka", 1*time.Second)
	if r := c.authenticate("n,,\x01auth=Bearer " + tok + "\x01\x01"); r.ErrorCode != 0 || r.SessionLifetimeMillis > 1000 {
		t.Fatalf("%+v", r)
	}
	meta := kmsg.NewPtrMetadataRequest()
	meta.Version = 12
	deadline := time.Now().Add(testTimeout)
	for time.Now().Before(deadline) { // served until the token's expiry, then closed
		if !c.tryRoundTrip(meta) {
			break
		}
		<-tick.C
	}
	ts.logs.waitFor(t, "SASL session expired without re-authentication")
}

// tryRoundTrip sends req and reports whether a response came back (false:
// the connection was closed).
func (c *wireClient) tryRoundTrip(req kmsg.Request) bool {
	c.t.Helper()
	b, _ := c.encode(req)
	if _, err := c.nc.Write(b); err != nil {
		return false
	}
	var prefix [4]byte
	if _, err := io.ReadFull(c.nc, prefix[:]); err != nil {
		if isTimeout(err) {
			c.t.Fatalf("no response and no close in %v", testTimeout)
		}
		return false
	}
	_, err := io.ReadFull(c.nc, make([]byte, binary.BigEndian.Uint32(prefix[:])))
	return err == nil
}
