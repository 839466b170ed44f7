package txn

import (
	"math"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// State is a transaction's state, with Kafka's numbering in
// TxnMetadataValue.
type State int8

// The states of Kafka's TransactionState. PrepareEpochFence is never
// written: this coordinator goes from Ongoing straight to PrepareAbort
// with the bumped epoch when it fences.
const (
	Empty State = iota
	Ongoing
	PrepareCommit
	PrepareAbort
	CompleteCommit
	CompleteAbort
	Dead
	PrepareEpochFence
)

var stateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit",
	"CompleteAbort", "Dead", "PrepareEpochFence"}

func (st State) String() string {
	if st < 0 || int(st) >= len(stateNames) {
		return "Unknown"
	}
	return stateNames[st]
}

// idle: no transaction runs (a new one may start; the id may expire).
func (st State) idle() bool { return st == Empty || st == CompleteCommit || st == CompleteAbort }

// meta is what a TxnMetadataValue record holds: a transactional id's
// persisted state.
type meta struct {
	pid     int64
	epoch   int16 // -1: never written
	lastPid int64 // the producer id before a rotation (-1: none)
	timeout time.Duration
	state   State
	parts   []TopicPartition // sorted, no duplicates
	start   time.Time        // zero: no transaction started
	updated time.Time
	// tv2: the transaction ends as transaction.version 2 (KIP-890 part
	// 2, EndTxn v5): its Prepare record already carries the bumped
	// epoch (ClientTransactionVersion 2 in the record).
	tv2 bool
	// rotating: the epoch is exhausted and the transaction's completion
	// moves the producer to nextPid at epoch 0 (NextProducerId).
	rotating bool
	nextPid  int64
}

// txn is one transactional id.
type txn struct {
	id string
	meta
	// lastEpoch is Kafka's lastProducerEpoch (memory only): the epoch
	// before the last InitProducerId bump, so that a producer retrying
	// that InitProducerId gets the same answer (KIP-360).
	lastEpoch int16

	pending *op // the write in flight (nil: none)
	// held: adds waiting for pending to end (add_partitions_to_txn.go).
	held []held

	// Markers: markersID in flight (0: none); retry holds the partitions
	// to retry at retryAt, or, with markersDone, the completion record.
	markersID   uint64
	retry       []TopicPartition
	retryAt     time.Time
	markersDone bool
	// failedAt is when the last write for t failed (zero after one
	// succeeded): a failed timeout abort or expiry waits for the next
	// periodic check after it.
	failedAt time.Time

	// due is when the clock next changes t (zero: never); at is t's
	// place in the shard's timer heap plus one (0: not in it).
	due time.Time
	at  int
}

// busy: a write or markers are in flight or due: requests that would
// change the transaction get CONCURRENT_TRANSACTIONS.
func (t *txn) busy() bool { return t.pending != nil }

// exhausted is Kafka's isEpochExhausted: the next bump would reach
// Short.MaxValue, which fencing needs.
func exhausted(epoch int16) bool { return epoch >= math.MaxInt16-1 }

func sortParts(ps []TopicPartition) {
	sort.Slice(ps, func(i, j int) bool {
		if ps[i].Topic != ps[j].Topic {
			return ps[i].Topic < ps[j].Topic
		}
		return ps[i].Partition < ps[j].Partition
	})
}

// union is a ∪ b, sorted.
func union(a, b []TopicPartition) []TopicPartition {
	set := map[TopicPartition]bool{}
	var out []TopicPartition
	for _, ps := range [][]TopicPartition{a, b} {
		for _, p := range ps {
			if !set[p] {
				set[p] = true
				out = append(out, p)
			}
		}
	}
	sortParts(out)
	return out
}

func contains(ps []TopicPartition, p TopicPartition) bool {
	i := sort.Search(len(ps), func(i int) bool {
		return ps[i].Topic > p.Topic || ps[i].Topic == p.Topic && ps[i].Partition >= p.Partition
	})
	return i < len(ps) && ps[i] == p
}

func millis(t time.Time) int64 {
	if t.IsZero() {
		return -1
	}
	return t.UnixMilli()
}

func fromMillis(ms int64) time.Time {
	if ms < 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// topicsOf groups sorted partitions by topic, for responses.
func topicsOf(ps []TopicPartition) []kmsg.DescribeTransactionsResponseTransactionStateTopic {
	var out []kmsg.DescribeTransactionsResponseTransactionStateTopic
	for _, p := range ps {
		if n := len(out); n == 0 || out[n-1].Topic != p.Topic {
			t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
			t.Topic = p.Topic
			out = append(out, t)
		}
		out[len(out)-1].Partitions = append(out[len(out)-1].Partitions, p.Partition)
	}
	return out
}
