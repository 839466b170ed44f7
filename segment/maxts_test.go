package segment

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// batchTimes builds an uncompressed batch with one record per timestamp
// delta (values name the record), as a producer with CreateTime sends it.
func batchTimes(baseTs int64, deltas ...int64) []byte {
	b := BuildBatch(baseTs, make([][]byte, len(deltas))...)
	out := append([]byte(nil), b[:BatchHeaderSize]...)
	maxTs := baseTs + deltas[0]
	for i, d := range deltas {
		var rec []byte
		rec = append(rec, 0)
		rec = binary.AppendVarint(rec, d)
		rec = binary.AppendVarint(rec, int64(i))
		rec = binary.AppendVarint(rec, -1)
		rec = binary.AppendVarint(rec, 1)
		rec = append(rec, byte('a'+i%26))
		rec = binary.AppendVarint(rec, 0)
		out = binary.AppendVarint(out, int64(len(rec)))
		out = append(out, rec...)
		maxTs = max(maxTs, baseTs+d)
	}
	be := binary.BigEndian
	be.PutUint32(out[offBatchLength:], uint32(len(out)-logOverhead))
	be.PutUint64(out[offMaxTimestamp:], uint64(maxTs))
	be.PutUint32(out[offCRC:], crc32.Checksum(out[offAttributes:], castagnoli))
	return out
}

func TestRecordTimes(t *testing.T) {
	type rt struct{ off, ts int64 }
	collect := func(b []byte) ([]rt, error) {
		var got []rt
		err := recordTimes(b, func(o, ts int64) bool { got = append(got, rt{o, ts}); return true })
		return got, err
	}
	b := batchTimes(1000, 5, -3, 0, 40)
	setBaseOffset(b, 70)
	got, err := collect(b)
	want := []rt{{70, 1005}, {71, 997}, {72, 1000}, {73, 1040}}
	if err != nil || len(got) != len(want) {
		t.Fatalf("got %v %v, want %v", got, err, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("record %d: %v, want %v", i, got[i], want[i])
		}
	}
	// Stopping early.
	n := 0
	if err := recordTimes(b, func(int64, int64) bool { n++; return n < 2 }); err != nil || n != 2 {
		t.Fatalf("stopped after %d calls (%v), want 2", n, err)
	}
	// LogAppendTime: every record has the batch's maxTimestamp.
	lat := append([]byte(nil), b...)
	binary.BigEndian.PutUint16(lat[offAttributes:], attrLogAppendTime)
	binary.BigEndian.PutUint64(lat[offMaxTimestamp:], 5555)
	if got, err := collect(lat); err != nil || got[1] != (rt{71, 5555}) {
		t.Fatalf("log append time: %v %v", got, err)
	}
	// Malformed records are corruption, never a panic; compressed ones are refused.
	for cut := BatchHeaderSize; cut < len(b); cut++ {
		short := append([]byte(nil), b[:cut]...)
		binary.BigEndian.PutUint32(short[offBatchLength:], uint32(cut-logOverhead))
		if _, err := collect(short); !errors.Is(err, ErrCorruptBatch) {
			t.Fatalf("batch cut at %d: %v, want ErrCorruptBatch", cut, err)
		}
	}
	// Compressed with every codec (snappy raw and xerial-framed): the same
	// records; a body that does not decompress is corruption.
	for _, codec := range []int{codecGzip, codecSnappy, -codecSnappy, codecLz4, codecZstd} {
		got, err := collect(compressBatch(t, b, codec))
		if err != nil || len(got) != len(want) || got[3] != want[3] {
			t.Fatalf("codec %d: %v %v, want %v", codec, got, err, want)
		}
		bad := compressBatch(t, b, codec)
		bad[BatchHeaderSize+len(bad[BatchHeaderSize:])/2] ^= 0xff
		if _, err := collect(bad); err != nil && !errors.Is(err, ErrCorruptBatch) {
			t.Fatalf("codec %d, damaged body: %v", codec, err)
		}
	}
	comp := append([]byte(nil), b...)
	binary.BigEndian.PutUint16(comp[offAttributes:], 2)
	if _, err := collect(comp); !errors.Is(err, ErrCorruptBatch) {
		t.Fatalf("not snappy under the snappy bit: %v", err)
	}
}

