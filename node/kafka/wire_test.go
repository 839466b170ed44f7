package kafka

import (
	"bytes"
	"encoding/binary"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestApiVersionsEveryVersion(t *testing.T) {
	ts := startServer(t, Options{})
	c := dial(t, ts.addr)
	for v := int16(0); v <= 3; v++ {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = v
		req.ClientSoftwareName, req.ClientSoftwareVersion = "sluice-test", "1.0"
		resp := c.roundTrip(req).(*kmsg.ApiVersionsResponse)
		if resp.ErrorCode != 0 {
			t.Fatalf("v%d: error %d", v, resp.ErrorCode)
		}
		want := []kmsg.ApiVersionsResponseApiKey{
			{ApiKey: kmsg.Metadata.Int16(), MinVersion: 0, MaxVersion: 12},
			{ApiKey: kmsg.FindCoordinator.Int16(), MinVersion: 0, MaxVersion: 6},
			{ApiKey: kmsg.SASLHandshake.Int16(), MinVersion: 0, MaxVersion: 1},
			{ApiKey: kmsg.ApiVersions.Int16(), MinVersion: 0, MaxVersion: 3},
			{ApiKey: kmsg.SASLAuthenticate.Int16(), MinVersion: 0, MaxVersion: 2},
			{ApiKey: kmsg.DescribeCluster.Int16(), MinVersion: 0, MaxVersion: 1},
			{ApiKey: kmsg.DescribeTopicPartitions.Int16(), MinVersion: 0, MaxVersion: 0},
		}
		if len(resp.ApiKeys) != len(want) {
			t.Fatalf("v%d: %d api keys, want %d: %+v", v, len(resp.ApiKeys), len(want), resp.ApiKeys)
		}
		for i, k := range resp.ApiKeys {
			if k.ApiKey != want[i].ApiKey || k.MinVersion != want[i].MinVersion || k.MaxVersion != want[i].MaxVersion {
				t.Errorf("v%d: api key %d = %+v, want %+v", v, i, k, want[i])
			}
		}
	}
}

// TestApiVersionsUnsupportedVersion: KIP-511. A version above ours (kgo
// sends v5 first) is answered at v0 with UNSUPPORTED_VERSION and ApiVersions'
// own range, in a v0 header, and the connection stays usable.
func TestApiVersionsUnsupportedVersion(t *testing.T) {
	ts := startServer(t, Options{})
	c := dial(t, ts.addr)
	for _, v := range []int16{4, 5, 100, -1} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 3 // encode a v3 body, then claim version v
		frame, corr := c.encode(req)
		binary.BigEndian.PutUint16(frame[6:], uint16(v))
		c.write(frame)
		resp := c.recv(req, corr, 0).(*kmsg.ApiVersionsResponse)
		if resp.ErrorCode != kerr.UnsupportedVersion.Code {
			t.Fatalf("v%d: error %d, want UNSUPPORTED_VERSION", v, resp.ErrorCode)
		}
		if len(resp.ApiKeys) != 1 || resp.ApiKeys[0].ApiKey != 18 || resp.ApiKeys[0].MinVersion != 0 || resp.ApiKeys[0].MaxVersion != 3 {
			t.Fatalf("v%d: api keys %+v, want only ApiVersions 0-3", v, resp.ApiKeys)
		}
	}
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "x", "1"
	if resp := c.roundTrip(req).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 {
		t.Fatalf("retry at v3: error %d", resp.ErrorCode)
	}
}

func TestApiVersionsInvalidSoftwareName(t *testing.T) {
	ts := startServer(t, Options{})
	c := dial(t, ts.addr)
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "bad name!", "1.0"
	resp := c.roundTrip(req).(*kmsg.ApiVersionsResponse)
	if resp.ErrorCode != kerr.InvalidRequest.Code || len(resp.ApiKeys) != 0 {
		t.Fatalf("got error %d with %d keys, want INVALID_REQUEST and none", resp.ErrorCode, len(resp.ApiKeys))
	}
}

// TestPipelinedResponsesInOrder sends 50 requests, of two APIs and several
// versions (flexible and not), before reading any response.
func TestPipelinedResponsesInOrder(t *testing.T) {
	for name, opts := range map[string]Options{
		"queue of 4 requests": {MaxQueuedRequests: 4},
		// Every frame waits for the one before to be answered.
		"queue of 1 byte": {MaxQueuedBytes: 1},
		"defaults":        {},
	} {
		t.Run(name, func(t *testing.T) { testPipelined(t, opts) })
	}
}

