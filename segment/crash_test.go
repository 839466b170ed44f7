package segment

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// crashModel is what the log must hold: the batches appended and not
// truncated, and how far it was fsynced.
type crashModel struct {
	batches  [][]byte // each as written, offsets assigned
	dropped  [][]byte // batches below the log start that a log restarted empty dropped: producer history
	logStart int64
	flushed  int64
}

func (m *crashModel) leo() int64 {
	if len(m.batches) == 0 {
		return m.logStart
	}
	return nextOffsetAt(m.batches[len(m.batches)-1])
}

// nextSeq is the sequence producer pid's next batch starts at. A log
// restarted empty at its log start may still know a producer from the
// batches it dropped (its snapshots), or know none and accept any
// sequence (after a truncation): continuing the dropped history suits both.
func (m *crashModel) nextSeq(pid int64) int32 {
	for _, bs := range [][][]byte{m.batches, m.dropped} {
		for i := len(bs) - 1; i >= 0; i-- {
			if h := parseHeader(bs[i]); h.ProducerID == pid && !h.IsControl() {
				return nextSeq(h.LastSequence())
			}
		}
	}
	return 0
}

func (m *crashModel) truncate(off int64) {
	n := 0
	for n < len(m.batches) && nextOffsetAt(m.batches[n]) <= off {
		n++
	}
	m.batches = m.batches[:n]
	if m.leo() < m.logStart {
		m.dropped = append(m.dropped, m.batches...)
		m.batches = nil
	}
	m.flushed = min(m.flushed, m.leo())
}

// TestCrashPoints cuts power at random points of a random workload (appends,
// flushes, checkpoints, rolls, truncations, retention, clean restarts) and
// checks every crash image: the recovered log is a prefix of what was
// appended, holds at least everything fsynced, every batch validates, and the
// log takes appends again. Seeded; the seed is in the failure message.
func TestCrashPoints(t *testing.T) { crashPoints(t, false, 10) }

// TestCrashPointsAfterRecovery is TestCrashPoints where, at one crash point
// in four, the workload goes on from the recovered crash image, so that a
// second crash hits a log that recovery already cut. It used to fail about
// one run in thirty (a batch cut earlier came back: open() and retention
// deleted the records of removed files before the removals were durable).
// Since that fix it passed 745 runs in a row without -race, and in the
// session that put it into make test, every loop without and under -race
// (counts in that session's note). make test runs 3 of its runs (330
// crash points) to keep within its time; make crash
// (SLUICE_CRASH_AFTER_RECOVERY=1) runs all 10 (1,100 points).
func TestCrashPointsAfterRecovery(t *testing.T) {
	runs := 3
	if os.Getenv("SLUICE_CRASH_AFTER_RECOVERY") != "" {
		runs = 10
	}
	crashPoints(t, true, runs)
}

func crashPoints(t *testing.T, goOn bool, runs int) {
	points, want := 110, 100*runs // TestCrashPoints: at least 1,000 per make test
	if testing.Short() {
		runs, points, want = 2, 40, 0
	}
	total := 0
	for run := 0; run < runs; run++ {
		seed := uint64(time.Now().UnixNano())
		if run == 0 {
			seed = 1 // one fixed seed, always
		}
		total += crashRun(t, seed, points, goOn)
	}
	if total < want {
		t.Fatalf("only %d crash points checked, want %d", total, want)
	}
	t.Logf("%d crash points checked", total)
}

