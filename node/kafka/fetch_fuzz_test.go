package kafka

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzFetchFrame holds the hand-written Fetch encoder (appendFetchFrame,
// used for the zero-copy path) to kmsg's: any response kmsg decodes and
// canEncodeFetch accepts, with every other partition's records moved into
// a file, must encode to kmsg's bytes, files inserted at their pieces.
func FuzzFetchFrame(f *testing.F) {
	for v := int16(4); v <= 12; v++ {
		resp := kmsg.NewPtrFetchResponse()
		resp.SetVersion(v)
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = "t"
		for pi := range 3 {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition, rp.HighWatermark, rp.LogStartOffset = int32(pi), 5, 1
			switch pi {
			case 0, 1:
				rp.RecordBatches = bytes.Repeat([]byte{'r'}, 3+pi)
			case 2:
				rp.ErrorCode = 6
				if v >= 12 {
					rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset = 3, 40
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
		f.Add(uint8(v-4), resp.AppendTo(nil))
	}
	f.Fuzz(func(t *testing.T, ver uint8, body []byte) {
		resp := kmsg.NewPtrFetchResponse()
		resp.SetVersion(4 + int16(ver%9))
		if err := resp.ReadFrom(body); err != nil {
			return
		}
		want := appendResponse(nil, 7, resp)
		var files []fetchFile
		n := 0
		for ti := range resp.Topics {
			for pi := range resp.Topics[ti].Partitions {
				p := &resp.Topics[ti].Partitions[pi]
				if p.RecordBatches != nil && n%2 == 0 {
					files = append(files, fetchFile{topic: ti, partition: pi, f: &memRecords{b: p.RecordBatches}})
					p.RecordBatches = nil
				}
				n++
			}
		}
		fr := &fileFetchResponse{FetchResponse: resp, files: files}
		if !canEncodeFetch(fr) {
			return
		}
		got := withFiles(appendFetchFrame(nil, 7, fr))
		if !bytes.Equal(got, want) {
			t.Fatalf("v%d frames differ:\n got %x\nwant %x", resp.Version, got, want)
		}
	})
}

// withFiles is the frame appendFetchFrame made, with each piece's file
// inserted at its position: the bytes the connection sends.
func withFiles(buf []byte, pieces []filePiece) []byte {
	var out []byte
	prev := 0
	for _, p := range pieces {
		out = append(out, buf[prev:p.at]...)
		out, _ = p.f.AppendTo(out)
		prev = p.at
	}
	return append(out, buf[prev:]...)
}
