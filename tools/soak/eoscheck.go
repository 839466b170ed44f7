package soak

import (
	"fmt"
	"slices"
	"sort"
	"time"
)

// The exactly-once invariants, over the pipeline's history (see doc.go,
// "The exactly-once pipeline"). The input is the soak topic as the final
// read found it; the output is what read_committed returned at the end.
const (
	// KindTxnDuplicate: one input record is in the committed output more
	// than once.
	KindTxnDuplicate = "txn-duplicate"
	// KindTxnMissing: an input record below the group's final committed
	// offset of its partition is not in the output, or a record of a
	// committed transaction is not.
	KindTxnMissing = "txn-missing"
	// KindTxnAbortedVisible: a record of a transaction the pipeline
	// aborted is visible to read_committed.
	KindTxnAbortedVisible = "txn-aborted-visible"
	// KindTxnReordered: one input partition's records are in the output
	// out of input order.
	KindTxnReordered = "txn-reordered"
	// KindTxnOffsets: the group's committed offsets and the output
	// disagree: the output holds an input record at or above the
	// committed offset of its partition, or the offsets could not be
	// read.
	KindTxnOffsets = "txn-offsets-mismatch"
	// KindTxnPhantom: an output record the pipeline did not produce in
	// that transaction, or one naming an input record that is not at
	// that input offset.
	KindTxnPhantom = "txn-phantom"
	// KindTxnStuck: an output partition's last stable offset stayed
	// below its high watermark at the end (a transaction never
	// completed), or the output could not be read up to it.
	KindTxnStuck = "txn-lso-stuck"
)

// eosTxnKey names one transaction of one member.
type eosTxnKey struct {
	member string
	seq    int
}

// eosInKey names one input record.
type eosInKey struct {
	tp  TP
	off int64
}

// eosSeen is one output record in the final read, with its transaction.
type eosSeen struct {
	out TP
	off int64
	txn *EOSTxn
}