func crashRun(t *testing.T, seed uint64, points int, goOn bool) int {

	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d: %s", seed, fmt.Sprintf(format, args...))
	}
	// Producer ids never expire here: the model knows nothing of time.
	opts := Options{SegmentBytes: int64(2048 + rng.IntN(4096)), IndexIntervalBytes: int64(rng.IntN(512)), RetentionBytes: -1,
		ProducerIDExpiration: -1}
	if rng.IntN(2) == 0 {
		// A budget of one to three open files (sluice.log.max.open.files):
		// segment files close and reopen all the time, and the crash
		// images must not care.
		opts.Files = NewFiles(1 + rng.IntN(3))
	}
	mem := vfs.NewCrashableMem()
	idx, err := OpenIndex(mem, "/d/index", 1<<20)
	if err != nil {
		fail("%v", err)
	}
	l, _, err := Open(mem, "/d/t-0", "t-0", idx, opts)
	if err != nil {
		fail("%v", err)
	}
	m := &crashModel{}
	epoch := int32(0)
	checked, lastOp := 0, -1
	for checked < points {
		if l.LogEndOffset() != m.leo() || l.LogStartOffset() != m.logStart {
			fail("log holds [%d, %d), model [%d, %d) (last op %d)", l.LogStartOffset(), l.LogEndOffset(), m.logStart, m.leo(), lastOp)
		}
		if err := l.checkIndex(); err != nil {
			fail("after op %d: %v; %s", lastOp, err, l.debugString())
		}
		op := rng.IntN(100)
		lastOp = op
		switch {
		case op < 55: // append 1-3 batches of 1-8 records
			var recs []byte
			for b := rng.IntN(3); b >= 0; b-- {
				vals := make([][]byte, 1+rng.IntN(8))
				for i := range vals {
					vals[i] = make([]byte, rng.IntN(200))
					for j := range vals[i] {
						vals[i][j] = byte(rng.Uint32())
					}
				}
				recs = append(recs, BuildBatch(int64(rng.IntN(1e6)), vals...)...)
			}
			if rng.IntN(20) == 0 {
				epoch++
			}
			if rng.IntN(8) == 0 {
				// A marker ends transactional producer 11's or 12's
				// transaction (or nothing), committed or aborted.
				mk := Marker{ProducerID: int64(11 + rng.IntN(2)), Commit: rng.IntN(2) == 0, Timestamp: 1}
				off, err := l.AppendMarker(mk, epoch)
				if err != nil || off != m.leo() {
					fail("marker %+v: offset %d %v, log end was %d", mk, off, err, m.leo())
				}
				b := appendMarkerBatch(nil, mk)
				setBaseOffset(b, off)
				setLeaderEpoch(b, epoch)
				m.batches = append(m.batches, b)
				continue
			}
			if rng.IntN(3) == 0 {
				// An idempotent producer's batch: one of three producers,
				// at the sequence after its last batch in the log.
				recs = recs[:frameLength(recs, DefaultMaxBatchBytes)]
				// Producers 11 and 12 are transactional.
				pid, attrs := int64(1+rng.IntN(3)), int16(0)
				if rng.IntN(2) == 0 {
					pid, attrs = int64(11+rng.IntN(2)), attrTransactional
				}
				setProducer(recs, pid, 0, m.nextSeq(pid), attrs)
			}
			if info, err := l.Append(recs, epoch); err != nil || info.Duplicate {
				fail("append: %+v %v; model start %d leo %d batches %d; log %s; lastop %d", info, err, m.logStart, m.leo(), len(m.batches), l.debugString(), lastOp)
			}
			for p := 0; p < len(recs); {
				n := frameLength(recs[p:], DefaultMaxBatchBytes)
				m.batches = append(m.batches, recs[p:p+n])
				p += n
			}
		case op < 65:
			if err := l.Flush(); err != nil {
				fail("flush: %v", err)
			}
			m.flushed = l.FlushedOffset()
		case op < 70:
			if err := l.Checkpoint(); err != nil {
				fail("checkpoint: %v", err)
			}
			m.flushed = l.FlushedOffset()
		case op < 74 && m.leo() > m.logStart:
			off := m.logStart + rng.Int64N(m.leo()-m.logStart)
			if err := l.TruncateTo(off); err != nil {
				fail("truncate to %d: %v", off, err)
			}
			m.truncate(off)
			if l.LogEndOffset() != m.leo() {
				fail("truncate to %d: leo %d, model %d", off, l.LogEndOffset(), m.leo())
			}
		case op < 76 && m.leo() > m.logStart:
			off := m.logStart + rng.Int64N(m.leo()-m.logStart+1)
			if err := l.AdvanceLogStart(off); err != nil {
				fail("advance log start to %d: %v", off, err)
			}
			m.logStart = off
		case op < 78:
			if err := l.Close(); err != nil {
				fail("close: %v", err)
			}
			if l, _, err = Open(mem, "/d/t-0", "t-0", idx, opts); err != nil {
				fail("reopen: %v", err)
			}
			m.flushed = l.FlushedOffset()
		default: // crash here
			checked++
			clone := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(101), RNG: rng})
			cidx, cl := checkCrashImage(t, seed, clone, opts, m)
			if goOn && rng.IntN(4) == 0 {
				// Go on from the crash image, as a restarted node would.
				_ = l.Close()
				_ = idx.Close()
				mem, idx, l = clone, cidx, cl
				m.truncate(cl.LogEndOffset())
				m.flushed = cl.FlushedOffset()
			} else {
				_ = cl.Close()
				_ = cidx.Close()
			}
		}
	}
	_ = l.Close()
	_ = idx.Close()
	return checked
}

