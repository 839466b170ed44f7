package kafka

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// firstChunk is the most a frame buffer starts with. The buffer then doubles
// as bytes actually arrive, so a size prefix that lies costs at most twice
// what the peer really sent, never the size it claimed.
const firstChunk = 64 << 10

// readFrame reads one size-prefixed frame from r and returns its payload (the
// bytes after the int32 size). io.EOF means the peer closed cleanly between
// frames; a peer gone mid-frame is io.ErrUnexpectedEOF.
func readFrame(r io.Reader, maxBytes int32) ([]byte, error) {
	size, err := readFrameSize(r, maxBytes)
	if err != nil {
		return nil, err
	}
	return readFrameBody(r, size, nil)
}

// readFrameSize reads a frame's size prefix and refuses a negative one or one
// over maxBytes.
func readFrameSize(r io.Reader, maxBytes int32) (int32, error) {
	var size int32
	if br, ok := r.(*bufio.Reader); ok && br.Buffered() >= 4 {
		// The connection's reader: no prefix buffer escaping through
		// io.ReadFull, which cost an allocation per request.
		b, _ := br.Peek(4)
		size = int32(binary.BigEndian.Uint32(b))
		_, _ = br.Discard(4)
	} else {
		var prefix [4]byte
		if _, err := io.ReadFull(r, prefix[:]); err != nil {
			return 0, err
		}
		size = int32(binary.BigEndian.Uint32(prefix[:]))
	}
	switch {
	case size < 0:
		return 0, fmt.Errorf("%w: %d", ErrNegativeFrame, size)
	case size > maxBytes:
		return 0, fmt.Errorf("%w: %d > socket.request.max.bytes %d", ErrFrameTooLarge, size, maxBytes)
	}
	return size, nil
}

// readFrameBody reads the size bytes of a frame after its prefix. A frame
// of more than firstChunk bytes that fits a class of pool goes into a
// buffer from pool when it has one (a nil pool has none). Otherwise the
// buffer grows as bytes arrive: by four times, so a 1 MiB produce frame
// costs three allocations and 320 KiB of copying (doubling cost five and
// 960 KiB), while the buffer stays within four times the bytes received.
func readFrameBody(r io.Reader, size int32, pool *framePool) ([]byte, error) {
	var buf []byte
	if size > firstChunk {
		buf = pool.get(int(size))
	}
	if buf == nil {
		buf = make([]byte, 0, min(int(size), firstChunk))
	}
	for len(buf) < int(size) {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), growFrame(cap(buf), int(size)))
			copy(grown, buf)
			buf = grown
		}
		// Never past size: a pooled buffer is larger than its frame, and
		// what follows belongs to the next one.
		n, err := r.Read(buf[len(buf):min(cap(buf), int(size))])
		buf = buf[:len(buf)+n]
		if err != nil && len(buf) < int(size) {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return buf, nil
}

// growFrame is the next capacity of a frame buffer holding have bytes (its
// full capacity) of size: four times as much, at most size, except that
// the last step to a size that fits a pooled class takes that class's
// capacity when it is still within four times, so the buffer can be
// recycled.
func growFrame(have, size int) int {
	for _, c := range frameClasses {
		if size <= c && c <= 4*have {
			return c
		}
	}
	return min(size, 4*have)
}

// frameClasses are the capacities of the frame buffers a Server recycles,
// smallest first: with firstChunk growing by four, the sizes a frame
// buffer reaches. The largest holds a Produce of the largest batch kgo and
// librdkafka send by default (about 1 MB of records).
var frameClasses = [...]int{4 * firstChunk, 16 * firstChunk}

// framePool recycles the buffers of request frames that nothing references
// once their handler returned (api.recycle: Produce, whose frames were,
// before, most of the bytes the server allocated and cleared, and the GC
// work that came with them), one sync.Pool per class of frameClasses, so
// the GC takes them back when connections fall idle. A nil *framePool
// holds nothing. Safe for concurrent use.
//
// The pools hold *[]byte; the boxes of buffers taken out wait in boxes for
// the next put, which allocated a new one per request before.
type framePool struct {
	classes [len(frameClasses)]sync.Pool
	boxes   sync.Pool
}

// get returns an empty pooled buffer that holds size bytes, or nil if
// there is none.
func (fp *framePool) get(size int) []byte {
	if fp == nil {
		return nil
	}
	for i, c := range frameClasses {
		if size <= c {
			if b, ok := fp.classes[i].Get().(*[]byte); ok {
				buf := (*b)[:0]
				*b = nil
				fp.boxes.Put(b)
				return buf
			}
			return nil
		}
	}
	return nil
}