// compressBatch returns b with its records compressed by codec (-2: snappy
// in the Java client's xerial framing, two chunks), CRC recomputed.
func compressBatch(t testing.TB, b []byte, codec int) []byte {
	recs := b[BatchHeaderSize:]
	var body []byte
	switch codec {
	case codecNone:
		body = recs
	case codecGzip:
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		_, _ = w.Write(recs)
		_ = w.Close()
		body = buf.Bytes()
	case codecSnappy:
		body = s2.EncodeSnappy(nil, recs)
	case -codecSnappy:
		body = append(append([]byte(nil), xerialMagic...), 0, 0, 0, 1, 0, 0, 0, 1)
		half := len(recs) / 2
		for _, chunk := range [][]byte{recs[:half], recs[half:]} {
			c := s2.EncodeSnappy(nil, chunk)
			body = binary.BigEndian.AppendUint32(body, uint32(len(c)))
			body = append(body, c...)
		}
		codec = codecSnappy
	case codecLz4:
		var buf bytes.Buffer
		w := lz4.NewWriter(&buf)
		_, _ = w.Write(recs)
		_ = w.Close()
		body = buf.Bytes()
	case codecZstd:
		w, err := zstd.NewWriter(nil)
		if err != nil {
			t.Fatal(err)
		}
		body = w.EncodeAll(recs, nil)
		_ = w.Close()
	}
	out := append(append([]byte(nil), b[:BatchHeaderSize]...), body...)
	be := binary.BigEndian
	be.PutUint32(out[offBatchLength:], uint32(len(out)-logOverhead))
	be.PutUint16(out[offAttributes:], be.Uint16(out[offAttributes:])&^attrCompression|uint16(codec))
	be.PutUint32(out[offCRC:], crc32.Checksum(out[offAttributes:], castagnoli))
	return out
}

// tsModel is what the log holds, batch by batch, for the lookups by time.
type tsModel struct {
	batches  [][]byte
	logStart int64
}

func (m *tsModel) leo() int64 {
	if len(m.batches) == 0 {
		return m.logStart
	}
	return nextOffsetAt(m.batches[len(m.batches)-1])
}

// maxTimestamp is MaxTimestamp by brute force.
func (m *tsModel) maxTimestamp(upTo int64) (int64, int64, bool) {
	var best []byte
	for _, b := range m.batches {
		h := parseHeader(b)
		if h.BaseOffset >= m.logStart && h.NextOffset() <= upTo && (best == nil || h.MaxTimestamp > parseHeader(best).MaxTimestamp) {
			best = b
		}
	}
	if best == nil {
		return 0, 0, false
	}
	h := parseHeader(best)
	off := int64(-1)
	_ = recordTimes(best, func(o, t int64) bool {
		if t == h.MaxTimestamp {
			off = o
		}
		return off < 0
	})
	return off, h.MaxTimestamp, true
}

// offsetForTimestamp is OffsetForTimestamp by brute force: the first record
// at or after the log start with a timestamp at or after ts.
func (m *tsModel) offsetForTimestamp(ts int64) (int64, int64, bool) {
	off, rts, ok := int64(0), int64(0), false
	for _, b := range m.batches {
		_ = recordTimes(b, func(o, t int64) bool {
			if o >= m.logStart && t >= ts {
				off, rts, ok = o, t, true
			}
			return !ok
		})
		if ok {
			break
		}
	}
	return off, rts, ok
}

