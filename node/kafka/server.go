package kafka

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Server speaks the Kafka protocol on the listeners given to Serve and answers
// through its Broker. Its methods may be called concurrently.
type Server struct {
	broker Broker
	opts   Options
	table  *table
	// topics is opts.Observer's TopicObserver capability, nil if none.
	topics TopicObserver
	// frames recycles request frame buffers across connections; readers
	// and writers the connections' buffered readers and writers (idle.go).
	frames  framePool
	readers readerPool
	writers writerPool

	closing atomic.Bool
	// done is closed when Shutdown or Close begins.
	done     chan struct{}
	doneOnce sync.Once

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}
	// perIP counts the open connections by peer address (limits.go).
	perIP map[netip.Addr]int
	// refused counts connections closed at accept by a limit.
	refused refusedCounts
	// wg counts live connections (their goroutines).
	wg sync.WaitGroup
	// authz counts the authorizer's decisions (authz.go).
	authz struct{ allowed, denied atomic.Int64 }
	// scramSecret makes up the SCRAM salts of unknown users (sasl.go).
	scramSecret [32]byte
	// sessions holds the fetch sessions (fetch_session.go).
	sessions *fetchSessionCache
	// quotas measures client quotas; nil when the Broker has no
	// QuotaAdmin (quotas.go).
	quotas *quotaManager
}

// NewServer returns a server answering through b. It serves nothing until
// Serve is called.
func NewServer(b Broker, opts Options) (*Server, error) {
	if b == nil {
		return nil, errors.Join(ErrInvalidOptions, errors.New("kafka: nil Broker"))
	}
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	topics, _ := opts.Observer.(TopicObserver)
	s := &Server{
		topics:    topics,
		broker:    b,
		opts:      opts,
		table:     newTable(b),
		done:      make(chan struct{}),
		listeners: map[net.Listener]struct{}{},
		conns:     map[*conn]struct{}{},
		perIP:     map[netip.Addr]int{},
	}
	_, _ = rand.Read(s.scramSecret[:])
	s.sessions = newFetchSessionCache(max(opts.FetchSessionCacheSlots, 0), binary.LittleEndian.Uint64(s.scramSecret[:8])^uint64(time.Now().UnixNano()))
	if qa, ok := b.(QuotaAdmin); ok {
		s.quotas = newQuotaManager(qa, opts.QuotaWindowNum, opts.QuotaWindowSize)
	}
	return s, nil
}

// Serve accepts connections on ln until Shutdown or Close, then returns
// ErrServerClosed; any other accept failure that persists is returned as is.
// ln is closed when Serve returns. Its connections' Metadata queries name
// no listener (MetadataQuery.Listener ""): ServeListener names one.
func (s *Server) Serve(ln net.Listener) error { return s.ServeListener("", ln) }

// ServeListener is Serve for the listener called name in the node's
// configuration (Kafka's listener name, e.g. INTERNAL or EXTERNAL): the
// Metadata and DescribeCluster requests of its connections ask the Broker
// for that listener's advertised endpoints (MetadataQuery.Listener), so a
// client is handed addresses it can dial from where it connected. One
// Server may serve several listeners at once.
func (s *Server) ServeListener(name string, ln net.Listener) error {
	return s.ServeListenerTLS(name, ln, nil)
}

// ServeListenerTLS is ServeListener for an SSL listener: each connection
// is a TLS server with cfg (nil: plaintext). The handshake runs on the
// connection's own goroutine, within Options.HandshakeTimeout, so a slow
// or silent client holds nothing but its connection slot until then; a
// failed handshake (a plaintext client, an untrusted or missing client
// certificate under ssl.client.auth=required) is logged and closes the
// connection, counted in ConnStats.HandshakeFailed.
func (s *Server) ServeListenerTLS(name string, ln net.Listener, cfg *tls.Config) error {
	return s.ServeListenerSecure(name, ln, Security{TLS: cfg})
}

