package quorum

import (
	"bufio"
	"crypto/tls"
	"net"
	"sync"
	"syscall"
	"time"
)

// Forwarding connections are reused: a node keeps up to
// forwardIdlePerAddr idle connections to each controller it forwarded
// to, so a forward over mutual TLS costs one handshake per connection,
// not per request. A server that can serve more than one request on a
// connection says so in each response (keep_alive); an older one closes
// after its answer, and its connection is not kept.
//
// A kept connection is reused only while younger than forwardMaxAge and
// idle for less than forwardIdle, well within the server's
// forwardServerIdle, so the server never closes one the client is about
// to use; and only if it is still open (a peek with an expired deadline:
// a peer that restarted or closed shows as EOF, and the request goes on
// a new connection instead). What remains is a peer dying between that
// check and the request, which gives ErrOutcomeUnknown as a peer dying
// during a request on a new connection does.
//
// Certificates: kept connections keep the certificates they were made
// with, so ResetForwardConns drops them when the controller listener's
// certificates are reloaded (the node calls it), and forwardMaxAge
// bounds how long any connection lives.
const (
	forwardIdlePerAddr = 8
	forwardIdle        = 30 * time.Second
	forwardServerIdle  = 90 * time.Second
	forwardMaxAge      = 10 * time.Minute
)

// pooledConn is a forwarding connection after its hello and magic byte.
type pooledConn struct {
	net.Conn
	br      *bufio.Reader
	created time.Time
	idle    time.Time // when it was put back
}

// forwardPool holds the idle forwarding connections by address. Its
// methods are safe for concurrent use.
type forwardPool struct {
	mu struct {
		sync.Mutex
		idle   map[string][]*pooledConn
		closed bool
	}
	// noReuse turns reuse off (a test's baseline).
	noReuse bool
}

// get returns a live idle connection to addr, or nil.
func (p *forwardPool) get(addr string) *pooledConn {
	if p.noReuse {
		return nil
	}
	now := time.Now()
	for {
		p.mu.Lock()
		list := p.mu.idle[addr]
		if len(list) == 0 {
			p.mu.Unlock()
			return nil
		}
		pc := list[len(list)-1]
		p.mu.idle[addr] = list[:len(list)-1]
		p.mu.Unlock()
		if now.Sub(pc.idle) < forwardIdle && now.Sub(pc.created) < forwardMaxAge && pc.alive() {
			return pc
		}
		pc.Close()
	}
}

// alive reports whether the server has neither closed the connection
// nor sent anything unasked (TLS: a close_notify), without blocking: a
// peek at the socket (peekSocket).
func (pc *pooledConn) alive() bool {
	if pc.br.Buffered() > 0 {
		return false
	}
	conn := pc.Conn
	if tc, ok := conn.(*tls.Conn); ok {
		conn = tc.NetConn()
	}
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	return peekSocket(rc)
}

// put keeps pc for reuse, or closes it.
func (p *forwardPool) put(addr string, pc *pooledConn) {
	if p.noReuse || time.Since(pc.created) >= forwardMaxAge {
		pc.Close()
		return
	}
	_ = pc.SetDeadline(time.Time{})
	pc.idle = time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.closed || len(p.mu.idle[addr]) >= forwardIdlePerAddr {
		pc.Close()
		return
	}
	if p.mu.idle == nil {
		p.mu.idle = map[string][]*pooledConn{}
	}
	p.mu.idle[addr] = append(p.mu.idle[addr], pc)
}

// reset closes every idle connection; with closing, later ones too.
func (p *forwardPool) reset(closing bool) {
	p.mu.Lock()
	idle := p.mu.idle
	p.mu.idle = nil
	p.mu.closed = p.mu.closed || closing
	p.mu.Unlock()
	for _, list := range idle {
		for _, pc := range list {
			pc.Close()
		}
	}
}

// ResetForwardConns closes the idle forwarding connections this node
// keeps to other controllers: the next forwards dial anew, with the
// certificates that ClientTLS gives now. The node calls it when the
// controller listener's certificates were reloaded.
func (c *Controller) ResetForwardConns() { c.pool.reset(false) }
