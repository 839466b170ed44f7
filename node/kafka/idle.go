package kafka

import (
	"bufio"
	"errors"
	"io"
	"sync"
	"syscall"
	"time"
)

// bufferIdle is how long a connection keeps its read buffer with nothing
// arriving: a client between requests keeps it, an idle one gives it back.
const bufferIdle = time.Second

// errIdle stops the reader of a connection idle for ConnectionsMaxIdle.
var errIdle = errors.New("kafka: connection idle for connections.max.idle.ms")

// readerPool and writerPool recycle connections' buffered readers and
// writers. sync.Pool drops what stays unused over two garbage collections,
// so the memory of a burst of connections goes back to the heap.
type readerPool struct{ p sync.Pool }

func (p *readerPool) get(r io.Reader) *bufio.Reader {
	if br, ok := p.p.Get().(*bufio.Reader); ok {
		br.Reset(r)
		return br
	}
	return bufio.NewReaderSize(r, readBufferSize)
}

// put recycles br; a nil br is ignored. br must hold no unread bytes.
func (p *readerPool) put(br *bufio.Reader) {
	if br != nil {
		br.Reset(nil)
		p.p.Put(br)
	}
}

type writerPool struct{ p sync.Pool }

func (p *writerPool) get(w io.Writer) *bufio.Writer {
	if bw, ok := p.p.Get().(*bufio.Writer); ok {
		bw.Reset(w)
		return bw
	}
	return bufio.NewWriterSize(w, writeBufferSize)
}

// put recycles bw (dropping anything unflushed); a nil bw is ignored.
func (p *writerPool) put(bw *bufio.Writer) {
	if bw != nil {
		bw.Reset(nil)
		p.p.Put(bw)
	}
}

// awaitFrame waits, at a frame boundary with nothing buffered, until the
// next frame starts to arrive, and returns the reader to read it with.
// After bufferIdle without a byte it gives its read buffer and recycled
// response buffers back and waits for the socket to become readable
// without a buffer (when the connection is a socket). With
// ConnectionsMaxIdle set, a connection that receives nothing for that long
// while none of its requests waits for an answer (counted from its last
// answer) gets errIdle. A drain
// (shutdown) ends the wait with a timeout error.
func (c *conn) awaitFrame(br *bufio.Reader) (*bufio.Reader, error) {
	idle := c.s.opts.ConnectionsMaxIdle
	since := time.Now()
	deadline := func() time.Time {
		if idle <= 0 {
			return time.Time{}
		}
		return since.Add(idle)
	}
	sc, canWait := c.nc.(syscall.Conn)
	if br != nil {
		dl := time.Now().Add(bufferIdle)
		if d := deadline(); !canWait || !d.IsZero() && d.Before(dl) {
			dl = d
		}
		c.setReadDeadline(dl)
		_, err := br.Peek(1)
		if err == nil {
			c.setReadDeadline(time.Time{})
			return br, nil
		}
		if !isTimeout(err) || c.draining.Load() || !canWait && c.queuedBytes.Load() == 0 {
			if isTimeout(err) && !c.draining.Load() {
				err = errIdle
			}
			return br, err
		}
		if canWait {
			c.s.readers.put(br)
			br = nil
			c.dropFreeBuffers()
		}
	}
	for {
		c.setReadDeadline(deadline())
		var err error
		if br == nil {
			err = waitReadable(sc)
		} else {
			_, err = br.Peek(1)
		}
		if err == nil {
			break
		}
		if !isTimeout(err) || c.draining.Load() {
			return br, err
		}
		if c.queuedBytes.Load() > 0 {
			since = time.Now() // waiting for an answer: not idle
			continue
		}
		// Idle since the last answer, not since the deadline was set
		// while a request still waited: a client answered just before it
		// gets the whole timeout for its next request.
		if la := time.Unix(0, c.lastAnswered.Load()); la.After(since) {
			since = la
			continue
		}
		return br, errIdle
	}
	c.setReadDeadline(time.Time{})
	if br == nil {
		br = c.s.readers.get(c.nc)
	}
	return br, nil
}

// setReadDeadline sets the connection's read deadline, unless a drain
// (drain sets draining, then a deadline of now) came first: then the read
// must stop at once, whatever the order of the two calls.
func (c *conn) setReadDeadline(t time.Time) {
	_ = c.nc.SetReadDeadline(t)
	if c.draining.Load() {
		_ = c.nc.SetReadDeadline(time.Now())
	}
}

// dropFreeBuffers lets go of the recycled response buffers of an idle
// connection.
func (c *conn) dropFreeBuffers() {
	for {
		select {
		case <-c.free:
		default:
			return
		}
	}
}
