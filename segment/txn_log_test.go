package segment

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnReplay is what a log's batches say of transactions, replayed from
// its first batch with a fresh state: the reference the log's own state
// (snapshots, suffix scans, the aborted index) must agree with.
type txnReplay struct {
	open     map[int64]int64 // producer -> first offset of its open transaction
	lastData map[int64]int64 // producer -> last offset of its latest data batch
	aborted  []AbortedTxn
}

func replayTxns(batches [][]byte, leo int64) txnReplay {
	st := newProducerState(false)
	r := txnReplay{open: map[int64]int64{}, lastData: map[int64]int64{}}
	for _, b := range batches {
		h := parseHeader(b)
		if h.NextOffset() > leo {
			break
		}
		if h.ProducerID < 0 {
			continue
		}
		if !h.IsControl() {
			st.update(h, 0)
			r.lastData[h.ProducerID] = h.LastOffset()
			continue
		}
		if c, ok := parseControl(b); ok {
			if first, was := st.endTxn(h, c, 0); was && !c.commit {
				r.aborted = append(r.aborted, AbortedTxn{ProducerID: h.ProducerID, FirstOffset: first, LastOffset: h.BaseOffset})
			}
		}
	}
	for id, e := range st.producers {
		if e.txnFirst >= 0 {
			r.open[id] = e.txnFirst
		}
	}
	return r
}

// checkTxns compares l's transactions with the replay of batches. What
// lies below the log start may be forgotten (a state rebuilt from the log
// start, or from a snapshot below it, cannot know the batches there, as
// in Kafka), so an open transaction that began below the log start may
// also be known from its producer's first batch at or after it: the log
// must agree with the replay of all batches or with that of the batches
// from the log start, or, for one that began below the log start, name a
// first offset below it too (where the state learnt of it depends on where
// the log started when it was rebuilt). The first unstable offset is the smallest open
// transaction's first offset, clamped to the log start.
func checkTxns(fail func(string, ...any), l *Log, batches [][]byte) {
	start, leo := l.LogStartOffset(), l.LogEndOffset()
	full := replayTxns(batches, leo)
	var kept [][]byte
	for _, b := range batches {
		if parseHeader(b).LastOffset() >= start {
			kept = append(kept, b)
		}
	}
	part := replayTxns(kept, leo)
	got := map[int64]int64{}
	for _, p := range l.Producers(nil) {
		if p.CurrentTxnStartOffset >= 0 {
			got[p.ProducerID] = p.CurrentTxnStartOffset
		}
	}
	for id, last := range full.lastData {
		if last < start {
			continue
		}
		g, ok := got[id]
		w1, ok1 := full.open[id]
		w2, ok2 := part.open[id]
		below := ok && ok1 && w1 < start && g < start // learnt where the log started then
		if ok != (ok1 || ok2) || ok && !(ok1 && g == w1 || ok2 && g == w2 || below) {
			fail("producer %d's open transaction: log says %d (%v), replay %d (%v) or from the log start %d (%v); log [%d, %d)",
				id, g, ok, w1, ok1, w2, ok2, start, leo)
		}
	}
	minOpen := int64(-1)
	for id, g := range got {
		w1, ok1 := full.open[id]
		if w2, ok2 := part.open[id]; !(ok1 && g == w1 || ok2 && g == w2 || ok1 && w1 < start && g < start) {
			fail("log has producer %d's transaction open at %d; replay %v, from the log start %v", id, g, full.open, part.open)
		}
		if minOpen < 0 || g < minOpen {
			minOpen = g
		}
	}
	fu, ok := l.FirstUnstableOffset()
	if ok != (minOpen >= 0) || ok && fu != max(minOpen, start) {
		fail("first unstable offset %d (%v), open transactions %v, log start %d", fu, ok, got, start)
	}
	// Every aborted transaction the log lists is one of a replay's; every
	// one the full replay finds that began at or after the log start is
	// listed, once.
	// One that began below the log start may name a later first offset:
	// where the state learnt of it depends on where the log started then.
	all := map[AbortedTxn]bool{}
	for _, a := range append(full.aborted, part.aborted...) {
		all[a] = true
		if a.FirstOffset < start {
			all[AbortedTxn{ProducerID: a.ProducerID, FirstOffset: -1, LastOffset: a.LastOffset}] = true
		}
	}
	listed := map[int64]AbortedTxn{}
	for _, a := range l.AbortedTxns(start, leo, nil) {
		below := AbortedTxn{ProducerID: a.ProducerID, FirstOffset: -1, LastOffset: a.LastOffset}
		if !all[a] && !(a.FirstOffset < start && all[below]) {
			fail("aborted transaction %+v is not in the log's batches (replay %v)", a, full.aborted)
		}
		if b, dup := listed[a.LastOffset]; dup {
			fail("two aborted transactions end at %d: %+v and %+v", a.LastOffset, a, b)
		}
		listed[a.LastOffset] = a
	}
	for _, a := range full.aborted {
		if a.LastOffset >= start && a.FirstOffset >= start && listed[a.LastOffset] != a {
			fail("aborted transaction %+v is not listed (log lists %v)", a, listed)
		}
	}
}

