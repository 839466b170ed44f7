package segment

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// written remembers what each offset held when it was appended, so that
// anything read back after cleaning can be checked record by record.
type written map[int64]kv

// appendKVs appends n keyed batches of 1..4 records over nkeys keys
// (one tombstone in ten), with timestamps rising from ts, at epoch.
func appendKVs(t testing.TB, l *Log, rng *rand.Rand, w written, n, nkeys int, ts int64, epoch int32) {
	t.Helper()
	codecs := []int16{codecNone, codecNone, codecGzip, codecSnappy, codecLz4, codecZstd}
	for i := 0; i < n; i++ {
		recs := make([]kv, 1+rng.IntN(4))
		for j := range recs {
			recs[j] = kv{key: fmt.Sprintf("k%03d", rng.IntN(nkeys)), value: fmt.Sprintf("v%d", rng.Int64())}
			if rng.IntN(10) == 0 {
				recs[j].valueNull, recs[j].value = true, ""
			}
		}
		info, err := l.Append(buildKVBatch(ts+int64(i)*10, codecs[rng.IntN(len(codecs))], recs), epoch)
		if err != nil {
			t.Fatal(err)
		}
		for j, r := range recs {
			w[info.FirstOffset+int64(j)] = r
		}
	}
}

// readCheck reads the log from its start through Read, checks every batch
// (CRC, rising offsets) and every record against what was written at its
// offset, and returns each key's latest value ("!" for a tombstone).
func readCheck(t testing.TB, l *Log, w written, upTo int64) map[string]string {
	t.Helper()
	out := map[string]string{}
	off, last := l.LogStartOffset(), int64(-1)
	for off < min(upTo, l.LogEndOffset()) {
		c, err := l.Read(off, 64<<10, upTo, nil)
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		if c.Size == 0 {
			break
		}
		it := NewBatchIter(c.Data)
		for h, b, ok := it.Next(); ok; h, b, ok = it.Next() {
			if _, _, err := checkBatch(b, DefaultMaxBatchBytes); err != nil {
				t.Fatalf("batch %d: %v", h.BaseOffset, err)
			}
			if h.BaseOffset <= last {
				t.Fatalf("batch %d after offset %d", h.BaseOffset, last)
			}
			last = h.LastOffset()
			if err := eachRecord(b, h, func(r record) bool {
				want, ok := w[r.offset]
				got := kv{key: string(r.key), keyNull: r.keyNull, valueNull: r.valueNull, value: string(recordValue(r.raw))}
				if !ok || got != want {
					t.Errorf("offset %d holds %+v, %+v was written there", r.offset, got, want)
				}
				if r.offset >= off && !r.keyNull {
					out[got.key] = got.value
					if got.valueNull {
						out[got.key] = "!"
					}
				}
				return true
			}); err != nil {
				t.Fatalf("batch %d: %v", h.BaseOffset, err)
			}
		}
		off = c.Next
	}
	return out
}

// latestWritten is the key -> latest value view of what was written below upTo.
func latestWritten(w written, upTo int64) map[string]string {
	out := map[string]string{}
	for off := int64(0); off < upTo; off++ {
		if r, ok := w[off]; ok && !r.keyNull {
			out[r.key] = r.value
			if r.valueNull {
				out[r.key] = "!"
			}
		}
	}
	return out
}

// testNow is the clock of the cleaner tests' logs: after their records'
// timestamps, and close enough that segment.ms never rolls.
func testNow() time.Time { return time.UnixMilli(100_000) }

func compactPolicy() CleanPolicy {
	return CleanPolicy{Compact: true, MinCleanableDirtyRatio: 0.5, DeleteRetention: time.Hour}
}

