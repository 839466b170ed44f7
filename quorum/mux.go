package quorum

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// forwardMagic is the first byte of a forwarding connection. The controller
// port carries two protocols: hashicorp/raft's (every connection starts with
// an RPC type byte, 0..4 in raft v1.7) and the forwarding protocol of
// forward.go (starts with forwardMagic). Both come after the hello of
// hello.go: muxListener checks the hello of each accepted connection, then
// reads the protocol's first byte and routes it.
const forwardMagic byte = 0xF5

// firstByteTimeout bounds how long an accepted connection may take to send
// its hello and first protocol byte.
const firstByteTimeout = 10 * time.Second

// muxListener is the raft.StreamLayer of a Controller: it hands raft the
// raft connections and gives forwarding connections to handle.
type muxListener struct {
	ln        net.Listener
	advertise net.Addr
	handle    func(net.Conn)
	clusterID string    // what accepted hellos must name; "" accepts any
	hello     []byte    // what Dial sends
	refusals  *refusals // logs refused connections
	refused   atomic.Int64
	// serverTLS and clientTLS, when set, wrap every accepted and dialled
	// connection in mutual TLS before the hello (Config.ServerTLS).
	serverTLS *tls.Config
	clientTLS func(addr string) *tls.Config
	// authorizePeer: Config.AuthorizePeer; authorizePeerNode:
	// Config.AuthorizePeerNode.
	authorizePeer     func(*x509.Certificate) error
	authorizePeerNode func(*x509.Certificate, int32) error

	raftConns chan net.Conn
	closeOnce sync.Once
	closed    chan struct{}
}

var _ raft.StreamLayer = (*muxListener)(nil)

func newMuxListener(ln net.Listener, advertise net.Addr, handle func(net.Conn), self hello, refusals *refusals, serverTLS *tls.Config, clientTLS func(string) *tls.Config) *muxListener {
	m := &muxListener{
		ln: ln, advertise: advertise, handle: handle,
		clusterID: self.ClusterID, hello: appendHello(nil, self), refusals: refusals,
		serverTLS: serverTLS, clientTLS: clientTLS,
		raftConns: make(chan net.Conn), closed: make(chan struct{}),
	}
	go m.acceptLoop()
	return m
}

func (m *muxListener) acceptLoop() {
	for {
		conn, err := m.ln.Accept()
		if err != nil {
			select {
			case <-m.closed:
				return
			default:
			}
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				continue
			}
			m.Close()
			return
		}
		go m.route(conn)
	}
}

func (m *muxListener) route(conn net.Conn) {
	var peer *x509.Certificate // verified, with serverTLS
	if m.serverTLS != nil {
		tc := tls.Server(conn, m.serverTLS)
		_ = conn.SetDeadline(time.Now().Add(firstByteTimeout))
		if err := tc.Handshake(); err != nil {
			if !errors.Is(err, io.EOF) { // a connect-and-close is no peer
				m.refused.Add(1)
				m.refusals.refusedTLS(conn.RemoteAddr(), err)
			}
			conn.Close()
			return
		}
		_ = conn.SetDeadline(time.Time{})
		peer = tc.ConnectionState().PeerCertificates[0]
		if m.authorizePeer != nil {
			if err := m.authorizePeer(peer); err != nil {
				m.refused.Add(1)
				m.refusals.refusedPeer(conn.RemoteAddr(), err)
				conn.Close()
				return
			}
		}
		conn = tc
	}
	br := bufio.NewReader(conn)
	_ = conn.SetReadDeadline(time.Now().Add(firstByteTimeout))
	h, err := checkHello(br, m.clusterID)
	var first []byte
	if err == nil {
		first, err = br.Peek(1)
	}
	_ = conn.SetReadDeadline(time.Time{})
	if err != nil {
		if errors.Is(err, ErrBadHello) || errors.Is(err, ErrWrongCluster) {
			m.refused.Add(1)
			m.refusals.refused(conn.RemoteAddr(), m.clusterID, h, err)
		}
		if errors.Is(err, ErrWrongCluster) {
			m.answerRefused(conn, br)
		}
		conn.Close() // refused (logged above), or silent or truncated (quietly)
		return
	}
	if peer != nil && m.authorizePeerNode != nil {
		if err := m.authorizePeerNode(peer, h.NodeID); err != nil {
			m.refused.Add(1)
			m.refusals.refusedPeer(conn.RemoteAddr(), fmt.Errorf("its hello says node %d: %w", h.NodeID, err))
			conn.Close()
			return
		}
	}
	pc := &peekedConn{Conn: conn, r: br, node: -1}
	if peer != nil && m.authorizePeerNode != nil {
		pc.node = h.NodeID // its certificate names this node
	}
	if first[0] == forwardMagic {
		_, _ = br.ReadByte()
		m.handle(pc)
		return
	}
	select {
	case m.raftConns <- pc:
	case <-m.closed:
		conn.Close()
	}
}

// refusalLinger bounds how long a refused connection is kept to deliver
// our hello (answerRefused).
const refusalLinger = time.Second

// answerRefused answers a peer of another cluster with this node's hello,
// so a forwarding client can say which cluster it reached (forward). It
// half-closes and drains what the peer already sent, for at most
// refusalLinger and 64 KiB: closing with unread data would reset the
// connection and could discard the answer before the peer reads it.
func (m *muxListener) answerRefused(conn net.Conn, br *bufio.Reader) {
	_ = conn.SetDeadline(time.Now().Add(refusalLinger))
	if _, err := conn.Write(m.hello); err != nil {
		return
	}
	if cw, ok := conn.(interface{ CloseWrite() error }); ok { // TCP or TLS
		_ = cw.CloseWrite()
	}
	_, _ = io.CopyN(io.Discard, br, 64<<10)
}

// Accept implements net.Listener for raft.
func (m *muxListener) Accept() (net.Conn, error) {
	select {
	case c := <-m.raftConns:
		return c, nil
	case <-m.closed:
		return nil, net.ErrClosed
	}
}

// Close implements net.Listener; it may be called more than once.
func (m *muxListener) Close() error {
	var err error
	m.closeOnce.Do(func() {
		close(m.closed)
		err = m.ln.Close()
	})
	return err
}

// Addr is the advertised address: what raft tells its peers.
func (m *muxListener) Addr() net.Addr { return m.advertise }

// Dial implements raft.StreamLayer: it connects (with TLS when
// configured) and sends the hello; raft then writes its RPC type byte.
func (m *muxListener) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conn, err := m.dial(ctx, string(addr))
	if err != nil {
		return nil, err
	}
	_ = conn.SetWriteDeadline(time.Now().Add(timeout))
	_, err = conn.Write(m.hello)
	_ = conn.SetWriteDeadline(time.Time{})
	if err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// dial connects to the controller port at addr: TCP, then the TLS
// handshake (this node's certificate, the peer's checked against the
// truststore) when the port is secured. The hello is the caller's.
func (m *muxListener) dial(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil || m.clientTLS == nil {
		return conn, err
	}
	tc := tls.Client(conn, m.clientTLS(addr))
	if err := tc.HandshakeContext(ctx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("quorum: TLS handshake with the controller port at %s: %w (check this node's listener.name.controller.ssl.* keystore and truststore)", addr, err)
	}
	return tc, nil
}

// peekedConn is a connection whose first bytes were buffered by route.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
	// node is the peer's node id when its certificate proved it
	// (Config.AuthorizePeerNode), else -1.
	node int32
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }
