package kafka

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// readBufferSize is the per-connection read buffer: many small pipelined
// requests are read with one syscall.
const readBufferSize = 16 << 10

// writeBufferSize is the per-connection write buffer: responses that are
// ready together leave in one syscall.
const writeBufferSize = 64 << 10

// tlsCopyChunk is how much of a file a TLS connection's writer reads at
// a time (writeFile): sixteen full TLS records.
const tlsCopyChunk = 256 << 10

// maxKeptResponseBuffer is the largest encoded-response buffer a connection
// recycles; a bigger one (a large fetch) is dropped after use.
const maxKeptResponseBuffer = 1 << 20

// outQueueLen bounds the encoded responses waiting for the writer.
const outQueueLen = 16

// conn is one client connection and its four goroutines: the reader reads
// and decodes frames into queue; serve answers them one at a time, in order,
// and passes each answer to fin; the finisher completes them in that order
// (a deferred Produce waits for its acknowledgements there, while serve
// goes on with the next requests) and passes the encoded responses to out;
// the writer writes them in order, flushing whenever out is empty, so
// responses ready together share a syscall and none waits behind a handler
// that blocks.
type conn struct {
	s  *Server
	nc net.Conn
	// listener is the name of the listener the connection came in on
	// (ServeListener), "" for Serve.
	listener string
	log      *slog.Logger
	queue    chan *request
	// fin holds the answers in request order, each a function that returns
	// the encoded response (waiting first for a deferred one); the
	// finisher calls them in order and passes the responses to out.
	fin    chan func() response
	out    chan response
	free   chan []byte // recycled response buffers
	ctx    context.Context
	cancel context.CancelFunc
	// draining is set when the server shuts down gracefully: the reader
	// stops, the queued requests are still answered.
	draining atomic.Bool
	// readAny: a request frame was read on this connection.
	readAny atomic.Bool
	// sasl is the SASL exchange of a connection to a SASL listener, nil
	// otherwise; authed is set once it succeeded (at once without SASL).
	// Until then only the exchange is served (sasl.go) and frames are
	// bounded by sasl.server.max.receive.size.
	sasl   *saslConn
	authed atomic.Bool
	// tlsPrincipal is the principal of the TLS client certificate
	// (Security.MapPrincipal), set after the handshake; "" without one.
	// host is the peer's IP address (or its whole address when it has no
	// port), as ACLs name hosts and GroupRequest.ClientHost shows it.
	tlsPrincipal string
	host         string
	// queuedBytes counts the frame bytes of requests read and not yet
	// answered; answered signals the reader waiting for them to drop.
	queuedBytes atomic.Int64
	answered    chan struct{}
	// lastAnswered is when the last queued request was answered (unix
	// nanoseconds): the idle clock (connections.max.idle.ms) starts there.
	lastAnswered atomic.Int64

	// obs is the server's Observer, nil if none. remote accumulates the
	// remote time of the request being handled (BeginRemote finds it
	// through ctx). serveTiming and writeTiming are the RequestTiming
	// passed to obs by the serve and writer goroutines, reused.
	obs                      Observer
	remote                   atomic.Int64
	serveTiming, writeTiming RequestTiming
	pending                  []*request // written, not yet flushed
	scratch                  []byte     // the writer's, for file bytes read
}

// response is one encoded response on its way to the writer, with its
// request for the Observer. files (a Fetch answered from segment files)
// go into buf at their positions; done, if set, runs once the response is
// written or dropped.
type response struct {
	buf   []byte
	files []filePiece
	done  func()
	r     *request
}

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{
		s:        s,
		nc:       nc,
		log:      s.opts.Logger.With("remote", nc.RemoteAddr().String()),
		queue:    make(chan *request, s.opts.MaxQueuedRequests),
		out:      make(chan response, outQueueLen),
		fin:      make(chan func() response, outQueueLen),
		free:     make(chan []byte, outQueueLen+1),
		answered: make(chan struct{}, 1),
		obs:      s.opts.Observer,
	}
	if ap, err := netip.ParseAddrPort(nc.RemoteAddr().String()); err == nil {
		c.host = ap.Addr().Unmap().String()
	} else {
		c.host = nc.RemoteAddr().String()
	}
	ctx := context.Background()
	if c.obs != nil {
		ctx = context.WithValue(ctx, remoteKey{}, &c.remote)
	}
	c.ctx, c.cancel = context.WithCancel(ctx)
	return c
}

