package soak

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/node/txn"
)

// The exactly-once pipeline's end (the last stable offsets, the committed
// offsets, the read_committed read of the output) and the
// kill-txn-coordinator fault.

// alignInternalTopic gives an internal topic (created by the node on
// first use, which trigger causes) the run's durability and
// min.insync.replicas, as an operator would, so that what it holds is as
// durable as the records it describes.
func alignInternalTopic(ctx context.Context, w io.Writer, adm *kadm.Client, o *Options, topic string, trigger func(context.Context)) error {
	var err error
	ok := until(ctx, 60*time.Second, func(ctx context.Context) bool {
		trigger(ctx)
		var md kadm.Metadata
		md, err = adm.Metadata(ctx, topic)
		return err == nil && md.Topics[topic].Err == nil && len(md.Topics[topic].Partitions) > 0
	})
	if !ok {
		return fmt.Errorf("soak: %s was not created within 60 s of the first FindCoordinator: %v", topic, err)
	}
	d, isr := o.Durability, strconv.Itoa(o.MinISR)
	cfgs := []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "sluice.durability", Value: &d}, {Op: kadm.SetConfig, Name: "min.insync.replicas", Value: &isr}}
	actx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	res, err := adm.AlterTopicConfigs(actx, cfgs, topic)
	if err == nil {
		for _, r := range res {
			err = errors.Join(err, r.Err)
		}
	}
	if err != nil {
		return fmt.Errorf("soak: set %s's sluice.durability=%s min.insync.replicas=%s: %w", topic, d, isr, err)
	}
	fmt.Fprintf(w, "soak: %s: sluice.durability=%s min.insync.replicas=%s (the run's)\n", topic, d, isr)
	return nil
}

// stop makes every member leave, waits up to bound for every output
// partition's last stable offset to reach its high watermark, reads the
// group's committed offsets (require_stable) and the output
// (read_committed), and returns the history.
func (w *eosWorkload) stop(ctx context.Context, bound time.Duration) *EOSHistory {
	w.mu.Lock()
	var ms []*eosMember
	for _, m := range w.members {
		ms = append(ms, m)
	}
	w.mu.Unlock()
	var wg sync.WaitGroup
	for _, m := range ms {
		wg.Go(m.leave)
	}
	wg.Wait()
	w.wg.Wait()
	h := w.h
	if h.Control {
		w.afterCrash(ctx, bound)
	}
	var out []TP
	for _, tp := range w.tps {
		out = append(out, TP{w.output, tp.Partition})
	}

	// The LSO must catch up with the HW: every transaction ended, by its
	// member or by the coordinator's timeout.
	start := time.Now()
	h.FinalHW, h.FinalLSO = map[TP]int64{}, map[TP]int64{}
	var last error
	until(ctx, bound, func(ctx context.Context) bool {
		hw, lso, err := w.stableOffsets(ctx)
		last = err
		if err != nil {
			return false
		}
		h.FinalHW, h.FinalLSO = hw, lso
		for _, tp := range out {
			if lso[tp] < hw[tp] {
				return false
			}
		}
		return true
	})
	for _, tp := range out {
		hw, okH := h.FinalHW[tp]
		lso, okL := h.FinalLSO[tp]
		switch {
		case !okH || !okL:
			h.Stuck = append(h.Stuck, fmt.Sprintf("%s: no high watermark or last stable offset within %v: %v", tp, bound, last))
		case lso < hw:
			h.Stuck = append(h.Stuck, fmt.Sprintf("%s: last stable offset %d, high watermark %d, %v after every member left (a transaction never completed)", tp, lso, hw, time.Since(start).Round(time.Second)))
		}
	}

	// The committed offsets, once no transactional offset is pending.
	var cerr error
	if !until(ctx, bound, func(ctx context.Context) bool {
		fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		offs, err := w.adm.FetchOffsets(kadm.RequireStable(fctx), eosGroup)
		cerr = err
		if err != nil {
			return false
		}
		h.Committed = map[TP]int64{}
		for _, tp := range w.tps {
			h.Committed[tp] = -1
			if o, ok := offs.Lookup(tp.Topic, tp.Partition); ok {
				if o.Err != nil {
					cerr = fmt.Errorf("%s: %w", tp, o.Err)
					return false
				}
				h.Committed[tp] = o.At
			}
		}
		return true
	}) {
		h.CommittedErr = fmt.Sprint(cerr)
	}

	// The output with read_committed up to the LSOs.
	var err error
	h.Final, err = readCommitted(ctx, w.seeds, h.FinalLSO, 5*time.Second)
	if err != nil {
		h.FinalErr = err.Error()
	}
	return h
}

