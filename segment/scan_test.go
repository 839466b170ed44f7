package segment

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestScanBatchesMatchesAppends checks ScanBatches against the batches
// appended, over many segments, batches smaller and larger than the
// header read buffer, every index spacing, and every sub-range.
func TestScanBatchesMatchesAppends(t *testing.T) {
	for _, interval := range []int64{0, 100, 4096} {
		e := newEnv(t, vfs.NewMem())
		l, _ := e.open(Options{SegmentBytes: 64 << 10, IndexIntervalBytes: interval})
		rng := rand.New(rand.NewPCG(uint64(interval), 1))
		var want []BatchHeader
		for i := 0; i < 200; i++ {
			n := 1 + rng.IntN(5)
			vals := make([][]byte, n)
			for j := range vals {
				vals[j] = make([]byte, rng.IntN(20))
			}
			if i%37 == 0 {
				vals = [][]byte{make([]byte, 3*headerReadSize)} // a batch past the buffer
			}
			b := BuildBatch(int64(i), vals...)
			setProducer(b, int64(i%3), int16(i%2), int32(i*10), int16(16*(i%2)))
			// Replicated: the producer fields are arbitrary, which a
			// leader's producer-state check would refuse.
			setBaseOffset(b, l.LogEndOffset())
			setLeaderEpoch(b, int32(i/50))
			if _, err := l.AppendReplicated(b); err != nil {
				t.Fatal(err)
			}
			want = append(want, parseHeader(b))
		}
		if len(l.Segments()) < 3 {
			t.Fatalf("only %d segments", len(l.Segments()))
		}
		leo := l.LogEndOffset()
		for trial := 0; trial < 300; trial++ {
			from, to := rng.Int64N(leo+2)-1, rng.Int64N(leo+2)
			var got []BatchHeader
			if err := l.ScanBatches(from, to, func(h BatchHeader) error { got = append(got, h); return nil }); err != nil {
				t.Fatal(err)
			}
			var exp []BatchHeader
			for _, h := range want {
				if from < to && h.LastOffset() >= from && h.BaseOffset < to {
					exp = append(exp, h)
				}
			}
			if len(got) != len(exp) {
				t.Fatalf("interval %d [%d, %d): %d batches, want %d", interval, from, to, len(got), len(exp))
			}
			for k := range got {
				if got[k] != exp[k] {
					t.Fatalf("interval %d [%d, %d) batch %d: %+v, want %+v", interval, from, to, k, got[k], exp[k])
				}
			}
		}
		_ = l.Close()
	}
}

func TestScanBatchesStopsOnError(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	l, _ := e.open(Options{})
	for i := 0; i < 5; i++ {
		if _, err := l.Append(batchOf(1, "x", 2), 0); err != nil {
			t.Fatal(err)
		}
	}
	stop := errors.New("stop")
	calls := 0
	err := l.ScanBatches(0, 100, func(BatchHeader) error { calls++; return stop })
	if !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("err %v after %d calls, want stop after 1", err, calls)
	}
	_ = l.Close()
	if err := l.ScanBatches(0, 100, func(BatchHeader) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed log: %v", err)
	}
}

// TestScanBatchesDuringTruncation scans a log while it is truncated under
// the scan (from inside fn): the scan goes on over the segments as they
// were, and the files it holds stay readable.
func TestScanBatchesDuringTruncation(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	l, _ := e.open(Options{SegmentBytes: 300})
	for i := 0; i < 20; i++ {
		if _, err := l.Append(batchOf(int64(i), "x", 2), 0); err != nil {
			t.Fatal(err)
		}
	}
	var got []int64
	err := l.ScanBatches(0, 40, func(h BatchHeader) error {
		got = append(got, h.BaseOffset)
		if h.BaseOffset == 4 {
			return l.TruncateTo(6)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 20 || got[19] != 38 {
		t.Fatalf("scan saw %v, want the 20 batches there were when it started", got)
	}
	var after []int64
	if err := l.ScanBatches(0, 40, func(h BatchHeader) error { after = append(after, h.BaseOffset); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(after) != 3 || after[2] != 4 {
		t.Fatalf("after truncation: %v, want [0 2 4]", after)
	}
	_ = l.Close()
}

// BenchmarkLookups measures the new lookups on a log of 20,000 1 KiB
// batches of 10 records: ScanBatches over the last 1,000 batches (headers
// only), MaxTimestamp with the HW a few batches behind the log end (the
// ring) and far behind it (segment maxima and a header scan), and a
// record-exact OffsetForTimestamp.
func BenchmarkLookups(b *testing.B) {
	e := newEnv(b, vfs.NewMem())
	l, _ := e.open(Options{SegmentBytes: 4 << 20})
	defer l.Close()
	vals := make([][]byte, 10)
	for i := range vals {
		vals[i] = make([]byte, 90)
	}
	t0 := time.Now().UnixMilli() - 20000 // recent: no roll by segment.ms
	for i := 0; i < 20000; i++ {
		if _, err := l.Append(BuildBatch(t0+int64(i), vals...), 0); err != nil {
			b.Fatal(err)
		}
	}
	leo := l.LogEndOffset()
	b.Run("scan-1000-batches", func(b *testing.B) {
		for range b.N {
			n := 0
			if err := l.ScanBatches(leo-10000, leo, func(BatchHeader) error { n++; return nil }); err != nil || n != 1000 {
				b.Fatal(n, err)
			}
		}
	})
	for _, c := range []struct {
		name string
		upTo int64
	}{{"max-ts-hw-near", leo - 30}, {"max-ts-hw-far", leo / 2}} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				if _, _, ok, err := l.MaxTimestamp(c.upTo); !ok || err != nil {
					b.Fatal(ok, err)
				}
			}
		})
	}
	b.Run("offset-for-ts", func(b *testing.B) {
		for range b.N {
			if _, _, ok, err := l.OffsetForTimestamp(t0 + 15000); !ok || err != nil {
				b.Fatal(ok, err)
			}
		}
	})
}