func testPipelined(t *testing.T, opts Options) {
	ts := startServer(t, opts)
	c := dial(t, ts.addr)
	type sent struct {
		req  kmsg.Request
		corr int32
	}
	var all []sent
	var batch []byte
	for i := 0; i < 50; i++ {
		var req kmsg.Request
		if i%2 == 0 {
			r := kmsg.NewPtrMetadataRequest()
			r.Version = int16(i/2) % 13
			if r.Version > 0 {
				r.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("orders")}}
			}
			req = r
		} else {
			r := kmsg.NewPtrApiVersionsRequest()
			r.Version = int16(i/2) % 4
			r.ClientSoftwareName, r.ClientSoftwareVersion = "pipeline", "1"
			req = r
		}
		frame, corr := c.encode(req)
		batch = append(batch, frame...)
		all = append(all, sent{req, corr})
	}
	c.write(batch)
	for _, s := range all {
		// recv checked the correlation id; the body must be the answer
		// to this request, not one of the other API decoded as this one.
		switch r := c.recv(s.req, s.corr, s.req.GetVersion()).(type) {
		case *kmsg.MetadataResponse:
			if len(r.Brokers) == 0 {
				t.Fatalf("correlation %d: Metadata v%d answer lists no broker: %+v", s.corr, r.Version, r)
			}
			if r.Version > 0 && (len(r.Topics) != 1 || r.Topics[0].Topic == nil || *r.Topics[0].Topic != "orders") {
				t.Fatalf("correlation %d: Metadata v%d answer's topics %+v, want just orders", s.corr, r.Version, r.Topics)
			}
		case *kmsg.ApiVersionsResponse:
			if r.ErrorCode != 0 || !slices.ContainsFunc(r.ApiKeys, func(k kmsg.ApiVersionsResponseApiKey) bool { return k.ApiKey == kmsg.Metadata.Int16() }) {
				t.Fatalf("correlation %d: ApiVersions v%d answer: error %d, keys %+v; want Metadata listed", s.corr, r.Version, r.ErrorCode, r.ApiKeys)
			}
		default:
			t.Fatalf("correlation %d: answer %T", s.corr, r)
		}
	}
}

func TestOversizedFrameClosesConnection(t *testing.T) {
	ts := startServer(t, Options{MaxRequestBytes: 1024})
	c := dial(t, ts.addr)
	// A valid request first: it is answered, then the bad frame closes.
	corr := c.send(kmsg.NewPtrApiVersionsRequest())
	c.write([]byte{0, 0, 4, 1}) // 1025 bytes claimed, none sent
	c.recv(kmsg.NewPtrApiVersionsRequest(), corr, 0)
	c.expectClosed()
	ts.logs.waitFor(t, "closing connection", "1025 > socket.request.max.bytes 1024")

	// The default limit: a 1 GiB claim is refused before any allocation.
	ts2 := startServer(t, Options{})
	c2 := dial(t, ts2.addr)
	c2.write([]byte{0x40, 0, 0, 0})
	c2.expectClosed()
	ts2.logs.waitFor(t, "closing connection", "1073741824 > socket.request.max.bytes 104857600")
}

func TestNegativeFrameClosesConnection(t *testing.T) {
	ts := startServer(t, Options{})
	c := dial(t, ts.addr)
	c.write([]byte{0xff, 0xff, 0xff, 0xfe})
	c.expectClosed()
	ts.logs.waitFor(t, "closing connection", "negative frame size")
}

func TestUnknownAPIKeyClosesConnection(t *testing.T) {
	ts := startServer(t, Options{})
	for _, key := range []int16{kmsg.Produce.Int16(), 999, -3} {
		c := dial(t, ts.addr)
		frame := kbin.AppendInt16(nil, key)
		frame = kbin.AppendInt16(frame, 0)
		frame = kbin.AppendInt32(frame, 77)
		frame = kbin.AppendNullableString(frame, nil)
		c.write(append(kbin.AppendInt32(nil, int32(len(frame))), frame...))
		c.expectClosed()
	}
	ts.logs.waitFor(t, "closing connection", "unknown api key 999")
	ts.logs.waitFor(t, "closing connection", "unknown api key 0 ")
}

func TestUnsupportedMetadataVersionClosesConnection(t *testing.T) {
	ts := startServer(t, Options{})
	c := dial(t, ts.addr)
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 13 // kmsg knows it, we do not advertise it
	c.send(req)
	c.expectClosed()
	ts.logs.waitFor(t, "closing connection", "Metadata v13 (supported 0-12)")
}

