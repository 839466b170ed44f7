package segment

import (
	"context"
	"encoding/binary"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/cockroachdb/datadriven"
)

// kv is one test record: a key (null when keyNull) and a value (a
// tombstone when valueNull).
type kv struct {
	key, value         string
	keyNull, valueNull bool
}

// parseKVs reads "a=1,b=2,c!,-=v": key=value pairs, "k!" a tombstone,
// "-" as the key a null key.
func parseKVs(s string) []kv {
	var out []kv
	for _, f := range strings.Split(s, ",") {
		var r kv
		if strings.HasSuffix(f, "!") {
			r.key, r.valueNull = strings.TrimSuffix(f, "!"), true
		} else {
			k, v, _ := strings.Cut(f, "=")
			r.key, r.value = k, v
		}
		if r.key == "-" {
			r.key, r.keyNull = "", true
		}
		out = append(out, r)
	}
	return out
}

// buildKVBatch encodes records as one RecordBatch v2 at baseTimestamp,
// record i at timestamp baseTimestamp+i, compressed with codec (0 none).
func buildKVBatch(baseTimestamp int64, codec int16, recs []kv) []byte {
	var body []byte
	for i, r := range recs {
		var rec []byte
		rec = append(rec, 0)
		rec = binary.AppendVarint(rec, int64(i)) // timestampDelta
		rec = binary.AppendVarint(rec, int64(i)) // offsetDelta
		if r.keyNull {
			rec = binary.AppendVarint(rec, -1)
		} else {
			rec = binary.AppendVarint(rec, int64(len(r.key)))
			rec = append(rec, r.key...)
		}
		if r.valueNull {
			rec = binary.AppendVarint(rec, -1)
		} else {
			rec = binary.AppendVarint(rec, int64(len(r.value)))
			rec = append(rec, r.value...)
		}
		rec = binary.AppendVarint(rec, 0)
		body = binary.AppendVarint(body, int64(len(rec)))
		body = append(body, rec...)
	}
	if codec != codecNone {
		var c compressor
		z, err := c.compress(codec, false, body)
		if err != nil {
			panic(err)
		}
		body = append([]byte(nil), z...)
		c.close()
	}
	b := make([]byte, BatchHeaderSize, BatchHeaderSize+len(body))
	b = append(b, body...)
	be := binary.BigEndian
	be.PutUint32(b[offBatchLength:], uint32(len(b)-logOverhead))
	be.PutUint32(b[offLeaderEpoch:], 0xffffffff)
	b[offMagic] = 2
	be.PutUint16(b[offAttributes:], uint16(codec))
	be.PutUint32(b[offLastOffsetDelta:], uint32(len(recs)-1))
	be.PutUint64(b[offBaseTimestamp:], uint64(baseTimestamp))
	be.PutUint64(b[offMaxTimestamp:], uint64(baseTimestamp+int64(len(recs))-1))
	be.PutUint64(b[offProducerID:], 0xffffffffffffffff)
	be.PutUint16(b[offProducerEpoch:], 0xffff)
	be.PutUint32(b[offBaseSequence:], 0xffffffff)
	be.PutUint32(b[offRecordCount:], uint32(len(recs)))
	be.PutUint32(b[offCRC:], crc32c(b[offAttributes:]))
	return b
}

var codecNames = map[string]int16{"none": codecNone, "gzip": codecGzip, "snappy": codecSnappy, "lz4": codecLz4, "zstd": codecZstd}

// cleanPolicy reads a policy from a script command's arguments.
func (s *script) cleanPolicy(d *datadriven.TestData) CleanPolicy {
	ratio := 0.0
	if d.HasArg("ratio") {
		d.ScanArgs(s.t, "ratio", &ratio)
	}
	return CleanPolicy{
		Compact:                !d.HasArg("no-compact"),
		MinCleanableDirtyRatio: ratio,
		MinCompactionLag:       time.Duration(s.arg(d, "min-lag-ms", 0)) * time.Millisecond,
		MaxCompactionLag:       time.Duration(s.arg(d, "max-lag-ms", 0)) * time.Millisecond,
		DeleteRetention:        time.Duration(s.arg(d, "delete-retention-ms", 86_400_000)) * time.Millisecond,
	}
}