// TestCleanFollowerAcrossHoles: a follower copies a compacted leader by
// fetching across its holes; its log recovers after a power cut, truncates
// into a hole (KIP-279: the log then ends at the offset asked for) and
// fetches again; ListOffsets by timestamp and the epoch cache answer
// across holes.
func TestCleanFollowerAcrossHoles(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	mem := vfs.NewCrashableMem()
	le := newEnv(t, vfs.NewMem())
	leader, _ := le.open(Options{SegmentBytes: 2048, IndexIntervalBytes: 256, Now: testNow})
	defer leader.Close()
	w := written{}
	appendKVs(t, leader, rng, w, 60, 20, 1000, 1)
	appendKVs(t, leader, rng, w, 60, 20, 2000, 2)
	appendKVs(t, leader, rng, w, 30, 20, 3000, 3)
	leo := leader.LogEndOffset()
	st, err := leader.Clean(context.Background(), CleanOptions{Policy: compactPolicy(), UpTo: leo, Now: time.UnixMilli(10_000)})
	if err != nil {
		t.Fatal(err)
	}
	if st.RecordsKept >= st.RecordsRead || st.SegmentsCleaned == 0 {
		t.Fatalf("nothing compacted: %+v", st)
	}
	if st.Duration <= 0 {
		t.Errorf("CleanStats.Duration %v: the stats must say how long the Clean took", st.Duration)
	}
	want := latestWritten(w, leo)
	if got := readCheck(t, leader, w, leo); !maps.Equal(got, want) {
		t.Fatalf("leader after clean:\n got %v\nwant %v", got, want)
	}

	fe := newEnv(t, mem)
	follower, _ := fe.open(Options{SegmentBytes: 1500, IndexIntervalBytes: 256, Now: testNow})
	fetch := func() {
		for {
			c, err := leader.Read(follower.LogEndOffset(), 4096, leo, nil)
			if err != nil {
				t.Fatal(err)
			}
			if c.Size == 0 {
				return
			}
			if _, err := follower.AppendReplicated(append([]byte(nil), c.Data...)); err != nil {
				t.Fatalf("replicate at %d: %v", c.First, err)
			}
		}
	}
	fetch()
	if got := readCheck(t, follower, w, leo); !maps.Equal(got, want) {
		t.Fatalf("follower:\n got %v\nwant %v", got, want)
	}
	if follower.LogEndOffset() > leo {
		t.Fatalf("follower ends at %d, leader at %d", follower.LogEndOffset(), leo)
	}
	if err := follower.Flush(); err != nil {
		t.Fatal(err)
	}
	// Power cut: recovery scans the follower's holes from its last checkpoint.
	crash := mem.CrashClone(vfs.CrashCloneCfg{})
	_ = follower.Close()
	fe2 := newEnv(t, crash)
	follower, rep := fe2.open(Options{SegmentBytes: 1500, IndexIntervalBytes: 256, Now: testNow})
	defer follower.Close()
	if rep.CutReason != "" {
		t.Fatalf("recovery cut a log with holes: %s", rep.CutReason)
	}
	if got := readCheck(t, follower, w, leo); !maps.Equal(got, want) {
		t.Fatalf("follower after recovery:\n got %v\nwant %v", got, want)
	}

	// Truncate into a hole: find an offset no batch holds.
	hole := int64(-1)
	var prevNext int64
	if err := leader.ScanBatches(0, leo, func(h BatchHeader) error {
		if h.BaseOffset > prevNext && hole < 0 && h.BaseOffset > leo/2 {
			hole = prevNext
		}
		prevNext = h.NextOffset()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if hole < 0 {
		t.Fatal("no hole in the compacted log")
	}
	if err := follower.TruncateTo(hole); err != nil {
		t.Fatal(err)
	}
	if got := follower.LogEndOffset(); got != hole {
		t.Fatalf("truncated to %d in a hole: log ends at %d", hole, got)
	}
	fetch()
	if got := readCheck(t, follower, w, leo); !maps.Equal(got, want) {
		t.Fatalf("follower after truncation and refetch:\n got %v\nwant %v", got, want)
	}

	// ListOffsets by timestamp: the first surviving record at or after ts.
	for _, ts := range []int64{0, 1005, 1500, 2000, 2333, 2999, 3100, 3290} {
		off, rts, ok, err := leader.OffsetForTimestamp(ts)
		if err != nil {
			t.Fatal(err)
		}
		wantOff, wantTs, wantOK := firstRecordAtOrAfter(t, leader, leo, ts)
		if ok != wantOK || off != wantOff || rts != wantTs {
			t.Errorf("offset for ts %d: %d@%d %v, want %d@%d %v", ts, off, rts, ok, wantOff, wantTs, wantOK)
		}
	}
	// The epoch cache: every epoch still ends where the next begins.
	for _, e := range leader.Epochs() {
		if ep, _ := leader.EndOffsetForEpoch(e.Epoch); ep != e.Epoch {
			t.Errorf("epoch %d: answered epoch %d", e.Epoch, ep)
		}
	}
	if got := leader.EpochForOffset(leo - 1); got != 3 {
		t.Errorf("epoch of the last offset: %d", got)
	}
}

// firstRecordAtOrAfter finds by brute force the first record with a
// timestamp at or after ts.
func firstRecordAtOrAfter(t *testing.T, l *Log, upTo, ts int64) (int64, int64, bool) {
	for off := l.LogStartOffset(); off < upTo; {
		c, err := l.Read(off, 1<<20, upTo, nil)
		if err != nil {
			t.Fatal(err)
		}
		if c.Size == 0 {
			break
		}
		it := NewBatchIter(c.Data)
		for _, b, ok := it.Next(); ok; _, b, ok = it.Next() {
			var found bool
			var fo, ft int64
			_ = recordTimes(b, func(o, rt int64) bool {
				if rt >= ts {
					found, fo, ft = true, o, rt
				}
				return !found
			})
			if found {
				return fo, ft, true
			}
		}
		off = c.Next
	}
	return 0, 0, false
}

// TestCleanWhileReadingAndAppending: cleans run while appends go on and
// readers read the whole log over and over; every record a reader gets is
// the one written at its offset (a reader on a swapped-out segment keeps
// its old file or retries, never gets wrong bytes), and the latest value
// per key never changes by cleaning.
func TestCleanWhileReadingAndAppending(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	l, _ := e.open(Options{SegmentBytes: 4096, IndexIntervalBytes: 256, Now: testNow})
	defer l.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	var mu sync.Mutex
	w := written{}
	appendKVs(t, l, rng, w, 100, 30, 1000, 1)
	// snapshot is what was written and the log end, together.
	snapshot := func() (written, int64) {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(w), l.LogEndOffset()
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var reads atomic.Int64
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				ws, leo := snapshot()
				readCheck(t, l, ws, leo)
				reads.Add(1)
			}
		}()
	}
	var cleans int
	for round := 0; round < 20; round++ {
		mu.Lock()
		appendKVs(t, l, rng, w, 20, 30, 2000+int64(round)*1000, 1)
		mu.Unlock()
		ws, hw := snapshot()
		before := latestWritten(ws, hw)
		st, err := l.Clean(context.Background(), CleanOptions{Policy: compactPolicy(), UpTo: hw, Now: time.UnixMilli(100_000), OffsetMapBytes: 2000})
		if err != nil && !errors.Is(err, ErrCleanRaced) {
			t.Fatal(err)
		}
		cleans += st.Passes
		if got := readCheck(t, l, ws, hw); !maps.Equal(got, before) {
			t.Fatalf("round %d: the key view changed by cleaning:\n got %v\nwant %v", round, got, before)
		}
	}
	// Readers overlap at least a few cleans on a loaded machine too: wait
	// (with a deadline) until they finished some reads.
	deadline := time.Now().Add(30 * time.Second)
	for reads.Load() < 4 && time.Now().Before(deadline) {
		ws, leo := snapshot()
		readCheck(t, l, ws, leo)
	}
	stop.Store(true)
	wg.Wait()
	if cleans == 0 || reads.Load() < 4 {
		t.Fatalf("cleans %d, reads %d", cleans, reads.Load())
	}
}

