package soak

import (
	"strings"
	"testing"
	"time"
)

var (
	t0  = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tpA = TP{Topic: "soak", Partition: 0}
	tpB = TP{Topic: "soak", Partition: 1}
)

// hist builds crafted histories: sends acked at consecutive offsets, a
// final read that matches them, and helpers to break one thing at a time.
type hist struct{ h History }

func newHist() *hist {
	return &hist{h: History{Partitions: []TP{tpA, tpB}, Start: t0, End: t0.Add(10 * time.Second), FinalHW: map[TP]int64{}}}
}

// ack records producer p's send seq to tp, acknowledged at off, at second sec.
func (b *hist) ack(p int, seq int64, tp TP, off int64, sec float64) *hist {
	at := t0.Add(time.Duration(sec * float64(time.Second)))
	b.h.Sends = append(b.h.Sends, Send{Key: Key{p, seq}, TP: tp, Outcome: Acked, Offset: off, Sent: at, Done: at})
	return b
}

func (b *hist) send(p int, seq int64, tp TP, o Outcome) *hist {
	b.h.Sends = append(b.h.Sends, Send{Key: Key{p, seq}, TP: tp, Outcome: o, Offset: -1, Err: "crafted", Sent: t0, Done: t0})
	return b
}

// final appends records to tp's final read at the next offsets.
func (b *hist) final(tp TP, keys ...Key) *hist {
	for _, k := range keys {
		off := b.h.FinalHW[tp]
		b.h.Final = append(b.h.Final, Read{TP: tp, Offset: off, Value: EncodeValue(k, 32), HW: off + int64(len(keys)), At: b.h.End})
		b.h.FinalHW[tp] = off + 1
	}
	return b
}

func (b *hist) live(tp TP, off, hw int64, v []byte) *hist {
	b.h.Live = append(b.h.Live, Read{TP: tp, Offset: off, Value: v, HW: hw, At: t0})
	return b
}

// healthy is a history where every invariant holds: two producers on two
// partitions, acks spread over the run.
func healthy() *hist {
	b := newHist()
	for i := int64(0); i < 10; i++ {
		b.ack(0, i, tpA, i, float64(i))
		b.ack(1, i, tpB, i, float64(i)+0.5)
	}
	var ka, kb []Key
	for i := int64(0); i < 10; i++ {
		ka = append(ka, Key{0, i})
		kb = append(kb, Key{1, i})
	}
	return b.final(tpA, ka...).final(tpB, kb...)
}

func mustOnly(t *testing.T, r *Report, kind string, n int) {
	t.Helper()
	if r.OK {
		t.Fatalf("report OK, want %d %s violation(s)", n, kind)
	}
	if got := r.ByKind[kind]; got != n {
		t.Errorf("%s violations: got %d, want %d (%+v)", kind, got, n, r.Violations)
	}
	for k, c := range r.ByKind {
		if k != kind && c != 0 {
			t.Errorf("unexpected %d %s violation(s): %+v", c, k, r.Violations)
		}
	}
}

func TestCheckHealthyHistoryPasses(t *testing.T) {
	r := Check(&healthy().h, CheckOptions{})
	if !r.OK {
		t.Fatalf("healthy history fails: %+v", r.Violations)
	}
	if r.Counts.Acked != 20 || r.Counts.Read != 20 || r.Counts.Lost != 0 {
		t.Errorf("counts %+v", r.Counts)
	}
}

func TestCheckLostAcknowledgedRecord(t *testing.T) {
	b := newHist().ack(0, 0, tpA, 0, 1).ack(0, 1, tpA, 1, 2).ack(0, 2, tpA, 2, 3)
	b.final(tpA, Key{0, 0}, Key{0, 1}) // seq 2 acked at offset 2, gone
	b.ack(1, 0, tpB, 0, 1).final(tpB, Key{1, 0})
	b.h.End = t0.Add(4 * time.Second)
	r := Check(&b.h, CheckOptions{})
	mustOnly(t, r, KindLost, 1)
	if r.Counts.Lost != 1 || r.PerTP[tpA.String()].Lost != 1 {
		t.Errorf("counts %+v per %+v", r.Counts, r.PerTP)
	}
	if v := r.Violations[0]; v.Key == nil || *v.Key != (Key{0, 2}) || v.Offset != 2 {
		t.Errorf("violation %+v names the wrong record", v)
	}
}

