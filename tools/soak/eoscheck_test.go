package soak

import "testing"

// ehist builds crafted exactly-once histories over the healthy soak topic
// (the input: producer 0's records 0–9 on tpA, producer 1's on tpB). Input
// partition p goes to output partition p; each transaction's records take
// the next output offsets, and its marker one more.
type ehist struct {
	*hist
	e    *EOSHistory
	next map[int32]int64 // next output offset per partition
}

var (
	outA = TP{"out", 0}
	outB = TP{"out", 1}
)

// eosBase: the input, no transaction yet, the group's committed offsets 10
// and 10, LSO = HW on both output partitions.
func eosBase() *ehist {
	b := &ehist{hist: healthy(), next: map[int32]int64{}}
	b.e = &EOSHistory{Input: "soak", Output: "out", Group: "eos", Partitions: []TP{tpA, tpB}, Members: 2, Start: t0,
		Committed: map[TP]int64{tpA: 10, tpB: 10}, FinalLSO: map[TP]int64{}, FinalHW: map[TP]int64{}}
	b.h.EOS = b.e
	return b
}

// in is input records [from, to) of tp.
func in(tp TP, from, to int64) []eosInKey {
	var ks []eosInKey
	for o := from; o < to; o++ {
		ks = append(ks, eosInKey{tp, o})
	}
	return ks
}

// txn records a transaction of member m producing the outputs of ins
// between seconds begin and end; visible says whether read_committed
// returns them at the end.
func (b *ehist) txn(m string, seq int, o TxnOutcome, visible bool, begin, end float64, ins ...[]eosInKey) *ehist {
	t := EOSTxn{Member: m, TxnID: "soak-eos-" + m, Seq: seq, Outcome: o, Begin: sec(begin), End: sec(end)}
	touched := map[int32]bool{}
	for _, ks := range ins {
		for _, k := range ks {
			key := Key{int(k.tp.Partition), k.off} // healthy(): producer p writes partition p
			out := TP{"out", k.tp.Partition}
			off := b.next[out.Partition]
			b.next[out.Partition]++
			touched[out.Partition] = true
			t.Records = append(t.Records, EOSOut{In: k.tp, Offset: k.off, Key: key, Out: out, OutOff: off})
			if visible {
				b.e.Final = append(b.e.Final, Read{TP: out, Offset: off, HW: -1, At: sec(end),
					Value: EncodeEOS(EOSRef{InPartition: k.tp.Partition, InOffset: k.off, InKey: key, Member: m, Txn: seq})})
			}
		}
	}
	for p := range touched {
		b.next[p]++ // the marker
	}
	b.e.Txns = append(b.e.Txns, t)
	return b
}

// healthyEOS: m1 commits A0–4 and B0–4, aborts A5–9 (a rebalance), m2
// commits A5–9 and B5–9.
func healthyEOS() *ehist {
	return eosBase().
		txn("m1", 1, TxnCommitted, true, 1, 1.1, in(tpA, 0, 5), in(tpB, 0, 5)).
		txn("m1", 2, TxnAborted, false, 2, 2.1, in(tpA, 5, 10)).
		txn("m2", 1, TxnCommitted, true, 3, 3.1, in(tpA, 5, 10), in(tpB, 5, 10))
}

func TestEOSHealthyHistoryPasses(t *testing.T) {
	r := Check(&healthyEOS().h, CheckOptions{})
	mustPass(t, r)
	e := r.EOS
	if e == nil || e.Txns != 3 || e.Committed != 2 || e.Aborted != 1 || e.Output != 20 || e.Covered != 20 || e.AbortedChecked != 5 || e.Produced != 25 || e.Lag != 0 {
		t.Errorf("counts %+v", e)
	}
}