// checkCrashTxns is checkTxns for a recovered crash image.
func checkCrashTxns(fail func(string, ...any), l *Log, m *crashModel) {
	checkTxns(fail, l, m.batches)
}

// txnBatch is producer pid's transactional batch of n records at seq.
func txnBatch(pid int64, epoch int16, seq int32, n int) []byte {
	b := batchOf(1, fmt.Sprint(pid, "/", seq), n)
	setProducer(b, pid, epoch, seq, attrTransactional)
	return b
}

func TestMarkerBatchFormat(t *testing.T) {
	for _, m := range []Marker{{ProducerID: 7, ProducerEpoch: 3, Commit: true, CoordinatorEpoch: 9, Timestamp: 1234},
		{ProducerID: 1 << 40, ProducerEpoch: 0, Commit: false, CoordinatorEpoch: -1, Timestamp: -1}} {
		b := appendMarkerBatch(nil, m)
		h, n, err := checkBatch(b, DefaultMaxBatchBytes)
		if err != nil || n != len(b) || n != markerBatchSize {
			t.Fatalf("%+v: %v, %d of %d bytes (want %d)", m, err, n, len(b), markerBatchSize)
		}
		if !h.IsControl() || !h.IsTransactional() || h.ProducerID != m.ProducerID || h.ProducerEpoch != m.ProducerEpoch ||
			h.BaseSequence != -1 || h.RecordCount != 1 || h.MaxTimestamp != m.Timestamp {
			t.Fatalf("%+v: header %+v", m, h)
		}
		// The record as Kafka's clients read it: kmsg's RecordBatch and
		// Record, the key a ControlRecordKey, the value an EndTxnMarker.
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(b); err != nil {
			t.Fatal(err)
		}
		var rec kmsg.Record
		l, k := binary.Varint(rb.Records)
		if err := rec.ReadFrom(rb.Records[:k+int(l)]); err != nil || k+int(l) != len(rb.Records) {
			t.Fatalf("record: %v", err)
		}
		var key kmsg.ControlRecordKey
		var val kmsg.EndTxnMarker
		if err := key.ReadFrom(rec.Key); err != nil {
			t.Fatal(err)
		}
		if err := val.ReadFrom(rec.Value); err != nil {
			t.Fatal(err)
		}
		if (key.Type == kmsg.ControlRecordKeyTypeCommit) != m.Commit || val.CoordinatorEpoch != m.CoordinatorEpoch {
			t.Fatalf("%+v: key %+v value %+v", m, key, val)
		}
		if c, ok := parseControl(b); !ok || c.commit != m.Commit || c.coordEpoch != m.CoordinatorEpoch {
			t.Fatalf("%+v: parseControl %+v %v", m, c, ok)
		}
		// Its records pass the leader's own record walk.
		rc := newRecordCheck(0, -1, -1)
		if err := rc.records(b[BatchHeaderSize:], h); err != nil {
			t.Fatal(err)
		}
	}
	// A control batch that is not a marker (or was emptied) ends nothing.
	b := appendMarkerBatch(nil, Marker{ProducerID: 1})
	binary.BigEndian.PutUint16(b[BatchHeaderSize+7:], 2) // type 2
	if _, ok := parseControl(b); ok {
		t.Fatal("a control record of type 2 parsed as a marker")
	}
	if _, ok := parseControl(b[:BatchHeaderSize]); ok {
		t.Fatal("a control batch without its record parsed as a marker")
	}
}

