package segment

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// TestCrashPointsClean cuts power before every write, sync, rename and
// remove that a Clean makes (its .cleaned files, the index's WAL, the
// swap's renames and directory syncs), with none, some or all unsynced
// bytes surviving, and checks every crash image: recovery opens it, the
// log ends where it ended (everything was fsynced before the Clean), the
// key -> latest value view is unchanged, every record read is the one
// written at its offset (the others were legitimately compacted), the
// index names only real batches, and a Clean of the recovered log keeps
// all of that true. make test checks one image in twelve of one run (seed
// 1, some 40 of its ~490 points; 70 s under -race for one in six); make crash (SLUICE_CRASH_AFTER_RECOVERY=1) checks
// every image of as many runs as make 1,000 points.
func TestCrashPointsClean(t *testing.T) {
	// stride: check every stride-th crash image (make test's bound; each
	// check opens Pebble, slow under -race); runs: at least this many.
	runs, stride, want := 1, 12, 30
	if os.Getenv("SLUICE_CRASH_AFTER_RECOVERY") != "" {
		runs, stride, want = 1, 1, 1000
	}
	if testing.Short() {
		stride, want = 20, 10
	}
	total, grouped := 0, 0
	for run := 0; run < runs || total < want && run < 20; run++ {
		seed := uint64(time.Now().UnixNano())
		if run == 0 {
			seed = 1
		}
		n, g := cleanCrashRun(t, seed, stride)
		total, grouped = total+n, grouped+g
	}
	if total < want {
		t.Fatalf("only %d crash points checked, want %d", total, want)
	}
	// Seed 1's later rounds group small cleaned segments into one file
	// (a multi-segment swap); their crash points must be among those checked.
	if grouped == 0 {
		t.Fatalf("no crash point of a grouped swap checked")
	}
	t.Logf("%d crash points checked, %d of them in Cleans that grouped segments", total, grouped)
}

// cleanCrashRun appends, flushes and cleans a log three times, taking a
// crash image before every mutating file operation of each Clean, and
// checks every stride-th. It returns how many it checked, and how many of
// those were in a Clean that grouped segments.
func cleanCrashRun(t *testing.T, seed uint64, stride int) (checked, grouped int) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d: %s", seed, fmt.Sprintf(format, args...))
	}
	mem := vfs.NewCrashableMem()
	var armed atomic.Bool
	var mu sync.Mutex
	var images []*vfs.MemFS
	fs := errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if armed.Load() && op.Kind.ReadOrWrite() == errorfs.OpIsWrite {
			mu.Lock()
			defer mu.Unlock()
			n := uint64(len(images))
			images = append(images, mem.CrashClone(vfs.CrashCloneCfg{
				UnsyncedDataPercent: []int{0, 50, 100}[n%3], RNG: rand.New(rand.NewPCG(seed, n))}))
		}
		return nil
	}))
	opts := Options{SegmentBytes: int64(1024 + rng.IntN(2048)), IndexIntervalBytes: int64(rng.IntN(512)), Now: testNow}
	idx, err := OpenIndex(fs, "/d/index", 1<<20)
	if err != nil {
		fail("%v", err)
	}
	defer idx.Close()
	l, _, err := Open(fs, "/d/t-0", "t-0", idx, opts)
	if err != nil {
		fail("%v", err)
	}
	defer l.Close()
	w := written{}
	for round := 0; round < 3; round++ {
		appendKVs(t, l, rng, w, 20+rng.IntN(40), 5+rng.IntN(40), 1000+int64(round)*1000, int32(round))
		if err := l.Flush(); err != nil {
			fail("flush: %v", err)
		}
		leo := l.LogEndOffset()
		hw := leo - rng.Int64N(5) // the high watermark may lag the log end
		want := latestWritten(w, leo)
		o := CleanOptions{Policy: compactPolicy(), UpTo: hw, Now: time.UnixMilli(50_000),
			OffsetMapBytes: []int{0, 200, 1000}[rng.IntN(3)]}
		images = images[:0]
		armed.Store(true)
		st, err := l.Clean(context.Background(), o)
		armed.Store(false)
		if err != nil {
			fail("clean: %v", err)
		}
		if got := readCheck(t, l, w, leo); !maps.Equal(got, want) {
			fail("round %d: after the clean:\n got %v\nwant %v", round, got, want)
		}
		for i, img := range images {
			if (i+round)%stride != 0 {
				continue
			}
			checkCleanImage(t, fmt.Sprintf("seed %d round %d image %d", seed, round, i), img, opts, w, leo, want, o, rng.IntN(4) == 0)
			checked++
			if st.SegmentsWritten < st.SegmentsCleaned {
				grouped++
			}
		}
	}
	return checked, grouped
}

// checkCleanImage opens the log on a crash image taken during a Clean and
// checks it; again cleans the recovered log and checks once more.
func checkCleanImage(t *testing.T, name string, fs *vfs.MemFS, opts Options, w written, leo int64, want map[string]string, o CleanOptions, again bool) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s: %s", name, fmt.Sprintf(format, args...))
	}
	idx, err := OpenIndex(fs, "/d/index", 1<<20)
	if err != nil {
		fail("open index: %v", err)
	}
	defer idx.Close()
	l, rep, err := Open(fs, "/d/t-0", "t-0", idx, opts)
	if err != nil {
		fail("open log: %v", err)
	}
	defer l.Close()
	if got := l.LogEndOffset(); got != leo || rep.CutReason != "" {
		fail("recovered to %d, want %d (report %+v)", got, leo, rep)
	}
	if err := l.checkIndex(); err != nil {
		fail("index: %v; %s", err, l.debugString())
	}
	if got := readCheck(t, l, w, leo); !maps.Equal(got, want) {
		fail("key view:\n got %v\nwant %v", got, want)
	}
	names, err := fs.List("/d/t-0")
	if err != nil {
		fail("%v", err)
	}
	logs := 0
	for _, n := range names {
		if len(n) > len(cleanedSuffix) && n[len(n)-len(cleanedSuffix):] == cleanedSuffix {
			fail("recovery left %s", n)
		}
		if _, ok := parseSegmentName(n); ok {
			logs++
		}
	}
	// A grouped swap's other members go with it: no file outlives its seal.
	if segs := l.Segments(); logs != len(segs) {
		fail("%d .log files for segments %v: %v", logs, segs, names)
	}
	if !again {
		return
	}
	if _, err := l.Clean(context.Background(), o); err != nil {
		fail("clean after recovery: %v", err)
	}
	if err := l.checkIndex(); err != nil {
		fail("index after a clean after recovery: %v; %s", err, l.debugString())
	}
	if got := readCheck(t, l, w, leo); !maps.Equal(got, want) {
		fail("key view after a clean after recovery:\n got %v\nwant %v", got, want)
	}
}