// Security is how a listener's connections are secured: TLS for SSL and
// SASL_SSL, SASL for SASL_PLAINTEXT and SASL_SSL; neither for PLAINTEXT.
type Security struct {
	TLS  *tls.Config
	SASL *SASL
	// MapPrincipal turns the distinguished name of a verified TLS client
	// certificate (RFC 2253 form, as Kafka's X500Principal.getName())
	// into the connection's principal name (ssl.principal.mapping.rules);
	// the principal is "User:" + the result. Nil: the name as is. Not
	// used with SASL, whose user is the principal.
	MapPrincipal func(dn string) (string, error)
}

// ServeListenerSecure is ServeListener for a listener with any security
// protocol. With SASL, a connection is served nothing but ApiVersions
// and the SASL exchange until it authenticates (sasl.go).
func (s *Server) ServeListenerSecure(name string, ln net.Listener, sec Security) error {
	if sec.SASL != nil && len(sec.SASL.Mechanisms) == 0 {
		_ = ln.Close()
		return errors.Join(ErrInvalidOptions, errors.New("kafka: listener "+name+": SASL with no mechanism enabled"))
	}
	s.mu.Lock()
	if s.closing.Load() {
		s.mu.Unlock()
		_ = ln.Close()
		return ErrServerClosed
	}
	s.listeners[ln] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
		_ = ln.Close()
	}()

	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.closing.Load() {
				return ErrServerClosed
			}
			if !transientAcceptError(err) {
				return err
			}
			// Out of file descriptors or a transient failure: back
			// off instead of spinning, as net/http does.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.opts.Logger.Warn("kafka: accept failed; retrying", "err", err, "backoff", backoff)
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-s.done:
				t.Stop()
				return ErrServerClosed
			}
			continue
		}
		backoff = 0
		s.startConn(nc, name, sec)
	}
}

// transientAcceptError reports whether an Accept failure may go away by
// itself (a timeout, a connection aborted before accept, out of descriptors).
func transientAcceptError(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) || errors.Is(err, syscall.ECONNABORTED)
}

func (s *Server) startConn(nc net.Conn, listener string, sec Security) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing.Load() {
		_ = nc.Close()
		return
	}
	ip, ok := s.admit(nc, listener)
	if !ok {
		_ = nc.Close()
		return
	}
	if sec.TLS != nil {
		nc = tls.Server(nc, sec.TLS)
	}
	c := newConn(s, nc)
	c.listener = listener
	if sec.SASL != nil {
		c.sasl = &saslConn{cfg: sec.SASL}
	} else {
		c.authed.Store(true)
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if c.handshake() && c.mapTLSPrincipal(sec.MapPrincipal) {
			c.serve()
		}
		s.mu.Lock()
		delete(s.conns, c)
		s.release(ip)
		s.mu.Unlock()
	}()
}

// Shutdown stops accepting, stops reading new requests, and waits for every
// connection to answer the requests it has already read and close. If ctx
// ends first, the remaining connections are closed at once (their handlers'
// contexts cancelled), Shutdown waits for their goroutines and returns
// ctx.Err().
func (s *Server) Shutdown(ctx context.Context) error {
	s.beginClose()
	drained := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(drained)
	}()
	select {
	case <-drained:
		return nil
	case <-ctx.Done():
		s.forceClose()
		<-drained
		return ctx.Err()
	}
}

// Close closes every listener and connection at once, without waiting for
// requests in flight to be answered, and waits for the connections'
// goroutines to exit.
func (s *Server) Close() error {
	s.beginClose()
	s.forceClose()
	s.wg.Wait()
	return nil
}

// beginClose closes the listeners and asks every connection to drain.
func (s *Server) beginClose() {
	s.doneOnce.Do(func() {
		s.mu.Lock()
		s.closing.Store(true)
		close(s.done)
		for ln := range s.listeners {
			_ = ln.Close()
		}
		for c := range s.conns {
			c.drain()
		}
		s.mu.Unlock()
	})
}

func (s *Server) forceClose() {
	s.mu.Lock()
	for c := range s.conns {
		c.abort()
	}
	s.mu.Unlock()
}