// runClean runs the cleaner's script commands:
//
//	append-kv epoch=E ts=T kv=a=1,b!,-=x [codec=gzip] [pid=P seq=S [txn]]   one keyed batch (b!: tombstone, -: null key; txn: transactional)
//	candidate up-to=O now=T [policy]       CleanCandidate
//	clean up-to=O now=T [map-bytes=N] [policy]  Clean: its stats, then the state
//	dump                                   every segment's batches and records
//	times                                  every record's offset@timestamp, read back through Read
//	kv                                     the latest value per key, read back through Read
//
// policy: [ratio=F] [min-lag-ms=N] [max-lag-ms=N] [delete-retention-ms=N] [no-compact].
func (s *script) runClean(d *datadriven.TestData) (string, error) {
	switch d.Cmd {
	case "append-kv":
		var kvs, codec string
		d.ScanArgs(s.t, "kv", &kvs)
		if d.HasArg("codec") {
			d.ScanArgs(s.t, "codec", &codec)
		}
		b := buildKVBatch(s.arg(d, "ts", 0), codecNames[codec], parseKVs(kvs))
		if d.HasArg("pid") {
			attrs := codecNames[codec]
			if d.HasArg("txn") {
				attrs |= attrTransactional
			}
			setProducer(b, s.arg(d, "pid", -1), int16(s.arg(d, "pepoch", 0)), int32(s.arg(d, "seq", 0)), attrs)
		}
		info, err := s.l.Append(b, int32(s.arg(d, "epoch", 0)))
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("offsets %d..%d rolled=%v\n", info.FirstOffset, info.LastOffset, info.Rolled), nil
	case "candidate":
		c := s.l.CleanCandidate(s.cleanPolicy(d), s.arg(d, "up-to", 1<<62), time.UnixMilli(s.arg(d, "now", s.now)))
		hz := ""
		if c.DeleteHorizon != 0 {
			hz = fmt.Sprintf(" horizon=%d due=%v", c.DeleteHorizon, c.HorizonDue)
		}
		return fmt.Sprintf("first-dirty=%d cleanable-end=%d clean=%dB dirty=%dB ratio=%.2f must=%v%s cleanable=%v\n",
			c.FirstDirty, c.CleanableEnd, c.CleanBytes, c.DirtyBytes, c.DirtyRatio, c.MustClean, hz, c.Cleanable(s.cleanPolicy(d))), nil
	case "clean":
		st, err := s.l.Clean(context.Background(), CleanOptions{
			Policy: s.cleanPolicy(d), UpTo: s.arg(d, "up-to", 1<<62), Now: time.UnixMilli(s.arg(d, "now", s.now)),
			OffsetMapBytes: int(s.arg(d, "map-bytes", 0)),
		})
		if err != nil {
			return "", err
		}
		segs := fmt.Sprint(st.SegmentsCleaned)
		if st.SegmentsWritten != st.SegmentsCleaned {
			segs += fmt.Sprintf("->%d", st.SegmentsWritten) // grouped
		}
		return fmt.Sprintf("passes=%d segments=%s records %d->%d dropped-batches=%d empty-kept=%d cleaned %d->%d\n",
			st.Passes, segs, st.RecordsRead, st.RecordsKept, st.BatchesDropped, st.EmptyKept, st.FirstDirty, st.CleanedTo) + s.state(), nil
	case "dump":
		return dumpLog(s.l)
	case "times":
		return recordTimesOf(s.l)
	case "kv":
		m, err := latestValues(s.l)
		if err != nil {
			return "", err
		}
		var keys []string
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var b strings.Builder
		for _, k := range keys {
			fmt.Fprintf(&b, "%s=%s ", k, m[k])
		}
		return strings.TrimSpace(b.String()) + "\n", nil
	}
	return "", fmt.Errorf("unknown command %q", d.Cmd)
}

