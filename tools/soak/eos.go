package soak

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/node/group"
	"github.com/sluice-log/sluice/node/txn"
)

// The exactly-once pipeline (--eos-members, eoscheck.go judges it): the
// members of one consumer group ("soak-eos") read the soak topic with
// read_committed through franz-go's GroupTransactSession and, per poll,
// in one transaction, write one record per input record to the output
// topic (input partition p to output partition p) and commit the input
// offsets (TxnOffsetCommit). Each transaction is recorded with the
// records it produced and how it ended. About every --eos-churn a member
// leaves and a new one (with a new transactional.id) joins. At the end,
// once every member left, the output's last stable offsets must reach
// its high watermarks; the group's committed offsets are read with
// require_stable, and the output from its start with read_committed.
//
// The negative control (--negative-control txn) runs members that commit
// the produce transaction and then, separately, the offsets (an
// OffsetCommit after EndTxn), and leave between the two every third
// transaction (their second): the next owner of their partitions processes the same
// input again, and the checker must report the duplicates. (Each member
// leaves at its second transaction: its replacement transforms again
// what it committed there in its first.)

// eosGroup is the pipeline's consumer group.
const eosGroup = "soak-eos"

const (
	// eosPollMax is the most records one transaction transforms.
	eosPollMax = 1000
	// eosEndTimeout bounds one End (flush, TxnOffsetCommit, EndTxn):
	// past it the transaction's outcome is unknown.
	eosEndTimeout = 30 * time.Second
	// eosCrashAt: the control's member leaves between the produce
	// commit and the offset commit of its eosCrashAt-th transaction.
	eosCrashAt = 2
)

// eosWorkload runs the pipeline's members and records their history.
type eosWorkload struct {
	seeds  []string
	tps    []TP // input partitions
	adm    *kadm.Client
	out    io.Writer
	o      *Options
	rng    *rand.Rand
	output string

	mu      sync.Mutex
	h       *EOSHistory
	members map[string]*eosMember
	next    int
	wg      sync.WaitGroup
	ctx     context.Context // the members' parent (set by start)
}

// eosMember is one incarnation of a pipeline member.
type eosMember struct {
	w      *eosWorkload
	name   string
	txnID  string
	sess   *kgo.GroupTransactSession // the pipeline's
	cons   *kgo.Client               // the control's consumer
	prod   *kgo.Client               // the control's transactional producer
	cancel context.CancelFunc
	done   chan struct{}
	seq    int
}

func newEOSWorkload(seeds []string, tps []TP, adm *kadm.Client, out io.Writer, o *Options) *eosWorkload {
	w := &eosWorkload{seeds: seeds, tps: tps, adm: adm, out: out, o: o, output: o.EOSTopic,
		rng: rand.New(rand.NewPCG(o.Seed, 0xe05)), members: map[string]*eosMember{}}
	w.h = &EOSHistory{Input: o.Topic, Output: o.EOSTopic, Group: eosGroup, Partitions: tps, Control: o.EOSControl}
	return w
}

// ErrNoTransactions: the cluster serves no transactions (its ApiVersions
// lists no EndTxn or TxnOffsetCommit): a node built before the
// transaction coordinator.
var ErrNoTransactions = errors.New("soak: the cluster serves no transactions (ApiVersions lists no EndTxn or TxnOffsetCommit); run with --eos-members 0")

// served checks that every broker lists the transaction APIs.
func (w *eosWorkload) served(ctx context.Context) error {
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	vs, err := w.adm.ApiVersions(actx)
	if err != nil {
		return fmt.Errorf("soak: ApiVersions: %w", err)
	}
	for _, v := range vs.Sorted() {
		if v.Err != nil {
			continue
		}
		for _, k := range []kmsg.Key{kmsg.InitProducerID, kmsg.AddPartitionsToTxn, kmsg.AddOffsetsToTxn, kmsg.EndTxn, kmsg.TxnOffsetCommit, kmsg.WriteTxnMarkers} {
			if _, ok := v.KeyMaxVersion(int16(k)); !ok {
				return fmt.Errorf("%w: node %d lists no %s", ErrNoTransactions, v.NodeID, k.Name())
			}
		}
	}
	return nil
}