func TestGarbledHeaderClosesConnection(t *testing.T) {
	cases := map[string][]byte{
		"empty frame":            {},
		"short header":           {0, 18, 0},
		"client id past the end": {0, 3, 0, 1, 0, 0, 0, 9, 0x7f, 0xff, 'a'},
		"flexible tags past end": {0, 3, 0, 9, 0, 0, 0, 9, 0xff, 0xff, 0x05},
	}
	for name, frame := range cases {
		t.Run(name, func(t *testing.T) {
			ts := startServer(t, Options{})
			c := dial(t, ts.addr)
			c.write(append(kbin.AppendInt32(nil, int32(len(frame))), frame...))
			c.expectClosed()
			ts.logs.waitFor(t, "closing connection", "malformed request")
		})
	}
}

// TestCollectionLongerThanFrame: a Metadata request whose topic array claims
// a billion entries in a 20-byte body is refused by kmsg without allocating
// for them, and the connection closes.
func TestCollectionLongerThanFrame(t *testing.T) {
	ts := startServer(t, Options{})
	for _, v := range []int16{1, 9} {
		c := dial(t, ts.addr)
		req := kmsg.NewPtrMetadataRequest()
		req.Version = v
		frame, _ := c.encode(req)
		hdr := 4 + 8 + 2 + len("wire-test")
		if req.IsFlexible() {
			hdr++
		}
		body := frame[hdr:]
		if v < 9 {
			body = kbin.AppendInt32(body[:0], 1_000_000_000)
		} else {
			body = kbin.AppendUvarint(body[:0], 1_000_000_001)
		}
		body = append(body, bytes.Repeat([]byte{0}, 16)...)
		frame = append(frame[:hdr], body...)
		binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
		c.write(frame)
		c.expectClosed()
		ts.logs.waitFor(t, "closing connection", "malformed request", "Metadata v"+string(rune('0'+v%10)))
	}
}

func TestTruncatedFrameThenEOF(t *testing.T) {
	ts := startServer(t, Options{})
	c := dial(t, ts.addr)
	frame, _ := c.encode(kmsg.NewPtrMetadataRequest())
	c.write(frame[:len(frame)-2])
	if err := c.nc.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	c.expectClosed()
	ts.logs.waitFor(t, "closing connection: read failed", "unexpected EOF")
}

// TestMetadataOverItsLimit: a Metadata frame under socket.request.max.bytes
// but over Metadata's own limit closes the connection before decoding.
func TestMetadataOverItsLimit(t *testing.T) {
	ts := startServer(t, Options{})
	c := dial(t, ts.addr)
	req := metadataRequest(1)
	frame, _ := c.encode(req)
	frame = append(frame[:len(frame)-4], kbin.AppendInt32(nil, 4<<20+1)...)
	frame = append(frame, make([]byte, 8<<20+2)...)
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	go func() { _, _ = c.nc.Write(frame) }() // the server stops reading at the close
	c.expectClosed()
	ts.logs.waitFor(t, "closing connection", "Metadata request of", "over its limit of 8388608")
}

func TestValidSoftwareName(t *testing.T) {
	for s, want := range map[string]bool{
		"kgo": true, "a": true, "1.22.3": true, "apache-kafka-java": true, "a.-b": true,
		"": false, "-a": false, "a-": false, ".a": false, "a b": false, "a_b": false, "é": false,
	} {
		if got := validSoftwareName(s); got != want {
			t.Errorf("validSoftwareName(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestFlexibleHeaderTagsSkipped: a request header v2 carrying tagged fields
// (none defined today, so all unknown) is read past, not misparsed.
func TestFlexibleHeaderTagsSkipped(t *testing.T) {
	ts := startServer(t, Options{})
	c := dial(t, ts.addr)
	req := metadataRequest(12, "orders")
	frame := kbin.AppendInt16(nil, req.Key())
	frame = kbin.AppendInt16(frame, req.Version)
	frame = kbin.AppendInt32(frame, 42)
	frame = kbin.AppendNullableString(frame, kmsg.StringPtr("tagger"))
	frame = kbin.AppendUvarint(frame, 2) // two tagged fields
	frame = kbin.AppendUvarint(frame, 0)
	frame = kbin.AppendUvarint(frame, uint32(len("ignored")))
	frame = append(frame, "ignored"...)
	frame = kbin.AppendUvarint(frame, 7)
	frame = kbin.AppendUvarint(frame, 3)
	frame = append(frame, 1, 2, 3)
	frame = req.AppendTo(frame)
	c.write(append(kbin.AppendInt32(nil, int32(len(frame))), frame...))
	resp := c.recv(req, 42, 12).(*kmsg.MetadataResponse)
	if len(resp.Topics) != 1 || *resp.Topics[0].Topic != "orders" {
		t.Fatalf("topics %+v", resp.Topics)
	}
}
