package kafka

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ClientConn is the client side of one connection to a Kafka broker, for
// the broker's own requests to others (the replica fetcher) and for tests
// that must send a request exactly as written. One request is in flight
// at a time (correlation id 1); reads go through a buffer. Not safe for
// concurrent use, except Close.
type ClientConn struct {
	net.Conn
	r *bufio.Reader
	// ClientID is the request header's client id.
	ClientID string
	// MaxResponseBytes bounds a response frame (0: 16 MiB); a bigger one
	// is an error and the connection should be closed.
	MaxResponseBytes int32
	// body holds the last response read: the byte fields of the response
	// RoundTrip decoded alias it until the next RoundTrip.
	body []byte
	// out is the buffer the last request was encoded in, reused by the
	// next; formatter encodes request headers with formatterID (ClientID
	// when it was made).
	out         []byte
	formatter   *kmsg.RequestFormatter
	formatterID string
	// sasl is what Authenticate used, and reauthAt when RoundTrip must
	// authenticate again first (the session lifetime the broker gave,
	// less a tenth; KIP-368); zero: never.
	sasl     *ClientSASL
	reauthAt time.Time
}

// Dial connects to a broker's Kafka listener at addr.
func Dial(addr string, timeout time.Duration) (*ClientConn, error) {
	nc, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	return NewClientConn(nc), nil
}

// DialTLS connects to a broker's SSL listener at addr with cfg (its
// ServerName set to the host checked against the certificate), the TCP
// connect and the TLS handshake both within timeout.
func DialTLS(addr string, timeout time.Duration, cfg *tls.Config) (*ClientConn, error) {
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: timeout}, Config: cfg}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("TLS to %s: %w", addr, err)
	}
	return NewClientConn(nc), nil
}

// NewClientConn speaks the Kafka protocol as a client on c.
func NewClientConn(c net.Conn) *ClientConn {
	return &ClientConn{Conn: c, r: bufio.NewReaderSize(c, 64<<10)}
}

// Read reads through the connection's buffer.
func (c *ClientConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// RoundTrip writes req (header v1/v2 as its version needs) and reads the
// response into resp, decoded at req's version, all within timeout.
// resp's byte fields (record batches) alias a buffer the next RoundTrip
// reuses.
func (c *ClientConn) RoundTrip(req kmsg.Request, resp kmsg.Response, timeout time.Duration) error {
	if !c.reauthAt.IsZero() && time.Now().After(c.reauthAt) {
		if err := c.Authenticate(*c.sasl, timeout); err != nil {
			return fmt.Errorf("re-authenticating: %w", err)
		}
	}
	const corr = 1
	if c.formatter == nil || c.formatterID != c.ClientID {
		c.formatter, c.formatterID = kmsg.NewRequestFormatter(kmsg.FormatterClientID(c.ClientID)), c.ClientID
	}
	frame := c.formatter.AppendRequest(c.out[:0], req, corr)
	if cap(frame) <= maxKeptResponseBuffer {
		c.out = frame[:0] // the next request's buffer: a replica fetcher sends one per round
	}
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	if _, err := c.Write(frame); err != nil {
		return err
	}
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return err
	}
	limit := c.MaxResponseBytes
	if limit <= 0 {
		limit = 16 << 20
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 4 || n > limit {
		return fmt.Errorf("response frame of %d bytes", n)
	}
	if cap(c.body) < int(n) {
		c.body = make([]byte, n)
	}
	body := c.body[:n]
	if _, err := io.ReadFull(c, body); err != nil {
		return err
	}
	if got := int32(binary.BigEndian.Uint32(body)); got != corr {
		return fmt.Errorf("response correlation id %d, want %d", got, corr)
	}
	body = body[4:]
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() {
		// Response header v1: tagged fields; we know none.
		var err error
		if body, err = skipTags(body); err != nil {
			return err
		}
	}
	return resp.ReadFrom(body)
}

// skipTags skips a tagged-field section.
func skipTags(b []byte) ([]byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, errors.New("bad tagged fields")
	}
	b = b[k:]
	for range n {
		if _, k = binary.Uvarint(b); k <= 0 {
			return nil, errors.New("bad tag")
		}
		b = b[k:]
		l, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < l {
			return nil, errors.New("bad tag length")
		}
		b = b[k+int(l):]
	}
	return b, nil
}