// The negative control's shape: m1 commits A0–4 and crashes before the
// offsets; m2 starts again from A0.
func TestEOSDuplicate(t *testing.T) {
	b := eosBase().
		txn("m1", 1, TxnCommitted, true, 1, 1.1, in(tpA, 0, 5), in(tpB, 0, 10)).
		txn("m2", 1, TxnCommitted, true, 3, 3.1, in(tpA, 0, 10))
	r := Check(&b.h, CheckOptions{})
	if r.ByKind[KindTxnDuplicate] != 5 || r.ByKind[KindTxnReordered] != 1 {
		t.Errorf("by kind %v, want 5 duplicates and 1 reordering: %+v", r.ByKind, r.Violations)
	}
	mustSay(t, r, KindTxnDuplicate, "m1's transaction 1, committed) and out/0 offset 6 (m2's transaction 1, committed)")

	// A record twice in a row: a duplicate, in order.
	b = eosBase().
		txn("m1", 1, TxnCommitted, true, 1, 1.1, in(tpA, 0, 5), in(tpB, 0, 10)).
		txn("m2", 1, TxnCommitted, true, 3, 3.1, in(tpA, 4, 10))
	mustOnly(t, Check(&b.h, CheckOptions{}), KindTxnDuplicate, 1)
}

func TestEOSAbortedVisible(t *testing.T) {
	b := eosBase().
		txn("m1", 1, TxnCommitted, true, 1, 1.1, in(tpA, 0, 5), in(tpB, 0, 5)).
		txn("m1", 2, TxnAborted, true, 2, 2.1, in(tpA, 5, 10)).
		txn("m2", 1, TxnCommitted, true, 3, 3.1, in(tpB, 5, 10))
	r := Check(&b.h, CheckOptions{})
	mustOnly(t, r, KindTxnAbortedVisible, 5)
	mustSay(t, r, KindTxnAbortedVisible, "m1's transaction 2")
}

func TestEOSMissing(t *testing.T) {
	// A committed transaction's record is gone from the output.
	b := healthyEOS()
	b.e.Final = b.e.Final[1:] // A0
	r := Check(&b.h, CheckOptions{})
	mustOnly(t, r, KindTxnMissing, 1)
	mustSay(t, r, KindTxnMissing, "m1's transaction 1 (soak-eos-m1) committed")

	// Input below the committed offset that no transaction produced.
	b = eosBase().
		txn("m1", 1, TxnCommitted, true, 1, 1.1, in(tpA, 0, 5), in(tpB, 0, 10))
	r = Check(&b.h, CheckOptions{})
	mustOnly(t, r, KindTxnMissing, 5)
	mustSay(t, r, KindTxnMissing, "below group eos's committed offset 10 but not in the output")
}

func TestEOSOffsetsMismatch(t *testing.T) {
	b := healthyEOS()
	b.e.Committed[tpA] = 5 // the output holds A5–9 too
	r := Check(&b.h, CheckOptions{})
	mustOnly(t, r, KindTxnOffsets, 1)
	mustSay(t, r, KindTxnOffsets, "committed offset is 5, but the output holds 5 input record(s) at or above it")

	b = healthyEOS()
	b.e.CommittedErr = "UNSTABLE_OFFSET_COMMIT"
	mustOnly(t, Check(&b.h, CheckOptions{}), KindTxnOffsets, 1)
}

func TestEOSPhantom(t *testing.T) {
	b := healthyEOS()
	b.e.Final = append(b.e.Final,
		Read{TP: outA, Offset: 100, Value: []byte("not ours")},
		Read{TP: outA, Offset: 101, Value: EncodeEOS(EOSRef{InPartition: 0, InOffset: 9, InKey: Key{0, 9}, Member: "m9", Txn: 1})})
	r := Check(&b.h, CheckOptions{})
	mustOnly(t, r, KindTxnPhantom, 2)
	mustSay(t, r, KindTxnPhantom, "m9's transaction 1 never produced")

	// The input offset holds another record than the one transformed.
	b = eosBase().txn("m1", 1, TxnCommitted, true, 1, 1.1, in(tpA, 0, 10), in(tpB, 0, 10))
	b.e.Txns[0].Records[3].Key = Key{7, 7}
	b.e.Final[3].Value = EncodeEOS(EOSRef{InPartition: 0, InOffset: 3, InKey: Key{7, 7}, Member: "m1", Txn: 1})
	r = Check(&b.h, CheckOptions{})
	mustOnly(t, r, KindTxnPhantom, 1)
	mustSay(t, r, KindTxnPhantom, "where the input holds p0#3")
}

