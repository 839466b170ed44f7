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
