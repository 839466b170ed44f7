package segment

import (
	"errors"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// FuzzDecodeProducerState: a snapshot file's bytes, whatever they are,
// decode to a state or to ErrCorruptSnapshot, never a panic; what decodes
// encodes back to the same bytes.
func FuzzDecodeProducerState(f *testing.F) {
	s := newProducerState(true)
	for i := range 7 {
		h := BatchHeader{BaseOffset: int64(10 * i), LastOffsetDelta: 2, ProducerID: int64(i % 3), ProducerEpoch: 1, BaseSequence: int32(3 * i)}
		s.update(h, int64(1000+i))
	}
	f.Add(s.encode(70))
	s.ended = []endedTxn{{first: 5, marker: 12}, {first: 20, marker: 40}} // version 3's ended transactions
	f.Add(s.encode(70))
	empty := newProducerState(false)
	f.Add(empty.encode(0))
	f.Add([]byte("SLPS"))
	f.Fuzz(func(t *testing.T, b []byte) {
		off := int64(70)
		if len(b) >= snapHeaderSize {
			off = decodeU64(b[9:17])
		}
		st, err := decodeProducerState(b, off)
		if err != nil {
			if !errors.Is(err, ErrCorruptSnapshot) {
				t.Fatalf("error %v is not ErrCorruptSnapshot", err)
			}
			return
		}
		if got := st.encode(off); string(got) != string(b) {
			t.Fatalf("decoded and encoded again: %x, was %x", got, b)
		}
	})
}

// TestSnapshotsWhileAppending: checkpoints (which write their snapshot
// outside the append lock) run while an idempotent producer appends and
// the log rolls (whose snapshots are written under it). After a reopen
// from the last snapshot, a retry of each of the producer's last five
// batches is a duplicate with its original offsets.
func TestSnapshotsWhileAppending(t *testing.T) {
	mem := vfs.NewMem()
	e := newEnv(t, mem)
	opts := Options{SegmentBytes: 2048, RetentionBytes: -1}
	l, _ := e.open(opts)
	const batches = 300
	done := make(chan error, 1)
	go func() {
		for range batches {
			if err := l.Checkpoint(); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	var firsts []int64
	for i := range batches {
		b := batchOf(1, "v", 3)
		setProducer(b, 5, 0, int32(3*i), 0)
		info, err := l.Append(b, 1)
		if err != nil || info.Duplicate {
			t.Fatalf("append %d: %+v %v", i, info, err)
		}
		firsts = append(firsts, info.FirstOffset)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, rep := e.open(opts)
	defer l.Close()
	if rep.Producers.Snapshot != l.LogEndOffset() || rep.Producers.BadSnapshots != 0 {
		t.Fatalf("producer recovery %+v, log end %d: want the snapshot Close wrote", rep.Producers, l.LogEndOffset())
	}
	for i := batches - producerWindow; i < batches; i++ {
		b := batchOf(1, "v", 3)
		setProducer(b, 5, 0, int32(3*i), 0)
		if info, err := l.Append(b, 1); err != nil || !info.Duplicate || info.FirstOffset != firsts[i] {
			t.Fatalf("retry of batch %d: %+v %v, want a duplicate at %d", i, info, err, firsts[i])
		}
	}
	if n := len(l.snaps); n > len(l.Segments())+snapshotsKept {
		t.Fatalf("%d snapshots kept for %d segments", n, len(l.Segments()))
	}
}

// TestProducerSnapshotBelowLogStart: a crash recovers producer state from
// a snapshot older than the log start, whose later batches of the same
// producer went with AdvanceLogStart. The snapshot's entry is stale (it
// expects the sequence after its last batch, not after the deleted
// ones): it is forgotten, as Kafka drops producers below the log start,
// and the producer goes on at its own sequence. (Found by
// TestCrashPointsAfterRecovery, seed 1, in CI.)
func TestProducerSnapshotBelowLogStart(t *testing.T) {
	mem := vfs.NewCrashableMem()
	idx, err := OpenIndex(mem, "/d/index", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{RetentionBytes: -1, ProducerIDExpiration: -1}
	l, _, err := Open(mem, "/d/t-0", "t-0", idx, opts)
	if err != nil {
		t.Fatal(err)
	}
	appendSeq := func(l *Log, seq int32) error {
		b := BuildBatch(1000, []byte("v"))
		setProducer(b, 7, 0, seq, 0)
		_, err := l.Append(b, 0)
		return err
	}
	if err := appendSeq(l, 0); err != nil {
		t.Fatal(err)
	}
	if err := l.Checkpoint(); err != nil { // a snapshot at offset 1
		t.Fatal(err)
	}
	for seq := int32(1); seq <= 3; seq++ {
		if err := appendSeq(l, seq); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := l.AdvanceLogStart(4); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	crashed := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	cidx, err := OpenIndex(crashed, "/d/index", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer cidx.Close()
	cl, _, err := Open(crashed, "/d/t-0", "t-0", cidx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if cl.LogStartOffset() != 4 || cl.LogEndOffset() != 4 {
		t.Fatalf("the crash image holds [%d, %d), want [4, 4)", cl.LogStartOffset(), cl.LogEndOffset())
	}
	if err := appendSeq(cl, 4); err != nil {
		t.Fatalf("the producer's next batch after recovery: %v", err)
	}
	_ = l.Close()
	_ = idx.Close()
}
