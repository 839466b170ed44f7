package soak

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/sluice-log/sluice/node/group"
	"github.com/sluice-log/sluice/node/txn"
)

// The group workload's life beside the run: membership churn, the
// rebalances it causes, the generation watch, the offsets read back, the
// end; and the coordinator kill fault.

// pendingRebalance is a rebalance not settled yet: its index in
// h.Rebalances and how often each live member's generation had changed
// when it began.
type pendingRebalance struct {
	i       int
	changes map[string]int
}

// beginRebalance records that a membership change of g starts now (w.mu
// held).
func (w *groupWorkload) beginRebalance(g, cause string) {
	from := int32(-1)
	changes := map[string]int{}
	for _, m := range w.members {
		if m.group == g && !m.leaving {
			from = max(from, m.gen)
			changes[m.name] = m.changes
		}
	}
	w.h.Rebalances = append(w.h.Rebalances, Rebalance{Group: g, Cause: cause, Start: time.Now(), FromGen: from, ToGen: -1})
	w.pending = append(w.pending, pendingRebalance{len(w.h.Rebalances) - 1, changes})
}

// settle ends the pending rebalances whose groups settled (w.mu held):
// every live member got a new generation since the change began (not
// necessarily a higher number: a coordinator that failed over before it
// wrote a generation hands that number out again), all the same one, and
// every partition is owned by exactly one of them.
func (w *groupWorkload) settle(at time.Time) {
	w.pending = slices.DeleteFunc(w.pending, func(pr pendingRebalance) bool {
		r := &w.h.Rebalances[pr.i]
		owners := map[TP]int{}
		gen, live := int32(-1), 0
		for _, m := range w.members {
			if m.group != r.Group || m.leaving {
				continue
			}
			if m.changes <= pr.changes[m.name] || m.gen < 0 || (live > 0 && m.gen != gen) {
				return false
			}
			live++
			gen = m.gen
			for tp := range m.owned {
				owners[tp]++
			}
		}
		if live == 0 || len(owners) != len(w.tps) {
			return false
		}
		for _, n := range owners {
			if n != 1 {
				return false
			}
		}
		r.End, r.ToGen = at, gen
		return true
	})
}

// watchGenerations records a member's new generation when it changes
// without an assignment callback (a cooperative member that keeps its
// partitions), every 100 ms until ctx ends.
func (w *groupWorkload) watchGenerations(ctx context.Context) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		w.mu.Lock()
		var ms []*member
		for _, m := range w.members {
			if !m.leaving {
				ms = append(ms, m)
			}
		}
		w.mu.Unlock()
		for _, m := range ms {
			id, gen := m.cl.GroupMetadata()
			w.mu.Lock()
			if gen >= 0 && gen != m.gen && !m.leaving {
				m.record("generation", id, gen, nil, time.Now())
			}
			w.mu.Unlock()
		}
	}
}

// settled waits until no rebalance is pending or limit passed; one still
// pending after limit stays unsettled (End zero) for good. A run that
// ends first leaves it pending: stop drops it as cut off.
func (w *groupWorkload) settled(ctx context.Context, limit time.Duration) {
	ok := until(ctx, limit, func(context.Context) bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.pending) == 0
	})
	if !ok && ctx.Err() == nil {
		w.mu.Lock()
		for _, pr := range w.pending {
			r := &w.h.Rebalances[pr.i]
			var names []string
			for name, m := range w.members {
				if m.group == r.Group && !m.leaving {
					names = append(names, name)
				}
			}
			slices.Sort(names)
			for _, name := range names {
				m := w.members[name]
				r.Unsettled += fmt.Sprintf("%s generation %d (changed %d times since) owns %v; ", name, m.gen, m.changes-pr.changes[name], slices.SortedFunc(mapKeysTP(m.owned), cmpTP))
			}
		}
		w.pending = nil
		w.mu.Unlock()
	}
}

