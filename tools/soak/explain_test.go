package soak

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/sluice-log/sluice/segment"
	"github.com/sluice-log/sluice/tools/soak/powerfs"
)

func at(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }

// powerLossHist: tpA acknowledges seq 0–8 at offsets 0–8 (one a second);
// a leader kill heals at 4 s; a power loss at 8.5 s (healed 9.5 s) drops
// offsets 3–8 of node 1's log and 5–8 of node 2's; after it, seq 9 is
// acknowledged at offset 3 again. A consumer read offset 3 at 4 s and
// offset 7 at 8.2 s. tpB loses nothing.
func powerLossHist() *hist {
	b := newHist()
	for i := range int64(9) {
		b.ack(0, i, tpA, i, float64(i))
	}
	b.ack(0, 9, tpA, 3, 10)
	b.final(tpA, Key{0, 0}, Key{0, 1}, Key{0, 2}, Key{0, 9})
	b.live(tpA, 3, 4, EncodeValue(Key{0, 3}, 32))
	b.h.Live[len(b.h.Live)-1].At = at(4)
	b.live(tpA, 7, 8, EncodeValue(Key{0, 7}, 32))
	b.h.Live[len(b.h.Live)-1].At = at(8.2)
	b.ack(1, 0, tpB, 0, 1).ack(1, 1, tpB, 1, 10).final(tpB, Key{1, 0}, Key{1, 1})
	b.h.Faults = []Fault{
		{Kind: FaultKillLeader, Target: "node 2", Start: at(2), Healed: at(4), Effect: "new leader"},
		{Kind: FaultPowerLoss, Target: "nodes [1 2 3]", Start: at(8.5), Healed: at(9.5), Effect: "dropped",
			Dropped: []Dropped{
				{Node: 1, TP: tpA, FirstOffset: 3, LastOffset: 8, Batches: 6, FirstWritten: at(3), LastWritten: at(8), Cut: at(8.6)},
				{Node: 2, TP: tpA, FirstOffset: 5, LastOffset: 8, Batches: 4, FirstWritten: at(5), LastWritten: at(8)},
			}},
	}
	return b
}

