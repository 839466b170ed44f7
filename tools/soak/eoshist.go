package soak

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The exactly-once pipeline's history (eos.go builds it, eoscheck.go
// judges it). Every record the pipeline produces names the input record
// it came from and the transaction it was produced in, so that the final
// read of the output (read_committed) can be matched against both.

// eosPrefix starts every value the pipeline writes to its output topic.
const eosPrefix = "eos "

// EOSRef is what an output record names: the input record (partition,
// offset, and the workload key its value carried) and the transaction
// (the pipeline member's name and its transaction number) it was
// produced in.
type EOSRef struct {
	InPartition int32  `json:"in_partition"`
	InOffset    int64  `json:"in_offset"`
	InKey       Key    `json:"in_key"`
	Member      string `json:"member"`
	Txn         int    `json:"txn"`
}

// EncodeEOS is the output value of r: "eos <in partition> <in offset>
// <producer> <seq> <member> <txn>".
func EncodeEOS(r EOSRef) []byte {
	return fmt.Appendf(nil, "%s%d %d %d %d %s %d", eosPrefix, r.InPartition, r.InOffset, r.InKey.Producer, r.InKey.Seq, r.Member, r.Txn)
}

// DecodeEOS reads an output value back; ok is false for a value the
// pipeline did not write.
func DecodeEOS(v []byte) (r EOSRef, ok bool) {
	s, found := strings.CutPrefix(string(v), eosPrefix)
	if !found {
		return r, false
	}
	f := strings.Split(s, " ")
	if len(f) != 6 || f[4] == "" {
		return r, false
	}
	p, e1 := strconv.ParseInt(f[0], 10, 32)
	off, e2 := strconv.ParseInt(f[1], 10, 64)
	prod, e3 := strconv.Atoi(f[2])
	seq, e4 := strconv.ParseInt(f[3], 10, 64)
	txn, e5 := strconv.Atoi(f[5])
	if e1 != nil || e2 != nil || e3 != nil || e4 != nil || e5 != nil || p < 0 || off < 0 || prod < 0 || seq < 0 || txn < 0 {
		return EOSRef{}, false
	}
	return EOSRef{InPartition: int32(p), InOffset: off, InKey: Key{prod, seq}, Member: f[4], Txn: txn}, true
}

// TxnOutcome is what the pipeline learnt about one transaction.
type TxnOutcome uint8

const (
	// TxnUnknown: ending it failed (a timeout, a lost coordinator): it
	// may have committed or aborted.
	TxnUnknown TxnOutcome = iota
	// TxnCommitted: EndTxn committed it (kgo's End returned committed).
	TxnCommitted
	// TxnAborted: it was aborted (End aborted it without an error: a
	// rebalance, a failed offset commit, a produce error), so nothing of
	// it may be visible to read_committed.
	TxnAborted
)

func (o TxnOutcome) String() string {
	switch o {
	case TxnCommitted:
		return "committed"
	case TxnAborted:
		return "aborted"
	default:
		return "unknown"
	}
}

// MarshalText writes the outcome by name in the JSON report.
func (o TxnOutcome) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// EOSTxn is one transaction of a pipeline member: the records it
// produced (in produce order) and how it ended.
type EOSTxn struct {
	Member string `json:"member"`
	// TxnID is the member's transactional.id.
	TxnID   string     `json:"transactional_id"`
	Seq     int        `json:"txn"`
	Records []EOSOut   `json:"-"`
	Outcome TxnOutcome `json:"outcome"`
	Err     string     `json:"err,omitempty"`
	Begin   time.Time  `json:"begin"`
	End     time.Time  `json:"end"`
	// Crashed: the negative control's member committed the produce
	// transaction and left before it committed the input offsets.
	Crashed bool `json:"crashed,omitempty"`
}

// EOSOut is one record a transaction produced: its input record and,
// once the produce was acknowledged, its output offset (-1 otherwise).
type EOSOut struct {
	In     TP
	Offset int64 // input offset
	Key    Key   // the input value's workload key
	Out    TP
	OutOff int64
}

// EOSHistory is what the exactly-once pipeline observed.
type EOSHistory struct {
	Input  string `json:"input"`
	Output string `json:"output"`
	Group  string `json:"group"`
	// Partitions are the input partitions; input partition p is
	// transformed into output partition p.
	Partitions []TP      `json:"partitions"`
	Txns       []EOSTxn  `json:"-"`
	Members    int       `json:"members"` // incarnations
	Start      time.Time `json:"start"`
	// Final is the output read with read_committed from its start up to
	// FinalLSO, once every partition's LSO reached its high watermark
	// (FinalHW) or the bound passed; Stuck names the partitions whose LSO
	// did not, FinalErr why the output could not be read completely.
	Final    []Read       `json:"-"`
	FinalLSO map[TP]int64 `json:"-"`
	FinalHW  map[TP]int64 `json:"-"`
	Stuck    []string     `json:"lso_stuck,omitempty"`
	FinalErr string       `json:"final_err,omitempty"`
	// Committed is the group's committed offsets of the input partitions
	// at the end (read with require_stable after every member left; -1:
	// none); CommittedErr why they could not be read.
	Committed    map[TP]int64 `json:"-"`
	CommittedErr string       `json:"committed_err,omitempty"`
	// Control: the negative control ran (its members commit the produce
	// and the offsets in separate steps and sometimes crash between).
	Control bool `json:"control,omitempty"`
}

// EOSCounts are the exactly-once pipeline's numbers.
type EOSCounts struct {
	Members   int `json:"members"`
	Txns      int `json:"transactions"`
	Committed int `json:"committed"`
	Aborted   int `json:"aborted"`
	Unknown   int `json:"unknown"`
	Crashed   int `json:"control_crashes,omitempty"`
	// Produced: records the pipeline produced (in any transaction);
	// Output the records read back with read_committed; Covered the
	// input records below the group's committed offsets (each must be in
	// the output exactly once).
	Produced int `json:"produced"`
	Output   int `json:"output_read"`
	Covered  int `json:"input_covered"`
	// AbortedChecked: records of aborted transactions checked invisible.
	AbortedChecked int `json:"aborted_records_checked"`
	// Lag: input high watermarks minus the final committed offsets.
	Lag int64 `json:"final_lag"`
	// TxnTime: committed transactions, from Begin to the end of EndTxn.
	TxnTime   Percentiles `json:"txn_time"`
	Explained int         `json:"explained"` // losses a power loss explains
}
