package segment

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// testEnv is a node's worth of storage on an in-memory FS: one index, logs
// opened on demand.
type testEnv struct {
	t   testing.TB
	fs  vfs.FS
	idx *Index
}

func newEnv(t testing.TB, fs vfs.FS) *testEnv {
	t.Helper()
	idx, err := OpenIndex(fs, "/data/index", 0)
	if err != nil {
		t.Fatal(err)
	}
	e := &testEnv{t: t, fs: fs, idx: idx}
	t.Cleanup(func() { _ = idx.Close() })
	return e
}

func (e *testEnv) open(opts Options) (*Log, RecoveryReport) {
	e.t.Helper()
	l, rep, err := Open(e.fs, "/data/topic-0", "topic-0", e.idx, opts)
	if err != nil {
		e.t.Fatal(err)
	}
	return l, rep
}

// batchOf builds a batch of n records whose values name the batch.
func batchOf(ts int64, tag string, n int) []byte {
	vals := make([][]byte, n)
	for i := range vals {
		vals[i] = []byte(fmt.Sprintf("%s/%d", tag, i))
	}
	return BuildBatch(ts, vals...)
}

// setProducer sets a batch's producer fields and attributes, as an
// idempotent or transactional producer sends them, and recomputes its CRC.
func setProducer(b []byte, pid int64, pepoch int16, seq int32, attrs int16) {
	be := binary.BigEndian
	be.PutUint16(b[offAttributes:], uint16(attrs))
	be.PutUint64(b[offProducerID:], uint64(pid))
	be.PutUint16(b[offProducerEpoch:], uint16(pepoch))
	be.PutUint32(b[offBaseSequence:], uint32(seq))
	be.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
}

// appendTrusted appends b at the log end as a follower does, without the
// leader's record validation: for batches a client may not write
// (transactional, control) or whose records do not decode.
func appendTrusted(l *Log, b []byte, epoch int32) (AppendInfo, error) {
	setBaseOffset(b, l.LogEndOffset())
	setLeaderEpoch(b, epoch)
	return l.AppendReplicated(b)
}

func TestAppendReadReopen(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	l, rep := e.open(Options{SegmentBytes: 1024, IndexIntervalBytes: 128})
	if rep.LogEndOffset != 0 {
		t.Fatalf("new log ends at %d", rep.LogEndOffset)
	}
	var want [][]byte
	for i := 0; i < 50; i++ {
		b := batchOf(int64(1000+i), fmt.Sprint(i), 3)
		info, err := l.Append(b, 5)
		if err != nil {
			t.Fatal(err)
		}
		if info.FirstOffset != int64(i*3) || info.LastOffset != int64(i*3+2) {
			t.Fatalf("batch %d got offsets %d..%d", i, info.FirstOffset, info.LastOffset)
		}
		want = append(want, append([]byte(nil), b...))
	}
	if n := len(l.Segments()); n < 3 {
		t.Fatalf("expected rolls at 1 KiB, have %d segments", n)
	}
	check := func(l *Log) {
		t.Helper()
		for i := 0; i < 150; i++ {
			c, err := l.Read(int64(i), 1, 1<<62, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(c.Data, want[i/3]) {
				t.Fatalf("read %d: got batch at %d, want batch %d", i, c.First, i/3)
			}
		}
		var all []byte
		for off := int64(0); off < 150; {
			c, err := l.Read(off, 300, 1<<62, nil)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, c.Data...)
			off = c.Next
		}
		if !bytes.Equal(all, bytes.Join(want, nil)) {
			t.Fatal("sequential read differs from what was appended")
		}
		if c, _ := l.Read(150, 100, 1<<62, nil); len(c.Data) != 0 {
			t.Fatal("read at the log end returned data")
		}
		if _, err := l.Read(151, 100, 1<<62, nil); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Fatalf("read past the end: %v", err)
		}
	}
	check(l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, rep = e.open(Options{SegmentBytes: 1024, IndexIntervalBytes: 128})
	if !rep.Clean || rep.LogEndOffset != 150 {
		t.Fatalf("reopen after close: %+v", rep)
	}
	check(l)
	_ = l.Close()
}

