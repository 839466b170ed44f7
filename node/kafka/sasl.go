package kafka

import (
	"errors"
	"slices"
	"time"

	"github.com/sluice-log/sluice/node/sasl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SASL is the authentication of a SASL_PLAINTEXT or SASL_SSL listener
// (ServeListenerSecure). Read-only once serving.
type SASL struct {
	// Mechanisms are the enabled mechanisms (sasl.enabled.mechanisms):
	// PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER. A handshake
	// naming another is answered UNSUPPORTED_SASL_MECHANISM with this
	// list.
	Mechanisms []string
	// Plain are PLAIN's users and passwords (the listener's JAAS
	// user_<name> options).
	Plain sasl.Plain
	// Scram finds the SCRAM credential of a user for a mechanism (the
	// metadata image's); nil knows none. Called from connection
	// goroutines concurrently.
	Scram func(mechanism, user string) (sasl.Credential, bool)
	// OAuth validates OAUTHBEARER's bearer tokens (KIP-255, KIP-768);
	// nil refuses every token. The principal is User:<subject>.
	OAuth *sasl.OAuthValidator
	// ReauthAfter is connections.max.reauth.ms (KIP-368): an
	// authenticated session lasts this long (SaslAuthenticate v1+ tells
	// the client), after which the connection must re-authenticate
	// (SaslHandshake and SaslAuthenticate again, same mechanism and
	// principal) before any other request, or is closed. Zero: sessions
	// last as long as their connection, but an OAUTHBEARER session
	// always ends when its token expires (the shorter of the two when
	// both are set, as Kafka's SaslServerAuthenticator).
	ReauthAfter time.Duration
}

// saslMaxReceive is Kafka's sasl.server.max.receive.size: the largest
// frame a connection may send before it is authenticated.
const saslMaxReceive = 512 << 10

// DefaultFailedAuthenticationDelay is Kafka's
// connection.failed.authentication.delay.ms.
const DefaultFailedAuthenticationDelay = 100 * time.Millisecond

// saslStage is where an unauthenticated connection is in the exchange.
type saslStage int

const (
	// stageHandshake: ApiVersions and SaslHandshake are served.
	stageHandshake saslStage = iota
	// stageAuthenticate: SaslAuthenticate only, until the mechanism is done.
	stageAuthenticate
)

// saslConn is the SASL state of one connection; only its serve goroutine
// touches it. conn.authed is set once the exchange succeeded.
type saslConn struct {
	cfg       *SASL
	stage     saslStage
	mechanism string
	scram     *sasl.ScramServer
	oauth     *sasl.OAuthServer
	// principal is "User:<name>" once authenticated.
	principal string
	// expiry is when the session ends (ReauthAfter, an OAUTHBEARER
	// token's expiry); zero: never.
	// reauth is set from a re-authentication's SaslHandshake until its
	// SaslAuthenticate completes.
	expiry time.Time
	reauth bool
}

// answerAuthenticated guards the requests of an authenticated SASL
// connection (KIP-368): after the session's expiry only a SaslHandshake
// that starts a re-authentication is served, anything else closes the
// connection; during a re-authentication, the exchange. It reports
// whether the request was handled here, and if so whether the
// connection stays open.
func (c *conn) answerAuthenticated(r *request) (handled, ok bool) {
	a := c.sasl
	if a.reauth {
		return true, c.answerSASL(r)
	}
	if a.expiry.IsZero() || kmsg.Key(r.key) != kmsg.SASLHandshake && r.readAt.Before(a.expiry) {
		return false, true
	}
	if kmsg.Key(r.key) != kmsg.SASLHandshake {
		c.s.refused.expired.Add(1)
		c.log.Info("kafka: closing connection: SASL session expired without re-authentication (connections.max.reauth.ms or the OAUTHBEARER token's expiry)",
			"listener", c.listener, "principal", a.principal, "api", kmsg.NameForKey(r.key))
		return true, false
	}
	req := r.body.(*kmsg.SASLHandshakeRequest)
	if req.Mechanism != a.mechanism {
		resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		resp.SupportedMechanisms = []string{a.mechanism}
		return true, c.refuseSASL(r, resp, "re-authentication with another mechanism", "mechanism", req.Mechanism, "original", a.mechanism)
	}
	a.reauth, a.stage = true, stageHandshake
	return true, c.answerSASL(r)
}

// answerSASL answers a request of a connection that has not
// authenticated yet, as Kafka's SaslServerAuthenticator does:
//
//   - before the handshake, ApiVersions is answered and SaslHandshake
//     picks the mechanism (UNSUPPORTED_SASL_MECHANISM with the enabled
//     list, then close, if it is not enabled); any other request closes
//     the connection unanswered.
//   - after it, SaslAuthenticate steps the mechanism: its next token, or
//     SASL_AUTHENTICATION_FAILED then close; ApiVersions or SaslHandshake
//     is answered ILLEGAL_SASL_STATE then close; any other request closes
//     the connection unanswered (Kafka answers it with the API's error
//     response first).
//
// A refusal waits Options.FailedAuthenticationDelay before its answer
// and the close (connection.failed.authentication.delay.ms), so a
// password guesser gets one try per delay per connection. It returns
// false when the connection must close (after the queued answers).
func (c *conn) answerSASL(r *request) bool {
	a := c.sasl
	key := kmsg.Key(r.key)
	switch {
	case a.stage == stageHandshake && key == kmsg.ApiVersions:
		return c.answerWith(r, r.api.handle)
	case a.stage == stageHandshake && key == kmsg.SASLHandshake:
		req := r.body.(*kmsg.SASLHandshakeRequest)
		resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
		resp.SupportedMechanisms = slices.Clone(a.cfg.Mechanisms)
		if !slices.Contains(a.cfg.Mechanisms, req.Mechanism) {
			resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
			return c.refuseSASL(r, resp, "unsupported mechanism", "mechanism", req.Mechanism, "enabled", a.cfg.Mechanisms)
		}
		a.mechanism, a.scram, a.oauth = req.Mechanism, nil, nil
		if req.Mechanism == sasl.MechanismOAuthBearer {
			v := a.cfg.OAuth
			if v == nil {
				v = &sasl.OAuthValidator{Keys: sasl.KeysFunc(func(string, string) (any, error) { return nil, errors.New("no OAUTHBEARER validator on this listener") })}
			}
			a.oauth = sasl.NewOAuthServer(v, time.Now)
		}
		if m, err := sasl.Scram(req.Mechanism); err == nil {
			a.scram = sasl.NewScramServer(m, func(user string) (sasl.Credential, bool) {
				if a.cfg.Scram == nil {
					return sasl.Credential{}, false
				}
				return a.cfg.Scram(m.Name, user)
			}, c.s.scramSecret[:])
		}
		a.stage = stageAuthenticate
		return c.reply(r, resp)
	case a.stage == stageAuthenticate && key == kmsg.SASLAuthenticate:
		return c.authenticate(r)
	case a.stage == stageAuthenticate && key == kmsg.SASLHandshake:
		resp := r.body.(*kmsg.SASLHandshakeRequest).ResponseKind().(*kmsg.SASLHandshakeResponse)
		resp.ErrorCode = kerr.IllegalSaslState.Code
		resp.SupportedMechanisms = slices.Clone(a.cfg.Mechanisms)
		return c.refuseSASL(r, resp, "SaslHandshake during SASL authentication")
	case a.stage == stageAuthenticate && key == kmsg.ApiVersions:
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.Version = 0
		if r.body != nil {
			resp.Version = r.version
		}
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return c.refuseSASL(r, resp, "ApiVersions during SASL authentication")
	}
	return c.refuseSASL(r, nil, "request before SASL authentication")
}

// authenticate steps the connection's mechanism with one SaslAuthenticate.
func (c *conn) authenticate(r *request) bool {
	a := c.sasl
	req := r.body.(*kmsg.SASLAuthenticateRequest)
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	var (
		user string
		done bool
		err  error
	)
	switch {
	case a.oauth != nil:
		resp.SASLAuthBytes, done, err = a.oauth.Step(req.SASLAuthBytes)
		user = a.oauth.Token().Principal
	case a.scram != nil:
		resp.SASLAuthBytes, done, err = a.scram.Step(req.SASLAuthBytes)
		user = a.scram.User()
	default:
		user, err = a.cfg.Plain.Check(req.SASLAuthBytes)
		done = err == nil
	}
	if err != nil {
		resp.SASLAuthBytes = nil
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := "Authentication failed during authentication due to invalid credentials with SASL mechanism " + a.mechanism
		switch {
		case a.oauth != nil && errors.Is(err, sasl.ErrInvalidToken):
			msg = `{"status":"invalid_token"}` // Kafka's words: RFC 7628's status
		case a.scram == nil && a.oauth == nil && !errors.Is(err, sasl.ErrBadMessage):
			msg = "Authentication failed: Invalid username or password"
		}
		resp.ErrorMessage = &msg
		return c.refuseSASL(r, resp, "authentication failed", "mechanism", a.mechanism, "user", user, "err", err)
	}
	if resp.SASLAuthBytes == nil {
		resp.SASLAuthBytes = []byte{}
	}
	if done {
		principal := "User:" + user
		if a.reauth && principal != a.principal {
			resp.SASLAuthBytes, resp.ErrorCode = nil, kerr.SaslAuthenticationFailed.Code
			resp.ErrorMessage = kmsg.StringPtr("Cannot change principals during re-authentication")
			return c.refuseSASL(r, resp, "re-authentication as another principal", "principal", principal, "original", a.principal)
		}
		a.principal, a.reauth = principal, false
		now := time.Now()
		a.expiry = time.Time{}
		if d := a.cfg.ReauthAfter; d > 0 {
			a.expiry = now.Add(d)
		}
		if a.oauth != nil {
			if exp := a.oauth.Token().Expiry; a.expiry.IsZero() || exp.Before(a.expiry) {
				a.expiry = exp
			}
		}
		if !a.expiry.IsZero() {
			// Ignored below v1, still enforced. A token already expired
			// within the clock skew gets 0: re-authenticate at once.
			resp.SessionLifetimeMillis = max(a.expiry.Sub(now).Milliseconds(), 0)
		}
		c.authed.Store(true)
		c.s.countAuth(c.listener, true)
		c.log.Debug("kafka: SASL authenticated", "listener", c.listener, "mechanism", a.mechanism, "principal", a.principal)
	}
	return c.reply(r, resp)
}

// refuseSASL logs and counts a failed authentication, waits the failed
// authentication delay, answers resp (none if nil) and reports that the
// connection must close.
func (c *conn) refuseSASL(r *request, resp kmsg.Response, why string, attrs ...any) bool {
	c.s.countAuth(c.listener, false)
	attrs = append([]any{"listener", c.listener, "api", kmsg.NameForKey(r.key), "client_id", derefOr(r.clientID, "")}, attrs...)
	c.log.Info("kafka: closing connection: "+why, attrs...)
	if d := c.s.opts.FailedAuthenticationDelay; d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-c.ctx.Done():
			t.Stop()
		}
	}
	if resp != nil {
		c.reply(r, resp)
	}
	return false
}

// countAuth counts one SASL authentication of a connection to listener.
func (s *Server) countAuth(listener string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := &s.refused.saslFailedBy
	if ok {
		m = &s.refused.saslOKBy
	}
	if *m == nil {
		*m = map[string]int64{}
	}
	(*m)[listener]++
}
