package segment

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// validateNow is the clock of the validation tests: 2026-01-01.
var validateNow = time.UnixMilli(1767225600000)

// rawBatch frames body (the records section, compressed or not) as a v2
// batch with the given attributes, record count (lastOffsetDelta =
// count-1) and timestamps, with a correct CRC-32C: what a client may send.
func rawBatch(attrs int16, count int32, baseTs, maxTs int64, body []byte) []byte {
	b := make([]byte, BatchHeaderSize, BatchHeaderSize+len(body))
	be := binary.BigEndian
	be.PutUint32(b[offLeaderEpoch:], 0xffffffff)
	b[offMagic] = 2
	be.PutUint16(b[offAttributes:], uint16(attrs))
	be.PutUint32(b[offLastOffsetDelta:], uint32(count-1))
	be.PutUint64(b[offBaseTimestamp:], uint64(baseTs))
	be.PutUint64(b[offMaxTimestamp:], uint64(maxTs))
	be.PutUint64(b[offProducerID:], 0xffffffffffffffff)
	be.PutUint16(b[offProducerEpoch:], 0xffff)
	be.PutUint32(b[offBaseSequence:], 0xffffffff)
	be.PutUint32(b[offRecordCount:], uint32(count))
	b = append(b, body...)
	be.PutUint32(b[offBatchLength:], uint32(len(b)-logOverhead))
	be.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
	return b
}

// rec encodes one record: its offset and timestamp deltas, a value and
// headers count hdrs (each header "k" = "v").
func rec(offDelta, tsDelta int64, value []byte, hdrs int) []byte {
	var r []byte
	r = append(r, 0)
	r = binary.AppendVarint(r, tsDelta)
	r = binary.AppendVarint(r, offDelta)
	r = binary.AppendVarint(r, -1)
	r = binary.AppendVarint(r, int64(len(value)))
	r = append(r, value...)
	r = binary.AppendVarint(r, int64(hdrs))
	for range hdrs {
		r = append(r, 2, 'k', 2, 'v')
	}
	return append(binary.AppendVarint(nil, int64(len(r))), r...)
}

// withCodec compresses an uncompressed batch's records with codec (as
// compressBatch; -codecSnappy: xerial framing).
func withCodec(t testing.TB, b []byte, codec int) []byte {
	if codec == codecNone {
		return b
	}
	return compressBatch(t, b, codec)
}

// poison is a batch a leader must refuse, and the error it must give.
type poison struct {
	name  string
	batch []byte
	want  error
}

