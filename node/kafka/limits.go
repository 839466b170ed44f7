package kafka

import (
	"maps"
	"net"
	"net/netip"
	"sync/atomic"
)

// Connection limits, as Kafka's SocketServer applies them:
//
//   - max.connections (Options.MaxConnections): a connection accepted
//     while the server holds that many is closed at once. Kafka's acceptor
//     stops accepting instead, which leaves clients waiting in the
//     listen backlog; closing tells them at once, and the node's other
//     ports (replication, Raft, /healthz) keep their descriptors.
//   - max.connections.per.ip and max.connections.per.ip.overrides: the
//     same per peer address (Kafka closes these too).
//   - connections.max.idle.ms (Options.ConnectionsMaxIdle): a connection
//     that sent nothing for that long while no request of it was waiting
//     is closed by its reader (conn.go).
//
// Idle connections hold no large buffer: the reader gives its read buffer
// back to a server-wide pool when nothing arrived for bufferIdle, and the
// writer takes its write buffer from a pool only while it has responses
// to write. Pools hand their buffers to the garbage collector when unused,
// so memory shrinks after a burst of connections goes.

// refusedCounts counts connections closed at accept, by limit.
type refusedCounts struct {
	total, perIP atomic.Int64
	idle         atomic.Int64 // closed by connections.max.idle.ms
	handshake    atomic.Int64 // TLS handshakes failed
	expired      atomic.Int64 // SASL sessions ended without re-authentication
	// handshakeBy counts them by listener name; Server.mu guards it,
	// and the SASL counts by listener (sasl.go).
	handshakeBy            map[string]int64
	saslFailedBy, saslOKBy map[string]int64
	// byListener counts the refusals and idle closes of each listener;
	// Server.mu guards it.
	byListener map[string]*ListenerConns
}

// listenerCounts is the listener's counts, made on first use; s.mu must be held.
func (s *Server) listenerCounts(name string) *ListenerConns {
	if s.refused.byListener == nil {
		s.refused.byListener = map[string]*ListenerConns{}
	}
	lc := s.refused.byListener[name]
	if lc == nil {
		lc = &ListenerConns{}
		s.refused.byListener[name] = lc
	}
	return lc
}

// ListenerConns is one listener's share of ConnStats.
type ListenerConns struct {
	Open                     int
	RefusedMax, RefusedPerIP int64
	IdleClosed               int64
}

// ConnStats is a snapshot of the server's connections.
type ConnStats struct {
	// Open is the number of open connections.
	Open int
	// RefusedMax and RefusedPerIP count the connections closed at accept
	// by max.connections and by the per-address limits.
	RefusedMax, RefusedPerIP int64
	// IdleClosed counts the connections closed by connections.max.idle.ms.
	IdleClosed int64
	// HandshakeFailed counts the connections to SSL listeners closed
	// because their TLS handshake failed or timed out (Kafka's
	// failed-authentication-total); a peer that closes before sending a
	// byte (a liveness probe) is not counted.
	HandshakeFailed int64
	// HandshakeFailedBy is HandshakeFailed by listener name (a copy).
	HandshakeFailedBy map[string]int64
	// SASLFailedBy counts the connections to SASL listeners refused in
	// the SASL exchange (a wrong password, an unknown user or mechanism,
	// a request before authentication), SASLAuthenticatedBy those that
	// authenticated, by listener name (copies).
	SASLFailedBy, SASLAuthenticatedBy map[string]int64
	// ExpiredClosed counts the connections closed because their SASL
	// session ended without re-authentication (Kafka's
	// expired-connections-killed-count).
	ExpiredClosed int64
	// ByListener is Open, RefusedMax, RefusedPerIP and IdleClosed by
	// listener name (a copy; a listener that never had a connection is
	// missing).
	ByListener map[string]ListenerConns
}

// ConnStats returns the current connection counts.
func (s *Server) ConnStats() ConnStats {
	s.mu.Lock()
	open := len(s.conns)
	var by map[string]int64
	if len(s.refused.handshakeBy) > 0 {
		by = maps.Clone(s.refused.handshakeBy)
	}
	byListener := make(map[string]ListenerConns, len(s.refused.byListener))
	for name, lc := range s.refused.byListener {
		byListener[name] = ListenerConns{RefusedMax: lc.RefusedMax, RefusedPerIP: lc.RefusedPerIP, IdleClosed: lc.IdleClosed}
	}
	for c := range s.conns {
		lc := byListener[c.listener]
		lc.Open++
		byListener[c.listener] = lc
	}
	s.mu.Unlock()
	return ConnStats{Open: open, ByListener: byListener, RefusedMax: s.refused.total.Load(), RefusedPerIP: s.refused.perIP.Load(), IdleClosed: s.refused.idle.Load(),
		HandshakeFailed: s.refused.handshake.Load(), HandshakeFailedBy: by,
		SASLFailedBy: maps.Clone(s.refused.saslFailedBy), SASLAuthenticatedBy: maps.Clone(s.refused.saslOKBy),
		ExpiredClosed: s.refused.expired.Load()}
}

// admit counts nc, come in on listener, against the limits and reports
// whether it may stay; s.mu must be held. The address returned is the one
// to release when it goes.
func (s *Server) admit(nc net.Conn, listener string) (netip.Addr, bool) {
	var ip netip.Addr
	if ap, err := netip.ParseAddrPort(nc.RemoteAddr().String()); err == nil {
		ip = ap.Addr().Unmap()
	}
	if m := s.opts.MaxConnections; m > 0 && len(s.conns) >= m {
		s.listenerCounts(listener).RefusedMax++
		if n := s.refused.total.Add(1); n&(n-1) == 0 {
			// The 1st, 2nd, 4th, 8th...: a flood does not flood the log.
			s.opts.Logger.Warn("kafka: refusing connection: max.connections reached", "remote", nc.RemoteAddr().String(), "max_connections", m, "refused", n)
		}
		return ip, false
	}
	if limit, ok := s.ipLimit(ip); ok && s.perIP[ip] >= limit {
		s.listenerCounts(listener).RefusedPerIP++
		if n := s.refused.perIP.Add(1); n&(n-1) == 0 {
			s.opts.Logger.Warn("kafka: refusing connection: max.connections.per.ip reached", "remote", nc.RemoteAddr().String(), "limit", limit, "refused", n)
		}
		return ip, false
	}
	s.perIP[ip]++
	return ip, true
}

// release forgets a connection from ip; s.mu must be held.
func (s *Server) release(ip netip.Addr) {
	if s.perIP[ip] <= 1 {
		delete(s.perIP, ip)
		return
	}
	s.perIP[ip]--
}

// ipLimit is the connection limit of ip, and whether there is one (an
// override of 0 refuses every connection from ip, as in Kafka).
func (s *Server) ipLimit(ip netip.Addr) (int, bool) {
	if n, ok := s.opts.MaxConnectionsPerIPOverrides[ip]; ok {
		return n, true
	}
	return s.opts.MaxConnectionsPerIP, s.opts.MaxConnectionsPerIP > 0
}
