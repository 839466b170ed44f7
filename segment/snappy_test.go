package segment

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/s2"
	ksnappy "github.com/klauspost/compress/snappy"
)

// BenchmarkSnappyStrictDecode decodes the same raw snappy blocks with the
// strict decoder validation uses (golang/snappy, assembly) and with the
// one it replaced (klauspost's snappy.DecodeStrict, the same rules in
// Go), interleaved per op, and reports x-replaced: the replaced decoder's
// time over ours. Blocks are text-like records (1 KiB values from a small
// vocabulary, as BenchmarkProduceValidation sends) of 16 KiB and 1 MiB.
func BenchmarkSnappyStrictDecode(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"sluice", "kafka", "record", "offset", "leader", "replica", "segment", "batch", "quorum", "commit"}
	for _, size := range []int{16 << 10, 1 << 20} {
		var src []byte
		for len(src) < size {
			src = append(src, words[rng.IntN(len(words))]...)
			src = append(src, ' ')
		}
		block := snappy.Encode(nil, src[:size])
		b.Run(map[int]string{16 << 10: "16KiB", 1 << 20: "1MiB"}[size], func(b *testing.B) {
			dst := make([]byte, size)
			var ours, replaced int64
			b.SetBytes(int64(size))
			for i := 0; i < b.N; i++ {
				t0 := nanotime()
				if _, err := snappy.Decode(dst, block); err != nil {
					b.Fatal(err)
				}
				t1 := nanotime()
				if _, err := ksnappy.DecodeStrict(dst, block); err != nil {
					b.Fatal(err)
				}
				ours, replaced = ours+t1-t0, replaced+nanotime()-t1
			}
			b.ReportMetric(float64(replaced)/float64(ours), "x-replaced")
		})
	}
}

func nanotime() int64 { return time.Now().UnixNano() }

// TestSnappyBlockStrict: validation decodes standard snappy only. A copy
// with offset 0 is S2's "repeat last offset" extension, which s2.Decode
// accepts and snappy-java and librdkafka cannot read: refused.
func TestSnappyBlockStrict(t *testing.T) {
	// length 12; literal "abcd"; copy1 of 4 bytes at offset 4; copy1 of
	// 4 bytes at offset 0 (S2: repeat offset 4).
	repeat := []byte{12, 0x0c, 'a', 'b', 'c', 'd', 0x01, 0x04, 0x01, 0x00}
	if _, err := s2.Decode(nil, repeat); err != nil {
		t.Fatalf("s2.Decode refused the S2 repeat (test block wrong?): %v", err)
	}
	if _, err := snappyBlock(nil, repeat); err == nil {
		t.Fatal("snappyBlock accepted an S2 repeat copy")
	}
	// The same block with offset 4: standard snappy, "abcdabcd".
	std := []byte{8, 0x0c, 'a', 'b', 'c', 'd', 0x01, 0x04}
	out, err := snappyBlock(nil, std)
	if err != nil || string(out) != "abcdabcd" {
		t.Fatalf("standard block: %q, %v", out, err)
	}
}