func TestTxnAppendValidation(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	l, _ := e.open(Options{})
	defer l.Close()
	if _, err := l.Append(txnBatch(5, 0, 0, 2), 0); err != nil {
		t.Fatal(err)
	}
	if fu, ok := l.FirstUnstableOffset(); !ok || fu != 0 {
		t.Fatalf("first unstable %d %v", fu, ok)
	}
	plain := batchOf(1, "p", 1)
	setProducer(plain, 5, 0, 2, 0)
	if _, err := l.Append(plain, 0); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("non-transactional batch in a transaction: %v", err)
	}
	// A retry of the transactional batch is a duplicate, not a new one.
	if info, err := l.Append(txnBatch(5, 0, 0, 2), 0); err != nil || !info.Duplicate || info.FirstOffset != 0 {
		t.Fatalf("retry: %+v %v", info, err)
	}
	// Clients may not write markers.
	ctl := appendMarkerBatch(nil, Marker{ProducerID: 5, Commit: true})
	if _, err := l.Append(ctl, 0); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("a client's control batch: %v", err)
	}
	if _, err := l.AppendMarker(Marker{ProducerID: -1}, 0); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("a marker without a producer: %v", err)
	}
	if _, err := l.AppendMarker(Marker{ProducerID: 5, Commit: true}, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendMarker(Marker{ProducerID: 5, Commit: true}, 0); !errors.Is(err, ErrStaleEpoch) {
		t.Fatalf("a marker at an old leader epoch: %v", err)
	}
	if _, ok := l.FirstUnstableOffset(); ok {
		t.Fatal("a transaction is open after its commit")
	}
	if _, err := l.Append(plain, 1); err != nil {
		t.Fatalf("after the commit the producer writes idempotently: %v", err)
	}
	ps := l.Producers(nil)
	if len(ps) != 1 || ps[0].ProducerID != 5 || ps[0].LastSequence != 2 || ps[0].CurrentTxnStartOffset != -1 || ps[0].CoordinatorEpoch != 0 {
		t.Fatalf("producers %+v", ps)
	}
}

// TestTxnFollowerAndTruncation runs a random transactional workload on a
// leader, copies it to a follower batch by batch, and checks both against
// a replay: after every step, after reopens and crashes of the follower,
// and after truncations to random offsets (each compared with a replay of
// what is left).
func TestTxnFollowerAndTruncation(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { txnFollowerRun(t, seed) })
	}
}