// poisonBatches are the batches of issue 14 part 3 that a client could
// once write and no consumer could read past (or could not see).
func poisonBatches(t testing.TB) []poison {
	now := validateNow.UnixMilli()
	one := rec(0, 0, []byte("v"), 0)
	var ps []poison
	for _, c := range []struct {
		name  string
		codec int16
	}{{"gzip", codecGzip}, {"snappy", codecSnappy}, {"lz4", codecLz4}, {"zstd", codecZstd}} {
		ps = append(ps, poison{"garbage-" + c.name, rawBatch(c.codec, 1, now, now, []byte("this is not compressed at all, not even close")), ErrCorruptBatch})
	}
	ps = append(ps,
		poison{"garbage-xerial-snappy", rawBatch(codecSnappy, 1, now, now, append(append([]byte(nil), xerialMagic...), 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 9, 0xff, 0xff)), ErrCorruptBatch},
		poison{"codec-6", rawBatch(6, 1, now, now, one), ErrUnsupportedCompression},
		poison{"bad-length-varint", rawBatch(0, 1, now, now, bytes.Repeat([]byte{0xff}, 11)), ErrInvalidRecord},
		poison{"bad-field-varint", rawBatch(0, 1, now, now, []byte{4, 0, 0xff, 0xff, 0xff}), ErrInvalidRecord},
		poison{"count-million-one-record", rawBatch(0, 1000000, now, now, one), ErrInvalidRecord},
		poison{"count-two-one-record-zstd", withCodec(t, rawBatch(0, 2, now, now, one), codecZstd), ErrInvalidRecord},
		poison{"trailing-bytes", rawBatch(0, 1, now, now, append(append([]byte(nil), one...), 0)), ErrInvalidRecord},
		poison{"trailing-bytes-lz4", withCodec(t, rawBatch(0, 1, now, now, append(append([]byte(nil), one...), 7, 7)), codecLz4), ErrInvalidRecord},
		poison{"offset-delta-gap", rawBatch(0, 2, now, now, append(rec(0, 0, nil, 0), rec(5, 0, nil, 0)...)), ErrInvalidRecord},
		poison{"offset-delta-gap-gzip", withCodec(t, rawBatch(0, 2, now, now, append(rec(0, 0, nil, 0), rec(5, 0, nil, 0)...)), codecGzip), ErrInvalidRecord},
		poison{"value-past-record", rawBatch(0, 1, now, now, []byte{5, 0, 0, 0, 1, 40}), ErrInvalidRecord},
		poison{"negative-headers", rawBatch(0, 1, now, now, []byte{6, 0, 0, 0, 1, 0, 1}), ErrInvalidRecord},
		poison{"control", rawBatch(0x20, 1, now, now, one), ErrInvalidRecord},
		poison{"transactional-no-producer-id", rawBatch(0x10, 1, now, now, one), ErrInvalidRecord},
		poison{"log-append-time-flag", rawBatch(attrLogAppendTime, 1, now, now, one), ErrInvalidTimestamp},
		poison{"year-9999", rawBatch(0, 1, 253402300799000, 253402300799000, one), ErrInvalidTimestamp},
		poison{"year-9999-record-only", rawBatch(0, 2, now, now, append(rec(0, 0, nil, 0), rec(1, 253402300799000-now, nil, 0)...)), ErrInvalidTimestamp},
		poison{"year-9999-snappy", withCodec(t, rawBatch(0, 1, 253402300799000, now, one), codecSnappy), ErrInvalidTimestamp},
		poison{"zero-records", rawBatch(0, 0, now, now, nil), ErrInvalidBatch},
	)
	idem := rawBatch(0, 1, now, now, one)
	binary.BigEndian.PutUint64(idem[offProducerID:], 7)
	binary.BigEndian.PutUint16(idem[offProducerEpoch:], 0)
	binary.BigEndian.PutUint32(idem[offCRC:], crc32.Checksum(idem[offAttributes:], castagnoli))
	ps = append(ps, poison{"producer-without-sequence", idem, ErrInvalidRecord})
	// A record longer than the stream buffer, checked field by field,
	// whose header count lies.
	big := rec(0, 0, bytes.Repeat([]byte("x"), 3*streamBuffer), 0)
	big[len(big)-1] = 3
	ps = append(ps, poison{"big-record-bad-headers-zstd", withCodec(t, rawBatch(0, 1, now, now, big), codecZstd), ErrInvalidRecord})
	return ps
}

// goodBatches are batches a leader must take: every codec, several
// records, headers, null and empty values, a record longer than the
// stream buffer, timestamps at the bounds.
func goodBatches(t testing.TB) map[string][]byte {
	now := validateNow.UnixMilli()
	var body []byte
	for i := range 20 {
		body = append(body, rec(int64(i), int64(i*7-50), bytes.Repeat([]byte{byte(i)}, i*13), i%3)...)
	}
	body = append(body, rec(20, 0, bytes.Repeat([]byte("y"), 3*streamBuffer), 2)...)
	plain := rawBatch(0, 21, now-10, now+140, body)
	out := map[string][]byte{
		"none":          plain,
		"gzip":          withCodec(t, plain, codecGzip),
		"snappy":        withCodec(t, plain, codecSnappy),
		"xerial-snappy": withCodec(t, plain, -codecSnappy),
		"lz4":           withCodec(t, plain, codecLz4),
		"zstd":          withCodec(t, plain, codecZstd),
		"no-timestamp":  rawBatch(0, 1, -1, -1, rec(0, 0, nil, 0)),
		"an-hour-ahead": rawBatch(0, 1, now+DefaultTimestampAfterMaxMs, now+DefaultTimestampAfterMaxMs, rec(0, 0, nil, 0)),
		"year-1971":     rawBatch(0, 1, 31536000000, 31536000000, rec(0, 0, nil, 0)),
		"build-batch":   BuildBatch(now, []byte("a"), nil, []byte("ccc")),
	}
	idem := rawBatch(0, 1, now, now, rec(0, 0, []byte("i"), 0))
	setProducer(idem, 7, 0, 0, 0)
	out["idempotent"] = idem
	return out
}

