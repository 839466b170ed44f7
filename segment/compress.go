package segment

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// maxDecompressed bounds what one batch may decompress to, in the lookups
// by timestamp and in the leader's validation: a batch that claims more is
// treated as corrupt rather than allowed to take the broker's memory (or,
// streamed, its CPU).
const maxDecompressed = 256 << 20

// Kafka's compression codecs (attributes & attrCompression).
const (
	codecNone   = 0
	codecGzip   = 1
	codecSnappy = 2
	codecLz4    = 3
	codecZstd   = 4
)

// xerialMagic opens a snappy body in the xerial framing the Java client
// writes; other clients (franz-go, librdkafka) write one raw snappy block.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// batchRecords returns the records section of batch b (whose header is h):
// the bytes after the header, decompressed when the batch is compressed.
// Errors wrap ErrCorruptBatch.
func batchRecords(b []byte, h BatchHeader) ([]byte, error) {
	body := b[BatchHeaderSize:]
	codec := h.Attributes & attrCompression
	var out []byte
	var err error
	switch codec {
	case codecNone:
		return body, nil
	case codecGzip:
		var r *gzip.Reader
		if r, err = gzip.NewReader(bytes.NewReader(body)); err == nil {
			out, err = readLimited(r)
		}
	case codecSnappy:
		out, err = unsnappy(body)
	case codecLz4:
		out, err = readLimited(lz4.NewReader(bytes.NewReader(body)))
	case codecZstd:
		var d *zstd.Decoder
		d, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true), zstd.WithDecoderMaxMemory(maxDecompressed))
		if err == nil {
			out, err = d.DecodeAll(body, nil)
			d.Close()
		}
	default:
		err = fmt.Errorf("unknown codec %d", codec)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: batch %d: decompress (codec %d): %v", ErrCorruptBatch, h.BaseOffset, codec, err)
	}
	return out, nil
}

func readLimited(r io.Reader) ([]byte, error) {
	out, err := io.ReadAll(io.LimitReader(r, maxDecompressed+1))
	if err == nil && len(out) > maxDecompressed {
		err = fmt.Errorf("decompresses past %d bytes", maxDecompressed)
	}
	return out, err
}

// unsnappy decodes a raw snappy block or xerial-framed snappy chunks.
func unsnappy(src []byte) ([]byte, error) {
	if !bytes.HasPrefix(src, xerialMagic) {
		return unsnappyBlock(nil, src)
	}
	if len(src) < 16 {
		return nil, fmt.Errorf("xerial header of %d bytes", len(src))
	}
	var out []byte
	for p := 16; p < len(src); {
		if len(src)-p < 4 {
			return nil, fmt.Errorf("xerial chunk length cut at %d", p)
		}
		n := int(binary.BigEndian.Uint32(src[p:]))
		p += 4
		if n > len(src)-p {
			return nil, fmt.Errorf("xerial chunk of %d bytes, %d left", n, len(src)-p)
		}
		var err error
		if out, err = unsnappyBlock(out, src[p:p+n]); err != nil {
			return nil, err
		}
		p += n
	}
	return out, nil
}

// unsnappyBlock appends the decoded snappy block to dst.
func unsnappyBlock(dst, block []byte) ([]byte, error) {
	n, err := s2.DecodedLen(block)
	if err != nil {
		return nil, err
	}
	if n > maxDecompressed-len(dst) {
		return nil, fmt.Errorf("decompresses past %d bytes", maxDecompressed)
	}
	dec, err := s2.Decode(make([]byte, n), block)
	if err != nil {
		return nil, err
	}
	return append(dst, dec...), nil
}