// afterCrash (the negative control) keeps the pipeline going, up to
// bound, until a transaction committed that began after the last crash:
// the crashed member's input transformed again, whose duplicates the
// checker must find. The run's members left already: one new member
// joins for it.
func (w *eosWorkload) afterCrash(ctx context.Context, bound time.Duration) {
	var crash time.Time
	w.mu.Lock()
	for _, t := range w.h.Txns {
		if t.Crashed && t.End.After(crash) {
			crash = t.End
		}
	}
	w.mu.Unlock()
	again := func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, t := range w.h.Txns {
			if t.Outcome == TxnCommitted && t.Begin.After(crash) {
				return true
			}
		}
		return crash.IsZero() // no crash: nothing to wait for
	}
	if again() {
		return
	}
	if err := w.join(); err != nil {
		fmt.Fprintf(w.out, "soak: eos control: a member could not start: %v\n", err)
		return
	}
	until(ctx, bound, func(context.Context) bool { return again() })
	w.mu.Lock()
	var ms []*eosMember
	for _, m := range w.members {
		ms = append(ms, m)
	}
	w.mu.Unlock()
	for _, m := range ms {
		m.leave()
	}
	w.wg.Wait()
}

// stableOffsets asks for the output's high watermarks and last stable
// offsets (ListOffsets latest, read_uncommitted and read_committed).
func (w *eosWorkload) stableOffsets(ctx context.Context) (hw, lso map[TP]int64, err error) {
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ends, err := w.adm.ListEndOffsets(lctx, w.output)
	if err != nil {
		return nil, nil, err
	}
	stable, err := w.adm.ListCommittedOffsets(lctx, w.output)
	if err != nil {
		return nil, nil, err
	}
	hw, lso = map[TP]int64{}, map[TP]int64{}
	for _, tp := range w.tps {
		o, ok1 := ends.Lookup(w.output, tp.Partition)
		s, ok2 := stable.Lookup(w.output, tp.Partition)
		if !ok1 || !ok2 || o.Err != nil || s.Err != nil {
			return nil, nil, fmt.Errorf("%s/%d: %v %v", w.output, tp.Partition, o.Err, s.Err)
		}
		hw[TP{w.output, tp.Partition}], lso[TP{w.output, tp.Partition}] = o.Offset, s.Offset
	}
	return hw, lso, nil
}

// readCommitted reads every partition of lso from its start with
// read_committed until each returned a record at or past its LSO − 1, or
// idle passed without a record (the last offsets below an LSO may be
// markers and aborted records, which read_committed never returns).
func readCommitted(ctx context.Context, seeds []string, lso map[TP]int64, idle time.Duration) ([]Read, error) {
	var tps []TP
	left := map[TP]bool{}
	for tp, o := range lso {
		tps = append(tps, tp)
		if o > 0 {
			left[tp] = true
		}
	}
	if len(left) == 0 {
		return nil, nil
	}
	c, err := newConsumerWith(seeds, tps, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		return nil, err
	}
	defer c.cl.Close()
	var reads []Read
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	lastRead := time.Now()
	go func() {
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-rctx.Done():
				return
			case <-t.C:
			}
			mu.Lock()
			quiet := time.Since(lastRead) > idle
			mu.Unlock()
			if quiet {
				cancel()
				return
			}
		}
	}()
	c.poll(rctx, func(r Read) {
		mu.Lock()
		defer mu.Unlock()
		lastRead = time.Now()
		if r.Offset >= lso[r.TP] {
			return
		}
		reads = append(reads, r)
		if r.Offset >= lso[r.TP]-1 {
			delete(left, r.TP)
		}
		if len(left) == 0 {
			cancel()
		}
	})
	if ctx.Err() != nil && len(left) > 0 {
		return reads, fmt.Errorf("read_committed read of %d partition(s) cut off by the deadline", len(left))
	}
	return reads, nil
}