// serve runs the connection until the peer leaves, a request is bad, or the
// server closes it. Responses already encoded are written before the
// connection closes. It returns after the reader and writer have exited.
func (c *conn) serve() {
	go c.readLoop()
	written := make(chan struct{})
	go func() {
		defer close(written)
		c.writeLoop()
	}()
	go func() {
		defer close(c.out)
		for f := range c.fin {
			if m := f(); m.buf != nil {
				c.out <- m
			}
		}
	}()
	for r := range c.queue {
		if c.obs != nil {
			r.stamps.dequeued = time.Now()
			c.remote.Store(0)
		}
		ok := c.answer(r)
		if r.throttle > 0 && ok {
			ok = c.waitThrottle(r.throttle)
		}
		if r.api.recycle {
			c.s.frames.put(r.frame)
			r.frame = nil
		}
		c.lastAnswered.Store(time.Now().UnixNano())
		c.queuedBytes.Add(-int64(r.size))
		select {
		case c.answered <- struct{}{}:
		default:
		}
		if !ok {
			break
		}
	}
	close(c.fin)
	<-written
	c.abort()
	for range c.queue {
		// The reader exits on the closed connection and closes queue.
	}
}

// writeLoop writes the encoded responses in the order serve produced them.
// After a write error it closes the connection and discards the rest, still
// draining out so that serve never blocks on it.
func (c *conn) writeLoop() {
	var bw *bufio.Writer // from the server's pool while there is output
	defer func() { c.s.writers.put(bw) }()
	failed := false
	for m := range c.out {
		buf := m.buf
		if !failed {
			if bw == nil {
				bw = c.s.writers.get(c.nc)
			}
			if c.obs != nil {
				m.r.stamps.picked = time.Now()
				c.pending = append(c.pending, m.r)
			}
			var err error
			if len(m.files) == 0 {
				_, err = bw.Write(buf)
			} else {
				err = c.writeWithFiles(bw, m)
			}
			if err == nil && len(c.out) == 0 {
				err = bw.Flush()
				if err == nil && c.obs != nil {
					c.observeSent()
				}
				if err == nil {
					// Nothing more to write now: give the buffer back.
					c.s.writers.put(bw)
					bw = nil
				}
			}
			if err != nil {
				failed = true
				if c.ctx.Err() == nil {
					c.log.Info("kafka: closing connection: write failed", "err", err)
				}
				c.abort()
			}
		}
		if m.done != nil {
			m.done()
		}
		if cap(buf) <= maxKeptResponseBuffer {
			select {
			case c.free <- buf[:0]:
			default:
			}
		}
	}
	if !failed && bw != nil && bw.Flush() == nil && c.obs != nil {
		c.observeSent()
	}
}

// observeSent reports the requests whose responses the last flush sent.
func (c *conn) observeSent() {
	sent := time.Now()
	for i, r := range c.pending {
		r.timing(&c.writeTiming, sent)
		c.obs.ObserveRequest(&c.writeTiming)
		c.pending[i] = nil
	}
	c.pending = c.pending[:0]
}

// drain makes the reader stop at its next read; queued requests are still
// answered. Safe to call from any goroutine.
func (c *conn) drain() {
	c.draining.Store(true)
	_ = c.nc.SetReadDeadline(time.Now())
}

// abort closes the connection at once and cancels the handlers' context.
// Safe to call more than once and from any goroutine.
func (c *conn) abort() {
	c.cancel()
	if tc, ok := c.nc.(*tls.Conn); ok {
		// Not tc.Close: its close_notify alert may wait up to 5 s for a
		// peer that stopped reading, and forceClose calls this under
		// Server.mu. Kafka clients need no close_notify.
		_ = tc.NetConn().Close()
		return
	}
	_ = c.nc.Close()
}

// resetOnClose makes the close of the connection send a TCP reset.
func (c *conn) resetOnClose() {
	nc := c.nc
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	if tcp, ok := nc.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
}

