package kafka

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	fsasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// ClientSASL is how a broker authenticates to another broker's SASL
// listener: sasl.mechanism.inter.broker.protocol and the username and
// password of that listener's JAAS configuration.
type ClientSASL struct {
	Mechanism, User, Password string
}

// mechanism is the client side of a, franz-go's.
func (a ClientSASL) mechanism() (fsasl.Mechanism, error) {
	switch a.Mechanism {
	case "PLAIN":
		return plain.Auth{User: a.User, Pass: a.Password}.AsMechanism(), nil
	case "SCRAM-SHA-256":
		return scram.Auth{User: a.User, Pass: a.Password}.AsSha256Mechanism(), nil
	case "SCRAM-SHA-512":
		return scram.Auth{User: a.User, Pass: a.Password}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("SASL mechanism %q is not served", a.Mechanism)
}

// Authenticate runs the SASL exchange on a fresh connection, as Kafka's
// clients do: SaslHandshake v1, then SaslAuthenticate v2 until the
// mechanism is done, each round trip within timeout. When the broker
// answers a session lifetime (connections.max.reauth.ms), RoundTrip
// runs the exchange again on the same connection before the first
// request after nine tenths of it (KIP-368). An error means the
// connection is unusable: close it.
func (c *ClientConn) Authenticate(a ClientSASL, timeout time.Duration) error {
	c.reauthAt = time.Time{}
	start := time.Now()
	m, err := a.mechanism()
	if err != nil {
		return err
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, a.Mechanism
	hsResp := kmsg.NewPtrSASLHandshakeResponse()
	if err := c.RoundTrip(hs, hsResp, timeout); err != nil {
		return fmt.Errorf("SASL handshake: %w", err)
	}
	if err := kerr.ErrorForCode(hsResp.ErrorCode); err != nil {
		return fmt.Errorf("SASL handshake for %s (enabled: %v): %w", a.Mechanism, hsResp.SupportedMechanisms, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	session, msg, err := m.Authenticate(ctx, c.RemoteAddr().String())
	if err != nil {
		return err
	}
	for {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.Version, req.SASLAuthBytes = 2, msg
		resp := kmsg.NewPtrSASLAuthenticateResponse()
		if err := c.RoundTrip(req, resp, timeout); err != nil {
			return fmt.Errorf("SASL authenticate: %w", err)
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return fmt.Errorf("SASL %s as %s: %w: %s", a.Mechanism, a.User, err, derefOr(resp.ErrorMessage, ""))
		}
		done, next, err := session.Challenge(resp.SASLAuthBytes)
		if err != nil {
			return fmt.Errorf("SASL %s: %w", a.Mechanism, err)
		}
		if done {
			if ms := min(resp.SessionLifetimeMillis, 365*24*3600*1000); ms > 0 {
				c.sasl = &a
				c.reauthAt = start.Add(time.Duration(ms) * time.Millisecond * 9 / 10)
			}
			return nil
		}
		msg = next
	}
}
