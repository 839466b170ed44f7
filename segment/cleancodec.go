package segment

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"hash/crc32"

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
			if c.zstd, err = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1)); err != nil {
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