func (c *conn) readLoop() {
	defer close(c.queue)
	br := c.s.readers.get(c.nc)
	defer func() { c.s.readers.put(br) }()
	for {
		if br == nil || br.Buffered() == 0 {
			var err error
			if br, err = c.awaitFrame(br); err != nil {
				c.readFailed(err)
				return
			}
		}
		limit := c.s.opts.MaxRequestBytes
		if !c.authed.Load() {
			limit = min(limit, saslMaxReceive)
		}
		size, err := readFrameSize(br, limit)
		c.readAny.Store(true)
		if err != nil {
			c.readFailed(err)
			return
		}
		if !c.waitQueueRoom(size) {
			return
		}
		frame, err := readFrameBody(br, size, &c.s.frames)
		if err != nil {
			c.readFailed(err)
			return
		}
		var received time.Time
		if c.obs != nil {
			received = time.Now()
		}
		r, err := decodeRequest(frame, c.s.table)
		if r != nil {
			r.listener, r.host = c.listener, c.host
			if c.sasl != nil {
				r.readAt = time.Now()
			}
		}
		if err != nil {
			attrs := []any{"err", err}
			if r != nil {
				attrs = append(attrs, "api_key", r.key, "api_version", r.version, "correlation_id", r.correlationID)
			}
			c.log.Warn("kafka: closing connection: bad request", attrs...)
			return
		}
		r.stamps.received = received
		r.frame = frame
		select {
		case c.queue <- r:
		case <-c.ctx.Done():
			return
		}
	}
}

// waitQueueRoom waits until a frame of size fits in MaxQueuedBytes with the
// requests not yet answered, or until none is left, and counts it. It
// returns false if the connection closes meanwhile.
func (c *conn) waitQueueRoom(size int32) bool {
	budget := int64(c.s.opts.MaxQueuedBytes)
	for {
		queued := c.queuedBytes.Load()
		if queued == 0 || queued+int64(size) <= budget {
			c.queuedBytes.Add(int64(size))
			return true
		}
		select {
		case <-c.answered:
		case <-c.ctx.Done():
			return false
		}
	}
}

