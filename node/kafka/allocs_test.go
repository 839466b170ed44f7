package kafka

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/segment"
)

// maxProduceAllocs bounds the protocol layer's allocations per Produce
// request (issue 21): frame read into a pooled buffer, decode, handler,
// response encoding and the frame's recycling, for one partition's batch
// of 64 records of 1 KiB to a Logs that keeps nothing. Just above what it
// does now; a count, not a timing.
const maxProduceAllocs = 12

// TestProduceAllocs: testing.AllocsPerRun of one Produce request through
// the server's steps without the socket, as conn runs them; the count does
// not grow with the records in the batch.
func TestProduceAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts")
	}
	s, err := NewServer(&sinkLogs{fakeBroker: newFakeBroker("127.0.0.1:9092")}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	vals := make([][]byte, 64)
	for i := range vals {
		vals[i] = make([]byte, 1024)
		_, _ = rand.Read(vals[i])
	}
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, 1, 30000
	tp := kmsg.NewProduceRequestTopic()
	tp.Topic = "orders"
	p := kmsg.NewProduceRequestTopicPartition()
	p.Records = segment.BuildBatch(1, vals...)
	tp.Partitions = []kmsg.ProduceRequestTopicPartition{p}
	req.Topics = []kmsg.ProduceRequestTopic{tp}
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("allocs")).AppendRequest(nil, req, 1)
	rd := bytes.NewReader(frame)
	br := bufio.NewReaderSize(rd, readBufferSize) // as conn reads
	var out []byte
	round := func() {
		rd.Reset(frame)
		br.Reset(rd)
		if _, err := br.Peek(4); err != nil {
			t.Fatal(err)
		}
		size, err := readFrameSize(br, DefaultMaxRequestBytes)
		if err != nil {
			t.Fatal(err)
		}
		payload, err := readFrameBody(br, size, &s.frames)
		if err != nil {
			t.Fatal(err)
		}
		r, err := decodeRequest(payload, s.table)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := r.api.handle(context.Background(), s, r)
		if err != nil {
			t.Fatal(err)
		}
		out = appendResponse(out[:0], r.correlationID, resp)
		if !r.api.recycle {
			t.Fatal("Produce frames are not recycled")
		}
		s.frames.put(payload)
	}
	round()
	n := testing.AllocsPerRun(50, round)
	t.Logf("allocations per Produce request of 64 records of 1 KiB: %.0f", n)
	if n > maxProduceAllocs+raceAllocSlack {
		t.Errorf("%.0f allocations per Produce request, want at most %d", n, maxProduceAllocs+raceAllocSlack)
	}
}
