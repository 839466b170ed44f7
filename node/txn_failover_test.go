package node

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTxnPartitionLeaderFailover: a transaction is open on two partitions
// led by nodes other than its coordinator, with records written (acks=all),
// when the leader of one of them is SIGKILLed (kill) or loses power
// (powercut: its unsynced writes are gone, and it comes back). The
// transaction ends committed or aborted (the producer's EndTxn says
// which); the markers reach the new leader, so every partition's last
// stable offset reaches its high watermark; read_committed sees the
// committed records exactly once and nothing of an aborted transaction.
func TestTxnPartitionLeaderFailover(t *testing.T) {
	for _, tc := range []struct {
		name     string
		unsynced int // percent of unsynced writes the crash keeps
		restart  bool
	}{{"kill", 100, false}, {"powercut", 0, true}} {
		t.Run(tc.name, func(t *testing.T) {
			txnLeaderFailover(t, tc.unsynced, tc.restart)
		})
	}
}

func txnLeaderFailover(t *testing.T, unsynced int, restart bool) {
	c := startReplCluster(t, 3, append([]string{"transaction.abort.timed.out.transaction.cleanup.interval.ms=500"}, txnSettings...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	const topic, id, n = "plf", "plf-tx", 20
	c.createTopic(ctx, topic, 3, nil)
	adm := kadm.NewClient(c.client(kgo.MetadataMinAge(500*time.Millisecond), kgo.MetadataMaxAge(2*time.Second)))
	coord := txnCoordinator(ctx, t, c, adm, id)
	// Partitions whose leader is not the coordinator; the first is the victim's.
	var parts []int32
	waitFor(ctx, t, "every partition led", func() bool {
		parts = parts[:0]
		for p := range 3 {
			l := c.leaderOf(topic, p)
			if l == nil {
				return false
			}
			if l != coord {
				parts = append(parts, int32(p))
			}
		}
		return true
	})
	if len(parts) == 0 {
		t.Skip("the coordinator leads every partition")
	}
	victim := c.leaderOf(topic, int(parts[0]))
	cl := c.client(kgo.TransactionalID(id), kgo.TransactionTimeout(10*time.Second),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MetadataMinAge(500*time.Millisecond), kgo.MetadataMaxAge(2*time.Second))
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		for i := range n {
			cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "tx-%d-%d", p, i)}, nil)
		}
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	c.crash(victim, unsynced)
	commitErr := cl.EndTransaction(ctx, kgo.TryCommit)
	var state string
	waitFor(ctx, t, "the transaction completed", func() bool {
		d, err := adm.DescribeTransactions(ctx, id)
		state = d[id].State
		return err == nil && (state == "CompleteCommit" || state == "CompleteAbort")
	})
	committed := state == "CompleteCommit"
	if commitErr == nil && !committed {
		t.Fatalf("EndTxn(commit) succeeded but the transaction is %s", state)
	}
	if restart {
		c.restart(victim)
	}
	// A record after the transaction on each partition: read_committed
	// reads it only when the LSO passed the transaction.
	plain := c.client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := range int32(3) {
		if err := plain.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "after-%d", p)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	want := 3
	if committed {
		want += n * len(parts)
	}
	got := readTopic(ctx, t, c, topic, kgo.ReadCommitted(), want)
	for v, k := range got {
		if k != 1 || (!committed && strings.HasPrefix(v, "tx-")) {
			t.Errorf("read_committed got %q %d times (transaction %s)", v, k, state)
		}
	}
	if len(got) != want {
		t.Errorf("read_committed got %d records, want %d (transaction %s)", len(got), want, state)
	}
	waitFor(ctx, t, "every LSO at its high watermark", func() bool {
		ends, err1 := adm.ListEndOffsets(ctx, topic)
		stable, err2 := adm.ListCommittedOffsets(ctx, topic)
		if err1 != nil || err2 != nil || ends.Error() != nil || stable.Error() != nil {
			return false
		}
		for p := range int32(3) {
			e, _ := ends.Lookup(topic, p)
			s, _ := stable.Lookup(topic, p)
			if e.Offset != s.Offset {
				return false
			}
		}
		return true
	})
	t.Logf("transaction %s (EndTxn: %v) after node %d (leader of %s/%d) crashed keeping %d%% unsynced", state, commitErr, victim.id, topic, parts[0], unsynced)
}
