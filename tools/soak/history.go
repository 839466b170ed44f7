package soak

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Outcome is what a producer learnt about one send.
type Outcome uint8

const (
	// Unknown: the send may or may not have been written (a timeout, a
	// lost connection, a retriable error at the delivery deadline, the
	// client closed with the record in flight).
	Unknown Outcome = iota
	// Acked: the broker acknowledged the record at an offset.
	Acked
	// Failed: the broker definitely did not write the record (see
	// classify: only rejections that happen before any append count).
	Failed
)

func (o Outcome) String() string {
	switch o {
	case Acked:
		return "acked"
	case Failed:
		return "failed"
	default:
		return "unknown"
	}
}

// MarshalText writes the outcome by name in the JSON report.
func (o Outcome) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// TP names one partition of one topic.
type TP struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

func (tp TP) String() string { return fmt.Sprintf("%s/%d", tp.Topic, tp.Partition) }

// Key identifies one record the workload sent: the workload's producer
// number (not the Kafka producer id, which changes when a client resets)
// and that producer's sequence number, which grows by one per send across
// all partitions.
type Key struct {
	Producer int   `json:"producer"`
	Seq      int64 `json:"seq"`
}

func (k Key) String() string { return fmt.Sprintf("p%d#%d", k.Producer, k.Seq) }

// valuePrefix starts every value the workload writes.
const valuePrefix = "soak "

// EncodeValue is the record value for k: "soak <producer> <seq> " followed
// by pad bytes 'x' up to size (never shorter than the header).
func EncodeValue(k Key, size int) []byte {
	v := fmt.Appendf(nil, "%s%d %d ", valuePrefix, k.Producer, k.Seq)
	for len(v) < size {
		v = append(v, 'x')
	}
	return v
}

// DecodeValue reads the key back from a value; ok is false for a value the
// workload did not write (a phantom).
func DecodeValue(v []byte) (k Key, ok bool) {
	s, found := strings.CutPrefix(string(v), valuePrefix)
	if !found {
		return Key{}, false
	}
	f := strings.SplitN(s, " ", 3)
	if len(f) < 3 || strings.Trim(f[2], "x") != "" {
		return Key{}, false
	}
	p, err1 := strconv.Atoi(f[0])
	q, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil || p < 0 || q < 0 {
		return Key{}, false
	}
	return Key{Producer: p, Seq: q}, true
}

// Send is one record the workload produced and what became of it.
type Send struct {
	Key     Key       `json:"key"`
	TP      TP        `json:"tp"`
	Outcome Outcome   `json:"outcome"`
	Offset  int64     `json:"offset"` // when Acked
	Err     string    `json:"err,omitempty"`
	Sent    time.Time `json:"sent"`
	Done    time.Time `json:"done"`
	// RecordKey and Tombstone: a send to the compacted topic (compact.go)
	// has a record key; a tombstone has a null value.
	RecordKey string `json:"record_key,omitempty"`
	Tombstone bool   `json:"tombstone,omitempty"`
}

// Read is one record seen by a consumer: during the run (with the high
// watermark of the fetch response that carried it) or in the final read.
type Read struct {
	TP     TP     `json:"tp"`
	Offset int64  `json:"offset"`
	Value  []byte `json:"value"`
	// HW is the partition's high watermark in the fetch response that
	// returned the record; -1 when unknown.
	HW int64     `json:"hw"`
	At time.Time `json:"at"`
	// Key is the record key (nil: none); Tombstone says the value was
	// null (compacted topic).
	Key       []byte `json:"key,omitempty"`
	Tombstone bool   `json:"tombstone,omitempty"`
}

// Fault is one fault the schedule injected, from injection until healed.
type Fault struct {
	Kind   string    `json:"kind"`
	Target string    `json:"target"` // e.g. "node 2 (leader of soak/3)"
	Nodes  []int32   `json:"nodes,omitempty"`
	Start  time.Time `json:"start"`
	Healed time.Time `json:"healed"`
	// Skipped says why the fault was not injected ("" when it was).
	Skipped string `json:"skipped,omitempty"`
	// Effect is what the fault was seen to do: the new leader or
	// controller and how long the failover took (kills), how long the
	// process was stopped (pauses), the bytes and files dropped (power
	// losses), the packets dropped (network partitions).
	Effect string `json:"effect,omitempty"`
	// NoEffect says which effect the fault should have had and did not
	// show; the checker reports it as a violation (no-effect): a fault
	// that did nothing proves nothing.
	NoEffect string `json:"no_effect,omitempty"`
	// The effect's numbers, where the kind has them.
	NewLeader      *int32        `json:"new_leader,omitempty"` // new leader or active controller
	Failover       time.Duration `json:"failover_ns,omitempty"`
	Stopped        time.Duration `json:"stopped_ns,omitempty"`
	BytesDropped   int64         `json:"bytes_dropped,omitempty"`
	FilesDropped   int           `json:"files_dropped,omitempty"`
	PacketsDropped int64         `json:"packets_dropped,omitempty"`
	// Dropped is, for a power loss, the offsets it cut from each
	// replica's log of each partition: the windows the checker puts lost
	// records down to.
	Dropped []Dropped `json:"dropped,omitempty"`
}

// History is everything a run observed, the checker's input.
type History struct {
	Partitions []TP      `json:"partitions"`
	Sends      []Send    `json:"-"`
	Live       []Read    `json:"-"` // read by consumers during the run
	Final      []Read    `json:"-"` // every partition from its start, at the end
	Faults     []Fault   `json:"faults"`
	Start      time.Time `json:"start"`
	End        time.Time `json:"end"`
	// FinalHW is the high watermark of each partition when the final read
	// began; the final read covers [log start, FinalHW).
	FinalHW map[TP]int64 `json:"-"`
	// Bad are the bad client's requests and their answers.
	Bad []BadRequest `json:"bad_requests,omitempty"`
	// Compact is the compacted topic's workload (nil: none); the
	// compaction invariants check it (compactcheck.go).
	Compact *CompactHistory `json:"compact,omitempty"`
	// Groups is the consumer-group workload (nil: none); the group
	// invariants check it (groupcheck.go).
	Groups *GroupHistory `json:"groups,omitempty"`
	// EOS is the exactly-once pipeline (nil: none); the exactly-once
	// invariants check it (eoscheck.go).
	EOS *EOSHistory `json:"exactly_once,omitempty"`
}

// CompactHistory is what the compacted-topic workload observed.
type CompactHistory struct {
	Topic      string `json:"topic"`
	Partitions []TP   `json:"partitions"`
	Sends      []Send `json:"-"`
	// Final is every partition read from its start at the end, FinalHW
	// the high watermarks it read up to, FinalAt when it began.
	Final   []Read       `json:"-"`
	FinalHW map[TP]int64 `json:"-"`
	FinalAt time.Time    `json:"final_at"`
	// DeleteRetention is the topic's delete.retention.ms: a tombstone
	// sent less than this long before FinalAt must still be there.
	DeleteRetention time.Duration `json:"delete_retention_ns"`
	// Cleans and CleanFailures: the nodes' sluice_log_cleaner_cleans_total
	// and _failures_total summed over the run (compact.go, cleanCounter;
	// lower bounds: a killed node's last counts are lost).
	Cleans        int64 `json:"cleans"`
	CleanFailures int64 `json:"clean_failures"`
}