// TestReadRacesSwap: a read that located a segment before a Clean swapped
// it out, and looks up the index after, is told to retry rather than given
// a position in the new file; the old file still reads right from its
// start; Read itself retries and answers from the new segment.
func TestReadRacesSwap(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	l, _ := e.open(Options{SegmentBytes: 4096, IndexIntervalBytes: 128, Now: testNow})
	defer l.Close()
	rng := rand.New(rand.NewPCG(5, 6))
	w := written{}
	appendKVs(t, l, rng, w, 120, 10, 1000, 1)
	hw := l.LogEndOffset()
	// An offset late in the first segment, so that the index is needed.
	first := l.Segments()
	if len(first) < 3 {
		t.Fatalf("segments %v", first)
	}
	off := first[1] - 3
	at, c, err := l.locate(off, hw)
	if err != nil || at.seg == nil {
		t.Fatal(err)
	}
	at.pos, at.hinted = -1, false
	if _, err := l.Clean(context.Background(), CleanOptions{Policy: compactPolicy(), UpTo: hw, Now: time.UnixMilli(1e6)}); err != nil {
		t.Fatal(err)
	}
	_, err = at.find(c, func(pos int64, c Chunk) (Chunk, error) {
		return l.readFrom(at.seg, pos, at.end, off, 1<<20, at.upTo, nil, c)
	})
	if !errors.Is(err, errSegmentReplaced) {
		t.Fatalf("lookup on a swapped-out segment: %v", err)
	}
	if pos, err := l.indexedPos(at.seg, off); err != nil || pos != 0 {
		t.Fatalf("indexedPos on a swapped-out segment: %d, %v (want a walk from 0)", pos, err)
	}
	old, err := l.readFrom(at.seg, 0, at.end, off, 1<<20, at.upTo, nil, c)
	if err != nil {
		t.Fatal(err)
	}
	it := NewBatchIter(old.Data)
	for h, b, ok := it.Next(); ok; h, b, ok = it.Next() {
		if err := eachRecord(b, h, func(r record) bool {
			if w[r.offset].key != string(r.key) {
				t.Errorf("old file: offset %d key %q, written %q", r.offset, r.key, w[r.offset].key)
			}
			return true
		}); err != nil {
			t.Fatal(err)
		}
	}
	l.release(at.seg)
	if got, want := readCheck(t, l, w, hw), latestWritten(w, hw); !maps.Equal(got, want) {
		t.Fatalf("after the swap:\n got %v\nwant %v", got, want)
	}
}