// put gives buf back for reuse if its capacity is a class's. The caller
// must not use buf, or anything sliced from it, afterwards.
func (fp *framePool) put(buf []byte) {
	if fp == nil {
		return
	}
	for i, c := range frameClasses {
		if cap(buf) == c {
			b, _ := fp.boxes.Get().(*[]byte)
			if b == nil {
				b = new([]byte)
			}
			*b = buf[:0]
			fp.classes[i].Put(b)
			return
		}
	}
}

// request is one decoded request and what is needed to answer it.
type request struct {
	key           int16
	version       int16
	correlationID int32
	clientID      *string
	// body is the decoded request; nil for an ApiVersions request of a
	// version the server does not support, which is answered without
	// reading its body (KIP-511).
	body kmsg.Request
	api  *api
	// size is the frame's payload size, counted against the connection's
	// MaxQueuedBytes until the request is answered.
	size int32
	// frame is the payload body was decoded from (byte fields of body
	// alias it). For an API with recycle set, the connection gives it back
	// to the server's framePool once the handler returned: frame and the
	// byte fields of body are dead from then on.
	frame []byte
	// stamps time the request when the server has an Observer.
	stamps stamps
	// listener is the connection's listener name (conn.listener).
	listener string
	// readAt is when the frame was read, on SASL connections only: a
	// session's expiry is judged by it (sasl.go), not by when the
	// request's turn came.
	readAt time.Time
	// throttle is how long the connection waits after answering r before
	// it takes the next request: r's client quota throttle (quotas.go).
	throttle time.Duration
	// principal and host are the connection's (conn.principal,
	// conn.host), set once the request is authenticated: the
	// authorizer's subject; Groups show the host per member.
	principal, host string
}

// decodeRequest parses a frame payload: the request header (v1, or v2 for
// flexible versions) and the body at the version the header names, checked
// against the dispatch table. Any error wraps ErrUnknownAPI,
// ErrUnsupportedVersion, ErrFrameTooLarge (the API's own limit) or
// ErrMalformedRequest; the connection is then closed.
func decodeRequest(frame []byte, t *table) (*request, error) {
	b := kbin.Reader{Src: frame}
	r := &request{key: b.Int16(), version: b.Int16(), correlationID: b.Int32(), size: int32(len(frame))}
	if !b.Ok() {
		return nil, fmt.Errorf("%w: header of %d bytes is shorter than key, version and correlation id", ErrMalformedRequest, len(frame))
	}
	r.api = t.lookup(r.key)
	if r.api == nil {
		return r, fmt.Errorf("%w %d (version %d)", ErrUnknownAPI, r.key, r.version)
	}
	if r.version < r.api.min || r.version > r.api.max {
		if r.key == kmsg.ApiVersions.Int16() {
			// The client learns our range from the answer; its body
			// may be of a shape we do not know, so it is not read.
			return r, nil
		}
		return r, fmt.Errorf("%w: %s v%d (supported %d-%d)", ErrUnsupportedVersion, kmsg.NameForKey(r.key), r.version, r.api.min, r.api.max)
	}
	if r.api.maxBytes > 0 && len(frame) > int(r.api.maxBytes) {
		return r, fmt.Errorf("%w: %s request of %d bytes is over its limit of %d", ErrFrameTooLarge, kmsg.NameForKey(r.key), len(frame), r.api.maxBytes)
	}
	body := kmsg.RequestForKey(r.key)
	body.SetVersion(r.version)
	// Every API in the table uses header v1 or v2: v0 (no client id) only
	// exists for ControlledShutdown v0, which the server does not speak.
	r.clientID = b.NullableString()
	if body.IsFlexible() {
		kmsg.SkipTags(&b)
	}
	if !b.Ok() {
		return r, fmt.Errorf("%w: truncated %s v%d request header", ErrMalformedRequest, kmsg.NameForKey(r.key), r.version)
	}
	if err := body.ReadFrom(b.Src); err != nil {
		return r, fmt.Errorf("%w: %s v%d body: %v", ErrMalformedRequest, kmsg.NameForKey(r.key), r.version, err)
	}
	r.body = body
	return r, nil
}

// appendResponse appends the whole response frame for resp to dst: size,
// response header and body. The header is v1 (tagged fields) when the
// response is flexible, except for ApiVersions, whose response header is
// always v0 so that a client can read it before knowing our versions.
func appendResponse(dst []byte, correlationID int32, resp kmsg.Response) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = kbin.AppendInt32(dst, correlationID)
	if resp.IsFlexible() && resp.Key() != kmsg.ApiVersions.Int16() {
		dst = append(dst, 0) // no tagged fields
	}
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}
