package kafka

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// readBufferSize is the per-connection read buffer: many small pipelined
// requests are read with one syscall.
const readBufferSize = 16 << 10

// maxKeptWriteBuffer is the largest response buffer a connection keeps for
// the next response; a bigger one (a large fetch) is dropped after use.
const maxKeptWriteBuffer = 1 << 20

// conn is one client connection: a reader goroutine that reads and decodes
// frames into queue, and the serve goroutine that answers them one at a time,
// in order, writing each response before taking the next request.
type conn struct {
	s      *Server
	nc     net.Conn
	log    *slog.Logger
	queue  chan *request
	ctx    context.Context
	cancel context.CancelFunc
	// draining is set when the server shuts down gracefully: the reader
	// stops, the queued requests are still answered.
	draining atomic.Bool
	wbuf     []byte
}

func newConn(s *Server, nc net.Conn) *conn {
	ctx, cancel := context.WithCancel(context.Background())
	return &conn{
		s:      s,
		nc:     nc,
		log:    s.opts.Logger.With("remote", nc.RemoteAddr().String()),
		queue:  make(chan *request, s.opts.MaxQueuedRequests),
		ctx:    ctx,
		cancel: cancel,
	}
}

// serve runs the connection until the peer leaves, a request is bad, or the
// server closes it. It returns after the reader goroutine has exited.
func (c *conn) serve() {
	go c.readLoop()
	for r := range c.queue {
		if !c.answer(r) {
			break
		}
	}
	c.abort()
	for range c.queue {
		// The reader exits on the closed connection and closes queue.
	}
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
	_ = c.nc.Close()
}

func (c *conn) readLoop() {
	defer close(c.queue)
	br := bufio.NewReaderSize(c.nc, readBufferSize)
	for {
		frame, err := readFrame(br, c.s.opts.MaxRequestBytes)
		if err != nil {
			c.readFailed(err)
			return
		}
		r, err := decodeRequest(frame, c.s.table)
		if err != nil {
			attrs := []any{"err", err}
			if r != nil {
				attrs = append(attrs, "api_key", r.key, "api_version", r.version, "correlation_id", r.correlationID)
			}
			c.log.Warn("kafka: closing connection: bad request", attrs...)
			return
		}
		select {
		case c.queue <- r:
		case <-c.ctx.Done():
			return
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

// answer handles one request and writes its response. It returns false when
// the connection must close.
func (c *conn) answer(r *request) bool {
	resp, err := r.api.handle(c.ctx, c.s, r)
	if err != nil {
		c.log.Warn("kafka: closing connection: request failed", "err", err,
			"api", kmsg.NameForKey(r.key), "api_version", r.version, "correlation_id", r.correlationID, "client_id", derefOr(r.clientID, ""))
		return false
	}
	if resp == nil {
		return true // the API sends no response (Produce with acks=0)
	}
	c.wbuf = appendResponse(c.wbuf[:0], r.correlationID, resp)
	if invariantsEnabled {
		checkResponse(c.wbuf, r, resp)
	}
	if _, err := c.nc.Write(c.wbuf); err != nil {
		if c.ctx.Err() == nil {
			c.log.Info("kafka: closing connection: write failed", "err", err)
		}
		return false
	}
	if cap(c.wbuf) > maxKeptWriteBuffer {
		c.wbuf = nil
	}
	return true
}

func derefOr[T any](p *T, or T) T {
	if p == nil {
		return or
	}
	return *p
}
