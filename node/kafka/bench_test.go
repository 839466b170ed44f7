package kafka

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/segment"
)

// benchRequests are the requests the benchmarks send, encoded once.
func benchRequests() map[string]kmsg.Request {
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	av.ClientSoftwareName, av.ClientSoftwareVersion = "bench", "1"
	md := metadataRequest(12, "orders")
	mdAll := metadataRequest(12)
	mdAll.Topics = nil
	return map[string]kmsg.Request{"ApiVersions": av, "Metadata": md, "MetadataAll": mdAll}
}

// BenchmarkDispatch measures one request through the server without the
// socket: frame read, decode, handler (fake broker), response encoding.
func BenchmarkDispatch(b *testing.B) {
	for name, req := range benchRequests() {
		b.Run(name, func(b *testing.B) {
			s, err := NewServer(newFakeBroker("127.0.0.1:9092"), Options{})
			if err != nil {
				b.Fatal(err)
			}
			frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench")).AppendRequest(nil, req, 1)
			rd := bytes.NewReader(frame)
			var out []byte
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for b.Loop() {
				rd.Reset(frame)
				payload, err := readFrame(rd, DefaultMaxRequestBytes)
				if err != nil {
					b.Fatal(err)
				}
				r, err := decodeRequest(payload, s.table)
				if err != nil {
					b.Fatal(err)
				}
				resp, err := r.api.handle(context.Background(), s, r)
				if err != nil {
					b.Fatal(err)
				}
				out = appendResponse(out[:0], r.correlationID, resp)
			}
		})
	}
}

// BenchmarkWire measures requests pipelined over one TCP connection on
// 127.0.0.1: a writer goroutine keeps sending while the benchmark reads the
// responses. req/s is the connection's throughput.
func BenchmarkWire(b *testing.B) {
	for name, req := range benchRequests() {
		b.Run(name, func(b *testing.B) { benchWire(b, req, Options{}) })
	}
}

// BenchmarkWireProduce is BenchmarkWire for Produce (v9, acks=1, one
// partition, one batch of 1000 random records of 100 B or 1 KiB, about
// what kgo's default batching sends under load) to a Logs that keeps
// nothing: the protocol layer's own cost per request, allocations
// included, without the log.
func BenchmarkWireProduce(b *testing.B) {
	for _, size := range []int{100, 1024} {
		vals := make([][]byte, 1000)
		for i := range vals {
			vals[i] = make([]byte, size)
			_, _ = rand.Read(vals[i])
		}
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis = 9, 1, 30000
		t := kmsg.NewProduceRequestTopic()
		t.Topic = "orders"
		p := kmsg.NewProduceRequestTopicPartition()
		p.Records = segment.BuildBatch(1, vals...)
		t.Partitions = []kmsg.ProduceRequestTopicPartition{p}
		req.Topics = []kmsg.ProduceRequestTopic{t}
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			benchWireTo(b, func(addr string) Broker { return &sinkLogs{fakeBroker: newFakeBroker(addr)} }, req, Options{})
		})
	}
}

// sinkLogs is a Logs that writes nothing anywhere: Produce answers the next
// offsets at once.
type sinkLogs struct {
	*fakeBroker
	next atomic.Int64
}

func (s *sinkLogs) Produce(_ context.Context, p ProducePartition) ProduceResult {
	return ProduceResult{BaseOffset: s.next.Add(1000) - 1000}
}

func (s *sinkLogs) Fetch(context.Context, FetchPartition) FetchResult {
	return FetchResult{Err: kerr.UnknownTopicOrPartition}
}

func (s *sinkLogs) Appended() <-chan struct{} { return nil }

func (s *sinkLogs) ListOffset(context.Context, ListOffsetPartition) ListOffsetResult {
	return ListOffsetResult{Err: kerr.UnknownTopicOrPartition}
}

func (s *sinkLogs) EndOffsetForEpoch(context.Context, EpochPartition) EpochResult {
	return EpochResult{Err: kerr.UnknownTopicOrPartition}
}

// BenchmarkWireObserver is BenchmarkWire's Metadata with and without an
// Observer that does nothing: the cost of timing each request.
func BenchmarkWireObserver(b *testing.B) {
	req := benchRequests()["Metadata"]
	b.Run("none", func(b *testing.B) { benchWire(b, req, Options{}) })
	b.Run("nop", func(b *testing.B) { benchWire(b, req, Options{Observer: nopObserver{}}) })
}

type nopObserver struct{}

func (nopObserver) ObserveRequest(*RequestTiming) {}

// benchWire sends req pipelined on one connection to a server with opts
// over a fakeBroker.
func benchWire(b *testing.B, req kmsg.Request, opts Options) {
	benchWireTo(b, func(addr string) Broker { return newFakeBroker(addr) }, req, opts)
}

// benchWireTo sends req pipelined on one connection to a server with opts
// over the Broker newBroker returns for the server's address.
func benchWireTo(b *testing.B, newBroker func(addr string) Broker, req kmsg.Request, opts Options) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	opts.Logger = slog.New(slog.DiscardHandler)
	s, err := NewServer(newBroker(ln.Addr().String()), opts)
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = s.Serve(ln) }()
	defer s.Close()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	if err := nc.SetDeadline(time.Now().Add(5 * time.Minute)); err != nil {
		b.Fatal(err)
	}

	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench")).AppendRequest(nil, req, 1)
	n := b.N
	go func() {
		bw := bufio.NewWriterSize(nc, 64<<10)
		for i := 0; i < n; i++ {
			if _, err := bw.Write(frame); err != nil {
				return
			}
		}
		_ = bw.Flush()
	}()
	br := bufio.NewReaderSize(nc, 64<<10)
	var prefix [4]byte
	buf := make([]byte, 0, 4096)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < n; i++ {
		if _, err := io.ReadFull(br, prefix[:]); err != nil {
			b.Fatal(err)
		}
		size := int(binary.BigEndian.Uint32(prefix[:]))
		if cap(buf) < size {
			buf = make([]byte, size)
		}
		buf = buf[:size]
		if _, err := io.ReadFull(br, buf); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "req/s")
}