// churn makes a member of a random group leave, and a new one join, about
// every GroupChurn (seeded), until ctx ends. The negative control's wrong
// member stays.
func (w *groupWorkload) churn(ctx context.Context) {
	for {
		d := w.o.GroupChurn/2 + time.Duration(w.rng.Int64N(int64(w.o.GroupChurn)))
		if !wait(ctx, d) {
			return
		}
		g := w.groups[w.rng.IntN(len(w.groups))]
		w.mu.Lock()
		var names []string
		for name, m := range w.members {
			if m.group == g && !m.wrong && !m.leaving {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		var m *member
		if len(names) > 0 {
			m = w.members[names[w.rng.IntN(len(names))]]
			w.beginRebalance(g, m.name+" left")
		}
		w.mu.Unlock()
		if m != nil {
			m.leave()
			w.settled(ctx, 30*time.Second)
		}
		if ctx.Err() != nil {
			return
		}
		w.mu.Lock()
		w.beginRebalance(g, fmt.Sprintf("%s/m%d joined", g, w.next+1))
		w.mu.Unlock()
		if _, err := w.join(ctx, g, false); err != nil {
			fmt.Fprintf(w.out, "soak: group %s: a new member could not start: %v\n", g, err)
		}
		w.settled(ctx, 30*time.Second)
	}
}

// snapshots reads every group's committed offsets back every period until
// ctx ends.
func (w *groupWorkload) snapshots(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, g := range w.groups {
			if s, err := w.fetchOffsets(ctx, g); err == nil {
				w.mu.Lock()
				w.h.Snapshots = append(w.h.Snapshots, s)
				w.mu.Unlock()
			}
		}
	}
}

// fetchOffsets reads g's committed offsets of the soak topic (-1: none).
func (w *groupWorkload) fetchOffsets(ctx context.Context, g string) (OffsetSnapshot, error) {
	s := OffsetSnapshot{Group: g, Offsets: map[TP]int64{}, Sent: time.Now()}
	fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	offs, err := w.adm.FetchOffsets(fctx, g)
	s.Done = time.Now()
	if err != nil {
		return s, err
	}
	for _, tp := range w.tps {
		s.Offsets[tp] = -1
		if o, ok := offs.Lookup(tp.Topic, tp.Partition); ok {
			if o.Err != nil {
				return s, fmt.Errorf("%s: %w", tp, o.Err)
			}
			s.Offsets[tp] = o.At
		}
	}
	return s, nil
}

// stop makes every member leave, then reads each group's committed offsets
// once more (retrying for up to limit) and returns the history.
func (w *groupWorkload) stop(ctx context.Context, limit time.Duration) *GroupHistory {
	w.mu.Lock()
	// A rebalance still pending was cut off by the end (the churn
	// stopped with the workload): not a rebalance that never settled.
	cut := map[int]bool{}
	for _, pr := range w.pending {
		cut[pr.i] = true
	}
	w.pending = nil
	var kept []Rebalance
	for i, r := range w.h.Rebalances {
		if !cut[i] {
			kept = append(kept, r)
		}
	}
	w.h.Rebalances = kept
	var ms []*member
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
	w.h.Final, w.h.FinalErr = map[string]map[TP]int64{}, map[string]string{}
	w.h.FinalAt = time.Now()
	for _, g := range w.groups {
		var last error
		ok := until(ctx, limit, func(ctx context.Context) bool {
			s, err := w.fetchOffsets(ctx, g)
			if err == nil {
				w.h.Final[g] = s.Offsets
			}
			last = err
			return err == nil
		})
		if !ok {
			w.h.FinalErr[g] = fmt.Sprint(last)
		}
	}
	return w.h
}

// coordinator asks the nodes in turn (but skip) which node coordinates g
// (findCoordinator).
func (f *faulter) coordinator(ctx context.Context, g string, skip int32) (int32, error) {
	return f.findCoordinator(ctx, 0, g, skip)
}

// killCoordinator is the kill-coordinator fault: SIGKILL the node that
// coordinates a group (FindCoordinator's answer: the leader of the
// group's __consumer_offsets partition), restart it after hold. Its effect
// is the partition led in a later leader epoch (by another node, or by
// the same one after its restart when no other was in the ISR) and
// FindCoordinator naming that leader.
func (f *faulter) killCoordinator(ctx context.Context, fl *Fault, st step, hold time.Duration) (skipped string, err error) {
	if len(f.groups) == 0 {
		return "no consumer groups in this run (--groups 0)", nil
	}
	g := f.groups[st.Partition%len(f.groups)]
	var old int32
	var tp TP
	var p kadm.PartitionDetail
	if !until(ctx, 20*time.Second, func(ctx context.Context) bool {
		old, err = f.coordinator(ctx, g, -1)
		if err != nil || old < 0 {
			return false
		}
		var md kadm.Metadata
		if md, err = f.adm.Metadata(ctx, group.OffsetsTopic); err != nil {
			return false
		}
		ps := md.Topics[group.OffsetsTopic].Partitions
		if len(ps) == 0 {
			err = fmt.Errorf("%s not in the metadata", group.OffsetsTopic)
			return false
		}
		tp = TP{group.OffsetsTopic, group.Partition(g, int32(len(ps)))}
		p = ps[tp.Partition]
		if p.Leader != old {
			err = fmt.Errorf("FindCoordinator names node %d, the metadata %d as the leader of %s", old, p.Leader, tp)
			return false
		}
		return true
	}) {
		return fmt.Sprintf("no coordinator of %s for 20 s: %v", g, err), nil
	}
	fl.Target = fmt.Sprintf("node %d (coordinator of %s, leader of %s)", old, g, tp)
	fl.Nodes = []int32{old}
	var seen <-chan failover
	err = f.killRestart(ctx, []int32{old}, hold, func() {
		moved := f.newLeader(tp, p.LeaderEpoch)
		seen = f.watch(ctx, time.Now(), func(ctx context.Context) (int32, bool) {
			l, ok := moved(ctx)
			if !ok {
				return -1, false
			}
			id, err := f.coordinator(ctx, g, -1)
			return id, err == nil && id == l
		})
	})
	if seen != nil {
		provedFailover(fl, "coordinator of "+g, <-seen)
	}
	f.electAfterKill(ctx, fl, err)
	return "", err
}

// addOffsetsTopic adds the partitions of __consumer_offsets to set in runs
// with groups or the exactly-once pipeline, and those of
// __transaction_state in runs with the pipeline: the operator's unclean
// election covers the coordinators' partitions too (they have the run's
// durability, alignInternalTopic).
func (f *faulter) addOffsetsTopic(ctx context.Context, set kadm.TopicsSet) {
	var topics []string
	if len(f.groups) > 0 || f.txnIDs != nil {
		topics = append(topics, group.OffsetsTopic)
	}
	if f.txnIDs != nil {
		topics = append(topics, txn.StateTopic)
	}
	for _, t := range topics {
		md, err := f.adm.Metadata(ctx, t)
		if err != nil {
			continue
		}
		for p := range md.Topics[t].Partitions {
			set.Add(t, p)
		}
	}
}

// shortOffsets replaces the partitions of __consumer_offsets in a list of
// partition names by their count: an election after a power loss covers
// most of its 50.
func shortOffsets(names []string) []string {
	out := slices.Clone(names)
	for _, t := range []string{group.OffsetsTopic, txn.StateTopic} {
		n := 0
		out = slices.DeleteFunc(out, func(s string) bool {
			if strings.HasPrefix(s, t+"/") {
				n++
				return true
			}
			return false
		})
		if n > 0 {
			out = append(out, fmt.Sprintf("%s (%d partitions)", t, n))
		}
	}
	return out
}