// killTxnCoordinator is the kill-txn-coordinator fault: SIGKILL the node
// that coordinates one of the pipeline's transactional ids
// (FindCoordinator key type 1: the leader of its __transaction_state
// partition), restart it after hold. Its effect is that partition led in
// a later leader epoch and FindCoordinator naming its leader.
func (f *faulter) killTxnCoordinator(ctx context.Context, fl *Fault, st step, hold time.Duration) (skipped string, err error) {
	if f.txnIDs == nil {
		return "no exactly-once pipeline in this run (--eos-members 0)", nil
	}
	ids := f.txnIDs()
	if len(ids) == 0 {
		return "no pipeline member alive", nil
	}
	id := ids[st.Partition%len(ids)]
	var old int32
	var tp TP
	var p kadm.PartitionDetail
	if !until(ctx, 20*time.Second, func(ctx context.Context) bool {
		old, err = f.findCoordinator(ctx, 1, id, -1)
		if err != nil || old < 0 {
			return false
		}
		var md kadm.Metadata
		if md, err = f.adm.Metadata(ctx, txn.StateTopic); err != nil {
			return false
		}
		ps := md.Topics[txn.StateTopic].Partitions
		if len(ps) == 0 {
			err = fmt.Errorf("%s not in the metadata", txn.StateTopic)
			return false
		}
		tp = TP{txn.StateTopic, txn.Partition(id, int32(len(ps)))}
		p = ps[tp.Partition]
		if p.Leader != old {
			err = fmt.Errorf("FindCoordinator names node %d, the metadata %d as the leader of %s", old, p.Leader, tp)
			return false
		}
		return true
	}) {
		return fmt.Sprintf("no transaction coordinator of %s for 20 s: %v", id, err), nil
	}
	fl.Target = fmt.Sprintf("node %d (transaction coordinator of %s, leader of %s)", old, id, tp)
	fl.Nodes = []int32{old}
	var seen <-chan failover
	err = f.killRestart(ctx, []int32{old}, hold, func() {
		moved := f.newLeader(tp, p.LeaderEpoch)
		seen = f.watch(ctx, time.Now(), func(ctx context.Context) (int32, bool) {
			l, ok := moved(ctx)
			if !ok {
				return -1, false
			}
			c, err := f.findCoordinator(ctx, 1, id, -1)
			return c, err == nil && c == l
		})
	})
	if seen != nil {
		provedFailover(fl, "transaction coordinator of "+id, <-seen)
	}
	f.electAfterKill(ctx, fl, err)
	return "", err
}

// findCoordinator asks the nodes in turn (but skip) which node
// coordinates key (typ 0: a group, 1: a transactional id): straight to
// each broker, so that no client's cached answer hides a move.
func (f *faulter) findCoordinator(ctx context.Context, typ int8, key string, skip int32) (int32, error) {
	var last error = fmt.Errorf("no node to ask")
	for _, n := range f.layout().Nodes {
		if n.ID == skip {
			continue
		}
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType = typ
		req.CoordinatorKeys = []string{key}
		req.CoordinatorKey = key
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		resp, err := req.RequestWith(rctx, f.cl.Broker(int(n.ID)))
		cancel()
		if err != nil {
			last = err
			continue
		}
		code, id := resp.ErrorCode, resp.NodeID
		if len(resp.Coordinators) > 0 {
			code, id = resp.Coordinators[0].ErrorCode, resp.Coordinators[0].NodeID
		}
		if err := kerr.ErrorForCode(code); err != nil {
			last = err
			continue
		}
		return id, nil
	}
	return -1, last
}