// TestAppendValidatesRecords: each poison batch is refused with its
// sentinel and leaves the log as it was; every good batch, compressed or
// not, is appended; the timestamp bounds follow the options.
func TestAppendValidatesRecords(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	l, _ := e.open(Options{Now: func() time.Time { return validateNow }})
	defer l.Close()
	for _, p := range poisonBatches(t) {
		leo := l.LogEndOffset()
		_, err := l.Append(append([]byte(nil), p.batch...), 1)
		if !errors.Is(err, p.want) {
			t.Errorf("%s: got %v, want %v", p.name, err, p.want)
		}
		if l.LogEndOffset() != leo {
			t.Errorf("%s: log end moved from %d to %d", p.name, leo, l.LogEndOffset())
		}
		// One poison batch fails the whole append, good batches with it.
		good := BuildBatch(validateNow.UnixMilli(), []byte("ok"))
		if _, err := l.Append(append(good, p.batch...), 1); !errors.Is(err, p.want) || l.LogEndOffset() != leo {
			t.Errorf("%s after a good batch: %v, log end %d", p.name, err, l.LogEndOffset())
		}
	}
	for name, b := range goodBatches(t) {
		info, err := l.Append(append([]byte(nil), b...), 1)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		h := parseHeader(b)
		if len(info.Headers) != 1 || info.Headers[0].RecordCount != h.RecordCount || info.Headers[0].BaseOffset != info.FirstOffset || info.Headers[0].LeaderEpoch != 1 {
			t.Errorf("%s: headers %+v, first offset %d", name, info.Headers, info.FirstOffset)
		}
	}

	// Tighter bounds from the options.
	l2, _ := newEnv(t, vfs.NewMem()).open(Options{Now: func() time.Time { return validateNow }, TimestampBeforeMaxMs: 1000, TimestampAfterMaxMs: 10})
	defer l2.Close()
	now := validateNow.UnixMilli()
	for _, c := range []struct {
		ts int64
		ok bool
	}{{now, true}, {now - 1000, true}, {now - 1001, false}, {now + 10, true}, {now + 11, false}, {-1, true}} {
		_, err := l2.Append(rawBatch(0, 1, c.ts, c.ts, rec(0, 0, nil, 0)), 0)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrInvalidTimestamp)) {
			t.Errorf("timestamp now%+d: %v", c.ts-now, err)
		}
	}
}

// TestAppendReplicatedTrustsLeader: a follower appends what its leader
// wrote without the record checks (the leader validated it).
func TestAppendReplicatedTrustsLeader(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	l, _ := e.open(Options{Now: func() time.Time { return validateNow }})
	defer l.Close()
	for _, p := range poisonBatches(t) {
		if p.want == ErrUnsupportedCompression {
			continue
		}
		b := append([]byte(nil), p.batch...)
		if parseHeader(b).LastOffsetDelta < 0 {
			continue
		}
		if _, err := appendTrusted(l, b, 0); err != nil {
			t.Errorf("%s: %v", p.name, err)
		}
	}
}