// readFailed logs why the reader stopped: protocol violations at Warn, the
// peer leaving or the server closing at Debug.
func (c *conn) readFailed(err error) {
	switch {
	case errors.Is(err, ErrFrameTooLarge), errors.Is(err, ErrNegativeFrame):
		c.log.Warn("kafka: closing connection: bad frame", "err", err)
	case c.ctx.Err() != nil:
		// Closed by the server.
	case c.draining.Load() && isTimeout(err):
		c.log.Debug("kafka: stopped reading for shutdown")
		if !c.readAny.Load() {
			// Nothing was read from it: the client may have just
			// connected and be sending its first request (ApiVersions).
			// A reset, not a FIN, tells it so: Kafka clients retry a
			// reset, while an EOF before the first response reads as a
			// TLS or SASL misconfiguration (franz-go does not retry it).
			c.resetOnClose()
		}
	case errors.Is(err, errIdle):
		c.s.refused.idle.Add(1)
		c.s.mu.Lock()
		c.s.listenerCounts(c.listener).IdleClosed++
		c.s.mu.Unlock()
		c.log.Debug("kafka: closing idle connection", "connections_max_idle", c.s.opts.ConnectionsMaxIdle)
	case errors.Is(err, io.EOF):
		c.log.Debug("kafka: peer closed connection")
	default:
		c.log.Info("kafka: closing connection: read failed", "err", err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// answer handles one request and hands its encoded response to the writer.
// It returns false when the connection must close.
func (c *conn) answer(r *request) bool {
	if !c.authed.Load() {
		return c.answerSASL(r)
	}
	if c.sasl != nil {
		if handled, ok := c.answerAuthenticated(r); handled {
			return ok
		}
	}
	r.principal, r.host = c.principal(), c.host
	if resp := c.s.authorizeAPI(r); resp != nil {
		return c.reply(r, resp)
	}
	return c.answerWith(r, r.api.handle)
}

// principal is the connection's authenticated principal: SASL's user,
// else the mapped distinguished name of a TLS client certificate, else
// AnonymousPrincipal.
func (c *conn) principal() string {
	switch {
	case c.sasl != nil:
		return c.sasl.principal
	case c.tlsPrincipal != "":
		return c.tlsPrincipal
	}
	return AnonymousPrincipal
}

// answerWith answers r with handler h.
func (c *conn) answerWith(r *request, h handler) bool {
	start := time.Now()
	resp, err := h(c.ctx, c.s, r)
	if c.s.quotas != nil && err == nil {
		c.s.quotaAnswer(r, resp, start)
	}
	if c.obs != nil {
		r.stamps.handled = time.Now()
		r.stamps.remote = time.Duration(c.remote.Load())
	}
	if err != nil {
		c.log.Warn("kafka: closing connection: request failed", "err", err,
			"api", kmsg.NameForKey(r.key), "api_version", r.version, "correlation_id", r.correlationID, "client_id", derefOr(r.clientID, ""))
		return false
	}
	if resp == nil {
		if c.obs != nil {
			r.timing(&c.serveTiming, r.stamps.handled)
			c.obs.ObserveRequest(&c.serveTiming)
		}
		return true // the API sends no response (Produce with acks=0)
	}
	if d, ok := resp.(*deferredResponse); ok {
		t := r.throttle
		c.fin <- func() response {
			d.wait()
			if c.obs != nil {
				r.stamps.waited()
			}
			setThrottle(d.Response, t)
			return c.encode(r, d.Response)
		}
		return c.ctx.Err() == nil
	}
	return c.reply(r, resp)
}

// reply hands resp, the answer to r, to the finisher, and reports
// whether the connection is still open.
func (c *conn) reply(r *request, resp kmsg.Response) bool {
	if c.obs != nil && r.stamps.handled.IsZero() {
		r.stamps.handled = time.Now()
	}
	m := c.encode(r, resp)
	c.fin <- func() response { return m }
	return c.ctx.Err() == nil
}

// encode encodes r's response into a recycled buffer.
func (c *conn) encode(r *request, resp kmsg.Response) response {
	var buf []byte
	select {
	case buf = <-c.free:
	default:
	}
	if fr, ok := resp.(*fileFetchResponse); ok {
		if canEncodeFetch(fr) {
			buf, pieces := appendFetchFrame(buf, r.correlationID, fr)
			if invariantsOn {
				checkFileResponse(buf, pieces, r, fr)
			}
			return response{buf: buf, files: pieces, done: fr.release, r: r}
		}
		resp = fr.materialize()
	}
	buf = appendResponse(buf, r.correlationID, resp)
	if invariantsOn {
		checkResponse(buf, r, resp)
	}
	return response{buf: buf, r: r}
}

// writeWithFiles writes m's frame: its buffer with the files' bytes
// inserted, each sent from its file (sendfile) when the connection allows.
func (c *conn) writeWithFiles(bw *bufio.Writer, m response) error {
	prev := 0
	for _, p := range m.files {
		if _, err := bw.Write(m.buf[prev:p.at]); err != nil {
			return err
		}
		prev = p.at
		if err := c.writeFile(bw, p.f); err != nil {
			return err
		}
	}
	_, err := bw.Write(m.buf[prev:])
	return err
}

// writeFile writes f's bytes after what bw holds: with sendfile(2) when f
// has a descriptor and the connection is a socket; over TLS, pread(2)
// chunks of tlsCopyChunk straight to the TLS connection (copyFile: no
// pass through bw, no buffer of the fetch's size); else read through a
// scratch buffer.
func (c *conn) writeFile(bw *bufio.Writer, f FileRecords) error {
	if f.Len() == 0 {
		return nil
	}
	if sc, ok := c.nc.(syscall.Conn); ok && f.Fd() != ^uintptr(0) {
		if err := bw.Flush(); err != nil {
			return err
		}
		if handled, err := sendFile(sc, f.Fd(), f.Pos(), f.Len()); handled {
			return err
		}
	}
	if tc, ok := c.nc.(*tls.Conn); ok && f.Fd() != ^uintptr(0) {
		if err := bw.Flush(); err != nil {
			return err
		}
		if cap(c.scratch) < tlsCopyChunk {
			c.scratch = make([]byte, 0, tlsCopyChunk)
		}
		if handled, err := copyFile(tc, f.Fd(), f.Pos(), f.Len(), c.scratch[:tlsCopyChunk]); handled {
			return err
		}
	}
	b, err := f.AppendTo(c.scratch[:0])
	if err != nil {
		return err
	}
	if cap(b) <= maxKeptResponseBuffer {
		c.scratch = b[:0]
	}
	_, err = bw.Write(b)
	return err
}

func derefOr[T any](p *T, or T) T {
	if p == nil {
		return or
	}
	return *p
}

// waitThrottle holds the connection for a client quota's throttle after
// its answer (KIP-219: the broker reads nothing more from a throttled
// client until the throttle has passed); false if the connection or the
// server closes meanwhile.
func (c *conn) waitThrottle(t time.Duration) bool {
	timer := time.NewTimer(t)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-c.ctx.Done():
		return false
	case <-c.s.done:
		return true // shutting down: answer what is queued without waiting
	}
}
