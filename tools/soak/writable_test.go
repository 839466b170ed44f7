package soak

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestWritableAfterFaults: per fault, the time until every partition took
// a write sent after the fault's start (the slowest partition counts; a
// write sent before the start does not, however late its ack), and the
// percentiles per kind; a partition that never takes a write again is
// counted as never, not as a number.
func TestWritableAfterFaults(t *testing.T) {
	b := newHist()
	sec := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	send := func(tp TP, seq int64, sent, done float64) {
		b.h.Sends = append(b.h.Sends, Send{Key: Key{0, seq}, TP: tp, Outcome: Acked, Offset: seq, Sent: sec(sent), Done: sec(done)})
	}
	// Fault 1 (kill-leader at 1 s): A's write sent at 0.9 s is acked at
	// 2.5 s but was sent before; A's first write sent after is acked at
	// 1.6 s; B's at 1.2 s. Took 0.6 s.
	send(tpA, 0, 0.9, 2.5)
	send(tpA, 1, 1.1, 1.6)
	send(tpB, 2, 1.1, 1.2)
	// Fault 2 (kill-leader at 3 s): A at 3.2 s, B at 4 s. Took 1 s.
	send(tpA, 3, 3.1, 3.2)
	send(tpB, 4, 3.5, 4.0)
	// Fault 3 (pause at 5 s): B takes nothing after it.
	send(tpA, 5, 5.5, 5.6)
	b.h.Faults = []Fault{
		{Kind: "kill-leader", Start: sec(1), Healed: sec(2)},
		{Kind: "kill-leader", Start: sec(3), Healed: sec(3.5)},
		{Kind: "pause", Start: sec(5), Healed: sec(6)},
		{Kind: "network-partition", Skipped: "not root"},
	}
	fws := writableAfterFaults(&b.h, []TP{tpA, tpB})
	if len(fws) != 3 || fws[0].Took != 600*time.Millisecond || fws[0].Slowest != tpA ||
		fws[1].Took != time.Second || fws[1].Slowest != tpB || fws[2].Took != -1 || fws[2].Slowest != tpB {
		t.Fatalf("per fault: %+v", fws)
	}
	st := writableStats(fws)
	if len(st) != 2 || st[0].Kind != "kill-leader" || st[0].N != 2 || st[0].P50 != 600*time.Millisecond || st[0].Max != time.Second ||
		st[1].Kind != "pause" || st[1].N != 0 || st[1].Never != 1 {
		t.Fatalf("stats: %+v", st)
	}
	var out bytes.Buffer
	printWritable(&out, &Report{Writable: st})
	if !strings.Contains(out.String(), "kill-leader") || !strings.Contains(out.String(), "600ms") {
		t.Errorf("printed:\n%s", out.String())
	}
}