// TestLookupsByTimeMatchModel runs random workloads (appends of batches with
// out-of-order record timestamps, rolls, truncations, log start moves,
// clean reopens and power cuts) and checks MaxTimestamp at every upper
// bound and OffsetForTimestamp at many timestamps against brute force.
func TestLookupsByTimeMatchModel(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		mem := vfs.NewCrashableMem()
		opts := Options{SegmentBytes: int64(300 + rng.IntN(2000)), IndexIntervalBytes: int64(rng.IntN(300))}
		idx, err := OpenIndex(mem, "/d/index", 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		l, _, err := Open(mem, "/d/t-0", "t-0", idx, opts)
		if err != nil {
			t.Fatal(err)
		}
		m := &tsModel{}
		for step := 0; step < 300; step++ {
			switch op := rng.IntN(100); {
			case op < 70:
				deltas := make([]int64, 1+rng.IntN(5))
				for i := range deltas {
					deltas[i] = rng.Int64N(200) - 100
				}
				// Mostly rising time, with stragglers and a few from the future.
				base := int64(step*10) + rng.Int64N(50)
				if rng.IntN(30) == 0 {
					base += 5000
				}
				b := batchTimes(base, deltas...)
				if _, err := l.Append(b, 0); err != nil {
					t.Fatal(err)
				}
				m.batches = append(m.batches, b)
			case op < 76 && m.leo() > m.logStart:
				off := m.logStart + rng.Int64N(m.leo()-m.logStart)
				if err := l.TruncateTo(off); err != nil {
					t.Fatal(err)
				}
				n := 0
				for n < len(m.batches) && nextOffsetAt(m.batches[n]) <= off {
					n++
				}
				m.batches = m.batches[:n]
				if m.leo() < m.logStart {
					m.batches = nil
				}
			case op < 80 && m.leo() > m.logStart:
				off := m.logStart + rng.Int64N(m.leo()-m.logStart+1)
				if err := l.AdvanceLogStart(off); err != nil {
					t.Fatal(err)
				}
				m.logStart = off
			case op < 85:
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				if l, _, err = Open(mem, "/d/t-0", "t-0", idx, opts); err != nil {
					t.Fatal(err)
				}
			case op < 90:
				if err := l.Checkpoint(); err != nil {
					t.Fatal(err)
				}
				clone := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(101), RNG: rng})
				_ = l.Close()
				_ = idx.Close()
				mem = clone
				if idx, err = OpenIndex(mem, "/d/index", 1<<20); err != nil {
					t.Fatal(err)
				}
				if l, _, err = Open(mem, "/d/t-0", "t-0", idx, opts); err != nil {
					t.Fatal(err)
				}
				n := 0
				for n < len(m.batches) && nextOffsetAt(m.batches[n]) <= l.LogEndOffset() {
					n++
				}
				m.batches = m.batches[:n]
			}
			if l.LogEndOffset() != m.leo() || l.LogStartOffset() != m.logStart {
				t.Fatalf("seed %d step %d: log [%d, %d), model [%d, %d)", seed, step, l.LogStartOffset(), l.LogEndOffset(), m.logStart, m.leo())
			}
			bounds := []int64{m.logStart, m.leo(), m.leo() + 1}
			for i := 0; i < 8; i++ {
				bounds = append(bounds, m.logStart+rng.Int64N(m.leo()-m.logStart+1))
			}
			for _, upTo := range bounds {
				off, ts, ok, err := l.MaxTimestamp(upTo)
				woff, wts, wok := m.maxTimestamp(upTo)
				if err != nil || ok != wok || ok && (off != woff || ts != wts) {
					t.Fatalf("seed %d step %d: MaxTimestamp(%d) = %d@%d %v %v, want %d@%d %v (log [%d, %d))",
						seed, step, upTo, off, ts, ok, err, woff, wts, wok, m.logStart, m.leo())
				}
			}
			for i := 0; i < 6; i++ {
				q := rng.Int64N(int64(step*10) + 300)
				off, ts, ok, err := l.OffsetForTimestamp(q)
				woff, wts, wok := m.offsetForTimestamp(q)
				if err != nil || ok != wok || ok && (off != woff || ts != wts) {
					t.Fatalf("seed %d step %d: OffsetForTimestamp(%d) = %d@%d %v %v, want %d@%d %v", seed, step, q, off, ts, ok, err, woff, wts, wok)
				}
			}
		}
		_ = l.Close()
		_ = idx.Close()
	}
}

func TestTsRing(t *testing.T) {
	var r tsRing
	if _, ok := r.lastBelow(100); ok {
		t.Fatal("empty ring found a point")
	}
	for i := int64(0); i < 100; i++ { // batches [2i, 2i+2), each a rise
		r.push(tsPoint{ts: 10 * i, off: 2 * i, next: 2*i + 2})
	}
	if r.n != tsRingSize {
		t.Fatalf("ring holds %d points, want %d", r.n, tsRingSize)
	}
	if p, ok := r.lastBelow(151); !ok || p.off != 148 {
		t.Fatalf("lastBelow(151) = %+v %v, want the batch at 148", p, ok)
	}
	// Older than the ring reaches: not known here.
	if p, ok := r.lastBelow(2 * (100 - tsRingSize)); ok {
		t.Fatalf("lastBelow past the ring found %+v", p)
	}
	if p, ok := r.lastBelow(2*(100-tsRingSize) + 2); !ok || p.off != 2*(100-tsRingSize) {
		t.Fatalf("oldest point: %+v %v", p, ok)
	}
	r.truncate(151)
	if p := r.at(r.n - 1); p.off != 148 {
		t.Fatalf("after truncate(151) the newest point is %+v", p)
	}
	r.reset()
	if _, ok := r.lastBelow(1000); ok {
		t.Fatal("reset ring found a point")
	}
}

