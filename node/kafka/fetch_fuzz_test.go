package kafka

import (
	"bytes"
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/segment"
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

// FuzzFetchSession drives one server's fetch session cache (two slots)
// with a sequence of Fetch requests that open, use, replay, skip and close
// sessions, as followers and consumers, between appends. Each input is 4
// bytes per step: op (version, which session id, follower or consumer, or
// an append), partitions, epoch choice, fetch offsets. Every answer must
// decode, and after every step the cache must hold at most two sessions,
// each with an index that matches its partitions, none twice, epoch >= 1,
// and an incremental answer only partitions of its session.
func FuzzFetchSession(f *testing.F) {
	f.Add([]byte{0x00, 0x03, 0x01, 0x00, 0x08, 0x00, 0x02, 0x00, 0x07, 0x00, 0x00, 0x00, 0x08, 0x01, 0x02, 0x01})
	f.Add([]byte{0x25, 0x07, 0x01, 0x02, 0x2d, 0x00, 0x03, 0x00, 0x2d, 0x00, 0x2a, 0x00, 0x05, 0x01, 0x01, 0x00, 0x0d, 0x00, 0x04, 0x09})
	done, cancel := context.WithCancel(context.Background())
	cancel()
	f.Fuzz(func(t *testing.T, ops []byte) {
		fd := newFakeData("127.0.0.1:9092")
		s, err := NewServer(fd, Options{MaxRequestBytes: fuzzMaxFrame, FetchSessionCacheSlots: 2})
		if err != nil {
			t.Fatal(err)
		}
		rf := kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz"))
		var last int32
		for step := int32(0); len(ops) >= 4; step++ {
			op, parts, ep, offs := ops[0], ops[1], ops[2], ops[3]
			ops = ops[4:]
			if op%8 == 7 {
				fd.Produce(done, ProducePartition{Topic: "orders", Partition: int32(parts % 2), Records: segment.BuildBatch(1, []byte("f"))})
				continue
			}
			req := kmsg.NewPtrFetchRequest()
			req.Version = 7 + int16(op%6)
			req.MaxBytes, req.MinBytes, req.ReplicaID = 1<<20, 1, -1
			if op&0x20 != 0 {
				req.ReplicaID = 1
			}
			switch (op >> 3) % 4 {
			case 1, 2:
				req.SessionID = last
			case 3:
				req.SessionID = int32(offs)
			}
			s.sessions.mu.Lock()
			cur := int32(0)
			if sess := s.sessions.mu.sessions[req.SessionID]; sess != nil {
				cur = sess.epoch
			}
			s.sessions.mu.Unlock()
			req.SessionEpoch = [...]int32{-1, 0, cur, cur + 1, int32(int8(offs))}[ep%5]
			for p := range int32(3) {
				if parts&(1<<p) != 0 {
					if len(req.Topics) == 0 {
						rt := kmsg.NewFetchRequestTopic()
						rt.Topic = "orders"
						req.Topics = append(req.Topics, rt)
					}
					rp := kmsg.NewFetchRequestTopicPartition()
					rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, int64(offs>>(2*p))%3, 1<<20
					req.Topics[0].Partitions = append(req.Topics[0].Partitions, rp)
				}
				if parts&(8<<p) != 0 {
					if len(req.ForgottenTopics) == 0 {
						ft := kmsg.NewFetchRequestForgottenTopic()
						ft.Topic = "orders"
						req.ForgottenTopics = append(req.ForgottenTopics, ft)
					}
					req.ForgottenTopics[0].Partitions = append(req.ForgottenTopics[0].Partitions, p)
				}
			}
			r, err := decodeRequest(rf.AppendRequest(nil, req, step)[4:], s.table)
			if err != nil {
				t.Fatalf("decoding our own request: %v", err)
			}
			resp, err := r.api.handle(done, s, r)
			if err != nil {
				t.Fatal(err)
			}
			checkResponse(appendResponse(nil, r.correlationID, resp), r, resp)
			fr, ok := resp.(*kmsg.FetchResponse)
			if !ok {
				t.Fatalf("answer %T", resp)
			}
			if fr.SessionID != 0 {
				last = fr.SessionID
			}
			checkSessions(t, s.sessions, 2, fr, req.SessionEpoch > 0)
		}
	})
}

// checkSessions fails t if the cache breaks its invariants (see
// FuzzFetchSession); resp, when incremental, must name only partitions of
// its session.
func checkSessions(t *testing.T, c *fetchSessionCache, slots int, resp *kmsg.FetchResponse, incremental bool) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.mu.sessions) > slots {
		t.Fatalf("%d sessions in %d slots", len(c.mu.sessions), slots)
	}
	for id, s := range c.mu.sessions {
		if id == 0 || s.id != id || s.epoch < 1 || len(s.parts) == 0 || len(s.index) != len(s.parts) {
			t.Fatalf("session %d: id %d, epoch %d, %d partitions, index of %d", id, s.id, s.epoch, len(s.parts), len(s.index))
		}
		for _, p := range s.parts {
			if s.index[p.key] != p {
				t.Fatalf("session %d: partition %+v not indexed (or twice)", id, p.key)
			}
		}
	}
	if !incremental || resp.ErrorCode != 0 || resp.SessionID == 0 {
		return
	}
	s := c.mu.sessions[resp.SessionID]
	if s == nil {
		t.Fatalf("answer names session %d, which the cache lacks", resp.SessionID)
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if s.index[sessionKey{topic: rt.Topic, partition: rp.Partition}] == nil {
				t.Fatalf("session %d answered %s/%d, not one of its partitions", resp.SessionID, rt.Topic, rp.Partition)
			}
		}
	}
}