func TestEOSReordered(t *testing.T) {
	b := healthyEOS()
	b.e.Final[0].Offset, b.e.Final[1].Offset = 1, 0 // A1 before A0
	r := Check(&b.h, CheckOptions{})
	mustOnly(t, r, KindTxnReordered, 1)
}

func TestEOSStuck(t *testing.T) {
	b := healthyEOS()
	b.e.Stuck = []string{"out/0: last stable offset 6, high watermark 17 after 60s"}
	mustOnly(t, Check(&b.h, CheckOptions{}), KindTxnStuck, 1)
	b = healthyEOS()
	b.e.FinalErr = "no progress"
	mustOnly(t, Check(&b.h, CheckOptions{}), KindTxnStuck, 1)
}

// An unknown-outcome transaction may have committed or aborted: either is
// fine, as long as the committed offsets agree.
func TestEOSUnknownOutcome(t *testing.T) {
	b := eosBase().
		txn("m1", 1, TxnCommitted, true, 1, 1.1, in(tpA, 0, 5), in(tpB, 0, 5)).
		txn("m1", 2, TxnUnknown, true, 2, 2.1, in(tpA, 5, 10), in(tpB, 5, 10))
	mustPass(t, Check(&b.h, CheckOptions{}))
	b = eosBase().
		txn("m1", 1, TxnCommitted, true, 1, 1.1, in(tpA, 0, 5), in(tpB, 0, 5)).
		txn("m1", 2, TxnUnknown, false, 2, 2.1, in(tpA, 5, 10), in(tpB, 5, 10))
	b.e.Committed = map[TP]int64{tpA: 5, tpB: 5}
	mustPass(t, Check(&b.h, CheckOptions{}))
}

// With page-cache durability a power loss may take a committed
// transaction back: explained, not a violation; with sync it is one.
func TestEOSPowerLoss(t *testing.T) {
	b := healthyEOS()
	b.e.Final = b.e.Final[1:]
	b.h.Faults = append(b.h.Faults, Fault{Kind: FaultPowerLoss, Start: sec(5), Healed: sec(6), Effect: "dropped", BytesDropped: 1})
	r := Check(&b.h, CheckOptions{PageCache: true})
	mustPass(t, r)
	if r.EOS.Explained == 0 {
		t.Errorf("explained %d, want some", r.EOS.Explained)
	}
	mustOnly(t, Check(&b.h, CheckOptions{}), KindTxnMissing, 1)

	// The input cut back and rewritten: a later transaction transforms
	// a reused input offset again, out of order after an earlier one;
	// the offsets pending forever (UNSTABLE_OFFSET_COMMIT).
	b = healthyEOS().txn("m3", 1, TxnCommitted, true, 8, 8.1, in(tpA, 2, 3))
	b.e.CommittedErr = "soak/0: UNSTABLE_OFFSET_COMMIT"
	b.h.Faults = append(b.h.Faults, Fault{Kind: FaultPowerLoss, Start: sec(5), Healed: sec(6), Effect: "dropped", BytesDropped: 1})
	mustPass(t, Check(&b.h, CheckOptions{PageCache: true}))
	r = Check(&b.h, CheckOptions{})
	if r.ByKind[KindTxnReordered] != 1 || r.ByKind[KindTxnDuplicate] != 1 || r.ByKind[KindTxnOffsets] != 1 {
		t.Errorf("sync durability: by kind %v, want a reordering, a duplicate and the offsets unread", r.ByKind)
	}
}

func TestEOSValueRoundTrip(t *testing.T) {
	r := EOSRef{InPartition: 3, InOffset: 12345, InKey: Key{2, 99}, Member: "eos/m4", Txn: 17}
	got, ok := DecodeEOS(EncodeEOS(r))
	if !ok || got != r {
		t.Fatalf("DecodeEOS(EncodeEOS(%+v)) = %+v, %v", r, got, ok)
	}
	for _, v := range []string{"", "eos ", "eos 1 2 3 4 m", "eos 1 2 3 4 m x", "eos -1 2 3 4 m 1", "eos 1 2 3 4  1", "soak 1 2 x"} {
		if _, ok := DecodeEOS([]byte(v)); ok {
			t.Errorf("DecodeEOS(%q) accepted it", v)
		}
	}
}