// With page-cache durability, the records a power loss dropped are put
// down to it, not to the kill that healed first after their
// acknowledgement, and are no violation: lost, vanished and overwritten
// alike.
func TestCheckPowerLossExplainsPageCacheLoss(t *testing.T) {
	b := powerLossHist()
	r := Check(&b.h, CheckOptions{PageCache: true, RecoveryBound: 20 * time.Second})
	if !r.OK {
		t.Fatalf("explained losses flagged: %+v", r.Violations)
	}
	c := r.Counts
	if c.Lost != 6 || c.LostExplained != 6 || c.LostUnexplained != 0 || c.VanishedExplained != 1 || c.ConflictsExplained != 2 {
		t.Errorf("counts %+v: want 6 lost, all explained, 1 vanished and 2 conflicts explained", c)
	}
	if len(r.PowerLosses) != 1 {
		t.Fatalf("power losses %+v, want one", r.PowerLosses)
	}
	p := r.PowerLosses[0]
	if p.Fault != 1 || p.Lost != 6 || p.Vanished != 1 || p.Conflicts != 2 || !p.FirstAck.Equal(at(3)) || !p.LastAck.Equal(at(8)) ||
		p.Unsynced != 5600*time.Millisecond || len(p.Dropped) != 2 {
		t.Errorf("power loss report %+v", p)
	}
	if len(r.Losses) != 1 || !r.Losses[0].Explained || r.Losses[0].Fault != 1 || r.Losses[0].Records != 6 {
		t.Errorf("losses %+v, want one explained group of 6 put down to the power loss (#2), not the kill", r.Losses)
	}
	var out strings.Builder
	PrintSummary(&out, r)
	for _, want := range []string{"they explain 6 of 6 lost", "#2 power-loss", "soak/0 3–8", "in its dropped window"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
}

// With sync durability every loss is a violation, explained or not; the
// detail names the power loss that should not have been able to do it.
func TestCheckPowerLossExcusesNothingWithSync(t *testing.T) {
	b := powerLossHist()
	r := Check(&b.h, CheckOptions{RecoveryBound: 20 * time.Second})
	if r.ByKind[KindLost] != 6 || r.ByKind[KindVanished] != 1 || r.ByKind[KindConflict] != 2 || r.ByKind[KindLostUnexplained] != 0 {
		t.Fatalf("by kind %v, want 6 lost, 1 vanished, 2 offset conflicts", r.ByKind)
	}
	if c := r.Counts; c.LostExplained != 0 || c.VanishedExplained != 0 || c.ConflictsExplained != 0 {
		t.Errorf("counts %+v: nothing is excused with sync durability", c)
	}
	for _, v := range r.Violations {
		if v.Kind == KindLost && !strings.Contains(v.Detail, "power loss #2 dropped that offset") {
			t.Errorf("violation %+v does not name the power loss", v)
		}
	}
	var out strings.Builder
	PrintSummary(&out, r)
	if !strings.Contains(out.String(), "sync durability: they may lose nothing acknowledged (lost: 6)") {
		t.Errorf("summary does not say sync excuses nothing:\n%s", out.String())
	}
}

// A loss no power loss explains is a lost-unexplained violation even with
// page-cache durability: an offset outside every dropped window, and an
// offset inside one but acknowledged after that power loss healed (the
// offset was reused).
func TestCheckLossOutsideEveryPowerLossWindow(t *testing.T) {
	b := powerLossHist()
	b.ack(1, 2, tpB, 2, 5)   // tpB: nothing of it was dropped
	b.ack(0, 10, tpA, 4, 11) // offset 4 was dropped, but this came after the heal
	r := Check(&b.h, CheckOptions{PageCache: true, RecoveryBound: 20 * time.Second})
	mustOnly(t, r, KindLostUnexplained, 2)
	if c := r.Counts; c.Lost != 8 || c.LostExplained != 6 || c.LostUnexplained != 2 {
		t.Errorf("counts %+v: want 8 lost, 6 explained, 2 unexplained", c)
	}
	for _, v := range r.Violations {
		switch v.TP {
		case tpB:
			if !strings.Contains(v.Detail, "no power loss dropped anything of soak/1") {
				t.Errorf("%+v", v)
			}
		case tpA:
			if v.Offset != 4 || !strings.Contains(v.Detail, "#2 node 1 3–8") {
				t.Errorf("%+v", v)
			}
		}
	}
	var unexplained int
	for _, l := range r.Losses {
		if !l.Explained {
			unexplained += l.Records
		}
	}
	if unexplained != 2 {
		t.Errorf("losses %+v: want 2 records in unexplained groups", r.Losses)
	}
}

// batchAt is a one-record-per-value batch with its offsets set.
func batchAt(base int64, ts int64, n int) []byte {
	var vs [][]byte
	for range n {
		vs = append(vs, []byte("v"))
	}
	b := segment.BuildBatch(ts, vs...)
	binary.BigEndian.PutUint64(b, uint64(base)) // outside the CRC
	return b
}

// A power loss's window is read from the segment bytes powerfs is about
// to drop: the batches at or past the synced length, by offset, also when
// the cut falls inside a batch; files that are not segments of the run's
// partitions are left out.
func TestDroppedBatchesFromPowerfs(t *testing.T) {
	dir := t.TempDir()
	j := filepath.Join(dir, "journal")
	fs, err := powerfs.New(vfs.Default, j)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	logDir := filepath.Join(dir, "data", "soak-1")
	other := filepath.Join(dir, "data", "__consumer_offsets-0")
	for _, d := range []string{logDir, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	b1, b2, b3 := batchAt(0, 1000, 2), batchAt(2, 2000, 3), batchAt(5, 3000, 1)
	write := func(path string, synced []byte, rest ...[]byte) {
		f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(synced); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		for _, b := range rest {
			if _, err := f.Write(b); err != nil {
				t.Fatal(err)
			}
		}
		f.Close()
	}
	// Synced up to 10 bytes into b2: b2 and b3 go.
	seg := filepath.Join(logDir, "00000000000000000000.log")
	write(seg, append(append([]byte{}, b1...), b2[:10]...), b2[10:], b3)
	write(filepath.Join(other, "00000000000000000000.log"), nil, b1)
	write(filepath.Join(logDir, "00000000000000000000.snapshot"), nil, []byte("producer state"))
	d, err := fs.OpenDir(logDir)
	if err != nil {
		t.Fatal(err)
	}
	d.Sync()
	d.Close()
	d, _ = fs.OpenDir(other)
	d.Sync()
	d.Close()

	tps := []TP{{"soak", 0}, {"soak", 1}}
	byTP := map[TP]*Dropped{}
	st, err := powerfs.RecoverWith(j, func(c powerfs.Cut) error {
		droppedBatches(3, c, tps, byTP)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got := byTP[TP{"soak", 1}]
	if len(byTP) != 1 || got == nil {
		t.Fatalf("dropped %v, want soak/1 only", byTP)
	}
	wantBytes := int64(len(b2) - 10 + len(b3))
	if got.Node != 3 || got.FirstOffset != 2 || got.LastOffset != 5 || got.Batches != 2 || got.Bytes != wantBytes ||
		!got.FirstWritten.Equal(time.UnixMilli(2000)) || !got.LastWritten.Equal(time.UnixMilli(3000)) {
		t.Errorf("dropped %+v, want node 3 soak/1 offsets 2–5, 2 batches, %d bytes, written 2000–3000 ms", *got, wantBytes)
	}
	if st.BytesDropped != wantBytes+int64(len(b1))+int64(len("producer state")) {
		t.Errorf("stats %+v", st)
	}
	if s := droppedSummary([]Dropped{*got, {Node: 1, TP: TP{"soak", 1}, FirstOffset: 4, LastOffset: 9}}); s != "; offsets dropped: soak/1 2–9" {
		t.Errorf("summary %q", s)
	}
}
