package admin

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// Kafka's prettyPrintTable: every cell padded to its column's widest
// value, then a tab (also after the last column).
func TestPrettyTable(t *testing.T) {
	var b bytes.Buffer
	prettyTable(&b, listHeaders, listRows([]ListedTxnRow{{"orders-app-0", 2, 4001, "Ongoing"}, {"a", 10, 7, "CompleteCommit"}}))
	want := "TransactionalId\tCoordinator\tProducerId\tTransactionState\t\n" +
		"orders-app-0   \t2          \t4001      \tOngoing         \t\n" +
		"a              \t10         \t7         \tCompleteCommit  \t\n"
	if b.String() != want {
		t.Fatalf("table:\n%q\nwant\n%q", b.String(), want)
	}
	b.Reset()
	prettyTable(&b, hangingHeaders, nil)
	if b.String() != "Topic\tPartition\tProducerId\tProducerEpoch\tCoordinatorEpoch\tStartOffset\tLastTimestamp\tDuration(min)\t\n" {
		t.Fatalf("empty table: %q", b.String())
	}
}

func TestDescribedRow(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	d := kadm.DescribedTransaction{Coordinator: 3, TxnID: "app", State: "Ongoing", TimeoutMillis: 60000, StartTimestamp: 940_000, ProducerID: 9, ProducerEpoch: 2}
	d.Topics.Add("b", 1, 0)
	d.Topics.Add("a", 7)
	r := describedRow(d, now)
	want := []string{"3", "app", "9", "2", "Ongoing", "60000", "940000", "60000", "a-7,b-0,b-1"}
	if got := r.cells(); !reflect.DeepEqual(got, want) {
		t.Fatalf("cells %q, want %q", got, want)
	}
	// No transaction in progress: no start, no duration (Kafka's None).
	d = kadm.DescribedTransaction{TxnID: "idle", State: "Empty", StartTimestamp: -1}
	r = describedRow(d, now)
	if c := r.cells(); c[6] != "None" || c[7] != "None" || c[8] != "" || r.Partitions == nil {
		t.Fatalf("idle cells %q (partitions %v)", c, r.Partitions)
	}
}

func TestProducerRowCells(t *testing.T) {
	r := ProducerRow{ProducerID: 5, ProducerEpoch: 1, CoordinatorEpoch: -1, LastSequence: 41, LastTimestamp: 1700, CurrentTxnStartOffset: -1}
	if got := r.cells(); !reflect.DeepEqual(got, []string{"5", "1", "-1", "41", "1700", "None"}) {
		t.Fatalf("cells %q", got)
	}
	r.CurrentTxnStartOffset = 12
	if got := r.cells()[5]; got != "12" {
		t.Fatalf("start offset cell %q", got)
	}
}

func TestAbortSpecAt(t *testing.T) {
	ps := []ProducerRow{
		{ProducerID: 1, ProducerEpoch: 0, CoordinatorEpoch: 4, CurrentTxnStartOffset: -1},
		{ProducerID: 2, ProducerEpoch: 3, CoordinatorEpoch: -1, CurrentTxnStartOffset: 100},
		{ProducerID: 3, ProducerEpoch: 1, CoordinatorEpoch: 7, CurrentTxnStartOffset: 250},
	}
	base := AbortSpec{Topic: "t", Partition: 2}
	got, err := abortSpecAt(base, ps, 250)
	if err != nil || got != (AbortSpec{"t", 2, 3, 1, 7}) {
		t.Fatalf("at 250: %+v, %v", got, err)
	}
	// Coordinator epoch -1 (no marker yet): 0, as Kafka's tool sends.
	if got, err = abortSpecAt(base, ps, 100); err != nil || got.CoordinatorEpoch != 0 || got.ProducerID != 2 {
		t.Fatalf("at 100: %+v, %v", got, err)
	}
	if _, err = abortSpecAt(base, ps, 101); err == nil || !strings.Contains(err.Error(), "could not find any open transactions starting at offset 101 on partition t-2") {
		t.Fatalf("at 101: %v", err)
	}
	if s := got.String(); s != "AbortTransactionSpec(topicPartition=t-2, producerId=2, producerEpoch=3, coordinatorEpoch=0)" {
		t.Fatalf("spec %s", s)
	}
}