func TestCheckUnknownOutcomeMayBeEitherWay(t *testing.T) {
	b := healthy().send(0, 10, tpA, Unknown).send(0, 11, tpA, Unknown).final(tpA, Key{0, 10})
	r := Check(&b.h, CheckOptions{})
	if !r.OK {
		t.Fatalf("unknown sends are allowed to be present or absent: %+v", r.Violations)
	}
	if r.Counts.UnknownInLog != 1 || r.Counts.Unknown != 2 {
		t.Errorf("counts %+v", r.Counts)
	}
}

func TestCheckDuplicate(t *testing.T) {
	b := healthy()
	b.final(tpA, Key{0, 9}) // the idempotent producer's retry written twice
	mustOnly(t, Check(&b.h, CheckOptions{}), KindDuplicate, 1)
}

func TestCheckReordered(t *testing.T) {
	b := newHist().ack(0, 0, tpA, 0, 1).ack(0, 1, tpA, 2, 2).ack(0, 2, tpA, 1, 3)
	b.final(tpA, Key{0, 0}, Key{0, 2}, Key{0, 1})
	b.ack(1, 0, tpB, 0, 1).final(tpB, Key{1, 0})
	b.h.End = t0.Add(4 * time.Second)
	mustOnly(t, Check(&b.h, CheckOptions{}), KindReordered, 1)
}

func TestCheckOrderIsPerProducer(t *testing.T) {
	// Two producers interleaved in one partition: each in its own order.
	b := newHist().ack(0, 5, tpA, 0, 1).ack(1, 0, tpA, 1, 1).ack(0, 6, tpA, 2, 1).ack(1, 1, tpA, 3, 1).ack(2, 0, tpB, 0, 1)
	b.final(tpA, Key{0, 5}, Key{1, 0}, Key{0, 6}, Key{1, 1}).final(tpB, Key{2, 0})
	b.h.End = t0.Add(2 * time.Second)
	if r := Check(&b.h, CheckOptions{}); !r.OK {
		t.Fatalf("interleaved producers flagged: %+v", r.Violations)
	}
}

func TestCheckOffsetConflictBetweenAckAndLog(t *testing.T) {
	// Both records are in the log, but the ack of seq 1 named offset 0,
	// which holds seq 0: two values for one offset.
	b := newHist().ack(0, 0, tpA, 0, 1).ack(0, 1, tpA, 0, 1).final(tpA, Key{0, 0}, Key{0, 1})
	b.ack(1, 0, tpB, 0, 1).final(tpB, Key{1, 0})
	b.h.End = t0.Add(2 * time.Second)
	mustOnly(t, Check(&b.h, CheckOptions{}), KindConflict, 1)
}

func TestCheckLiveReadChangedLater(t *testing.T) {
	// A consumer read a record that was later replaced at the same offset
	// (the truncated tail of an uncleanly replaced leader).
	b := healthy().send(2, 0, tpA, Unknown).live(tpA, 4, 10, EncodeValue(Key{2, 0}, 32))
	mustOnly(t, Check(&b.h, CheckOptions{}), KindConflict, 1)
}

func TestCheckLiveReadVanished(t *testing.T) {
	b := healthy().send(2, 0, tpA, Unknown).live(tpA, 10, 11, EncodeValue(Key{2, 0}, 32))
	mustOnly(t, Check(&b.h, CheckOptions{}), KindVanished, 1)
}

func TestCheckAboveHighWatermark(t *testing.T) {
	b := healthy().live(tpA, 5, 5, EncodeValue(Key{0, 5}, 32))
	mustOnly(t, Check(&b.h, CheckOptions{}), KindAboveHW, 1)
	b = healthy().live(tpA, 5, 6, EncodeValue(Key{0, 5}, 32))
	if r := Check(&b.h, CheckOptions{}); !r.OK {
		t.Fatalf("offset below the HW flagged: %+v", r.Violations)
	}
}

func TestCheckFailedVisible(t *testing.T) {
	b := healthy().send(0, 10, tpA, Failed).final(tpA, Key{0, 10})
	mustOnly(t, Check(&b.h, CheckOptions{}), KindFailedVisible, 1)
	b = healthy().send(0, 10, tpA, Failed)
	if r := Check(&b.h, CheckOptions{}); !r.OK {
		t.Fatalf("an absent failed send flagged: %+v", r.Violations)
	}
}

func TestCheckPhantoms(t *testing.T) {
	for name, b := range map[string]*hist{
		"never sent":      healthy().final(tpA, Key{9, 0}),
		"other partition": healthy().final(tpB, Key{0, 3}),
	} {
		t.Run(name, func(t *testing.T) { mustOnly(t, Check(&b.h, CheckOptions{}), KindPhantom, 1) })
	}
	t.Run("foreign bytes", func(t *testing.T) {
		b := healthy()
		b.h.Final = append(b.h.Final, Read{TP: tpA, Offset: 10, Value: []byte("garbage"), HW: 11})
		mustOnly(t, Check(&b.h, CheckOptions{}), KindPhantom, 1)
	})
}