// eosTopicConfigs are the output topic's configs: the soak topic's
// durability, min.insync.replicas and max.message.bytes.
func (o *Options) eosTopicConfigs() map[string]*string {
	c := o.topicConfigs()
	delete(c, "unclean.leader.election.enable")
	return c
}

// createEOSTopic creates the output topic (as many partitions as the
// soak topic) and waits for its leaders.
func createEOSTopic(ctx context.Context, w io.Writer, adm *kadm.Client, o *Options) ([]TP, error) {
	co := *o
	co.Topic, co.TopicConfigs = o.EOSTopic, nil
	return createTopicWith(ctx, w, adm, &co, o.eosTopicConfigs())
}

// start gives __transaction_state (and __consumer_offsets) the run's
// durability and starts the members (served checked the cluster).
func (w *eosWorkload) start(ctx context.Context) error {
	if err := alignInternalTopic(ctx, w.out, w.adm, w.o, txn.StateTopic, func(ctx context.Context) {
		w.adm.FindTxnCoordinators(ctx, "soak-eos-probe")
	}); err != nil {
		return err
	}
	if w.o.Groups == 0 { // else the group workload aligned it
		if err := alignInternalTopic(ctx, w.out, w.adm, w.o, group.OffsetsTopic, func(ctx context.Context) {
			w.adm.FindGroupCoordinators(ctx, eosGroup)
		}); err != nil {
			return err
		}
	}
	w.ctx = ctx
	w.h.Start = time.Now()
	for range w.o.EOSMembers {
		if err := w.join(); err != nil {
			return err
		}
	}
	return nil
}

// join starts a new member.
func (w *eosWorkload) join() error {
	w.mu.Lock()
	w.next++
	n := w.next
	w.h.Members++
	w.mu.Unlock()
	m := &eosMember{w: w, name: fmt.Sprintf("m%d", n), txnID: fmt.Sprintf("soak-eos-%d", n), done: make(chan struct{})}
	consume := append(clientOpts(w.seeds),
		kgo.ConsumerGroup(eosGroup),
		kgo.ConsumeTopics(w.o.Topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(w.o.GroupSession),
		kgo.HeartbeatInterval(w.o.GroupSession/6),
		kgo.RebalanceTimeout(2*w.o.GroupSession),
		kgo.FetchMaxWait(500*time.Millisecond),
	)
	produce := []kgo.Opt{
		kgo.TransactionalID(m.txnID),
		kgo.TransactionTimeout(w.o.EOSTxnTimeout),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5 * time.Millisecond),
		kgo.ProduceRequestTimeout(10 * time.Second),
	}
	var err error
	if w.h.Control {
		if m.cons, err = kgo.NewClient(append(consume, kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll())...); err != nil {
			return err
		}
		if m.prod, err = kgo.NewClient(append(clientOpts(w.seeds), produce...)...); err != nil {
			m.cons.Close()
			return err
		}
	} else if m.sess, err = kgo.NewGroupTransactSession(append(consume, produce...)...); err != nil {
		return err
	}
	mctx, cancel := context.WithCancel(w.ctx)
	m.cancel = cancel
	w.mu.Lock()
	w.members[m.name] = m
	w.mu.Unlock()
	w.wg.Go(func() { defer close(m.done); m.run(mctx) })
	return nil
}

