package kafka

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestOptionsValidate(t *testing.T) {
	for _, o := range []Options{{MaxRequestBytes: 9}, {MaxRequestBytes: -5}, {MaxQueuedRequests: -1}, {MaxQueuedBytes: -1}} {
		if _, err := NewServer(&fakeBroker{}, o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%+v: %v, want ErrInvalidOptions", o, err)
		}
	}
	if _, err := NewServer(nil, Options{}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("nil broker: %v, want ErrInvalidOptions", err)
	}
}

// TestShutdownDrains: requests already read when Shutdown starts are
// answered, in order; then the connection closes and no new one is taken.
func TestShutdownDrains(t *testing.T) {
	ts := startServer(t, Options{})
	entered, release := ts.broker.hold()
	c := dial(t, ts.addr)
	md := metadataRequest(12, "orders")
	av := kmsg.NewPtrApiVersionsRequest()
	corrMD, corrAV := c.send(md), c.send(av)
	<-entered            // the Metadata handler is running
	waitQueued(t, ts, 1) // and ApiVersions was read and queued behind it

	shut := make(chan error, 1)
	go func() { shut <- ts.Shutdown(context.Background()) }()
	waitClosed(t, ts.addr)
	release()

	if resp := c.recv(md, corrMD, 12).(*kmsg.MetadataResponse); len(resp.Topics) != 1 {
		t.Fatalf("metadata during shutdown: %+v", resp.Topics)
	}
	c.recv(av, corrAV, 0)
	c.expectClosed()
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

// TestShutdownDeadline: a handler that does not finish is cut off when the
// Shutdown context ends, through the context it was given.
func TestShutdownDeadline(t *testing.T) {
	ts := startServer(t, Options{})
	entered, release := ts.broker.hold()
	defer release()
	c := dial(t, ts.addr)
	c.send(metadataRequest(12, "orders"))
	<-entered

	ctx, cancel := context.WithCancel(context.Background())
	shut := make(chan error, 1)
	go func() { shut <- ts.Shutdown(ctx) }()
	waitClosed(t, ts.addr)
	cancel()
	if err := <-shut; !errors.Is(err, context.Canceled) {
		t.Fatalf("Shutdown: %v, want context.Canceled", err)
	}
	c.expectClosed()
}

// waitQueued waits until the server has read n requests that wait behind
// the one being answered. Shutdown answers what was read; a request still
// in the socket's buffer when it begins is not read (the client sees the
// connection close and retries elsewhere), so a test of the drain must
// know its requests were read.
func waitQueued(t *testing.T, ts *testServer, n int) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for {
		ts.mu.Lock()
		queued := 0
		for c := range ts.conns {
			queued += len(c.queue)
		}
		ts.mu.Unlock()
		if queued >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d requests queued after %v, want %d", queued, testTimeout, n)
		}
		runtime.Gosched()
	}
}

// waitClosed waits until the listener at addr refuses connections.
func waitClosed(t *testing.T, addr string) {
	t.Helper()
	for i := 0; ; i++ {
		nc, err := net.DialTimeout("tcp", addr, testTimeout)
		if err != nil {
			return
		}
		// Accepted by the kernel before the listener closed: the
		// server closes it; wait for that, then try again.
		var b [1]byte
		_ = nc.SetReadDeadline(time.Now().Add(testTimeout))
		_, _ = nc.Read(b[:])
		_ = nc.Close()
		if i > 1000 {
			t.Fatalf("listener %s still accepting", addr)
		}
	}
}

// TestResponseNotHeldBehindBlockedHandler: a response already encoded is
// written while the next request's handler blocks.
func TestResponseNotHeldBehindBlockedHandler(t *testing.T) {
	ts := startServer(t, Options{})
	entered, release := ts.broker.hold()
	defer release()
	c := dial(t, ts.addr)
	av := kmsg.NewPtrApiVersionsRequest()
	corrAV := c.send(av)
	md := metadataRequest(12, "orders")
	corrMD := c.send(md)
	<-entered
	c.recv(av, corrAV, 0) // while Metadata is still blocked
	release()
	c.recv(md, corrMD, 12)
}

// TestConcurrentConnections: many connections pipelining at once, each
// getting its own responses in its own order (run under -race by make test).
func TestConcurrentConnections(t *testing.T) {
	ts := startServer(t, Options{MaxQueuedRequests: 2})
	const conns, perConn = 8, 40
	errs := make(chan error, conns)
	for i := 0; i < conns; i++ {
		c := dial(t, ts.addr) // on the test goroutine: dial may t.Fatal
		go func() {
			errs <- func() error {
				var batch []byte
				var reqs []kmsg.Request
				for j := 0; j < perConn; j++ {
					var req kmsg.Request = metadataRequest(int16(j%13), "orders")
					if j%3 == 0 {
						req = kmsg.NewPtrApiVersionsRequest()
					}
					frame, _ := c.encode(req)
					batch = append(batch, frame...)
					reqs = append(reqs, req)
				}
				if _, err := c.nc.Write(batch); err != nil {
					return err
				}
				for j := range reqs {
					var hdr [8]byte
					if _, err := io.ReadFull(c.nc, hdr[:]); err != nil {
						return err
					}
					if corr := int32(binary.BigEndian.Uint32(hdr[4:])); corr != int32(j+1) {
						return fmt.Errorf("response %d has correlation id %d", j, corr)
					}
					rest := int64(binary.BigEndian.Uint32(hdr[:])) - 4
					if _, err := io.CopyN(io.Discard, c.nc, rest); err != nil {
						return err
					}
				}
				return nil
			}()
		}()
	}
	for i := 0; i < conns; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestCloseWithBusyConnections: Close returns with connections mid-request
// and a handler blocked, and leaves no goroutine of the server running.
func TestCloseWithBusyConnections(t *testing.T) {
	ts := startServer(t, Options{})
	entered, release := ts.broker.hold()
	defer release()
	c := dial(t, ts.addr)
	c.send(metadataRequest(12, "orders"))
	<-entered
	idle := dial(t, ts.addr)
	if err := ts.Close(); err != nil {
		t.Fatal(err)
	}
	c.expectClosed()
	idle.expectClosed()
}

// TestShutdownResetsUnusedConnections: a connection the server accepted
// but read nothing from is reset at shutdown, not closed with a FIN: the
// client may be sending its first request (ApiVersions), and Kafka clients
// retry a reset but take an EOF before the first response for a TLS or
// SASL misconfiguration (franz-go fails the request). A connection that
// was used gets its answers and then an orderly close (TestShutdownDrains).
func TestShutdownResetsUnusedConnections(t *testing.T) {
	ts := startServer(t, Options{})
	nc, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	deadline := time.Now().Add(testTimeout)
	for { // until the server has accepted it
		ts.mu.Lock()
		n := len(ts.conns)
		ts.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server holds %d connections, want 1", n)
		}
		runtime.Gosched()
	}
	if err := ts.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	_ = nc.SetReadDeadline(time.Now().Add(testTimeout))
	var b [1]byte
	_, err = nc.Read(b[:])
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("read after shutdown: %v, want a connection reset", err)
	}
}
