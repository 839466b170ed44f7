package segment

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// fuzzBatches returns n valid batches with their offsets and epochs final
// (as a log holds them), concatenated, and the end of each batch.
func fuzzBatches(n int) ([]byte, []int) {
	var out []byte
	var ends []int
	off := int64(0)
	for i := 0; i < n; i++ {
		b := batchOf(int64(1000+i), fmt.Sprint("f", i), 1+i%3)
		setBaseOffset(b, off)
		setLeaderEpoch(b, int32(i/2))
		off = parseHeader(b).NextOffset()
		out = append(out, b...)
		ends = append(ends, len(out))
	}
	return out, ends
}

// FuzzValidateBatches: ValidateBatches (and checkBatch under it) never
// panics, and whatever it accepts is a chain of whole v2 batches whose
// CRC-32C, recomputed here, matches.
func FuzzValidateBatches(f *testing.F) {
	one := BuildBatch(1, []byte("a"), []byte("bc"))
	two, _ := fuzzBatches(2)
	f.Add([]byte{})
	f.Add(one)
	f.Add(two)
	f.Add(one[:len(one)-1])
	bad := append([]byte(nil), one...)
	bad[len(bad)-1] ^= 1
	f.Add(bad)
	f.Fuzz(func(t *testing.T, data []byte) {
		const maxSize = 1 << 16
		n, recs, err := ValidateBatches(data, maxSize)
		if err != nil {
			if n != 0 || recs != 0 {
				t.Fatalf("rejected with %d batches, %d records: %v", n, recs, err)
			}
			if !errors.Is(err, ErrInvalidBatch) && !errors.Is(err, ErrCorruptBatch) && !errors.Is(err, ErrBatchTooLarge) {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			return
		}
		var batches int
		var records int64
		for p := 0; p < len(data); {
			if len(data)-p < BatchHeaderSize {
				t.Fatalf("accepted %d trailing bytes", len(data)-p)
			}
			size := int(int32(binary.BigEndian.Uint32(data[p+offBatchLength:]))) + logOverhead
			if size < BatchHeaderSize || size > maxSize || p+size > len(data) {
				t.Fatalf("accepted a batch of length %d at %d of %d", size, p, len(data))
			}
			b := data[p : p+size]
			if b[offMagic] != 2 {
				t.Fatalf("accepted magic %d", b[offMagic])
			}
			if got, want := crc32.Checksum(b[offAttributes:], crc32.MakeTable(crc32.Castagnoli)), binary.BigEndian.Uint32(b[offCRC:]); got != want {
				t.Fatalf("accepted batch at %d with CRC %08x, computed %08x", p, want, got)
			}
			batches++
			records += int64(int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:]))) + 1
			p += size
		}
		if batches != n || records != recs || n == 0 {
			t.Fatalf("accepted %d batches, %d records; walked %d, %d", n, recs, batches, records)
		}
	})
}