func txnFollowerRun(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, seed))
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d: %s", seed, fmt.Sprintf(format, args...))
	}
	mem := vfs.NewCrashableMem()
	idx, err := OpenIndex(mem, "/d/index", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = idx.Close() }()
	opts := Options{SegmentBytes: 600, IndexIntervalBytes: 100, ProducerIDExpiration: -1}
	leader, _, err := Open(mem, "/d/l", "l", idx, opts)
	if err != nil {
		t.Fatal(err)
	}
	follower, _, err := Open(mem, "/d/f", "f", idx, opts)
	if err != nil {
		t.Fatal(err)
	}
	var batches [][]byte
	seqs := map[int64]int32{}
	open := map[int64]bool{}
	for step := 0; step < 300; step++ {
		pid := int64(1 + rng.IntN(4))
		var off int64
		if open[pid] && rng.IntN(3) == 0 {
			if off, err = leader.AppendMarker(Marker{ProducerID: pid, Commit: rng.IntN(2) == 0, CoordinatorEpoch: int32(step / 100)}, 0); err != nil {
				fail("marker: %v", err)
			}
			open[pid] = false
		} else {
			n := 1 + rng.IntN(3)
			info, err := leader.Append(txnBatch(pid, 0, seqs[pid], n), 0)
			if err != nil {
				fail("append: %v", err)
			}
			seqs[pid] += int32(n)
			open[pid] = true
			off = info.FirstOffset
		}
		c, err := leader.Read(off, 1<<20, leader.LogEndOffset(), nil)
		if err != nil || len(c.Data) == 0 {
			fail("read %d: %v", off, err)
		}
		batches = append(batches, append([]byte(nil), c.Data...))
		if _, err := follower.AppendReplicated(append([]byte(nil), c.Data...)); err != nil {
			fail("replicate: %v", err)
		}
		checkTxns(fail, leader, batches)
		checkTxns(fail, follower, batches)
		switch rng.IntN(40) {
		case 0:
			_ = follower.Close()
			if follower, _, err = Open(mem, "/d/f", "f", idx, opts); err != nil {
				fail("reopen: %v", err)
			}
			checkTxns(fail, follower, batches)
		case 1:
			if err := follower.Flush(); err != nil {
				fail("flush: %v", err)
			}
		}
	}
	// A crash of the whole node: the follower recovers what was fsynced
	// and its state matches the replay of what it kept.
	clone := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 50, RNG: rng})
	cidx, err := OpenIndex(clone, "/d/index", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	cf, _, err := Open(clone, "/d/f", "f", cidx, opts)
	if err != nil {
		t.Fatal(err)
	}
	checkTxns(fail, cf, batches)
	_ = cf.Close()
	_ = cidx.Close()
	// Truncations, each checked, then reopened and checked again.
	for range 6 {
		leo := follower.LogEndOffset()
		if leo == 0 {
			break
		}
		cut := rng.Int64N(leo)
		if err := follower.TruncateTo(cut); err != nil {
			fail("truncate to %d: %v", cut, err)
		}
		k := sort.Search(len(batches), func(i int) bool { return nextOffsetAt(batches[i]) > follower.LogEndOffset() })
		batches = batches[:k]
		checkTxns(fail, follower, batches)
		_ = follower.Close()
		if follower, _, err = Open(mem, "/d/f", "f", idx, opts); err != nil {
			fail("reopen: %v", err)
		}
		checkTxns(fail, follower, batches)
	}
	if err := follower.TruncateFullyAndStartAt(1000); err != nil {
		t.Fatal(err)
	}
	checkTxns(fail, follower, nil)
	if got := follower.AbortedTxns(0, 2000, nil); len(got) != 0 {
		fail("aborted transactions after a full truncation: %v", got)
	}
	_ = follower.Close()
	_ = leader.Close()
}

// TestSnapshotV1Loads: a version 1 snapshot (before transactions) loads,
// with no transaction open; version 2 round-trips open transactions,
// version 3 the ended ones too.
func TestSnapshotV1Loads(t *testing.T) {
	st := newProducerState(false)
	h := BatchHeader{ProducerID: 3, ProducerEpoch: 2, BaseOffset: 10, LastOffsetDelta: 1, BaseSequence: 0, Attributes: attrTransactional}
	st.update(h, 77)
	st.ended = []endedTxn{{first: 4, marker: 8}}
	v3 := st.encode(20)
	got, err := decodeProducerState(v3, 20)
	if err != nil {
		t.Fatal(err)
	}
	if fu, ok := got.firstUnstable(); !ok || fu != 10 || got.producers[3].txnFirst != 10 {
		t.Fatalf("v3: first unstable %d %v", fu, ok)
	}
	if lso := got.lastStable(8); lso != 4 || len(got.ended) != 1 {
		t.Fatalf("v3: ended %v, LSO at high watermark 8 %d, want 4", got.ended, lso)
	}
	// Version 2: no ended transactions (the 4-byte count and its entry).
	v2 := append([]byte(nil), v3[:len(v3)-4-16]...)
	v2[4] = 2
	binary.BigEndian.PutUint32(v2[5:], crc32.Checksum(v2[9:], castagnoli))
	if got, err = decodeProducerState(v2, 20); err != nil || len(got.ended) != 0 || got.producers[3].txnFirst != 10 {
		t.Fatalf("v2: %v %+v", err, got)
	}
	// Version 1: the same entry without the 12 bytes of transaction state.
	v1 := append([]byte(nil), v2[:snapHeaderSize]...)
	v1[4] = 1
	e := v2[snapHeaderSize:]
	v1 = append(v1, e[:18]...)
	v1 = append(v1, e[30:]...)
	binary.BigEndian.PutUint32(v1[5:], crc32.Checksum(v1[9:], castagnoli))
	got, err = decodeProducerState(v1, 20)
	if err != nil {
		t.Fatal(err)
	}
	p := got.producers[3]
	if p == nil || p.epoch != 2 || p.lastTs != 77 || len(p.batches) != 1 || p.txnFirst != -1 || p.coordEpoch != -1 {
		t.Fatalf("v1 entry %+v", p)
	}
	if _, ok := got.firstUnstable(); ok {
		t.Fatal("v1 snapshot opened a transaction")
	}
	// A transaction past the snapshot's offset is corruption.
	bad := append([]byte(nil), v2...)
	binary.BigEndian.PutUint64(bad[snapHeaderSize+18:], 99)
	binary.BigEndian.PutUint32(bad[5:], crc32.Checksum(bad[9:], castagnoli))
	if _, err := decodeProducerState(bad, 20); !errors.Is(err, ErrCorruptSnapshot) {
		t.Fatalf("open transaction past the snapshot: %v", err)
	}
}

