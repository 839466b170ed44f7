package kafka

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testTimeout bounds every wait in these tests.
const testTimeout = 10 * time.Second

// fakeBroker is a FAKE Broker: the log engine (segment/) and the metadata
// controller (quorum/) do not exist yet, so the tests answer from a fixed
// ClusterMetadata held in memory. It filters topics as the real node will
// (only the existing ones among those asked) and records the queries.
type fakeBroker struct {
	mu      sync.Mutex
	md      ClusterMetadata
	err     error
	queries []MetadataQuery
	// gate, when set, makes Metadata announce itself on entered and wait
	// for gate to close (or its context to end) before answering.
	gate    chan struct{}
	entered chan struct{}
}

func (f *fakeBroker) Metadata(ctx context.Context, q MetadataQuery) (ClusterMetadata, error) {
	f.mu.Lock()
	gate, entered := f.gate, f.entered
	f.mu.Unlock()
	if gate != nil {
		entered <- struct{}{}
		select {
		case <-gate:
		case <-ctx.Done():
			return ClusterMetadata{}, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queries = append(f.queries, q)
	if f.err != nil {
		return ClusterMetadata{}, f.err
	}
	out := f.md
	if q.AllTopics {
		return out, nil
	}
	out.Topics = nil
	for _, ref := range q.Topics {
		for _, t := range f.md.Topics {
			if ref.ID != (TopicID{}) && ref.ID == t.ID || ref.ID == (TopicID{}) && ref.Name == t.Name {
				out.Topics = append(out.Topics, t)
			}
		}
	}
	return out, nil
}

// hold makes the next Metadata calls wait until the returned func is called.
func (f *fakeBroker) hold() (entered <-chan struct{}, release func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gate, f.entered = make(chan struct{}), make(chan struct{}, 16)
	gate := f.gate
	var once sync.Once
	return f.entered, func() { once.Do(func() { close(gate) }) }
}

func (f *fakeBroker) lastQuery() MetadataQuery {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.queries[len(f.queries)-1]
}

var (
	ordersID = TopicID{0xa1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	offsetID = TopicID{0xb2, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
)

// newFakeBroker returns a two-broker cluster whose brokers both advertise
// addr (so that a real client reaching either reaches the test server), with
// a healthy topic, a partition without a leader and an internal topic.
func newFakeBroker(addr string) *fakeBroker {
	host, port := splitHostPort(addr)
	return &fakeBroker{md: ClusterMetadata{
		ClusterID:    "sluice-test-cluster",
		ControllerID: 2,
		Brokers: []BrokerInfo{
			{NodeID: 1, Host: host, Port: port, Rack: "rack-a"},
			{NodeID: 2, Host: host, Port: port},
		},
		Topics: []TopicMetadata{
			{Name: "orders", ID: ordersID, Partitions: []PartitionMetadata{
				{Partition: 0, Leader: 1, LeaderEpoch: 7, Replicas: []int32{1, 2}, ISR: []int32{1, 2}},
				{Partition: 1, Leader: 2, LeaderEpoch: 3, Replicas: []int32{2, 1}, ISR: []int32{2}},
				{Partition: 2, Leader: -1, LeaderEpoch: 9, Replicas: []int32{1, 2}, ISR: []int32{}, Offline: []int32{2}, Err: kerr.LeaderNotAvailable},
			}},
			{Name: "__consumer_offsets", ID: offsetID, Internal: true, Partitions: []PartitionMetadata{
				{Partition: 0, Leader: 1, LeaderEpoch: 1, Replicas: []int32{1}, ISR: []int32{1}},
			}},
		},
	}}
}

func splitHostPort(addr string) (string, int32) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		panic(err)
	}
	var port int32
	if _, err := fmt.Sscan(portStr, &port); err != nil {
		panic(err)
	}
	return host, port
}

// logSink is a slog handler that keeps every record so that tests can wait
// for the log line a closed connection must leave.
type logSink struct {
	mu      sync.Mutex
	lines   []string
	changed chan struct{}
}

func newLogSink() *logSink { return &logSink{changed: make(chan struct{})} }

func (l *logSink) Enabled(context.Context, slog.Level) bool { return true }
func (l *logSink) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &attrHandler{sink: l, attrs: attrs}
}
func (l *logSink) WithGroup(string) slog.Handler { return l }
func (l *logSink) Handle(_ context.Context, r slog.Record) error {
	l.add(r, nil)
	return nil
}

func (l *logSink) add(r slog.Record, attrs []slog.Attr) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", r.Level, r.Message)
	for _, a := range attrs {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
	}
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	l.mu.Lock()
	l.lines = append(l.lines, b.String())
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
}

type attrHandler struct {
	sink  *logSink
	attrs []slog.Attr
}