// find-hanging: an open transaction older than the timeout is hanging
// unless its coordinator describes its transactional id with the
// partition among its topics.
func TestHanging(t *testing.T) {
	now := time.UnixMilli(10 * 60_000)
	pps := []partitionProducers{
		{tp: TopicPartition{"t", 0}, producers: []ProducerRow{
			{Topic: "t", Partition: 0, ProducerID: 1, CurrentTxnStartOffset: 5, LastTimestamp: 0},          // old, known, partition named
			{Topic: "t", Partition: 0, ProducerID: 2, CurrentTxnStartOffset: 9, LastTimestamp: 0},          // old, no transactional id
			{Topic: "t", Partition: 0, ProducerID: 3, CurrentTxnStartOffset: -1, LastTimestamp: 0},         // no open transaction
			{Topic: "t", Partition: 0, ProducerID: 4, CurrentTxnStartOffset: 11, LastTimestamp: 9 * 60000}, // recent
		}},
		{tp: TopicPartition{"t", 1}, producers: []ProducerRow{
			{Topic: "t", Partition: 1, ProducerID: 1, CurrentTxnStartOffset: 3, LastTimestamp: 60_000}, // known id, partition not named
			{Topic: "t", Partition: 1, ProducerID: 5, CurrentTxnStartOffset: 3, LastTimestamp: 0},      // id not described
		}},
	}
	cands := hangingCandidates(pps, now, 5*time.Minute)
	if len(cands) != 4 {
		t.Fatalf("candidates %+v, want producers 1, 2 on t-0 and 1, 5 on t-1", cands)
	}
	known := &kadm.DescribedTransaction{TxnID: "app", State: "Ongoing"}
	known.Topics.Add("t", 0)
	rows := hangingOf(cands, map[int64]string{1: "app", 5: "gone"}, map[string]*kadm.DescribedTransaction{"app": known}, now)
	var got []string
	for _, r := range rows {
		got = append(got, strings.Join(r.cells(), " "))
	}
	want := []string{"t 0 2 0 0 9 0 10", "t 1 1 0 0 3 60000 9", "t 1 5 0 0 3 0 10"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("hanging rows %q, want %q", got, want)
	}
}

// Flag checks come before any connection (the bootstrap server here
// does not exist): each names what is wrong as Kafka's tool does.
func TestTransactionsFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"describe"}, "--transactional-id"},
		{[]string{"describe-producers", "--partition", "0"}, "missing required argument --topic"},
		{[]string{"describe-producers", "--topic", "t"}, "missing required argument --partition"},
		{[]string{"abort", "--topic", "t", "--partition", "0"}, "either with --start-offset"},
		{[]string{"abort", "--topic", "t", "--partition", "0", "--producer-id", "3"}, "--producer-epoch"},
		{[]string{"abort", "--topic", "t", "--partition", "0", "--producer-id", "3", "--producer-epoch", "1"}, "--coordinator-epoch"},
		{[]string{"abort", "--topic", "t", "--partition", "0", "--start-offset", "4", "--producer-id", "3"}, "not both"},
		{[]string{"abort", "--topic", "t", "--partition", "0", "--start-offset", "-4"}, "--start-offset -4"},
		{[]string{"find-hanging"}, "requires either --topic or --broker-id"},
		{[]string{"find-hanging", "--broker-id", "1", "--partition", "0"}, "--partition argument requires --topic"},
		{[]string{"find-hanging", "--topic", "t", "--max-transaction-timeout", "-1"}, "--max-transaction-timeout -1"},
		{[]string{"list", "--format", "yaml"}, "--format"},
	} {
		out, err := run(t, "127.0.0.1:1", append([]string{"transactions"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("transactions %s: err %v, want one saying %q\n%s", strings.Join(c.args, " "), err, c.want, out)
		}
	}
}