func TestCheckNotWritableAfterHeal(t *testing.T) {
	b := healthy()
	b.h.Faults = []Fault{{Kind: "kill-leader", Start: t0, Healed: t0.Add(2 * time.Second)}}
	b.h.End = t0.Add(40 * time.Second)
	if r := Check(&b.h, CheckOptions{RecoveryBound: 5 * time.Second}); !r.OK {
		t.Fatalf("recovered partitions flagged: %+v", r.Violations)
	}
	// Healed at 9.2s: B acknowledges at 9.5s, A never again.
	b.h.Faults[0].Healed = t0.Add(9200 * time.Millisecond)
	r := Check(&b.h, CheckOptions{RecoveryBound: 5 * time.Second})
	mustOnly(t, r, KindNotWritable, 1)
	if v := r.Violations[0]; v.TP != tpA || !strings.Contains(v.Detail, "nothing acknowledged") {
		t.Errorf("violation %+v", v)
	}
	if r.Recovery[1].Took != 300*time.Millisecond {
		t.Errorf("recovery %+v", r.Recovery)
	}
	// B's first ack 0.3s after the heal breaks a 0.2s bound too.
	mustOnly(t, Check(&b.h, CheckOptions{RecoveryBound: 200 * time.Millisecond}), KindNotWritable, 2)
}

func TestCheckWindowsAndFaultCounts(t *testing.T) {
	b := newHist().ack(0, 0, tpA, 0, 0.5).ack(0, 1, tpA, 1, 6).ack(0, 2, tpB, 0, 0.5).ack(0, 3, tpB, 1, 9.5)
	b.final(tpA, Key{0, 0}, Key{0, 1}).final(tpB, Key{0, 2}, Key{0, 3})
	b.h.Faults = []Fault{
		{Kind: "kill-leader", Start: t0.Add(time.Second), Healed: t0.Add(2 * time.Second)},
		{Kind: "kill-leader", Start: t0.Add(3 * time.Second), Healed: t0.Add(4 * time.Second)},
		{Kind: "network-partition", Skipped: "not root"},
	}
	r := Check(&b.h, CheckOptions{GapThreshold: 3 * time.Second})
	if !r.OK {
		t.Fatalf("violations %+v", r.Violations)
	}
	if r.Faults["kill-leader"] != 2 || r.Skipped["network-partition"] != 1 || !r.LastHeal.Equal(t0.Add(4*time.Second)) {
		t.Errorf("faults %v skipped %v last heal %v", r.Faults, r.Skipped, r.LastHeal)
	}
	// A: 0.5→6 (5.5s) and 6→10 (4s); B: 0.5→9.5 (9s).
	if len(r.Windows) != 3 || r.Windows[0].Duration != 5500*time.Millisecond || r.Windows[2].TP != tpB {
		t.Errorf("windows %+v", r.Windows)
	}
}

func TestValueRoundTrip(t *testing.T) {
	for _, k := range []Key{{0, 0}, {12, 123456789}} {
		for _, size := range []int{0, 64} {
			v := EncodeValue(k, size)
			if size > 0 && len(v) != size {
				t.Errorf("len %d, want %d", len(v), size)
			}
			if got, ok := DecodeValue(v); !ok || got != k {
				t.Errorf("decode(%q) = %v %v", v, got, ok)
			}
		}
	}
	for _, v := range []string{"", "soak ", "soak 1", "soak 1 2", "soak 1 2 y", "soak -1 2 ", "soak a 2 ", "other 1 2 "} {
		if k, ok := DecodeValue([]byte(v)); ok {
			t.Errorf("decode(%q) = %v, want a phantom", v, k)
		}
	}
}