// checkCrashImage opens the log on a crash image and checks it against m.
func checkCrashImage(t *testing.T, seed uint64, fs *vfs.MemFS, opts Options, m *crashModel) (*Index, *Log) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d: crash image: %s", seed, fmt.Sprintf(format, args...))
	}
	idx, err := OpenIndex(fs, "/d/index", 1<<20)
	if err != nil {
		fail("open index: %v", err)
	}
	l, rep, err := Open(fs, "/d/t-0", "t-0", idx, opts)
	if err != nil {
		fail("open log: %v", err)
	}
	leo := l.LogEndOffset()
	if err := l.checkIndex(); err != nil {
		fail("index after recovery: %v; %s; report %+v", err, l.debugString(), rep)
	}
	if segs := l.Segments(); segs[0] > l.LogStartOffset() {
		names, _ := fs.List("/d/t-0")
		fail("segments %v, log start %d, leo %d, files %v, report %+v", segs, l.LogStartOffset(), leo, names, rep)
	}
	if leo < m.flushed {
		fail("recovered to %d, but %d was fsynced (report %+v)", leo, m.flushed, rep)
	}
	if leo > m.leo() {
		fail("recovered to %d, past the %d appended", leo, m.leo())
	}
	if ls := l.LogStartOffset(); ls != m.logStart {
		fail("log start %d, want %d", ls, m.logStart)
	}
	// Every batch from the log start to the end: valid and as appended.
	i := 0
	for i < len(m.batches) && nextOffsetAt(m.batches[i]) <= m.logStart {
		i++
	}
	for off := m.logStart; off < leo; {
		c, err := l.Read(off, 4096, leo, nil)
		if err != nil {
			fail("read %d: %v (report %+v)", off, err, rep)
		}
		if len(c.Data) == 0 {
			fail("read %d below the log end %d returned nothing", off, leo)
		}
		for p := 0; p < len(c.Data); {
			_, n, err := checkBatch(c.Data[p:], DefaultMaxBatchBytes)
			if err != nil {
				fail("batch at %d: %v", baseOffsetAt(c.Data[p:]), err)
			}
			if i >= len(m.batches) || !bytes.Equal(c.Data[p:p+n], m.batches[i]) {
				want := int64(-1)
				if i < len(m.batches) {
					want = baseOffsetAt(m.batches[i])
				}
				fail("batch at offset %d (next %d) is not the one appended there (model batch %d at %d; segments %v; report %+v)",
					baseOffsetAt(c.Data[p:]), nextOffsetAt(c.Data[p:]), i, want, l.Segments(), rep)
			}
			i++
			p += n
		}
		off = c.Next
	}
	// A producer's retry of any of its last five batches in the
	// recovered log is a duplicate: it answers the original's offsets.
	window := map[int64][]BatchHeader{}
	checkCrashTxns(fail, l, m)
	for _, b := range m.batches {
		if h := parseHeader(b); h.ProducerID >= 0 && !h.IsControl() && h.NextOffset() <= leo {
			window[h.ProducerID] = append(window[h.ProducerID], h)
		}
	}
	for pid, hs := range window {
		for _, h := range hs[max(len(hs)-producerWindow, 0):] {
			if h.BaseOffset < l.LogStartOffset() {
				continue
			}
			retry := BuildBatch(1, make([][]byte, h.RecordCount)...)
			setProducer(retry, pid, h.ProducerEpoch, h.BaseSequence, 0)
			info, err := l.Append(retry, l.LatestEpoch())
			if err != nil || !info.Duplicate || info.FirstOffset != h.BaseOffset || info.LastOffset != h.LastOffset() {
				fail("retry of producer %d's batch at %d..%d (seq %d..%d): %+v %v (producer recovery %+v)",
					pid, h.BaseOffset, h.LastOffset(), h.BaseSequence, h.LastSequence(), info, err, rep.Producers)
			}
		}
	}
	// The recovered log takes appends where it ends.
	before := l.debugString()
	info, err := l.Append(BuildBatch(1, []byte("after")), l.LatestEpoch()+1)
	if err != nil || info.FirstOffset != leo {
		fail("append after recovery: %+v %v", info, err)
	}
	if err := l.TruncateTo(leo); err != nil {
		fail("truncate the probe: %v", err)
	}
	if l.LogEndOffset() != leo {
		fail("truncate the probe: leo %d, want %d; before %s; after %s; report %+v", l.LogEndOffset(), leo, before, l.debugString(), rep)
	}
	return idx, l
}
