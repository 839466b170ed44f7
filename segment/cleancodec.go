package segment

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// compressor re-compresses the records of a batch the cleaner rebuilt,
// with the batch's own codec. Encoders are made on first use and reused.
type compressor struct {
	buf  bytes.Buffer
	gz   *gzip.Writer
	lz   *lz4.Writer
	zstd *zstd.Encoder
	out  []byte
}

// compress returns recs compressed with codec (snappy in the xerial
// framing when xerial); the slice is valid until the next call.
func (c *compressor) compress(codec int16, xerial bool, recs []byte) ([]byte, error) {
	c.buf.Reset()
	switch codec {
	case codecGzip:
		if c.gz == nil {
			c.gz = gzip.NewWriter(&c.buf)
		} else {
			c.gz.Reset(&c.buf)
		}
		if _, err := c.gz.Write(recs); err != nil {
			return nil, err
		}
		if err := c.gz.Close(); err != nil {
			return nil, err
		}
		return c.buf.Bytes(), nil
	case codecSnappy:
		if !xerial {
			c.out = s2.EncodeSnappy(c.out[:cap(c.out)], recs)
			return c.out, nil
		}
		// xerial: magic, version 1, compatible version 1, then chunks
		// of (length, raw snappy block), as the Java client writes.
		c.out = append(c.out[:0], xerialMagic...)
		c.out = binary.BigEndian.AppendUint32(c.out, 1)
		c.out = binary.BigEndian.AppendUint32(c.out, 1)
		for p := 0; p < len(recs); p += 32 << 10 {
			blk := s2.EncodeSnappy(nil, recs[p:min(len(recs), p+32<<10)])
			c.out = binary.BigEndian.AppendUint32(c.out, uint32(len(blk)))
			c.out = append(c.out, blk...)
		}
		return c.out, nil
	case codecLz4:
		if c.lz == nil {
			c.lz = lz4.NewWriter(&c.buf)
		} else {
			c.lz.Reset(&c.buf)
		}
		if _, err := c.lz.Write(recs); err != nil {
			return nil, err
		}
		if err := c.lz.Close(); err != nil {
			return nil, err
		}
		return c.buf.Bytes(), nil
	case codecZstd:
		if c.zstd == nil {
			var err error
			if c.zstd, err = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedFastest)); err != nil {
				return nil, err
			}
		}
		c.out = c.zstd.EncodeAll(recs, c.out[:0])
		return c.out, nil
	}
	return nil, ErrUnsupportedCompression
}

func (c *compressor) close() {
	if c.zstd != nil {
		_ = c.zstd.Close()
	}
}

func crc32c(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// decompressor decompresses the batches the cleaner reads, reusing its
// decoders and output buffer (batchRecords makes new ones per batch,
// which is fine for the one batch a lookup by time decodes, not for a
// whole log). Output past maxDecompressed is corruption, as there.
type decompressor struct {
	gz   *gzip.Reader
	lz   *lz4.Reader
	zstd *zstd.Decoder
	rd   bytes.Reader
	out  []byte
}

// records returns batch b's records section (header h), decompressed when
// compressed; the slice is valid until the next call. Errors wrap
// ErrCorruptBatch.
func (d *decompressor) records(b []byte, h BatchHeader) ([]byte, error) {
	body := b[BatchHeaderSize:]
	codec := h.Attributes & attrCompression
	var err error
	switch codec {
	case codecNone:
		return body, nil
	case codecGzip:
		d.rd.Reset(body)
		if d.gz == nil {
			d.gz, err = gzip.NewReader(&d.rd)
		} else {
			err = d.gz.Reset(&d.rd)
		}
		if err == nil {
			err = d.readAll(d.gz)
		}
	case codecLz4:
		d.rd.Reset(body)
		if d.lz == nil {
			d.lz = lz4.NewReader(&d.rd)
		} else {
			d.lz.Reset(&d.rd)
		}
		err = d.readAll(d.lz)
	case codecZstd:
		if d.zstd == nil {
			// No frame checksum: the batch's CRC-32C, checked as it was
			// read, covers the compressed bytes already.
			d.zstd, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxDecompressed),
				zstd.IgnoreChecksum(true))
		}
		if err == nil {
			d.out, err = d.zstd.DecodeAll(body, d.out[:0])
		}
	default:
		return batchRecords(b, h) // snappy, and the errors of unknown codecs
	}
	if err != nil {
		return nil, fmt.Errorf("%w: batch %d: decompress (codec %d): %v", ErrCorruptBatch, h.BaseOffset, codec, err)
	}
	return d.out, nil
}

func (d *decompressor) readAll(r io.Reader) error {
	d.out = d.out[:0]
	for {
		if len(d.out) == cap(d.out) {
			d.out = append(d.out, 0)[:len(d.out)]
		}
		n, err := r.Read(d.out[len(d.out):cap(d.out)])
		d.out = d.out[:len(d.out)+n]
		if len(d.out) > maxDecompressed {
			return fmt.Errorf("decompresses past %d bytes", maxDecompressed)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func (d *decompressor) close() {
	if d.zstd != nil {
		d.zstd.Close()
	}
}