func (h *attrHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *attrHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &attrHandler{sink: h.sink, attrs: append(append([]slog.Attr(nil), h.attrs...), attrs...)}
}
func (h *attrHandler) WithGroup(string) slog.Handler { return h }
func (h *attrHandler) Handle(_ context.Context, r slog.Record) error {
	h.sink.add(r, h.attrs)
	return nil
}

// waitFor waits until a log line contains every one of parts, failing the
// test at the deadline.
func (l *logSink) waitFor(t *testing.T, parts ...string) string {
	t.Helper()
	deadline := time.NewTimer(testTimeout)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		changed := l.changed
		for _, line := range l.lines {
			if containsAll(line, parts) {
				l.mu.Unlock()
				return line
			}
		}
		lines := append([]string(nil), l.lines...)
		l.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("no log line with %q after %v; lines:\n%s", parts, testTimeout, strings.Join(lines, "\n"))
		}
	}
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// testServer is a Server on 127.0.0.1 with the fake broker and a log sink.
type testServer struct {
	*Server
	addr   string
	broker *fakeBroker
	logs   *logSink
}

func startServer(t *testing.T, opts Options) *testServer {
	t.Helper()
	return startServerWith(t, opts, func(fb *fakeBroker) Broker { return fb })
}

// startServerWith serves the Broker that backend builds around the fake.
func startServerWith(t *testing.T, opts Options, backend func(*fakeBroker) Broker) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{addr: ln.Addr().String(), logs: newLogSink()}
	ts.broker = newFakeBroker(ts.addr)
	opts.Logger = slog.New(ts.logs)
	ts.Server, err = NewServer(backend(ts.broker), opts)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- ts.Serve(ln) }()
	t.Cleanup(func() {
		if err := ts.Close(); err != nil {
			t.Error(err)
		}
		if err := <-served; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
	})
	return ts
}

// wireClient speaks the protocol by hand over one TCP connection.
type wireClient struct {
	t    *testing.T
	nc   net.Conn
	corr int32
	fmt  *kmsg.RequestFormatter
}

func dial(t *testing.T, addr string) *wireClient {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	if err := nc.SetDeadline(time.Now().Add(testTimeout)); err != nil {
		t.Fatal(err)
	}
	return &wireClient{t: t, nc: nc, fmt: kmsg.NewRequestFormatter(kmsg.FormatterClientID("wire-test"))}
}

// encode returns the frame of req at its set version with the next
// correlation id.
func (c *wireClient) encode(req kmsg.Request) ([]byte, int32) {
	c.corr++
	return c.fmt.AppendRequest(nil, req, c.corr), c.corr
}

func (c *wireClient) write(b []byte) {
	c.t.Helper()
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

func (c *wireClient) send(req kmsg.Request) int32 {
	c.t.Helper()
	b, corr := c.encode(req)
	c.write(b)
	return corr
}

// readRaw reads one response frame and returns its correlation id and the
// bytes after it.
func (c *wireClient) readRaw() (int32, []byte) {
	c.t.Helper()
	var prefix [4]byte
	if _, err := io.ReadFull(c.nc, prefix[:]); err != nil {
		c.t.Fatalf("read response size: %v", err)
	}
	buf := make([]byte, binary.BigEndian.Uint32(prefix[:]))
	if _, err := io.ReadFull(c.nc, buf); err != nil {
		c.t.Fatalf("read response: %v", err)
	}
	if len(buf) < 4 {
		c.t.Fatalf("response of %d bytes has no correlation id", len(buf))
	}
	return int32(binary.BigEndian.Uint32(buf)), buf[4:]
}

// recv reads the response to req (sent with correlation id corr), decoding
// it at version, with the header version a client would expect.
func (c *wireClient) recv(req kmsg.Request, corr int32, version int16) kmsg.Response {
	c.t.Helper()
	got, body := c.readRaw()
	if got != corr {
		c.t.Fatalf("correlation id %d, want %d", got, corr)
	}
	resp := req.ResponseKind()
	resp.SetVersion(version)
	if resp.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() {
		if len(body) == 0 || body[0] != 0 {
			c.t.Fatalf("flexible response header: want an empty tag section, got % x", body[:min(len(body), 8)])
		}
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		c.t.Fatalf("decode %s v%d response: %v", kmsg.NameForKey(req.Key()), version, err)
	}
	return resp
}

// roundTrip sends req and returns its response at the request's version.
func (c *wireClient) roundTrip(req kmsg.Request) kmsg.Response {
	c.t.Helper()
	return c.recv(req, c.send(req), req.GetVersion())
}

// expectClosed asserts the server closes the connection: the next read ends
// with EOF or a reset, not a response and not the test's deadline.
func (c *wireClient) expectClosed() {
	c.t.Helper()
	var b [1]byte
	n, err := c.nc.Read(b[:])
	switch {
	case n > 0:
		c.t.Fatalf("got a response byte, want the connection closed")
	case isTimeout(err):
		c.t.Fatalf("connection still open after %v", testTimeout)
	case err == nil:
		c.t.Fatalf("read returned nothing and no error")
	}
}