// FuzzRecovery writes a segment file made of valid batches (possibly with
// one byte flipped) followed by arbitrary bytes — or puts the arbitrary
// bytes in a second segment — and opens the log on it as after a crash.
// Open must not panic; the log it returns must hold a prefix, in whole
// batches, of the chain of valid batches in the bytes written, including
// every written batch before the first damaged byte; every batch it returns
// validates; and it takes a new append that reads back.
func FuzzRecovery(f *testing.F) {
	f.Add(uint8(0), uint16(0), false, []byte{})
	f.Add(uint8(3), uint16(0), false, []byte{})
	f.Add(uint8(3), uint16(0), false, []byte{0, 0, 0, 0})
	f.Add(uint8(4), uint16(100), false, []byte("garbage"))
	f.Add(uint8(2), uint16(0), true, BuildBatch(5, []byte("x")))
	torn, _ := fuzzBatches(1)
	f.Add(uint8(2), uint16(0), false, torn[:40])
	f.Fuzz(func(t *testing.T, nBatches uint8, flip uint16, second bool, tail []byte) {
		prefix, ends := fuzzBatches(int(nBatches % 8))
		intact := len(prefix) // bytes of whole written batches before any damage
		if flip != 0 && len(prefix) > 0 {
			at := int(flip-1) % len(prefix)
			prefix[at] ^= byte(flip>>8) | 1
			intact = 0
			for _, e := range ends {
				if e > at {
					break
				}
				intact = e
			}
		}
		fs := vfs.NewMem()
		const dir = "/data/topic-0"
		if err := fs.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile := func(name string, data []byte) {
			fl, err := fs.Create(fs.PathJoin(dir, name), vfs.WriteCategoryUnspecified)
			if err != nil {
				t.Fatal(err)
			}
			// A copy: under invariants (and -race) MemFS's Write flips
			// every bit of its argument to catch callers that reuse it.
			if _, err := fl.Write(append([]byte(nil), data...)); err != nil {
				t.Fatal(err)
			}
			if err := fl.Close(); err != nil {
				t.Fatal(err)
			}
		}
		all := append(append([]byte(nil), prefix...), tail...)
		if second && len(tail) > 0 {
			next := int64(0)
			if intact > 0 {
				next = nextOffsetAt(prefix[lastStart(prefix[:intact]):])
			}
			if next == 0 {
				// The second segment would take the first one's name.
				all = tail
			} else {
				writeFile(segmentName(0), prefix)
			}
			writeFile(segmentName(next), tail)
		} else {
			writeFile(segmentName(0), all)
		}
		// The longest chain of valid, contiguous batches in the bytes
		// written: recovery may keep any whole-batch prefix of it.
		chain := validChain(all)
		if len(chain) < intact {
			t.Fatalf("test bug: chain of %d bytes, %d intact", len(chain), intact)
		}

		idx, err := OpenIndex(fs, "/data/index", 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		defer idx.Close()
		opts := Options{RetentionBytes: -1, SegmentBytes: 1 << 20}
		l, _, err := Open(fs, dir, "topic-0", idx, opts)
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		var got []byte
		for off := l.LogStartOffset(); off < l.LogEndOffset(); {
			c, err := l.Read(off, 1<<20, l.LogEndOffset(), nil)
			if err != nil {
				t.Fatalf("read %d: %v", off, err)
			}
			if _, _, err := ValidateBatches(c.Data, DefaultMaxBatchBytes); err != nil {
				t.Fatalf("read %d returned an invalid batch: %v", off, err)
			}
			got = append(got, c.Data...)
			off = c.Next
		}
		if len(got) < intact || len(got) > len(chain) || !bytes.Equal(got, chain[:len(got)]) {
			t.Fatalf("log holds %d bytes; valid chain %d bytes, %d intact written", len(got), len(chain), intact)
		}
		leo := l.LogEndOffset()
		nb := BuildBatch(7, []byte("after"))
		// The epoch field lies outside the CRC, so recovered batches may
		// carry any epoch: append at the latest one.
		info, err := l.Append(nb, max(l.LatestEpoch(), 0))
		if err != nil {
			t.Fatalf("append after recovery: %v", err)
		}
		if info.FirstOffset != leo {
			t.Fatalf("append at %d, log end was %d", info.FirstOffset, leo)
		}
		c, err := l.Read(leo, 1<<20, leo+1, nil)
		if err != nil || !bytes.Equal(c.Data, nb) {
			t.Fatalf("read back the new append: %v", err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// validChain returns the longest prefix of b made of whole valid batches
// with contiguous offsets from 0 and non-decreasing leader epochs.
func validChain(b []byte) []byte {
	p, expect, epoch := 0, int64(0), int32(-1)
	for p < len(b) {
		h, n, err := checkBatch(b[p:], DefaultMaxBatchBytes)
		if err != nil || h.BaseOffset != expect || (h.LeaderEpoch >= 0 && h.LeaderEpoch < epoch) {
			break
		}
		epoch = max(epoch, h.LeaderEpoch)
		expect = h.NextOffset()
		p += n
	}
	return b[:p]
}

// lastStart returns the position of the last batch of a chain of whole
// batches.
func lastStart(b []byte) int {
	p, last := 0, 0
	for p < len(b) {
		last = p
		p += int(int32(binary.BigEndian.Uint32(b[p+offBatchLength:]))) + logOverhead
	}
	return last
}

// FuzzReadSequential drives a log with appends, truncations and two
// sequential readers, and checks every Read against a model: a reader's
// next Read starts where its last one ended, which is what Read's position
// hints serve, and a truncation (followed by appends that reuse the cut
// offsets) must never let a hint return the old bytes.
func FuzzReadSequential(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 1, 1, 2, 0, 0, 1, 1, 5, 5})
	f.Add([]byte{4, 8, 12, 1, 5, 1, 5, 6, 4, 4, 1, 5, 1, 5, 10, 0, 1})
	f.Add([]byte{0, 4, 8, 12, 16, 20, 24, 1, 1, 1, 1, 1, 1, 14, 0, 0, 0, 1, 1, 1})
	f.Fuzz(func(t *testing.T, ops []byte) {
		e := newEnv(t, vfs.NewMem())
		l, _ := e.open(Options{RetentionBytes: -1, SegmentBytes: 1024, IndexIntervalBytes: 128})
		defer l.Close()
		type mb struct {
			base, next int64
			data       []byte
		}
		var model []mb
		var cursors [2]int64
		var buf []byte
		for i, op := range ops {
			arg := int(op >> 2)
			switch op & 3 {
			case 0: // append
				b := batchOf(int64(i), fmt.Sprint("s", i), 1+arg%4)
				info, err := l.Append(b, 1)
				if err != nil {
					t.Fatal(err)
				}
				model = append(model, mb{info.FirstOffset, info.LastOffset + 1, b})
			case 1: // a reader reads on from its cursor
				r := arg % 2
				leo := l.LogEndOffset()
				c, err := l.Read(cursors[r], 1+arg*40, leo, buf)
				if err != nil {
					t.Fatalf("op %d: read %d: %v", i, cursors[r], err)
				}
				// Whole model batches from the one holding the cursor, at
				// least one if any, within maxBytes when more than one (a
				// Read stops at a segment's end, which the model ignores).
				first := len(model)
				for j, m := range model {
					if m.next > cursors[r] {
						first = j
						break
					}
				}
				rest, n := c.Data, 0
				for j := first; j < len(model) && len(rest) > 0; j++ {
					if !bytes.HasPrefix(rest, model[j].data) {
						t.Fatalf("op %d: reader %d at %d: batch %d of the read is not the model's batch at %d", i, r, cursors[r], n, model[j].base)
					}
					rest = rest[len(model[j].data):]
					n++
				}
				switch {
				case len(rest) > 0:
					t.Fatalf("op %d: reader %d at %d read %d bytes past the model's end", i, r, cursors[r], len(rest))
				case n == 0 && first < len(model):
					t.Fatalf("op %d: reader %d at %d read nothing, model has batch %d", i, r, cursors[r], model[first].base)
				case n > 1 && len(c.Data) > 1+arg*40:
					t.Fatalf("op %d: %d batches, %d bytes, over maxBytes %d", i, n, len(c.Data), 1+arg*40)
				}
				if c.Size > 0 {
					cursors[r] = c.Next
				}
				buf = c.Data[:0]
			case 2: // truncate somewhere in the last few batches
				if len(model) == 0 {
					continue
				}
				j := max(0, len(model)-1-arg%4)
				if err := l.TruncateTo(model[j].base); err != nil {
					t.Fatal(err)
				}
				model = model[:j]
				for r := range cursors {
					cursors[r] = min(cursors[r], l.LogEndOffset())
				}
			case 3: // a reader restarts from the log start
				cursors[arg%2] = l.LogStartOffset()
			}
		}
	})
}

// TestReadStaleHint plants wrong read hints (what a future in-place
// truncation could leave behind): Read must notice and ask the index.
func TestReadStaleHint(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	l, _ := e.open(Options{RetentionBytes: -1, IndexIntervalBytes: 128})
	defer l.Close()
	var batches [][]byte
	for i := 0; i < 20; i++ {
		b := batchOf(int64(i), fmt.Sprint("h", i), 2)
		if _, err := l.Append(b, 1); err != nil {
			t.Fatal(err)
		}
		batches = append(batches, b)
	}
	seg := l.active()
	for _, pos := range []int64{0, int64(len(batches[0])), 7, seg.size - BatchHeaderSize, seg.size - 61 - int64(len(batches[19]))} {
		l.mu.Lock()
		l.hints[0] = readHint{seg: seg, offset: 20, pos: pos}
		l.mu.Unlock()
		c, err := l.Read(20, 1, l.LogEndOffset(), nil)
		if err != nil || !bytes.Equal(c.Data, batches[10]) {
			t.Fatalf("stale hint at %d: read %d bytes at %d: %v", pos, len(c.Data), c.First, err)
		}
	}
}

// FuzzRecoveryAfterCheckpoint is FuzzRecovery for a log that checkpointed:
// batches appended and checkpointed, more appended, then a crash that keeps
// every byte, after which the last segment's unsynced tail is cut by up to
// cut bytes and garbage is appended to it. Recovery trusts the bytes before
// the recovery point and scans the rest: the log must be a whole-batch
// prefix of the valid chain in the files, hold at least the checkpointed
// batches, and take a new append.
func FuzzRecoveryAfterCheckpoint(f *testing.F) {
	f.Add(uint8(3), uint8(3), uint16(0), []byte{})
	f.Add(uint8(3), uint8(3), uint16(50), []byte{})
	f.Add(uint8(2), uint8(4), uint16(0), []byte("garbage after the last batch, long enough for a header..."))
	f.Add(uint8(4), uint8(0), uint16(300), []byte{0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, nBefore, nAfter uint8, cut uint16, garbage []byte) {
		mem := vfs.NewCrashableMem()
		idx, err := OpenIndex(mem, "/data/index", 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		const dir = "/data/topic-0"
		opts := Options{RetentionBytes: -1, IndexIntervalBytes: 100, SegmentBytes: 300}
		now := time.Now().UnixMilli()
		l, _, err := Open(mem, dir, "topic-0", idx, opts)
		if err != nil {
			t.Fatal(err)
		}
		var ckptBytes int
		for i := 0; i < int(nBefore%8)+int(nAfter%8); i++ {
			if i == int(nBefore%8) {
				if err := l.Checkpoint(); err != nil {
					t.Fatal(err)
				}
				ckptBytes = int(l.Size())
			}
			if _, err := l.Append(batchOf(now+int64(i), fmt.Sprint("c", i), 1+i%3), int32(i/3)); err != nil {
				t.Fatal(err)
			}
		}
		if nAfter%8 == 0 {
			if err := l.Checkpoint(); err != nil {
				t.Fatal(err)
			}
			ckptBytes = int(l.Size())
		}
		crashed := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 100, RNG: rand.New(rand.NewPCG(1, 2))})
		_ = l.Close()
		_ = idx.Close()

		// Cut the last segment's tail and append garbage to it.
		names, err := crashed.List(dir)
		if err != nil {
			t.Fatal(err)
		}
		sort.Strings(names)
		var segs []string
		for _, n := range names {
			if _, ok := parseSegmentName(n); ok {
				segs = append(segs, n)
			}
		}
		path := crashed.PathJoin(dir, segs[len(segs)-1])
		var before []byte // the segments before the last, whole
		for _, n := range segs[:len(segs)-1] {
			fl, err := crashed.Open(crashed.PathJoin(dir, n))
			if err != nil {
				t.Fatal(err)
			}
			st, _ := fl.Stat()
			b := make([]byte, st.Size())
			if _, err := readFull(fl, b, 0); err != nil {
				t.Fatal(err)
			}
			_ = fl.Close()
			before = append(before, b...)
		}
		fl, err := crashed.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		st, err := fl.Stat()
		if err != nil {
			t.Fatal(err)
		}
		data := make([]byte, st.Size())
		if _, err := readFull(fl, data, 0); err != nil {
			t.Fatal(err)
		}
		_ = fl.Close()
		// A crash changes nothing before the recovery point (fsynced), so
		// the cut stops there: damage to synced bytes is corruption, which
		// Open does not look for (it trusts what the checkpoint covers;
		// the fuzzer showed it serving a checkpointed batch overwritten in
		// place). TestReadSegmentShorterThanItsSeal covers one such case.
		synced := max(0, ckptBytes-len(before))
		data = data[:len(data)-min(int(cut), max(0, len(data)-synced))]
		data = append(data, garbage...)
		fw, err := crashed.Create(path, vfs.WriteCategoryUnspecified)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fw.Write(append([]byte(nil), data...)); err != nil {
			t.Fatal(err)
		}
		if err := fw.Sync(); err != nil {
			t.Fatal(err)
		}
		_ = fw.Close()

		chain := validChain(append(before, data...))
		idx2, err := OpenIndex(crashed, "/data/index", 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		defer idx2.Close()
		l2, _, err := Open(crashed, dir, "topic-0", idx2, opts)
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		got := readAll(t, l2)
		if len(got) > len(chain) || !bytes.Equal(got, chain[:len(got)]) {
			t.Fatalf("log holds %d bytes, not a prefix of the %d-byte valid chain", len(got), len(chain))
		}
		if want := min(ckptBytes, len(chain)); len(got) < want {
			t.Fatalf("log holds %d bytes, checkpointed %d (chain %d)", len(got), ckptBytes, len(chain))
		}
		leo := l2.LogEndOffset()
		info, err := l2.Append(BuildBatch(7, []byte("after")), max(l2.LatestEpoch(), 0))
		if err != nil || info.FirstOffset != leo {
			t.Fatalf("append after recovery at %d (log end %d): %v", info.FirstOffset, leo, err)
		}
		if err := l2.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestReadSegmentShorterThanItsSeal: a sealed segment before the recovery
// point whose file lost bytes (a lost write, a damaged disk) is not
// rescanned by Open, which names it in its report. Reading there once
// recursed without end and killed the process with a stack overflow; it
// must be an error, and the segments after it stay readable.
func TestReadSegmentShorterThanItsSeal(t *testing.T) {
	mem := vfs.NewMem()
	e := newEnv(t, mem)
	old := time.Now().Add(-30 * 24 * time.Hour).UnixMilli() // every append rolls (segment.ms)
	l, _ := e.open(Options{RetentionBytes: -1})
	for i := 0; i < 3; i++ {
		if _, err := l.Append(batchOf(old+int64(i), fmt.Sprint(i), 2), 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	path := mem.PathJoin("/data/topic-0", segmentName(0))
	f, err := mem.Create(path, vfs.WriteCategoryUnspecified) // now 0 bytes
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(make([]byte, 20)); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	// Without snapshots the producer state comes from a scan, which skips
	// the damaged segment, says so, and reads the ones after it.
	names, _ := mem.List("/data/topic-0")
	for _, n := range names {
		if _, ok := parseSnapshotName(n); ok {
			_ = mem.Remove(mem.PathJoin("/data/topic-0", n))
		}
	}
	l, rep := e.open(Options{RetentionBytes: -1})
	defer l.Close()
	if pr := rep.Producers; pr.Snapshot != -1 || !errors.Is(pr.Err, ErrCorruptBatch) || pr.BatchesScanned != 2 || !l.pstate.lossy {
		t.Fatalf("producer recovery %+v, lossy %v: want a scan that reports the damage and reads the 2 batches after it", pr, l.pstate.lossy)
	}
	// Open reports the damage it did not scan.
	if len(rep.Damaged) != 1 || rep.Damaged[0] != (DamagedSegment{Base: 0, SealEnd: int64(len(batchOf(old, "0", 2))), FileSize: 20}) {
		t.Fatalf("report %+v: want segment 0 named damaged", rep)
	}
	if _, err := l.Read(0, 1<<20, l.LogEndOffset(), nil); !errors.Is(err, ErrCorruptBatch) {
		t.Fatalf("read of a segment shorter than its seal: %v", err)
	}
	if c, err := l.Read(2, 1<<20, l.LogEndOffset(), nil); err != nil || c.First != 2 {
		t.Fatalf("read past the damaged segment: %v", err)
	}
}