// TestLookupsByTimeCompressed: a compressed batch is decompressed to find
// the record; one whose body does not decompress (a follower's append does
// not check bodies) answers with the batch, as before records were decoded.
func TestLookupsByTimeCompressed(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	l, _ := e.open(Options{})
	defer l.Close()
	for i, codec := range []int{codecNone, -1, codecZstd} { // -1: zstd bit, raw body
		b := batchTimes(int64(1000*(i+1)), 0, 50, 10)
		if codec == -1 {
			binary.BigEndian.PutUint16(b[offAttributes:], codecZstd)
			binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
		} else if codec != codecNone {
			b = compressBatch(t, b, codec)
		}
		if _, err := appendTrusted(l, b, 0); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ ts, off, rts int64 }{
		{1020, 1, 1050}, // uncompressed: the record
		{1051, 3, 2050}, // undecodable: the batch
		{3020, 7, 3050}, // zstd: the record
	} {
		off, rts, ok, err := l.OffsetForTimestamp(c.ts)
		if err != nil || !ok || off != c.off || rts != c.rts {
			t.Fatalf("OffsetForTimestamp(%d) = %d@%d %v %v, want %d@%d", c.ts, off, rts, ok, err, c.off, c.rts)
		}
	}
	if off, ts, ok, err := l.MaxTimestamp(6); err != nil || !ok || off != 3 || ts != 2050 {
		t.Fatalf("MaxTimestamp(6) = %d@%d %v %v, want the undecodable batch 3@2050", off, ts, ok, err)
	}
	if off, ts, ok, err := l.MaxTimestamp(9); err != nil || !ok || off != 7 || ts != 3050 {
		t.Fatalf("MaxTimestamp(9) = %d@%d %v %v, want the zstd record 7@3050", off, ts, ok, err)
	}
	if off, ts, ok, err := l.MaxTimestamp(3); err != nil || !ok || off != 1 || ts != 1050 {
		t.Fatalf("MaxTimestamp(3) = %d@%d %v %v, want 1@1050", off, ts, ok, err)
	}
}

// readCounter counts ReadAt calls per segment file (an errorfs injector
// that injects nothing).
type readCounter struct {
	mu    sync.Mutex
	files map[string]bool
}

func (c *readCounter) String() string { return "readCounter" }
func (c *readCounter) MaybeError(op errorfs.Op) error {
	if op.Kind == errorfs.OpFileReadAt && strings.HasSuffix(op.Path, segSuffix) {
		c.mu.Lock()
		c.files[op.Path] = true
		c.mu.Unlock()
	}
	return nil
}

func (c *readCounter) take() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.files)
	c.files = map[string]bool{}
	return n
}

// TestMaxTimestampReadsLittle: after a reopen (no segment knows where its
// largest timestamp sits) and with the HW far behind the log end (the ring
// does not reach), MaxTimestamp reads the segment that the HW cuts and the
// one segment that wins, not every segment.
func TestMaxTimestampReadsLittle(t *testing.T) {
	mem := vfs.NewMem()
	rc := &readCounter{files: map[string]bool{}}
	fs := errorfs.Wrap(mem, rc)
	e := newEnv(t, mem)
	opts := Options{SegmentBytes: 400}
	l, _, err := Open(fs, "/data/topic-0", "topic-0", e.idx, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 400; i++ {
		if _, err := l.Append(batchTimes(int64(1000+i), 0, 1), 0); err != nil { // rising time
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if l, _, err = Open(fs, "/data/topic-0", "topic-0", e.idx, opts); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	segs := len(l.Segments())
	rc.take()
	off, ts, ok, err := l.MaxTimestamp(401) // mid-batch bound: batch 400..401 is out
	if err != nil || !ok || off != 399 || ts != 1200 {
		t.Fatalf("MaxTimestamp(401) = %d@%d %v %v, want 399@1200", off, ts, ok, err)
	}
	if n := rc.take(); n > 2 {
		t.Fatalf("read %d of %d segments", n, segs)
	}
	if _, _, _, err := l.MaxTimestamp(401); err != nil || rc.take() > 2 {
		t.Fatalf("second call: %v", err)
	}
}