// run polls and transforms each poll in one transaction until ctx ends.
func (m *eosMember) run(ctx context.Context) {
	poll := func(ctx context.Context) kgo.Fetches {
		if m.sess != nil {
			return m.sess.PollRecords(ctx, eosPollMax)
		}
		return m.cons.PollRecords(ctx, eosPollMax)
	}
	for ctx.Err() == nil {
		fs := poll(ctx)
		if fs.IsClientClosed() || ctx.Err() != nil {
			// A poll cut short may hold records: they are not
			// transformed, so not committed either.
			return
		}
		var recs []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) { recs = append(recs, r) })
		if len(recs) == 0 {
			continue
		}
		if m.sess != nil {
			if err := m.transact(recs); err != nil {
				// No error of End is retryable: the member leaves and
				// the churn starts a new one.
				fmt.Fprintf(m.w.out, "soak: eos %s leaves after transaction %d: %v\n", m.name, m.seq, err)
				return
			}
			continue
		}
		if m.transactSeparately(recs) {
			return
		}
	}
}

// produceAll produces the outputs of recs in transaction t through cl
// (the session's client or the control's producer); the offsets arrive
// in the callbacks, which End (or Flush) waits for.
func (m *eosMember) produceAll(produce func(*kgo.Record, func(*kgo.Record, error)), t *EOSTxn, recs []*kgo.Record) *sync.Mutex {
	var mu sync.Mutex
	t.Records = make([]EOSOut, len(recs))
	for i, r := range recs {
		k, _ := DecodeValue(r.Value)
		in := TP{r.Topic, r.Partition}
		out := TP{m.w.output, r.Partition}
		t.Records[i] = EOSOut{In: in, Offset: r.Offset, Key: k, Out: out, OutOff: -1}
		v := EncodeEOS(EOSRef{InPartition: r.Partition, InOffset: r.Offset, InKey: k, Member: m.name, Txn: t.Seq})
		produce(&kgo.Record{Topic: out.Topic, Partition: out.Partition, Value: v}, func(pr *kgo.Record, err error) {
			if err == nil {
				mu.Lock()
				t.Records[i].OutOff = pr.Offset
				mu.Unlock()
			}
		})
	}
	return &mu
}

// transact is one read-process-write transaction through the session:
// Begin, produce, End (which commits the offsets in the transaction, or
// aborts after a rebalance or a failure). An error of Begin or End ends
// the member.
func (m *eosMember) transact(recs []*kgo.Record) error {
	m.seq++
	t := EOSTxn{Member: m.name, TxnID: m.txnID, Seq: m.seq, Begin: time.Now()}
	if err := m.sess.Begin(); err != nil {
		return fmt.Errorf("begin: %w", err) // nothing produced: no transaction to record
	}
	// Not the member's context: a transaction begun is ended.
	ctx, cancel := context.WithTimeout(context.Background(), eosEndTimeout)
	defer cancel()
	mu := m.produceAll(func(r *kgo.Record, cb func(*kgo.Record, error)) { m.sess.Produce(ctx, r, cb) }, &t, recs)
	committed, err := m.sess.End(ctx, kgo.TryCommit)
	t.End = time.Now()
	switch {
	case err != nil && strings.HasPrefix(err.Error(), eosOffsetsFailed):
		// The offsets' commit failed and the abort after it succeeded
		// (kgo returns the commit's error only when EndTxn did not fail).
		t.Outcome, t.Err = TxnAborted, err.Error()
	case err != nil:
		t.Outcome, t.Err = TxnUnknown, err.Error()
	case committed:
		t.Outcome = TxnCommitted
	default:
		t.Outcome, t.Err = TxnAborted, "aborted by the session (a rebalance or a failed offset commit)"
	}
	mu.Lock()
	m.w.record(t)
	mu.Unlock()
	return err
}

// eosOffsetsFailed starts the error kgo's End returns when the
// transaction's offset commit failed and the abort that followed did not.
const eosOffsetsFailed = "unable to commit transaction offsets"

