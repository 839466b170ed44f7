package segment

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"
	"time"
)

// BenchmarkAppendTxn: one op is one Log.Append of a 16 KiB batch of
// 1 KiB records from one producer, idempotent or transactional (a
// transaction of 10 batches, then its commit marker: AppendMarker counts
// inside the op that ends the transaction). Each op sets the batch's
// sequence and recomputes its CRC, in both. The ratio of the two is the
// cost of transactions on the append path.
func BenchmarkAppendTxn(b *testing.B) {
	for _, txn := range []bool{false, true} {
		name := map[bool]string{false: "idempotent", true: "transactional"}[txn]
		b.Run(name, func(b *testing.B) {
			l := benchLog(b, Options{RetentionBytes: -1})
			batch := benchBatch(1024)
			attrs := int16(0)
			if txn {
				attrs = attrTransactional
			}
			n := int32(binary.BigEndian.Uint32(batch[offRecordCount:]))
			setProducer(batch, 1, 0, 0, attrs)
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			quiesce(b)
			seq := int32(0)
			for i := 0; i < b.N; i++ {
				binary.BigEndian.PutUint32(batch[offBaseSequence:], uint32(seq))
				binary.BigEndian.PutUint32(batch[offCRC:], crc32.Checksum(batch[offAttributes:], castagnoli))
				seq += n
				if _, err := l.Append(batch, 1); err != nil {
					b.Fatal(err)
				}
				if txn && i%10 == 9 {
					if _, err := l.AppendMarker(Marker{ProducerID: 1, Commit: true}, 1); err != nil {
						b.Fatal(err)
					}
				}
				writeback(b, i)
			}
		})
	}
}

// BenchmarkAbortedTxns: one op is AbortedTxns over a 1,000-offset window
// (a read_committed fetch) of a log holding 2,000 aborted transactions of
// 8 producers among as many committed ones; the window slides.
func BenchmarkAbortedTxns(b *testing.B) {
	l := benchLog(b, Options{RetentionBytes: -1})
	batch := BuildBatch(time.Now().UnixMilli(), []byte("v"))
	seqs := map[int64]int32{}
	for i := range 4000 {
		pid := int64(i % 8)
		setProducer(batch, pid, 0, seqs[pid], attrTransactional)
		seqs[pid]++
		if _, err := l.Append(batch, 1); err != nil {
			b.Fatal(err)
		}
		if _, err := l.AppendMarker(Marker{ProducerID: pid, Commit: i%2 == 0}, 1); err != nil {
			b.Fatal(err)
		}
	}
	leo := l.LogEndOffset()
	var dst []AbortedTxn
	found := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		from := int64(i*997) % (leo - 1000)
		dst = l.AbortedTxns(from, from+1000, dst[:0])
		found += len(dst)
	}
	b.StopTimer()
	if per := float64(found) / float64(b.N); per < 200 || per > 300 {
		b.Fatal(fmt.Sprintf("%.0f aborted transactions per 1,000 offsets, want 250", per))
	}
}