// TestBatchIter walks concatenated batches and stops at a frame that does
// not fit.
func TestBatchIter(t *testing.T) {
	a, b := BuildBatch(1, []byte("a")), BuildBatch(2, []byte("b"), []byte("c"))
	blob := append(append([]byte(nil), a...), b...)
	it := NewBatchIter(blob)
	var got []int32
	for h, batch, ok := it.Next(); ok; h, batch, ok = it.Next() {
		if len(batch) != h.Size() {
			t.Fatalf("batch of %d bytes, header says %d", len(batch), h.Size())
		}
		got = append(got, h.RecordCount)
	}
	if it.Err() != nil || fmt.Sprint(got) != "[1 2]" {
		t.Fatalf("walked %v, %v", got, it.Err())
	}
	it = NewBatchIter(blob[:len(blob)-1])
	n := 0
	for _, _, ok := it.Next(); ok; _, _, ok = it.Next() {
		n++
	}
	if n != 1 || !errors.Is(it.Err(), ErrInvalidBatch) {
		t.Fatalf("cut blob: %d batches, %v", n, it.Err())
	}
}

// FuzzValidateRecords frames arbitrary record bytes (or compressed bytes)
// as a batch with a valid CRC, so that mutations reach the record walker.
// The validator never panics, answers only its sentinels, and whatever it
// accepts decodes with the independent decoder of the lookups by time
// (recordTimes), record by record at offsets 0..count-1, within the
// timestamp bounds.
func FuzzValidateRecords(f *testing.F) {
	for _, p := range poisonBatches(f) {
		h := parseHeader(p.batch)
		f.Add(h.Attributes, h.RecordCount, h.BaseTimestamp, h.MaxTimestamp, p.batch[BatchHeaderSize:])
	}
	for _, b := range goodBatches(f) {
		h := parseHeader(b)
		f.Add(h.Attributes, h.RecordCount, h.BaseTimestamp, h.MaxTimestamp, b[BatchHeaderSize:])
	}
	now := validateNow.UnixMilli()
	f.Fuzz(func(t *testing.T, attrs int16, count int32, baseTs, maxTs int64, body []byte) {
		b := rawBatch(attrs, count, baseTs, maxTs, body)
		h, n, err := checkBatch(b, 1<<20)
		if err != nil {
			return
		}
		rc := newRecordCheck(now, 1000*86400000, DefaultTimestampAfterMaxMs)
		err = rc.batch(b[:n], h)
		if err != nil {
			for _, s := range []error{ErrInvalidRecord, ErrCorruptBatch, ErrInvalidTimestamp, ErrUnsupportedCompression, ErrTransactionalBatch} {
				if errors.Is(err, s) {
					return
				}
			}
			t.Fatalf("error wraps no sentinel: %v", err)
		}
		i := int64(0)
		if err := recordTimes(b, func(off, ts int64) bool {
			if off != i || (ts != -1 && (ts < rc.minTs || ts > rc.maxTs)) {
				t.Fatalf("accepted record %d at offset %d, timestamp %d", i, off, ts)
			}
			i++
			return true
		}); err != nil || i != int64(h.RecordCount) {
			t.Fatalf("accepted a batch that decodes to %d of %d records: %v", i, h.RecordCount, err)
		}
	})
}

// TestWriteValidateCorpus writes the poison and good batches into
// testdata/fuzz/FuzzValidateRecords (SLUICE_WRITE_CORPUS=1), so that the
// corpus holds them by name; make test replays it.
func TestWriteValidateCorpus(t *testing.T) {
	if os.Getenv("SLUICE_WRITE_CORPUS") == "" {
		t.Skip("set SLUICE_WRITE_CORPUS=1 to rewrite the corpus")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzValidateRecords")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) {
		h := parseHeader(b)
		s := fmt.Sprintf("go test fuzz v1\nint16(%d)\nint32(%d)\nint64(%d)\nint64(%d)\n[]byte(%q)\n", h.Attributes, h.RecordCount, h.BaseTimestamp, h.MaxTimestamp, b[BatchHeaderSize:])
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range poisonBatches(t) {
		write("poison-"+p.name, p.batch)
	}
	for name, b := range goodBatches(t) {
		write("good-"+name, b)
	}
}
