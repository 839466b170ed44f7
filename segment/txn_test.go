package segment

import (
	"fmt"
	"strings"

	"github.com/cockroachdb/datadriven"
)

// txn runs the datadriven commands of transactions (see TestScripts).
func (s *script) txn(d *datadriven.TestData) (string, error) {
	switch d.Cmd {
	case "marker":
		m := Marker{ProducerID: s.arg(d, "pid", 0), ProducerEpoch: int16(s.arg(d, "pepoch", 0)),
			Commit: !d.HasArg("abort"), CoordinatorEpoch: int32(s.arg(d, "coord", 0)), Timestamp: s.arg(d, "ts", 0)}
		off, err := s.l.AppendMarker(m, int32(s.arg(d, "epoch", 0)))
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("offset %d\n", off), nil
	case "lso":
		var b strings.Builder
		for _, a := range d.CmdArgs {
			var hw int64
			if _, err := fmt.Sscan(a.Vals[0], &hw); err != nil || a.Key != "hw" {
				return "", fmt.Errorf("lso hw=N ...: %v", a)
			}
			fmt.Fprintf(&b, "hw=%d lso=%d\n", hw, s.l.LastStableOffset(hw))
		}
		return b.String(), nil
	default: // txns
		return txnState(s.l, s.arg(d, "from", 0), s.arg(d, "to", s.l.LogEndOffset())), nil
	}
}

// txnState prints what a log says of its transactions: the first unstable
// offset, the open transactions, and AbortedTxns(from, to).
func txnState(l *Log, from, to int64) string {
	var b strings.Builder
	if fu, ok := l.FirstUnstableOffset(); ok {
		fmt.Fprintf(&b, "first-unstable=%d\n", fu)
	} else {
		b.WriteString("first-unstable=none\n")
	}
	b.WriteString("open:")
	for _, p := range l.Producers(nil) {
		if p.CurrentTxnStartOffset >= 0 {
			fmt.Fprintf(&b, " %d@%d", p.ProducerID, p.CurrentTxnStartOffset)
		}
	}
	fmt.Fprintf(&b, "\naborted [%d,%d):", from, to)
	for _, a := range l.AbortedTxns(from, to, nil) {
		fmt.Fprintf(&b, " %d@%d..%d", a.ProducerID, a.FirstOffset, a.LastOffset)
	}
	b.WriteString("\n")
	return b.String()
}