// transactSeparately is the negative control's cycle: the produce in a
// transaction, committed, then the offsets in a plain OffsetCommit; every
// eosCrashAt-th time the member leaves between the two (crashed), and
// after an EndTxn error (leave).
func (m *eosMember) transactSeparately(recs []*kgo.Record) (leave bool) {
	m.seq++
	t := EOSTxn{Member: m.name, TxnID: m.txnID, Seq: m.seq, Begin: time.Now()}
	defer m.cons.AllowRebalance()
	if err := m.prod.BeginTransaction(); err != nil {
		fmt.Fprintf(m.w.out, "soak: eos control %s: begin: %v\n", m.name, err)
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), eosEndTimeout)
	defer cancel()
	mu := m.produceAll(func(r *kgo.Record, cb func(*kgo.Record, error)) { m.prod.Produce(ctx, r, cb) }, &t, recs)
	ferr := m.prod.Flush(ctx)
	err := m.prod.EndTransaction(ctx, kgo.TransactionEndTry(ferr == nil))
	t.End = time.Now()
	switch {
	case err != nil:
		t.Outcome, t.Err = TxnUnknown, err.Error()
	case ferr != nil:
		t.Outcome, t.Err = TxnAborted, ferr.Error()
	default:
		t.Outcome = TxnCommitted
	}
	crashed := t.Outcome == TxnCommitted && m.seq == eosCrashAt
	t.Crashed = crashed
	mu.Lock()
	m.w.record(t)
	mu.Unlock()
	if crashed || t.Outcome != TxnCommitted {
		return crashed || err != nil // after an EndTxn error the producer may be failed: leave
	}
	offs := map[string]map[int32]kgo.EpochOffset{}
	for _, r := range recs {
		if offs[r.Topic] == nil {
			offs[r.Topic] = map[int32]kgo.EpochOffset{}
		}
		offs[r.Topic][r.Partition] = kgo.EpochOffset{Epoch: r.LeaderEpoch, Offset: r.Offset + 1}
	}
	m.cons.CommitOffsetsSync(ctx, offs, nil)
	return false
}

// record appends a finished transaction.
func (w *eosWorkload) record(t EOSTxn) {
	w.mu.Lock()
	w.h.Txns = append(w.h.Txns, t)
	w.mu.Unlock()
}

// leave stops m: its loop ends (a transaction in progress ends first),
// then its clients close (leaving the group).
func (m *eosMember) leave() {
	m.cancel()
	<-m.done
	if m.sess != nil {
		m.sess.Close()
	} else {
		m.cons.CloseAllowingRebalance()
		m.prod.Close()
	}
	m.w.mu.Lock()
	delete(m.w.members, m.name)
	m.w.mu.Unlock()
}

// churn makes a random member leave and a new one join about every
// EOSChurn (seeded) until ctx ends; in the negative control a member
// that crashed is replaced instead.
func (w *eosWorkload) churn(ctx context.Context) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	due := time.Now().Add(w.o.EOSChurn/2 + time.Duration(w.rng.Int64N(int64(w.o.EOSChurn))))
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		w.mu.Lock()
		var gone []*eosMember
		var names []string
		for name, m := range w.members {
			names = append(names, name)
			select {
			case <-m.done:
				gone = append(gone, m) // the control's crash
			default:
			}
		}
		w.mu.Unlock()
		if !w.h.Control && time.Now().After(due) && len(names) > 0 {
			slices.Sort(names)
			w.mu.Lock()
			gone = append(gone, w.members[names[w.rng.IntN(len(names))]])
			w.mu.Unlock()
			due = time.Now().Add(w.o.EOSChurn/2 + time.Duration(w.rng.Int64N(int64(w.o.EOSChurn))))
		}
		for _, m := range gone {
			m.leave()
			if ctx.Err() != nil {
				return
			}
			if err := w.join(); err != nil {
				fmt.Fprintf(w.out, "soak: eos: a new member could not start: %v\n", err)
			}
		}
	}
}

// txnIDs are the live members' transactional ids, sorted.
func (w *eosWorkload) txnIDs() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var ids []string
	for _, m := range w.members {
		ids = append(ids, m.txnID)
	}
	slices.Sort(ids)
	return ids
}
