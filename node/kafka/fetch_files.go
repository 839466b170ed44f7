package kafka

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchFile is one partition of a Fetch response whose records are
// FileRecords: resp.Topics[topic].Partitions[partition].
type fetchFile struct {
	topic, partition int
	f                FileRecords
}

// fileFetchResponse is a Fetch response with partitions whose records stay
// in their files until the connection's writer sends them. The partitions'
// RecordBatches are nil; files, in response order, hold their records.
type fileFetchResponse struct {
	*kmsg.FetchResponse
	files []fetchFile
}

// release releases the files.
func (r *fileFetchResponse) release() {
	for _, f := range r.files {
		f.f.Release()
	}
}

// filePiece is file bytes that go into an encoded response frame at buf[at:]
// (between buf[:at] and buf[at:]).
type filePiece struct {
	at int
	f  FileRecords
}

// appendFetchFrame appends the frame of r (size, correlation id, header and
// body) to dst without the files' bytes: the frame is dst's new bytes with
// each piece's file inserted at its position. The size prefix counts the
// files. It encodes as kmsg's FetchResponse.AppendTo does, for versions 4-15
// and the fields this server sets; canEncodeFetch says whether r has only
// those. TestFetchFrameMatchesKmsg holds the two encodings together.
func appendFetchFrame(dst []byte, correlationID int32, r *fileFetchResponse) ([]byte, []filePiece) {
	resp := r.FetchResponse
	v := resp.Version
	flex := v >= 12
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = kbin.AppendInt32(dst, correlationID)
	if flex {
		dst = append(dst, 0) // response header: no tagged fields
	}
	dst = kbin.AppendInt32(dst, resp.ThrottleMillis)
	if v >= 7 {
		dst = kbin.AppendInt16(dst, resp.ErrorCode)
		dst = kbin.AppendInt32(dst, resp.SessionID)
	}
	arrayLen := kbin.AppendArrayLen
	if flex {
		arrayLen = kbin.AppendCompactArrayLen
	}
	pieces := make([]filePiece, 0, len(r.files))
	fileBytes := 0
	next := 0 // r.files[next] is the next file partition
	dst = arrayLen(dst, len(resp.Topics))
	for ti := range resp.Topics {
		t := &resp.Topics[ti]
		switch {
		case v >= 13:
			dst = append(dst, t.TopicID[:]...)
		case flex:
			dst = kbin.AppendCompactString(dst, t.Topic)
		default:
			dst = kbin.AppendString(dst, t.Topic)
		}
		dst = arrayLen(dst, len(t.Partitions))
		for pi := range t.Partitions {
			p := &t.Partitions[pi]
			dst = kbin.AppendInt32(dst, p.Partition)
			dst = kbin.AppendInt16(dst, p.ErrorCode)
			dst = kbin.AppendInt64(dst, p.HighWatermark)
			dst = kbin.AppendInt64(dst, p.LastStableOffset)
			if v >= 5 {
				dst = kbin.AppendInt64(dst, p.LogStartOffset)
			}
			// Aborted transactions (read_committed): null, or the list.
			if flex {
				dst = kbin.AppendCompactNullableArrayLen(dst, len(p.AbortedTransactions), p.AbortedTransactions == nil)
			} else {
				dst = kbin.AppendNullableArrayLen(dst, len(p.AbortedTransactions), p.AbortedTransactions == nil)
			}
			for _, a := range p.AbortedTransactions {
				dst = kbin.AppendInt64(dst, a.ProducerID)
				dst = kbin.AppendInt64(dst, a.FirstOffset)
				if flex {
					dst = append(dst, 0) // no tagged fields
				}
			}
			if v >= 11 {
				dst = kbin.AppendInt32(dst, p.PreferredReadReplica)
			}
			if next < len(r.files) && r.files[next].topic == ti && r.files[next].partition == pi {
				f := r.files[next].f
				next++
				if flex {
					dst = kbin.AppendUvarint(dst, uint32(f.Len())+1)
				} else {
					dst = kbin.AppendInt32(dst, int32(f.Len()))
				}
				pieces = append(pieces, filePiece{at: len(dst), f: f})
				fileBytes += f.Len()
			} else if flex {
				dst = kbin.AppendCompactNullableBytes(dst, p.RecordBatches)
			} else {
				dst = kbin.AppendNullableBytes(dst, p.RecordBatches)
			}
			if flex {
				if p.DivergingEpoch.Epoch != -1 || p.DivergingEpoch.EndOffset != -1 {
					// One tagged field, tag 0, 13 bytes: epoch, end
					// offset, no tagged fields of its own.
					dst = append(dst, 1, 0, 13)
					dst = kbin.AppendInt32(dst, p.DivergingEpoch.Epoch)
					dst = kbin.AppendInt64(dst, p.DivergingEpoch.EndOffset)
					dst = append(dst, 0)
				} else {
					dst = append(dst, 0)
				}
			}
		}
		if flex {
			dst = append(dst, 0) // the topic's tagged fields
		}
	}
	if flex {
		dst = append(dst, 0) // the response's tagged fields
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4+fileBytes))
	return dst, pieces
}

// canEncodeFetch says whether appendFetchFrame encodes r as kmsg would: a
// version from 4 to 15, no current leader, snapshot id, node endpoints or
// unknown tagged fields, and files in response order.
func canEncodeFetch(r *fileFetchResponse) bool {
	resp := r.FetchResponse
	if resp.Version < 4 || resp.Version > 15 || resp.UnknownTags.Len() > 0 || len(resp.Brokers) > 0 {
		return false
	}
	for ti := range resp.Topics {
		t := &resp.Topics[ti]
		if t.UnknownTags.Len() > 0 {
			return false
		}
		for pi := range t.Partitions {
			p := &t.Partitions[pi]
			for _, a := range p.AbortedTransactions {
				if a.UnknownTags.Len() > 0 {
					return false
				}
			}
			if p.UnknownTags.Len() > 0 || p.DivergingEpoch.UnknownTags.Len() > 0 ||
				p.CurrentLeader.LeaderID != -1 || p.CurrentLeader.LeaderEpoch != -1 || p.CurrentLeader.UnknownTags.Len() > 0 ||
				p.SnapshotID.EndOffset != -1 || p.SnapshotID.Epoch != -1 || p.SnapshotID.UnknownTags.Len() > 0 {
				return false
			}
		}
	}
	for i, f := range r.files {
		if f.topic >= len(resp.Topics) || f.partition >= len(resp.Topics[f.topic].Partitions) ||
			i > 0 && (f.topic < r.files[i-1].topic || f.topic == r.files[i-1].topic && f.partition <= r.files[i-1].partition) {
			return false
		}
	}
	return true
}

// materialize reads the files into their partitions' RecordBatches and
// releases them, leaving an ordinary response. A file that cannot be read
// answers its partition with KAFKA_STORAGE_ERROR and no records.
func (r *fileFetchResponse) materialize() *kmsg.FetchResponse {
	for _, f := range r.files {
		p := &r.Topics[f.topic].Partitions[f.partition]
		b, err := f.f.AppendTo(nil)
		if err != nil {
			p.ErrorCode = kerr.KafkaStorageError.Code
			b = nil
		}
		p.RecordBatches = b
		f.f.Release()
	}
	r.files = nil
	return r.FetchResponse
}