// TestCleanRacesTruncation: a truncation or retention that lands while a
// Clean reads and writes (here from its throttle, where it holds no lock)
// makes the swap give up: nothing truncated comes back, the log is as the
// truncation left it, and the next Clean cleans it.
func TestCleanRacesTruncation(t *testing.T) {
	for _, race := range []string{"truncate", "retention"} {
		t.Run(race, func(t *testing.T) {
			e := newEnv(t, vfs.NewMem())
			l, _ := e.open(Options{SegmentBytes: 2048, IndexIntervalBytes: 256, Now: testNow, RetentionBytes: 6000})
			defer l.Close()
			rng := rand.New(rand.NewPCG(7, 8))
			w := written{}
			appendKVs(t, l, rng, w, 80, 15, 1000, 1)
			segs := l.Segments()
			cut := segs[1] + 1 // inside the second segment
			done := false
			o := CleanOptions{Policy: compactPolicy(), UpTo: l.LogEndOffset(), Now: time.UnixMilli(50_000),
				Throttle: func(context.Context, int) error {
					if !done {
						done = true
						var err error
						if race == "truncate" {
							err = l.TruncateTo(cut)
						} else {
							_, err = l.EnforceRetention(time.UnixMilli(60_000), l.LogEndOffset())
						}
						if err != nil {
							t.Fatal(err)
						}
					}
					return nil
				}}
			_, err := l.Clean(context.Background(), o)
			if !errors.Is(err, ErrCleanRaced) {
				t.Fatalf("clean raced by %s: %v", race, err)
			}
			leo := l.LogEndOffset()
			if race == "truncate" && leo > cut {
				t.Fatalf("log ends at %d after a truncation to %d", leo, cut)
			}
			for off := range w {
				if off >= leo || off < l.LogStartOffset() {
					delete(w, off)
				}
			}
			want := latestWritten(w, leo)
			if got := readCheck(t, l, w, leo); !maps.Equal(got, want) {
				t.Fatalf("after the raced clean:\n got %v\nwant %v", got, want)
			}
			o.Throttle = nil
			appendKVs(t, l, rng, w, 20, 15, 5000, 1)
			o.UpTo = l.LogEndOffset()
			st, err := l.Clean(context.Background(), o)
			if err != nil || st.SegmentsCleaned == 0 {
				t.Fatalf("clean after: %+v %v", st, err)
			}
			if got, want := readCheck(t, l, w, o.UpTo), latestWritten(w, o.UpTo); !maps.Equal(got, want) {
				t.Fatalf("after the next clean:\n got %v\nwant %v", got, want)
			}
		})
	}
}