func TestAppendRejectsBadBatches(t *testing.T) {
	e := newEnv(t, vfs.NewMem())
	l, _ := e.open(Options{})
	defer l.Close()
	good := batchOf(1, "a", 2)
	bad := append([]byte(nil), good...)
	bad[len(bad)-1] ^= 1
	if _, err := l.Append(append(append([]byte(nil), good...), bad...), 0); !errors.Is(err, ErrCorruptBatch) {
		t.Fatalf("CRC mismatch: %v", err)
	}
	short := good[:len(good)-1]
	if _, err := l.Append(append([]byte(nil), short...), 0); !errors.Is(err, ErrInvalidBatch) {
		t.Fatalf("truncated batch: %v", err)
	}
	if l.LogEndOffset() != 0 || l.Size() != 0 {
		t.Fatalf("a rejected append wrote: leo %d size %d", l.LogEndOffset(), l.Size())
	}
	if _, err := l.Append(append([]byte(nil), good...), 3); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(append([]byte(nil), good...), 2); !errors.Is(err, ErrStaleEpoch) {
		t.Fatalf("older epoch: %v", err)
	}
	rep := batchOf(1, "r", 1)
	setBaseOffset(rep, 1)
	if _, err := l.AppendReplicated(rep); !errors.Is(err, ErrNonContiguous) {
		t.Fatalf("overlap: %v", err)
	}
	setBaseOffset(rep, 2)
	setLeaderEpoch(rep, 4)
	if _, err := l.AppendReplicated(rep); err != nil {
		t.Fatal(err)
	}
	if got := l.Epochs(); len(got) != 2 || got[1] != (EpochEntry{4, 2}) {
		t.Fatalf("epochs %v", got)
	}
}

func TestTruncateAndRecoverNeverResurrects(t *testing.T) {
	mem := vfs.NewCrashableMem()
	e := newEnv(t, mem)
	l, _ := e.open(Options{IndexIntervalBytes: 64})
	for i := 0; i < 10; i++ {
		if _, err := l.Append(batchOf(int64(i), "old", 2), 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateTo(7); err != nil { // inside batch 3 (offsets 6,7)
		t.Fatal(err)
	}
	if l.LogEndOffset() != 6 {
		t.Fatalf("leo after truncate %d", l.LogEndOffset())
	}
	if _, err := l.Append(batchOf(100, "new", 1), 2); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	crashed := mem.CrashClone(vfs.CrashCloneCfg{})
	e2 := newEnv(t, crashed)
	l2, rep := e2.open(Options{IndexIntervalBytes: 64})
	defer l2.Close()
	if l2.LogEndOffset() != 7 {
		t.Fatalf("recovered leo %d, want 7 (report %+v)", l2.LogEndOffset(), rep)
	}
	c, err := l2.Read(6, 1000, 1<<62, nil)
	if err != nil || !bytes.Contains(c.Data, []byte("new/0")) || bytes.Contains(c.Data, []byte("old")) {
		t.Fatalf("after truncate+crash offset 6 holds %q (%v)", c.Data, err)
	}
	if got := l2.Epochs(); len(got) != 2 || got[1] != (EpochEntry{2, 6}) {
		t.Fatalf("epochs after recovery %v", got)
	}
}

func TestRetentionAndLogStart(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	e := newEnv(t, vfs.NewMem())
	l, _ := e.open(Options{SegmentBytes: 200, RetentionMs: time.Minute, RetentionBytes: -1, Now: func() time.Time { return now }})
	defer l.Close()
	for i := 0; i < 20; i++ {
		if _, err := l.Append(batchOf(now.UnixMilli()+int64(i)*1000, "x", 1), 0); err != nil {
			t.Fatal(err)
		}
	}
	segs := len(l.Segments())
	res, err := l.EnforceRetention(now.Add(time.Minute+5*time.Second), l.LogEndOffset())
	if err != nil {
		t.Fatal(err)
	}
	if res.SegmentsDeleted == 0 || res.SegmentsDeleted >= segs {
		t.Fatalf("retention deleted %d of %d segments", res.SegmentsDeleted, segs)
	}
	if l.LogStartOffset() != res.LogStartOffset || l.Segments()[0] != res.LogStartOffset {
		t.Fatalf("log start %d, first segment %d, result %+v", l.LogStartOffset(), l.Segments()[0], res)
	}
	if _, err := l.Read(0, 100, 1<<62, nil); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below log start: %v", err)
	}
	if err := l.AdvanceLogStart(15); err != nil {
		t.Fatal(err)
	}
	c, err := l.Read(15, 1, 1<<62, nil)
	if err != nil || c.First != 15 {
		t.Fatalf("read at new log start: %+v %v", c, err)
	}
}

func TestGroupCommit(t *testing.T) {
	e := newEnv(t, vfs.NewCrashableMem())
	l, _ := e.open(Options{})
	defer l.Close()
	errs := make(chan error, 8)
	for w := 0; w < 8; w++ {
		go func() {
			for i := 0; i < 50; i++ {
				info, err := l.Append(batchOf(1, "g", 1), 0)
				if err == nil {
					err = l.WaitFlushed(t.Context(), info.LastOffset+1)
				}
				if err != nil {
					errs <- err
					return
				}
				if l.FlushedOffset() <= info.LastOffset {
					errs <- fmt.Errorf("WaitFlushed returned before offset %d was flushed", info.LastOffset)
					return
				}
			}
			errs <- nil
		}()
	}
	for w := 0; w < 8; w++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