// A window is put down to the fault in progress during it, with the time it
// lasted after the heal; one that overlaps no fault says so.
func TestCheckWindowsNameTheirFaults(t *testing.T) {
	b := newHist()
	var ka, kb []Key
	for i, sec := range []float64{0, 1, 2, 8, 9} {
		b.ack(0, int64(i), tpA, int64(i), sec)
		ka = append(ka, Key{0, int64(i)})
	}
	for i, sec := range []float64{0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5} { // then nothing until the end
		b.ack(1, int64(i), tpB, int64(i), sec)
		kb = append(kb, Key{1, int64(i)})
	}
	b.final(tpA, ka...).final(tpB, kb...)
	b.h.Faults = []Fault{
		{Kind: FaultKillLeader, Target: "node 1 (leader of soak/0)", Start: t0.Add(3 * time.Second), Healed: t0.Add(5 * time.Second)},
	}
	r := Check(&b.h, CheckOptions{RecoveryBound: time.Minute})
	if len(r.Windows) != 2 {
		t.Fatalf("windows %+v, want 2", r.Windows)
	}
	a, bw := r.Windows[0], r.Windows[1]
	if a.TP != tpA || len(a.Faults) != 1 || a.Faults[0] != 0 || !strings.Contains(a.Cause, "#1 kill-leader node 1") || a.AfterHeal != 3*time.Second {
		t.Errorf("window on %s: %+v, want the leader kill, 3s after its heal", tpA, a)
	}
	if bw.TP != tpB || len(bw.Faults) != 0 || bw.Cause != "no fault" || bw.AfterHeal != bw.Duration {
		t.Errorf("window on %s: %+v, want no fault", tpB, bw)
	}
}

// Lost records are grouped by the fault that healed first after their
// acknowledgement, with their offsets and acknowledgement times.
func TestCheckLossesByFault(t *testing.T) {
	b := newHist()
	for i := range int64(6) {
		b.ack(0, i, tpA, i, float64(i))
	}
	b.ack(0, 6, tpA, 3, 8)                                   // written again after the power loss
	b.final(tpA, Key{0, 0}, Key{0, 1}, Key{0, 2}, Key{0, 6}) // 3, 4, 5 lost
	b.ack(1, 0, tpB, 0, 1).ack(1, 1, tpB, 1, 8).final(tpB, Key{1, 0}, Key{1, 1})
	b.h.Faults = []Fault{
		{Kind: FaultPause, Target: "node 2", Start: t0.Add(500 * time.Millisecond), Healed: t0.Add(2 * time.Second)},
		{Kind: FaultPowerLoss, Target: "nodes [1 2 3]", Start: t0.Add(6 * time.Second), Healed: t0.Add(7 * time.Second)},
		{Kind: FaultKillLeader, Skipped: "no leader", Start: t0.Add(2 * time.Second), Healed: t0.Add(2 * time.Second)},
	}
	r := Check(&b.h, CheckOptions{})
	if r.ByKind[KindLost] != 3 { // and offset 3 holds another record now
		t.Fatalf("lost %d, want 3: %+v", r.ByKind[KindLost], r.Violations)
	}
	if len(r.Losses) != 1 {
		t.Fatalf("losses %+v, want one group", r.Losses)
	}
	l := r.Losses[0]
	if l.Fault != 1 || l.Kind != FaultPowerLoss || l.TP != tpA || l.Records != 3 || l.FirstOffset != 3 || l.LastOffset != 5 ||
		!l.FirstAck.Equal(t0.Add(3*time.Second)) || !l.LastAck.Equal(t0.Add(5*time.Second)) {
		t.Errorf("loss %+v, want 3 records of %s, offsets 3–5, put down to the power loss", l, tpA)
	}
	var out strings.Builder
	PrintSummary(&out, r)
	if !strings.Contains(out.String(), "#2 power-loss") || !strings.Contains(out.String(), "3–5") {
		t.Errorf("summary does not show the loss by fault:\n%s", out.String())
	}
}

// A fault that did not show its effect fails the run; skipped faults and
// faults with their effect do not.
func TestCheckFaultWithoutEffect(t *testing.T) {
	b := healthy()
	b.h.Faults = []Fault{
		{Kind: FaultKillLeader, Start: t0, Healed: t0.Add(time.Second), Effect: "new leader of soak/0 node 2 after 1s"},
		{Kind: FaultPause, Start: t0, Healed: t0.Add(time.Second), Skipped: "no leader"},
	}
	if r := Check(&b.h, CheckOptions{RecoveryBound: 20 * time.Second}); !r.OK {
		t.Fatalf("faults with their effect flagged: %+v", r.Violations)
	}
	b.h.Faults = append(b.h.Faults, Fault{Kind: FaultPartition, Target: "node 1", Start: t0.Add(2 * time.Second),
		Healed: t0.Add(3 * time.Second), NoEffect: "its rules dropped no packet"})
	r := Check(&b.h, CheckOptions{RecoveryBound: 20 * time.Second})
	mustOnly(t, r, KindNoEffect, 1)
	if v := r.Violations[0]; !strings.Contains(v.Detail, "net-partition node 1") || !strings.Contains(v.Detail, "dropped no packet") {
		t.Errorf("violation %+v", v)
	}
	if r.Counts.NoEffect != 1 {
		t.Errorf("counts %+v", r.Counts)
	}
}