// eos checks the exactly-once pipeline's history.
func (c *checker) eos(h *History) {
	eh := h.EOS
	if eh == nil {
		return
	}
	ec := &EOSCounts{Members: eh.Members}
	c.r.EOS = ec
	end := h.End
	if !eh.Start.IsZero() && end.IsZero() {
		end = eh.Start
	}
	// explained: with page-cache durability a power loss after t may
	// have taken back a committed transaction's markers or offsets.
	explained := func(t time.Time) bool {
		if c.groupPowerLoss(t, end.Add(time.Hour)) {
			ec.Explained++
			return true
		}
		return false
	}

	// The input as the final read of the soak topic found it.
	inputs := map[TP]bool{}
	for _, tp := range eh.Partitions {
		inputs[tp] = true
	}
	inLog := map[eosInKey]Key{}
	inOffs := map[TP][]int64{}
	for _, rd := range h.Final {
		if !inputs[rd.TP] {
			continue
		}
		if k, ok := DecodeValue(rd.Value); ok {
			if _, dup := inLog[eosInKey{rd.TP, rd.Offset}]; !dup {
				inLog[eosInKey{rd.TP, rd.Offset}] = k
				inOffs[rd.TP] = append(inOffs[rd.TP], rd.Offset)
			}
		}
	}

	txns := map[eosTxnKey]*EOSTxn{}
	produced := map[eosTxnKey]map[eosInKey]bool{}
	var lat []time.Duration
	for i := range eh.Txns {
		t := &eh.Txns[i]
		k := eosTxnKey{t.Member, t.Seq}
		txns[k] = t
		ps := map[eosInKey]bool{}
		for _, r := range t.Records {
			ps[eosInKey{r.In, r.Offset}] = true
		}
		produced[k] = ps
		ec.Txns++
		ec.Produced += len(t.Records)
		switch t.Outcome {
		case TxnCommitted:
			ec.Committed++
			lat = append(lat, t.End.Sub(t.Begin))
		case TxnAborted:
			ec.Aborted++
			ec.AbortedChecked += len(t.Records)
		default:
			ec.Unknown++
		}
		if t.Crashed {
			ec.Crashed++
		}
	}
	ec.TxnTime = percentiles(lat)

	// The output, partition by partition in offset order.
	byTP := map[TP][]Read{}
	for _, rd := range eh.Final {
		byTP[rd.TP] = append(byTP[rd.TP], rd)
	}
	seen := map[eosInKey][]eosSeen{}
	inOutput := map[eosTxnKey]map[eosInKey]bool{}
	for _, out := range sortedTPs(byTP) {
		reads := byTP[out]
		sort.SliceStable(reads, func(i, j int) bool { return reads[i].Offset < reads[j].Offset })
		last := map[TP]eosSeen{} // per input partition, the last output record of it
		lastIn := map[TP]int64{} // and its input offset
		prevOff := int64(-1)
		for _, rd := range reads {
			if rd.Offset == prevOff {
				continue // read twice
			}
			prevOff = rd.Offset
			ec.Output++
			ref, ok := DecodeEOS(rd.Value)
			if !ok {
				c.add(Violation{Kind: KindTxnPhantom, TP: out, Offset: rd.Offset, Detail: fmt.Sprintf("output value %q was not written by the pipeline", abbrev(rd.Value))})
				continue
			}
			tk := eosTxnKey{ref.Member, ref.Txn}
			in := eosInKey{TP{eh.Input, ref.InPartition}, ref.InOffset}
			t := txns[tk]
			if t == nil || !produced[tk][in] {
				c.add(Violation{Kind: KindTxnPhantom, TP: out, Offset: rd.Offset,
					Detail: fmt.Sprintf("%s's transaction %d never produced the output of %s offset %d", ref.Member, ref.Txn, in.tp, in.off)})
				continue
			}
			if inOutput[tk] == nil {
				inOutput[tk] = map[eosInKey]bool{}
			}
			inOutput[tk][in] = true
			if k, ok := inLog[in]; !ok || k != ref.InKey {
				what := "nothing"
				if ok {
					what = k.String()
				}
				if !explained(t.Begin) {
					c.add(Violation{Kind: KindTxnPhantom, TP: out, Offset: rd.Offset, Key: &ref.InKey,
						Detail: fmt.Sprintf("output of %s offset %d (%s, %s's transaction %d), where the input holds %s", in.tp, in.off, ref.InKey, ref.Member, ref.Txn, what)})
				}
			}
			if t.Outcome == TxnAborted && !explained(t.Begin) {
				c.add(Violation{Kind: KindTxnAbortedVisible, TP: out, Offset: rd.Offset, Key: &ref.InKey,
					Detail: fmt.Sprintf("%s's transaction %d (%s) was aborted at %s (%s), yet its output of %s offset %d is visible", ref.Member, ref.Txn, t.TxnID, c.at(t.End), t.Err, in.tp, in.off)})
			}
			s := eosSeen{out: out, off: rd.Offset, txn: t}
			if prev := seen[in]; len(prev) > 0 && !explained(prev[0].txn.Begin) {
				p := prev[0]
				c.add(Violation{Kind: KindTxnDuplicate, TP: in.tp, Offset: in.off, Key: &ref.InKey,
					Detail: fmt.Sprintf("in the output at %s offset %d (%s's transaction %d, %s) and %s offset %d (%s's transaction %d, %s)",
						p.out, p.off, p.txn.Member, p.txn.Seq, p.txn.Outcome, out, rd.Offset, t.Member, t.Seq, t.Outcome)})
			}
			seen[in] = append(seen[in], s)
			if l, ok := lastIn[in.tp]; ok && in.off < l && !explained(last[in.tp].txn.Begin) {
				// (Explained from the earlier transaction on: a power
				// loss after it may have cut the input and reused its
				// offsets.)
				p := last[in.tp]
				c.add(Violation{Kind: KindTxnReordered, TP: in.tp, Offset: in.off, Key: &ref.InKey,
					Detail: fmt.Sprintf("output %s offset %d (%s's transaction %d) holds input offset %d after output offset %d held input offset %d (%s's transaction %d)",
						out, rd.Offset, t.Member, t.Seq, in.off, p.off, l, p.txn.Member, p.txn.Seq)})
			}
			lastIn[in.tp], last[in.tp] = in.off, s
		}
	}

	// Every record of a committed transaction is visible.
	missing := map[eosInKey]bool{}
	for i := range eh.Txns {
		t := &eh.Txns[i]
		if t.Outcome != TxnCommitted {
			continue
		}
		k := eosTxnKey{t.Member, t.Seq}
		for _, r := range t.Records {
			in := eosInKey{r.In, r.Offset}
			if inOutput[k][in] || missing[in] || explained(t.Begin) {
				continue
			}
			missing[in] = true
			c.add(Violation{Kind: KindTxnMissing, TP: r.In, Offset: r.Offset, Key: &r.Key,
				Detail: fmt.Sprintf("%s's transaction %d (%s) committed at %s, but its output of %s offset %d (at %s offset %d) is not in the output", t.Member, t.Seq, t.TxnID, c.at(t.End), r.In, r.Offset, r.Out, r.OutOff)})
		}
	}

	// The LSO at the end, and the read of the output up to it. A power
	// loss (page-cache) may have taken a transaction's coordinator state,
	// so that no one ends it: explained.
	for _, s := range eh.Stuck {
		if !explained(eh.Start) {
			c.add(Violation{Kind: KindTxnStuck, Offset: -1, Detail: s})
		}
	}
	if eh.FinalErr != "" && !explained(eh.Start) {
		c.add(Violation{Kind: KindTxnStuck, Offset: -1, Detail: "the output could not be read with read_committed up to its last stable offsets: " + eh.FinalErr})
	}

	// The group's committed offsets against the output.
	if eh.CommittedErr != "" {
		if explained(eh.Start) {
			return // e.g. a pending transactional offset whose transaction a power loss took
		}
		c.add(Violation{Kind: KindTxnOffsets, Offset: -1, Detail: fmt.Sprintf("group %s: the final committed offsets could not be read: %s", eh.Group, eh.CommittedErr)})
		return
	}
	for _, tp := range eh.Partitions {
		committed, ok := eh.Committed[tp]
		if !ok {
			committed = -1
		}
		if hw, ok := h.FinalHW[tp]; ok {
			ec.Lag += hw - max(committed, 0)
		}
		for _, off := range inOffs[tp] {
			if off >= committed {
				continue
			}
			ec.Covered++
			in := eosInKey{tp, off}
			if len(seen[in]) > 0 || missing[in] {
				continue
			}
			k := inLog[in]
			if explained(eh.Start) {
				continue
			}
			c.add(Violation{Kind: KindTxnMissing, TP: tp, Offset: off, Key: &k,
				Detail: fmt.Sprintf("%s (input offset %d) is below group %s's committed offset %d but not in the output", k, off, eh.Group, committed)})
		}
		var beyond []int64
		for in, ss := range seen {
			if in.tp == tp && in.off >= max(committed, 0) && len(ss) > 0 {
				beyond = append(beyond, in.off)
			}
		}
		if len(beyond) > 0 && !explained(eh.Start) {
			slices.Sort(beyond)
			c.add(Violation{Kind: KindTxnOffsets, TP: tp, Offset: beyond[0],
				Detail: fmt.Sprintf("group %s's committed offset is %d, but the output holds %d input record(s) at or above it (offsets %d…%d)", eh.Group, committed, len(beyond), beyond[0], beyond[len(beyond)-1])})
		}
	}
}
