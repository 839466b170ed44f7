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
// all of that true. Three transactional producers write among the plain
// batches (txnModel): transactions committed, aborted and left open
// across the Cleans. The key view is the committed one (a read_committed
// reader's: aborted and open data left out), every record of an open
// transaction and after the first unstable offset stays (the cleaner
// stops there), and the run must see a Clean drop aborted data. make
// test checks one image in twelve of one run (seed 1, some 40 of its ~490
// points; 70 s under -race for one in six); make crash
// (SLUICE_CRASH_AFTER_RECOVERY=1) checks every image of as many runs as
// make 1,000 points.
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
	total, grouped, dropped := 0, 0, 0
	for run := 0; run < runs || total < want && run < 20; run++ {
		seed := uint64(time.Now().UnixNano())
		if run == 0 {
			seed = 1
		}
		n, g, d := cleanCrashRun(t, seed, stride)
		total, grouped, dropped = total+n, grouped+g, dropped+d
	}
	if total < want {
		t.Fatalf("only %d crash points checked, want %d", total, want)
	}
	// Seed 1's later rounds group small cleaned segments into one file
	// (a multi-segment swap); their crash points must be among those checked.
	if grouped == 0 {
		t.Fatalf("no crash point of a grouped swap checked")
	}
	if dropped == 0 {
		t.Fatalf("no Clean dropped aborted data: the transactional model tests nothing")
	}
	t.Logf("%d crash points checked, %d of them in Cleans that grouped segments; %d aborted records dropped", total, grouped, dropped)
}

// cleanCrashRun appends, flushes and cleans a log three times, taking a
// crash image before every mutating file operation of each Clean, and
// checks every stride-th. It returns how many it checked, how many of
// those were in a Clean that grouped segments, and how many aborted
// records the Cleans dropped.
func cleanCrashRun(t *testing.T, seed uint64, stride int) (checked, grouped, dropped int) {
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
	tm := newTxnModel()
	for round := 0; round < 3; round++ {
		tm.appendKVs(t, l, rng, w, 20+rng.IntN(40), 5+rng.IntN(40), 1000+int64(round)*1000, int32(round))
		if err := l.Flush(); err != nil {
			fail("flush: %v", err)
		}
		leo := l.LogEndOffset()
		hw := leo - rng.Int64N(5) // the high watermark may lag the log end
		want := tm.latest(w, leo)
		aborted := tm.abortedPresent(t, l, w, leo)
		o := CleanOptions{Policy: compactPolicy(), UpTo: hw, Now: time.UnixMilli(50_000),
			OffsetMapBytes: []int{0, 200, 1000}[rng.IntN(3)]}
		images = images[:0]
		armed.Store(true)
		st, err := l.Clean(context.Background(), o)
		armed.Store(false)
		if err != nil {
			fail("clean: %v", err)
		}
		if got := tm.readCheck(t, l, w, leo); !maps.Equal(got, want) {
			fail("round %d: after the clean:\n got %v\nwant %v", round, got, want)
		}
		tm.dropped += aborted - tm.abortedPresent(t, l, w, leo)
		for i, img := range images {
			if (i+round)%stride != 0 {
				continue
			}
			checkCleanImage(t, fmt.Sprintf("seed %d round %d image %d", seed, round, i), img, opts, w, tm, leo, want, o, rng.IntN(4) == 0)
			checked++
			if st.SegmentsWritten < st.SegmentsCleaned {
				grouped++
			}
		}
	}
	return checked, grouped, tm.dropped
}

