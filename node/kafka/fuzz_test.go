package kafka

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

var rewriteSeeds = flag.Bool("rewrite-seeds", false, "rewrite testdata/fuzz/FuzzRequestFrame from fuzzSeeds")

// fuzzMaxFrame keeps fuzz inputs' frames small; the limit's code path is the
// same as with the default.
const fuzzMaxFrame = 1 << 20

// FuzzRequestFrame feeds a connection's byte stream through everything the
// reader and the serve goroutine do with it, minus the socket: frame
// reading, header and body decoding, the handler (against the fake broker
// and topic admin)
// and response encoding, decoded back as a client would. Any panic fails.
func FuzzRequestFrame(f *testing.F) {
	for _, seed := range fuzzSeeds() {
		f.Add(seed.frame)
	}
	f.Fuzz(func(t *testing.T, stream []byte) {
		// A fresh server and fake per input: the fake admin keeps
		// the topics it creates.
		s, err := NewServer(&fakeAdmin{fakeBroker: newFakeBroker("127.0.0.1:9092")}, Options{MaxRequestBytes: fuzzMaxFrame})
		if err != nil {
			t.Fatal(err)
		}
		r := bytes.NewReader(stream)
		for {
			frame, err := readFrame(r, fuzzMaxFrame)
			if err != nil {
				return
			}
			req, err := decodeRequest(frame, s.table)
			if err != nil {
				if !errors.Is(err, ErrMalformedRequest) && !errors.Is(err, ErrUnknownAPI) && !errors.Is(err, ErrUnsupportedVersion) && !errors.Is(err, ErrFrameTooLarge) {
					t.Fatalf("decode error %v wraps no sentinel", err)
				}
				return
			}
			resp, err := req.api.handle(context.Background(), s, req)
			if err != nil {
				return
			}
			checkResponse(appendResponse(nil, req.correlationID, resp), req, resp)
		}
	})
}

type fuzzSeed struct {
	name  string
	frame []byte
}

// fuzzSeeds are real encoded requests, alone and pipelined, plus a few bad
// frames; the committed corpus is written from them (-rewrite-seeds).
func fuzzSeeds() []fuzzSeed {
	rf := kmsg.NewRequestFormatter(kmsg.FormatterClientID("seed"))
	enc := func(req kmsg.Request, corr int32) []byte { return rf.AppendRequest(nil, req, corr) }
	av := func(v int16) []byte {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = v
		req.ClientSoftwareName, req.ClientSoftwareVersion = "kgo", "1.22.3"
		return enc(req, int32(v)+1)
	}
	md := func(v int16, topics ...string) []byte {
		req := metadataRequest(v, topics...)
		req.AllowAutoTopicCreation = true
		return enc(req, 100+int32(v))
	}
	mdByID := func() []byte {
		req := metadataRequest(12)
		req.Topics = []kmsg.MetadataRequestTopic{{TopicID: ordersID}, {TopicID: [16]byte{1}}}
		return enc(req, 200)
	}
	create := func(v int16) []byte {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version = v
		req.TimeoutMillis = 1000
		cfg := createTopic("with-config", 2, 1)
		cfg.Configs = []kmsg.CreateTopicsRequestTopicConfig{{Name: "retention.ms", Value: kmsg.StringPtr("1000")}}
		req.Topics = []kmsg.CreateTopicsRequestTopic{cfg, assigned("manual", []int32{1, 2}, []int32{2, 1}), createTopic("dup", 1, 1), createTopic("dup", -1, -1), createTopic("bad name", 1, 1)}
		return enc(req, 300+int32(v))
	}
	del := func(v int16) []byte {
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.Version = v
		req.TopicNames = []string{"orders", "nope"}
		req.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: kmsg.StringPtr("orders")}, {TopicID: offsetID}, {}}
		return enc(req, 400+int32(v))
	}
	return []fuzzSeed{
		{"createtopics-v0", create(0)},
		{"createtopics-v5-flexible", create(5)},
		{"createtopics-v7", create(7)},
		{"deletetopics-v0", del(0)},
		{"deletetopics-v6-by-id", del(6)},
		{"apiversions-v0", av(0)},
		{"apiversions-v3", av(3)},
		{"apiversions-v5-unsupported", av(5)},
		{"metadata-v0-all", md(0)},
		{"metadata-v1-orders", md(1, "orders", "nope")},
		{"metadata-v9-flexible", md(9, "orders")},
		{"metadata-v12-by-id", mdByID()},
		{"pipelined", bytes.Join([][]byte{av(3), md(12, "orders"), av(1), md(4)}, nil)},
		{"negative-size", []byte{0xff, 0xff, 0xff, 0xff}},
		{"array-longer-than-frame", append(md(1)[:len(md(1))-4], 0x7f, 0xff, 0xff, 0xff)},
	}
}

func seedDir() string { return filepath.Join("testdata", "fuzz", "FuzzRequestFrame") }

// TestFuzzSeedCorpus keeps the committed corpus equal to fuzzSeeds, so that
// plain `go test` runs every seed through the fuzz body.
func TestFuzzSeedCorpus(t *testing.T) {
	for _, seed := range fuzzSeeds() {
		path := filepath.Join(seedDir(), seed.name)
		want := fmt.Sprintf("go test fuzz v1\n[]byte(%s)\n", strconv.Quote(string(seed.frame)))
		if *rewriteSeeds {
			if err := os.MkdirAll(seedDir(), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) || err == nil && string(got) != want {
			t.Errorf("%s is stale or missing: run go test -run TestFuzzSeedCorpus -rewrite-seeds", path)
		} else if err != nil {
			t.Fatal(err)
		}
	}
}

// TestFuzzSeedsDecode: the request seeds really are requests the server
// answers (a corpus of only rejected inputs would fuzz nothing past the
// header).
func TestFuzzSeedsDecode(t *testing.T) {
	s, err := NewServer(&fakeAdmin{fakeBroker: newFakeBroker("127.0.0.1:9092")}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, seed := range fuzzSeeds() {
		if strings.Contains(seed.name, "negative") || strings.Contains(seed.name, "longer") {
			continue
		}
		r := bytes.NewReader(seed.frame)
		for {
			frame, err := readFrame(r, DefaultMaxRequestBytes)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", seed.name, err)
			}
			req, err := decodeRequest(frame, s.table)
			if err != nil {
				t.Fatalf("%s: %v", seed.name, err)
			}
			if _, err := req.api.handle(context.Background(), s, req); err != nil {
				t.Fatalf("%s: %v", seed.name, err)
			}
		}
	}
}
