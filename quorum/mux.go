package quorum

import (
	"bufio"
	"errors"
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

	raftConns chan net.Conn
	closeOnce sync.Once
	closed    chan struct{}
}

var _ raft.StreamLayer = (*muxListener)(nil)

func newMuxListener(ln net.Listener, advertise net.Addr, handle func(net.Conn), self hello, refusals *refusals) *muxListener {
	m := &muxListener{
		ln: ln, advertise: advertise, handle: handle,
		clusterID: self.ClusterID, hello: appendHello(nil, self), refusals: refusals,
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
	pc := &peekedConn{Conn: conn, r: br}
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
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
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

// Dial implements raft.StreamLayer: it connects and sends the hello; raft
// then writes its RPC type byte.
func (m *muxListener) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	conn, err := net.DialTimeout("tcp", string(addr), timeout)
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

// peekedConn is a connection whose first bytes were buffered by route.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }
