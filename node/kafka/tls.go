package kafka

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
)

// handshake runs the TLS handshake of a connection to an SSL listener,
// within Options.HandshakeTimeout, and reports whether the connection
// may be served; a plaintext connection passes at once. On failure the
// connection is closed and the reason logged: Kafka's clients see a
// closed connection, as from Kafka's SslTransportLayer. A drain or
// Close ends a handshake in progress (the read deadline, the context).
func (c *conn) handshake() bool {
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		return true
	}
	ctx, cancel := context.WithTimeout(c.ctx, c.s.opts.HandshakeTimeout)
	defer cancel()
	err := tc.HandshakeContext(ctx)
	if err == nil {
		return true
	}
	switch {
	case c.ctx.Err() != nil || c.draining.Load():
		// Closed by the server.
	case errors.Is(err, io.EOF):
		// Closed before a ClientHello: the controller's liveness probe
		// (a TCP connect) or a port scan.
		c.log.Debug("kafka: peer closed before the TLS handshake", "listener", c.listener)
	default:
		c.s.refused.handshake.Add(1)
		c.s.mu.Lock()
		if c.s.refused.handshakeBy == nil {
			c.s.refused.handshakeBy = map[string]int64{}
		}
		c.s.refused.handshakeBy[c.listener]++
		c.s.mu.Unlock()
		if errors.Is(err, context.DeadlineExceeded) {
			err = errors.New("no TLS handshake within " + c.s.opts.HandshakeTimeout.String())
		}
		c.log.Info("kafka: closing connection: TLS handshake failed (a plaintext client on an SSL listener, or a certificate not trusted)", "listener", c.listener, "err", err)
	}
	c.abort()
	return false
}

// mapTLSPrincipal sets the connection's principal from its verified
// client certificate, if any, through mapPrincipal (nil: the
// distinguished name as is). A name no rule maps closes the connection,
// as Kafka's SslPrincipalMapper does (logged). It reports whether the
// connection may be served.
func (c *conn) mapTLSPrincipal(mapPrincipal func(string) (string, error)) bool {
	tc, ok := c.nc.(*tls.Conn)
	if !ok || c.sasl != nil {
		return true
	}
	st := tc.ConnectionState()
	if len(st.PeerCertificates) == 0 {
		return true
	}
	dn := st.PeerCertificates[0].Subject.String()
	name := dn
	if mapPrincipal != nil {
		var err error
		if name, err = mapPrincipal(dn); err != nil {
			c.log.Info("kafka: closing connection: ssl.principal.mapping.rules map no principal from the client certificate", "listener", c.listener, "dn", dn, "err", err)
			c.abort()
			return false
		}
	}
	c.tlsPrincipal = "User:" + name
	return true
}