// dumpLog prints every segment's batches and their records, read from the
// files (each batch CRC-checked).
func dumpLog(l *Log) (string, error) {
	l.mu.Lock()
	segs := append([]*segment(nil), l.segs...)
	for _, s := range segs {
		s.refs++
	}
	l.mu.Unlock()
	defer l.releaseAll(segs)
	var b strings.Builder
	c := &cleaner{l: l, ctx: context.Background(), st: &CleanStats{}}
	for _, s := range segs {
		fmt.Fprintf(&b, "segment %d (next %d, %d bytes)\n", s.base, s.next, s.size)
		c.rd.reset(l, s)
		for {
			h, batch, _, ok, err := c.rd.next(c)
			if err != nil {
				return "", err
			}
			if !ok {
				break
			}
			fmt.Fprintf(&b, "  %d..%d ts=%d", h.BaseOffset, h.LastOffset(), h.MaxTimestamp)
			if hz := horizon(h); hz != noTimestamp {
				fmt.Fprintf(&b, " horizon=%d", hz)
			}
			if h.Compression() != codecNone {
				fmt.Fprintf(&b, " codec=%d", h.Compression())
			}
			if h.ProducerID >= 0 {
				fmt.Fprintf(&b, " pid=%d seq=%d..%d", h.ProducerID, h.BaseSequence, h.LastSequence())
			}
			b.WriteString(":")
			if h.RecordCount == 0 {
				b.WriteString(" (empty)")
			}
			if h.IsControl() {
				if c, ok := parseControl(batch); ok {
					fmt.Fprintf(&b, " marker commit=%v coord=%d\n", c.commit, c.coordEpoch)
					continue
				}
			}
			err = eachRecord(batch, h, func(r record) bool {
				fmt.Fprintf(&b, " %d:%s", r.offset, r.String())
				return true
			})
			if err != nil {
				fmt.Fprintf(&b, " (records do not decode: %v)", err)
			}
			b.WriteString("\n")
		}
	}
	return b.String(), nil
}

// recordTimesOf reads the whole log through Read and prints each record's
// offset and timestamp as a consumer computes it (base timestamp plus
// delta, or the batch's maxTimestamp with LogAppendTime).
func recordTimesOf(l *Log) (string, error) {
	var b strings.Builder
	off := l.LogStartOffset()
	for off < l.LogEndOffset() {
		c, err := l.Read(off, 1<<20, 1<<62, nil)
		if err != nil {
			return "", err
		}
		if c.Size == 0 {
			break
		}
		it := NewBatchIter(c.Data)
		for h, batch, ok := it.Next(); ok; h, batch, ok = it.Next() {
			if h.IsControl() {
				continue
			}
			if err := recordTimes(batch, func(o, ts int64) bool {
				if o >= off {
					fmt.Fprintf(&b, "%d@%d ", o, ts)
				}
				return true
			}); err != nil {
				return "", err
			}
		}
		off = c.Next
	}
	return strings.TrimSpace(b.String()) + "\n", nil
}

func (r record) String() string {
	k := string(r.key)
	if r.keyNull {
		k = "-"
	}
	if r.valueNull {
		return k + "!"
	}
	// the value follows the value length varint at the end of the header
	return k + "=" + string(recordValue(r.raw))
}

// recordValue returns the value of one record's bytes (length prefix
// included), nil for a null value.
func recordValue(raw []byte) []byte {
	_, n := binary.Varint(raw)
	p := n + 1
	for i := 0; i < 2; i++ { // timestampDelta, offsetDelta
		_, m := binary.Varint(raw[p:])
		p += m
	}
	kl, m := binary.Varint(raw[p:])
	p += m + max(int(kl), 0)
	vl, m := binary.Varint(raw[p:])
	p += m
	if vl < 0 {
		return nil
	}
	return raw[p : p+int(vl)]
}

// latestValues reads the whole log through Read and returns each key's
// latest value; a key whose latest record is a tombstone maps to "!".
// Transaction markers are skipped; records of open and aborted
// transactions count (read_uncommitted).
func latestValues(l *Log) (map[string]string, error) {
	out := map[string]string{}
	off := l.LogStartOffset()
	for off < l.LogEndOffset() {
		c, err := l.Read(off, 1<<20, 1<<62, nil)
		if err != nil {
			return nil, err
		}
		if c.Size == 0 {
			break
		}
		it := NewBatchIter(c.Data)
		for h, b, ok := it.Next(); ok; h, b, ok = it.Next() {
			if _, _, err := checkBatch(b, DefaultMaxBatchBytes); err != nil {
				return nil, fmt.Errorf("batch %d: %w", h.BaseOffset, err)
			}
			if h.IsControl() {
				continue
			}
			err := eachRecord(b, h, func(r record) bool {
				if r.offset < off || r.keyNull {
					return true
				}
				if r.valueNull {
					out[string(r.key)] = "!"
				} else {
					out[string(r.key)] = string(recordValue(r.raw))
				}
				return true
			})
			if err != nil {
				return nil, err
			}
		}
		off = c.Next
	}
	return out, nil
}
