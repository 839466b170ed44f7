package txn

// DescribeTransactions (key 65), version 0, and ListTransactions (key 66),
// versions 0-1 (the driver merges the shards' parts).
//
// Behavior:
//   - DescribeTransactions answers each id with its state (Kafka's
//     names), timeout, start time (-1 without a transaction), producer id
//     and epoch and partitions; an unknown id TRANSACTIONAL_ID_NOT_FOUND;
//     before the load COORDINATOR_LOAD_IN_PROGRESS; an id of another
//     partition NOT_COORDINATOR.
//   - ListTransactions filters by state, producer id and (v1, KIP-994)
//     the least time since the transaction started.

import (
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (s *Shard) describe(r Request, req *kmsg.DescribeTransactionsRequest) {
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range req.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID, st.StartTimestamp, st.ProducerID, st.ProducerEpoch = id, -1, -1, -1
		t := s.txns[id]
		if code := s.ours(id); code != 0 {
			st.ErrorCode = code
		} else if t == nil || t.epoch < 0 {
			st.ErrorCode = codeNotFound
		} else {
			st.State = t.state.String()
			st.TimeoutMillis = int32(t.timeout / time.Millisecond)
			st.StartTimestamp = millis(t.start)
			st.ProducerID, st.ProducerEpoch = t.pid, t.epoch
			st.Topics = topicsOf(t.parts)
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	s.respond(r.ID, resp)
}

func (s *Shard) listTransactions(now time.Time, states []string, pids []int64, minDuration time.Duration) (out []kmsg.ListTransactionsResponseTransactionState, unknown []string) {
	want := map[State]bool{}
	for _, name := range states {
		i := slices.IndexFunc(stateNames[:], func(n string) bool { return strings.EqualFold(n, name) })
		if i < 0 {
			unknown = append(unknown, name)
			continue
		}
		want[State(i)] = true
	}
	for _, id := range sortedIDs(s.txns) {
		t := s.txns[id]
		switch {
		case t.epoch < 0,
			len(states) > 0 && !want[t.state],
			len(pids) > 0 && !slices.Contains(pids, t.pid),
			minDuration > 0 && (t.start.IsZero() || now.Sub(t.start) < minDuration):
			continue
		}
		ts := kmsg.NewListTransactionsResponseTransactionState()
		ts.TransactionalID, ts.ProducerID, ts.TransactionState = id, t.pid, t.state.String()
		out = append(out, ts)
	}
	return out, unknown
}

func (s *Shard) stats() Stats {
	st := Stats{Transactions: map[string]int{}, Committed: s.committed, Aborted: s.aborted, TimedOut: s.timedOut}
	for _, t := range s.txns {
		if t.epoch >= 0 {
			st.Transactions[t.state.String()]++
		}
	}
	return st
}
