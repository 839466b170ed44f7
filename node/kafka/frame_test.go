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
