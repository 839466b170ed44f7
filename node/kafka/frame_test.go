package kafka

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"testing"
	"testing/iotest"

	"github.com/twmb/franz-go/pkg/kbin"
)

func TestReadFrameGrowsAsBytesArrive(t *testing.T) {
	payload := make([]byte, 300_000)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	stream := append(kbin.AppendInt32(nil, int32(len(payload))), payload...)
	stream = append(stream, 0, 0, 0, 0) // an empty frame next
	r := iotest.HalfReader(bytes.NewReader(stream))
	got, err := readFrame(r, DefaultMaxRequestBytes)
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("frame: %d bytes, err %v; want the %d bytes sent", len(got), err, len(payload))
	}
	if got, err := readFrame(r, DefaultMaxRequestBytes); err != nil || len(got) != 0 {
		t.Fatalf("empty frame: %d bytes, err %v", len(got), err)
	}
	if _, err := readFrame(r, DefaultMaxRequestBytes); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last frame: %v, want io.EOF", err)
	}
}

// TestReadFramePooled: frames of every size around the pool's classes, back
// to back, each buffer given back after use as the connection does for
// Produce: every frame reads back exactly (a pooled buffer larger than
// its frame must not swallow the next frame's bytes), and a growing buffer
// never exceeds four times the bytes it holds. (Whether buffers are
// reused is sync.Pool's choice, random under -race; BenchmarkWireProduce's
// B/op shows it.)
func TestReadFramePooled(t *testing.T) {
	sizes := []int{firstChunk + 1, 100_000, frameClasses[0], frameClasses[0] + 1, 1_000_100, frameClasses[1], 9, frameClasses[1] + 1, 100_000, 1_000_100}
	var stream []byte
	for i, n := range sizes {
		stream = kbin.AppendInt32(stream, int32(n))
		for j := range n {
			stream = append(stream, byte(i+j))
		}
	}
	var pool framePool
	r := iotest.HalfReader(bytes.NewReader(stream))
	for i, n := range sizes {
		size, err := readFrameSize(r, DefaultMaxRequestBytes)
		if err != nil {
			t.Fatal(err)
		}
		got, err := readFrameBody(r, size, &pool)
		if err != nil || len(got) != n {
			t.Fatalf("frame %d: %d bytes, err %v; want %d", i, len(got), err, n)
		}
		for j := range got {
			if got[j] != byte(i+j) {
				t.Fatalf("frame %d byte %d: %d, want %d", i, j, got[j], byte(i+j))
			}
		}
		pool.put(got)
	}
	for _, c := range []struct{ have, size int }{{firstChunk, 100_000}, {firstChunk, 1_000_000}, {4 * firstChunk, 1_000_000}, {4 * firstChunk, 2_000_000}} {
		if g := growFrame(c.have, c.size); g > 4*c.have || g < min(c.size, 4*c.have) {
			t.Errorf("growFrame(%d, %d) = %d: outside [min(size, 4*have), 4*have]", c.have, c.size, g)
		}
	}
}

// TestReadFrameLyingPrefix: a prefix claiming the whole limit followed by a
// few bytes and EOF costs a small buffer, not the 100 MiB claimed.
func TestReadFrameLyingPrefix(t *testing.T) {
	stream := append(kbin.AppendInt32(nil, DefaultMaxRequestBytes), "only this"...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := readFrame(bytes.NewReader(stream), DefaultMaxRequestBytes)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err %v, want io.ErrUnexpectedEOF", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4*firstChunk {
		t.Fatalf("allocated %d bytes for a frame that sent 9", alloc)
	}
}

func TestReadFrameLimits(t *testing.T) {
	for _, tc := range []struct {
		prefix int32
		want   error
	}{
		{-1, ErrNegativeFrame},
		{-2147483648, ErrNegativeFrame},
		{1025, ErrFrameTooLarge},
		{2147483647, ErrFrameTooLarge},
	} {
		_, err := readFrame(bytes.NewReader(kbin.AppendInt32(nil, tc.prefix)), 1024)
		if !errors.Is(err, tc.want) {
			t.Errorf("prefix %d: %v, want %v", tc.prefix, err, tc.want)
		}
	}
	if _, err := readFrame(bytes.NewReader([]byte{0, 0}), 1024); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("half a prefix: %v, want io.ErrUnexpectedEOF", err)
	}
}
