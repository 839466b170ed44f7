package soak

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/sluice-log/sluice/tools/cluster"
)

// Scripted scenarios: a negative control does not wait for the random
// schedule to stumble on the conditions of its loss; it runs the shortest
// known path to that loss, on a partition the seed picks, again and again
// while the run has room for another.
const (
	// ScenarioUnclean is the Jepsen Kafka (2013) sequence: the followers
	// are stopped until they leave the ISR, the leader alone
	// acknowledges (min.insync.replicas=1), the leader is killed, a
	// stale follower comes back and is elected uncleanly.
	ScenarioUnclean = "scenario-unclean"
	// ScenarioAcks1: the followers are stopped, the leader acknowledges
	// acks=1 records no follower fetched, the leader is killed, a
	// follower (still in the ISR) is elected cleanly without them.
	ScenarioAcks1 = "scenario-acks1"
	// ScenarioPageCache: right after the partition acknowledged records
	// (page-cache durability: none fsynced), every replica loses power;
	// the operator elects uncleanly from what survived.
	ScenarioPageCache = "scenario-page-cache"
	// ScenarioCompaction is ScenarioAcks1 on a partition of the
	// compacted topic, whose producers use acks=1: the latest values of
	// the keys written in its window are lost, and the compaction
	// invariants must say so.
	ScenarioCompaction = "scenario-compaction"
)

// scenarioOf is the scenario of a negative control.
func scenarioOf(control string) string {
	switch control {
	case NegUnclean:
		return ScenarioUnclean
	case NegAcks1:
		return ScenarioAcks1
	case NegPageCache:
		return ScenarioPageCache
	case NegCompaction:
		return ScenarioCompaction
	}
	return ""
}

const (
	// scenarioAcks is how many records the partition must acknowledge in
	// the scenario's window (more than one produce request, so that a
	// fetch answer already on its way to a stopped follower cannot hold
	// them all).
	scenarioAcks = 50
	// scenarioRoom is how much run a scenario after the first needs.
	scenarioRoom = 45 * time.Second
	// controlTail is how long the workload goes on after the last
	// scenario: the new leader takes writes at the offsets it lost.
	controlTail = 2 * time.Second
)

// runScenarios runs the scenario kind once, then again after a rest while
// another fits before end.
func (f *faulter) runScenarios(ctx context.Context, kind string, end time.Time) {
	for i := 0; ctx.Err() == nil; i++ {
		if i > 0 && (time.Until(end) < scenarioRoom || !wait(ctx, f.sched.gap)) {
			return
		}
		tps := f.tps
		if kind == ScenarioCompaction {
			tps = f.ctps
		}
		tp := tps[f.sched.rng.IntN(len(tps))]
		var fl Fault
		switch kind {
		case ScenarioUnclean:
			fl = f.stopKillElect(ctx, kind, tp, true)
		case ScenarioAcks1, ScenarioCompaction:
			fl = f.stopKillElect(ctx, kind, tp, false)
		case ScenarioPageCache:
			fl = f.powerLossAfterAcks(ctx, tp)
		default:
			return
		}
		f.faults = append(f.faults, fl)
		f.print(fl)
	}
}

// until polls cond every 20 ms until it holds (true) or limit passes.
func until(ctx context.Context, limit time.Duration, cond func(context.Context) bool) bool {
	deadline := time.Now().Add(limit)
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		ok := cond(cctx)
		cancel()
		if ok {
			return true
		}
		if time.Now().After(deadline) || !wait(ctx, 20*time.Millisecond) {
			return false
		}
	}
}

// waitAcks waits until tp acknowledged scenarioAcks records more than it
// had at the call; it returns how many it did.
func (f *faulter) waitAcks(ctx context.Context, tp TP, limit time.Duration) (int64, bool) {
	base := f.acks.get(tp)
	ok := until(ctx, limit, func(context.Context) bool { return f.acks.get(tp) >= base+scenarioAcks })
	return f.acks.get(tp) - base, ok
}

