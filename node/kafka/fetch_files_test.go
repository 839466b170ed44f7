package kafka

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/segment"
)

// memRecords is FileRecords over bytes, without a descriptor.
type memRecords struct {
	b        []byte
	released int
}

func (m *memRecords) Len() int                            { return len(m.b) }
func (m *memRecords) Pos() int64                          { return 0 }
func (m *memRecords) Fd() uintptr                         { return ^uintptr(0) }
func (m *memRecords) AppendTo(dst []byte) ([]byte, error) { return append(dst, m.b...), nil }
func (m *memRecords) Release()                            { m.released++ }

// TestFetchFrameMatchesKmsg checks that appendFetchFrame, files inserted,
// gives kmsg's bytes for every version the server serves, with records
// inline and in files, errors, a diverging epoch, aborted transactions
// (null, empty, listed) and empty topics.
func TestFetchFrameMatchesKmsg(t *testing.T) {
	for v := int16(4); v <= 15; v++ {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			resp := kmsg.NewPtrFetchResponse()
			resp.SetVersion(v)
			resp.ThrottleMillis, resp.ErrorCode, resp.SessionID = 7, 0, 0
			var files []fetchFile
			for ti, name := range []string{"a", "topic-b", "c"} {
				rt := kmsg.NewFetchResponseTopic()
				rt.Topic = name
				rt.TopicID = [16]byte{byte(ti + 1), 2, 3, 15: 9}
				for pi := range ti + 2 {
					rp := kmsg.NewFetchResponseTopicPartition()
					rp.Partition = int32(pi)
					rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = int64(100*pi+ti), int64(90*pi+ti), 3
					switch pi % 3 { // read_committed answers: none, empty, two aborted
					case 1:
						rp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
					case 2:
						for k := range 2 {
							a := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
							a.ProducerID, a.FirstOffset = int64(7+k), int64(40*k+ti)
							rp.AbortedTransactions = append(rp.AbortedTransactions, a)
						}
					}
					data := bytes.Repeat([]byte{byte('a' + pi)}, 10+300*pi*ti)
					switch (pi + ti) % 4 {
					case 0:
						files = append(files, fetchFile{topic: ti, partition: pi, f: &memRecords{b: data}})
					case 1:
						rp.RecordBatches = data
					case 2:
						rp.ErrorCode = 6
						if v >= 12 {
							rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset = 4, 99
						}
					}
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
			resp.Topics = append(resp.Topics, kmsg.FetchResponseTopic{Topic: "empty"})
			fr := &fileFetchResponse{FetchResponse: resp, files: files}
			if !canEncodeFetch(fr) {
				t.Fatal("cannot encode")
			}
			buf, pieces := appendFetchFrame([]byte("junk"), 42, fr)
			buf = buf[4:]
			for i := range pieces {
				pieces[i].at -= 4
			}
			got := withFiles(buf, pieces)
			for _, f := range files {
				resp.Topics[f.topic].Partitions[f.partition].RecordBatches = f.f.(*memRecords).b
			}
			want := appendResponse(nil, 42, resp)
			if !bytes.Equal(got, want) {
				t.Fatalf("frames differ:\n got %x\nwant %x", got, want)
			}
			fr.release()
			for _, f := range files {
				if f.f.(*memRecords).released != 1 {
					t.Fatal("a file not released once")
				}
			}
		})
	}
}

// TestFetchFrameFallsBack checks that a response appendFetchFrame cannot
// encode is read into an ordinary one, its files released.
func TestFetchFrameFallsBack(t *testing.T) {
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(12)
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.CurrentLeader.LeaderID = 2
	resp.Topics = []kmsg.FetchResponseTopic{{Topic: "a", Partitions: []kmsg.FetchResponseTopicPartition{rp}}}
	m := &memRecords{b: []byte("records")}
	fr := &fileFetchResponse{FetchResponse: resp, files: []fetchFile{{f: m}}}
	if canEncodeFetch(fr) {
		t.Fatal("encodes a current leader")
	}
	out := fr.materialize()
	if string(out.Topics[0].Partitions[0].RecordBatches) != "records" || m.released != 1 {
		t.Fatalf("materialized %q, released %d", out.Topics[0].Partitions[0].RecordBatches, m.released)
	}
}

// diskRecords is FileRecords over a file on disk, with its descriptor.
type diskRecords struct {
	f        *os.File
	pos, n   int
	released chan<- struct{}
}

func (d *diskRecords) Len() int    { return d.n }
func (d *diskRecords) Pos() int64  { return int64(d.pos) }
func (d *diskRecords) Fd() uintptr { return d.f.Fd() }
func (d *diskRecords) AppendTo(dst []byte) ([]byte, error) {
	b := make([]byte, d.n)
	_, err := d.f.ReadAt(b, int64(d.pos))
	return append(dst, b...), err
}
func (d *diskRecords) Release() { d.released <- struct{}{} }

// fileData answers partition 0 of "orders" from a file on disk (big
// records, sent with sendfile over the test's TCP connection) and the rest
// as fakeData does.
type fileData struct {
	*fakeData
	f        *os.File
	data     []byte
	released chan struct{}
}

func (d *fileData) Fetch(ctx context.Context, p FetchPartition) FetchResult {
	if p.Topic != "orders" || p.Partition != 0 {
		return d.fakeData.Fetch(ctx, p)
	}
	return FetchResult{HighWatermark: 2, File: &diskRecords{f: d.f, pos: 100, n: len(d.data), released: d.released}}
}

// TestFetchSendsFiles checks a Fetch answered partly from a file on disk:
// the client reads the file's bytes at their place in the response, and the
// file is released once sent.
func TestFetchSendsFiles(t *testing.T) {
	big := segment.BuildBatch(1, bytes.Repeat([]byte("sendfile "), 40_000), []byte("end"))
	f, err := os.Create(filepath.Join(t.TempDir(), "segment"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(big, 100); err != nil {
		t.Fatal(err)
	}
	var fd *fileData
	ts := startServerWith(t, Options{}, func(fb *fakeBroker) Broker {
		fd = &fileData{fakeData: &fakeData{fakeAdmin: &fakeAdmin{fakeBroker: fb}, logs: map[int32][][]byte{}, sig: make(chan struct{})}, f: f, data: big, released: make(chan struct{}, 10)}
		return fd
	})
	c := dial(t, ts.addr)
	small := segment.BuildBatch(1, []byte("inline"))
	if r := c.roundTrip(produceReq(1, 1, small)).(*kmsg.ProduceResponse); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("produce: %+v", r)
	}
	for _, v := range []int16{4, 11, 12} {
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.MaxBytes = v, 10<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "orders"
		for p := range int32(2) {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = p, 1<<20, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = []kmsg.FetchRequestTopic{rt}
		resp := c.roundTrip(req).(*kmsg.FetchResponse)
		ps := resp.Topics[0].Partitions
		if !bytes.Equal(ps[0].RecordBatches, big) || !bytes.Equal(ps[1].RecordBatches, small) || ps[0].HighWatermark != 2 {
			t.Fatalf("v%d: partition 0 %d bytes (want %d), partition 1 %q", v, len(ps[0].RecordBatches), len(big), ps[1].RecordBatches)
		}
	}
	// The writer releases each file after writing it, which may come
	// after the reply arrived.
	timeout := time.After(10 * time.Second)
	for range 3 {
		select {
		case <-fd.released:
		case <-timeout:
			t.Fatal("a file was not released")
		}
	}
	select {
	case <-fd.released:
		t.Fatal("a file released twice")
	default:
	}
}