// checkCleanImage opens the log on a crash image taken during a Clean and
// checks it; again cleans the recovered log and checks once more.
func checkCleanImage(t *testing.T, name string, fs *vfs.MemFS, opts Options, w written, tm *txnModel, leo int64, want map[string]string, o CleanOptions, again bool) {
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
	if got := tm.readCheck(t, l, w, leo); !maps.Equal(got, want) {
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
	if got := tm.readCheck(t, l, w, leo); !maps.Equal(got, want) {
		fail("key view after a clean after recovery:\n got %v\nwant %v", got, want)
	}
}

// txnModel is TestCrashPointsClean's transactions: which offsets each
// transaction wrote and how it ended.
type txnModel struct {
	txnOf   map[int64]int   // offset -> transaction (absent: a plain record)
	fate    map[int]txnFate // transaction -> how it ended
	open    map[int64]int   // producer -> its open transaction
	first   map[int]int64   // transaction -> its first offset
	seq     map[int64]int32 // producer -> its next sequence
	next    int             // the next transaction's number
	dropped int             // aborted records the Cleans removed
}

type txnFate int8

const (
	txnOpen txnFate = iota
	txnCommitted
	txnAborted
)

func newTxnModel() *txnModel {
	return &txnModel{txnOf: map[int64]int{}, fate: map[int]txnFate{}, open: map[int64]int{},
		first: map[int]int64{}, seq: map[int64]int32{}}
}

// appendKVs is appendKVs with one batch in three from transactional
// producer 21, 22 or 23, and a marker (commit or abort alike) ending one of their transactions now and then.
func (m *txnModel) appendKVs(t testing.TB, l *Log, rng *rand.Rand, w written, n, nkeys int, ts int64, epoch int32) {
	t.Helper()
	for i := 0; i < n; i++ {
		if rng.IntN(4) == 0 {
			pid := int64(21 + rng.IntN(3))
			if x, ok := m.open[pid]; ok {
				commit := rng.IntN(2) == 0
				if _, err := l.AppendMarker(Marker{ProducerID: pid, Commit: commit, Timestamp: ts}, epoch); err != nil {
					t.Fatal(err)
				}
				m.fate[x] = txnAborted
				if commit {
					m.fate[x] = txnCommitted
				}
				delete(m.open, pid)
			}
		}
		recs := make([]kv, 1+rng.IntN(4))
		for j := range recs {
			recs[j] = kv{key: fmt.Sprintf("k%03d", rng.IntN(nkeys)), value: fmt.Sprintf("v%d", rng.Int64())}
			if rng.IntN(10) == 0 {
				recs[j].valueNull, recs[j].value = true, ""
			}
		}
		b := buildKVBatch(ts+int64(i)*10, codecNone, recs)
		pid := int64(-1)
		if rng.IntN(3) == 0 {
			pid = int64(21 + rng.IntN(3))
			setProducer(b, pid, 0, m.seq[pid], attrTransactional)
			m.seq[pid] += int32(len(recs))
		}
		info, err := l.Append(b, epoch)
		if err != nil {
			t.Fatal(err)
		}
		for j, r := range recs {
			w[info.FirstOffset+int64(j)] = r
		}
		if pid < 0 {
			continue
		}
		x, ok := m.open[pid]
		if !ok {
			x = m.next
			m.next++
			m.open[pid], m.fate[x], m.first[x] = x, txnOpen, info.FirstOffset
		}
		for j := range recs {
			m.txnOf[info.FirstOffset+int64(j)] = x
		}
	}
}

// visible reports whether a read_committed reader sees the record at off.
func (m *txnModel) visible(off int64) bool {
	x, ok := m.txnOf[off]
	return !ok || m.fate[x] == txnCommitted
}

// firstUnstable is the first offset of the oldest open transaction (upTo
// when none is open).
func (m *txnModel) firstUnstable(upTo int64) int64 {
	fuo := upTo
	for _, x := range m.open {
		fuo = min(fuo, m.first[x])
	}
	return fuo
}

// latest is latestWritten over the records read_committed sees.
func (m *txnModel) latest(w written, upTo int64) map[string]string {
	v := written{}
	for off, r := range w {
		if m.visible(off) {
			v[off] = r
		}
	}
	return latestWritten(v, upTo)
}

// readCheck is readCheck's checks over every data record (control batches
// skipped), the key view over the visible ones, and every record written
// at or after the first unstable offset still there: the cleaner stops
// at open transactions.
func (m *txnModel) readCheck(t testing.TB, l *Log, w written, upTo int64) map[string]string {
	t.Helper()
	out, seen := map[string]string{}, map[int64]bool{}
	off := l.LogStartOffset()
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
			if h.IsControl() {
				continue
			}
			if err := eachRecord(b, h, func(r record) bool {
				want, ok := w[r.offset]
				got := kv{key: string(r.key), keyNull: r.keyNull, valueNull: r.valueNull, value: string(recordValue(r.raw))}
				if !ok || got != want {
					t.Errorf("offset %d holds %+v, %+v was written there", r.offset, got, want)
				}
				seen[r.offset] = true
				if r.offset >= off && !r.keyNull && m.visible(r.offset) {
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
	for o := m.firstUnstable(upTo); o < upTo; o++ {
		if _, ok := w[o]; ok && !seen[o] {
			t.Fatalf("offset %d, at or after the first unstable offset %d, is gone: the cleaner passed an open transaction", o, m.firstUnstable(upTo))
		}
	}
	return out
}

// abortedPresent counts the aborted records the log still holds below
// upTo.
func (m *txnModel) abortedPresent(t testing.TB, l *Log, w written, upTo int64) int {
	t.Helper()
	n := 0
	off := l.LogStartOffset()
	for off < min(upTo, l.LogEndOffset()) {
		c, err := l.Read(off, 64<<10, upTo, nil)
		if err != nil || c.Size == 0 {
			break
		}
		it := NewBatchIter(c.Data)
		for h, b, ok := it.Next(); ok; h, b, ok = it.Next() {
			if h.IsControl() {
				continue
			}
			_ = eachRecord(b, h, func(r record) bool {
				if x, ok := m.txnOf[r.offset]; ok && m.fate[x] == txnAborted {
					n++
				}
				return true
			})
		}
		off = c.Next
	}
	return n
}