// stopKillElect is the unclean and the acks1 scenario. unclean: the
// followers stay stopped until only the leader is in the ISR, so that
// acks=all with min.insync.replicas=1 completes on the leader alone; the
// new leader comes from an unclean election (the controller's, as the
// topic allows it, or the operator's ElectLeaders, whichever is first).
// acks1: the followers are stopped only as long as it takes the leader to
// acknowledge, so they stay in the ISR and the new leader is clean.
func (f *faulter) stopKillElect(ctx context.Context, kind string, tp TP, unclean bool) Fault {
	fl := Fault{Kind: kind, Start: time.Now()}
	done := func(noEffect string) Fault {
		fl.Healed = time.Now()
		if noEffect != "" {
			fl.NoEffect = noEffect
		}
		return fl
	}
	if _, _, err := f.leader(ctx, tp); err != nil {
		fl.Skipped = err.Error()
		return done("")
	}
	var p kadm.PartitionDetail
	// A clean start: every replica in the ISR (acks1 needs the followers
	// there to be electable; unclean wants them to leave it now).
	until(ctx, 20*time.Second, func(ctx context.Context) bool {
		var err error
		p, err = f.partition(ctx, tp)
		return err == nil && p.Leader >= 0 && len(p.ISR) == len(p.Replicas)
	})
	leader := p.Leader
	followers := slices.DeleteFunc(slices.Clone(p.Replicas), func(r int32) bool { return r == leader })
	fl.Nodes = p.Replicas
	fl.Target = fmt.Sprintf("%s: leader %d, followers %v", tp, leader, followers)
	if leader < 0 || len(followers) == 0 {
		fl.Skipped = fmt.Sprintf("%s needs a leader and followers (leader %d, replicas %v)", tp, leader, p.Replicas)
		return done("")
	}
	// The producers must be writing to tp before a majority of the nodes
	// stops: a client still fetching its first metadata from a stopped
	// node would wait out its request timeout.
	if n, ok := f.waitAcks(ctx, tp, 30*time.Second); !ok {
		return done(fmt.Sprintf("%s acknowledged only %d records in 30 s before the scenario", tp, n))
	}
	stoppedAt, err := f.stop(ctx, followers)
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			if err := f.resume(followers); err != nil {
				fl.Target += " (resume: " + err.Error() + ")"
			}
		}
	}
	defer resume()
	if err != nil {
		return done("followers not stopped: " + err.Error())
	}
	var effect string
	if unclean {
		left := until(ctx, 30*time.Second, func(ctx context.Context) bool {
			p, err := f.partition(ctx, tp)
			return err == nil && p.Leader == leader && slices.Equal(p.ISR, []int32{leader})
		})
		if !left {
			return done(fmt.Sprintf("followers %v still in the ISR of %s 30 s after they stopped", followers, tp))
		}
		effect = fmt.Sprintf("followers %v stopped, out of the ISR after %v; ", followers, time.Since(stoppedAt).Round(10*time.Millisecond))
	} else {
		effect = fmt.Sprintf("followers %v stopped; ", followers)
	}
	n, ok := f.waitAcks(ctx, tp, 15*time.Second)
	if !ok {
		return done(fmt.Sprintf("%s acknowledged only %d records in 15 s with its followers stopped", tp, n))
	}
	effect += fmt.Sprintf("%d records acknowledged by node %d alone; ", n, leader)
	kctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	err = cluster.Kill(kctx, f.l, leader)
	cancel()
	if err != nil {
		return done(fmt.Sprintf("leader %d not killed: %v", leader, err))
	}
	killed := time.Now()
	resume()
	effect += fmt.Sprintf("node %d killed, followers continued after %v stopped; ", leader, killed.Sub(stoppedAt).Round(10*time.Millisecond))
	set := kadm.TopicsSet{}
	set.Add(tp.Topic, tp.Partition)
	var lastElect time.Time
	seen := f.watch(ctx, killed, func(ctx context.Context) (int32, bool) {
		p, err := f.partition(ctx, tp)
		if err == nil && p.Leader >= 0 && slices.Contains(followers, p.Leader) {
			return p.Leader, true
		}
		if unclean && time.Since(lastElect) > 2*time.Second {
			// What an operator would do: sluice leaders elect --type
			// unclean. Refused while the dead leader is not yet fenced.
			lastElect = time.Now()
			_, _ = f.adm.ElectLeaders(ctx, kadm.ElectLiveReplica, set)
		}
		return -1, false
	})
	r := <-seen
	rctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	if err := cluster.RestartWith(rctx, f.l, leader, f.exe); err != nil {
		fl.Target += " (restart: " + err.Error() + ")"
	}
	cancel()
	how := "cleanly"
	if unclean {
		how = "uncleanly"
	}
	if r.err != nil {
		return done(effect + fmt.Sprintf("no follower elected %s: %v", how, r.err))
	}
	id := r.id
	fl.NewLeader, fl.Failover, fl.Stopped = &id, r.took, killed.Sub(stoppedAt)
	fl.Effect = effect + fmt.Sprintf("node %d elected %s after %v; node %d restarted", id, how, r.took.Round(10*time.Millisecond), leader)
	return done("")
}

// powerLossAfterAcks is the page-cache scenario: as soon as tp
// acknowledged records, every replica loses power (powerLoss: kill, cut
// to what was fsynced, restart, unclean election by the operator).
func (f *faulter) powerLossAfterAcks(ctx context.Context, tp TP) Fault {
	fl := Fault{Kind: ScenarioPageCache, Start: time.Now()}
	_, replicas, err := f.leader(ctx, tp)
	if err != nil {
		fl.Skipped, fl.Healed = err.Error(), time.Now()
		return fl
	}
	fl.Nodes = replicas
	fl.Target = fmt.Sprintf("nodes %v (every replica of %s)", replicas, tp)
	if n, ok := f.waitAcks(ctx, tp, 15*time.Second); !ok {
		fl.NoEffect, fl.Healed = fmt.Sprintf("%s acknowledged only %d records in 15 s", tp, n), time.Now()
		return fl
	}
	if f.power == nil {
		fl.NoEffect, fl.Healed = "power loss is off (--power-loss=false)", time.Now()
		return fl
	}
	if err := f.powerLoss(ctx, &fl, replicas, 0); err != nil {
		fl.Target += " (error: " + err.Error() + ")"
	}
	if fl.NoEffect == "" && fl.BytesDropped == 0 {
		fl.NoEffect = "the power loss dropped no byte: nothing acknowledged was left unsynced"
	}
	fl.Healed = time.Now()
	return fl
}