// TestOpenTxnHeap: the first unstable offset is always the smallest open
// transaction's first offset, whatever order they end in.
func TestOpenTxnHeap(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	st := newProducerState(false)
	open := map[int64]int64{}
	off := int64(0)
	for range 5000 {
		pid := int64(rng.IntN(50))
		if _, ok := open[pid]; ok && rng.IntN(2) == 0 {
			st.endTxn(BatchHeader{ProducerID: pid, BaseOffset: off}, controlRecord{coordEpoch: 1}, 0)
			delete(open, pid)
		} else {
			st.update(BatchHeader{ProducerID: pid, BaseOffset: off, BaseSequence: 0, Attributes: attrTransactional}, 0)
			if _, ok := open[pid]; !ok {
				open[pid] = off
			}
		}
		off++
		want := int64(-1)
		for _, f := range open {
			if want < 0 || f < want {
				want = f
			}
		}
		if got, ok := st.firstUnstable(); ok != (want >= 0) || ok && got != want {
			t.Fatalf("first unstable %d %v, want %d", got, ok, want)
		}
		if len(st.open) != len(open) {
			t.Fatalf("heap holds %d, %d open", len(st.open), len(open))
		}
	}
}

// TestAbortedIndexRetention: retention drops the entries below the new
// log start; Delete drops them all.
func TestAbortedIndexRetention(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	l, _ := e.open(Options{SegmentBytes: 300})
	for i := range 6 {
		if _, err := l.Append(txnBatch(1, 0, int32(i), 1), 0); err != nil {
			t.Fatal(err)
		}
		if _, err := l.AppendMarker(Marker{ProducerID: 1}, 0); err != nil {
			t.Fatal(err)
		}
	}
	if got := l.AbortedTxns(0, l.LogEndOffset(), nil); len(got) != 6 {
		t.Fatalf("aborted %v", got)
	}
	segs := l.Segments()
	if len(segs) < 3 {
		t.Fatalf("segments %v", segs)
	}
	start := segs[len(segs)/2]
	if err := l.AdvanceLogStart(start); err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := e.idx.scan(l.k.abort(0), l.k.upper(kindAbort), func(k, v []byte) error {
		if off := decodeU64(k[len(k)-8:]); off < start {
			t.Errorf("entry of the marker at %d stays below the log start %d", off, start)
		}
		n++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n == 0 || n >= 6 {
		t.Fatalf("%d entries after retention to %d (segments %v)", n, start, segs)
	}
	if err := l.Delete(); err != nil {
		t.Fatal(err)
	}
	if err := e.idx.scan(l.k.abort(0), l.k.upper(kindAbort), func(k, v []byte) error {
		t.Errorf("entry %x survives Delete", k)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// FuzzParseControl: parseControl never panics on a control batch's bytes,
// and reads back every marker appendMarkerBatch writes.
func FuzzParseControl(f *testing.F) {
	f.Add(appendMarkerBatch(nil, Marker{ProducerID: 1, Commit: true, CoordinatorEpoch: 3}), int64(1), true, int32(3))
	f.Add(appendMarkerBatch(nil, Marker{ProducerID: 9, CoordinatorEpoch: -1})[:BatchHeaderSize+5], int64(9), false, int32(-1))
	f.Fuzz(func(t *testing.T, b []byte, pid int64, commit bool, coord int32) {
		parseControl(b)
		m := appendMarkerBatch(nil, Marker{ProducerID: pid, Commit: commit, CoordinatorEpoch: coord})
		if c, ok := parseControl(m); !ok || c.commit != commit || c.coordEpoch != coord {
			t.Fatalf("marker %v %d read back as %+v %v", commit, coord, c, ok)
		}
	})
}
