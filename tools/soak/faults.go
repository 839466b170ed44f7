package soak

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-log/sluice/tools/cluster"
	"github.com/sluice-log/sluice/tools/soak/powerfs"
)

// Fault kinds.
const (
	FaultKillLeader     = "kill-leader"
	FaultKillController = "kill-controller"
	FaultPause          = "pause"
	FaultPowerLoss      = "power-loss"
	FaultPartition      = "net-partition"
	// FaultKillCoordinator kills the coordinator of a consumer group
	// (groupsrun.go); only in runs with groups.
	FaultKillCoordinator = "kill-coordinator"
	// FaultKillTxnCoordinator kills the transaction coordinator of one
	// of the exactly-once pipeline's transactional ids (eosrun.go); only
	// in runs with the pipeline.
	FaultKillTxnCoordinator = "kill-txn-coordinator"
	// NodeExited is not a fault the schedule injects: a node found dead
	// between faults, which the faulter restarts.
	NodeExited = "node-exited"
)

// AllFaults is every fault kind, the default of --faults.
var AllFaults = []string{FaultKillLeader, FaultKillController, FaultPause, FaultPowerLoss, FaultPartition, FaultKillCoordinator, FaultKillTxnCoordinator}

// faulter injects faults one at a time: rest, inject, hold, heal, next.
// The schedule (seeded) fixes the sequence of kinds, partitions and
// durations; which node a "leader of partition p" is depends on the run.
type faulter struct {
	l     cluster.Layout
	exe   string // the sluice binary nodes restart with
	adm   *kadm.Client
	cl    *kgo.Client // adm's client, for requests kadm has no call for
	sched *schedule
	tps   []TP
	// ctps are the compacted topic's partitions (compact.go): faults
	// pick their targets from tps, but metadata, power losses and the
	// operator's elections cover both.
	ctps  []TP
	out   io.Writer
	power *powerLoss // nil: power loss not enabled
	net   *netFaults // nil: network partitions not possible here
	// operatorElects: after a power loss or a kill, elect leaders
	// uncleanly where none can be elected cleanly (page-cache durability:
	// a replica restarted after an unclean shutdown leaves a stale ISR
	// entry, KIP-966), as an operator would with `sluice leaders elect
	// --type unclean`: after a power loss so that the loss shows, after a
	// kill of a partition's last in-sync replica so that it is not down
	// for the rest of the run. Loss such an election causes after a kill
	// is no power loss's: the checker reports it as unexplained.
	operatorElects bool
	// acks counts acknowledged records by partition (the scenarios wait
	// on it).
	acks *ackCounts
	// groups are the consumer groups whose coordinators
	// kill-coordinator picks from.
	groups []string
	// txnIDs are the exactly-once pipeline's live transactional ids
	// (kill-txn-coordinator picks from them); nil: no pipeline. etps are
	// its output partitions (power losses and elections cover them).
	txnIDs func() []string
	etps   []TP
	faults []Fault
	// hosts: the docker backend's containers (docker.go); nil for node
	// processes.
	hosts *dockerHosts
}

// run injects faults until ctx ends or the last heal time comes: every
// fault heals by lastHeal; a long hold is shortened to fit, and the
// schedule ends when nothing fits.
func (f *faulter) run(ctx context.Context, lastHeal time.Time) {
	for {
		st := f.sched.fit(f.sched.next(), time.Until(lastHeal))
		if !wait(ctx, st.Rest) {
			return
		}
		if f.hosts != nil {
			f.restartDeadDocker(ctx)
		} else {
			f.restartDead(ctx)
		}
		hold := st.Hold
		if room := time.Until(lastHeal); hold > room {
			if room < time.Second {
				return
			}
			hold = room
		}
		fl := f.inject(ctx, st, hold)
		f.faults = append(f.faults, fl)
		f.print(fl)
	}
}

// print says what a fault did.
func (f *faulter) print(fl Fault) {
	switch {
	case fl.Skipped != "":
		fmt.Fprintf(f.out, "fault %-15s skipped: %s\n", fl.Kind, fl.Skipped)
	case fl.NoEffect != "":
		fmt.Fprintf(f.out, "fault %-15s %s: %v, healed; NO EFFECT: %s\n", fl.Kind, fl.Target, fl.Healed.Sub(fl.Start).Round(100*time.Millisecond), fl.NoEffect)
	default:
		fmt.Fprintf(f.out, "fault %-15s %s: %v, healed; %s\n", fl.Kind, fl.Target, fl.Healed.Sub(fl.Start).Round(100*time.Millisecond), fl.Effect)
	}
}

// layout is the cluster's nodes now: the docker backend's current
// containers (a host loss replaces one), else the process cluster's.
func (f *faulter) layout() cluster.Layout {
	if f.hosts != nil {
		return f.hosts.layout()
	}
	return f.l
}

// restartDead restarts every node that exited by itself (no fault of ours
// is in progress between steps) and records it as a NodeExited event, so
// that the windows it caused are put down to it and the report shows it.
func (f *faulter) restartDead(ctx context.Context) {
	for _, n := range f.l.Nodes {
		if cluster.Alive(f.l, n.ID) {
			continue
		}
		fl := Fault{Kind: NodeExited, Start: time.Now(), Nodes: []int32{n.ID},
			Target: fmt.Sprintf("node %d exited by itself (see %s); restarted", n.ID, n.LogFile)}
		// Why it exited is in the last lines it wrote; the restart appends
		// to the same file, so keep them now (a test's directory is gone
		// by the time anyone reads the report).
		fl.Effect = "its log ended: " + logTail(n.LogFile, 8)
		rctx, cancel := context.WithTimeout(ctx, 40*time.Second)
		if err := cluster.RestartWith(rctx, f.l, n.ID, f.exe); err != nil {
			fl.Target += " (error: " + err.Error() + ")"
		}
		cancel()
		fl.Healed = time.Now()
		f.faults = append(f.faults, fl)
		fmt.Fprintf(f.out, "NODE EXITED    %s; %s\n", fl.Target, fl.Effect)
	}
}

// inject runs one fault to its heal.
func (f *faulter) inject(ctx context.Context, st step, hold time.Duration) Fault {
	if f.hosts != nil {
		return f.injectDocker(ctx, st, hold)
	}
	kind, tp := st.Kind, f.tps[st.Partition]
	fl := Fault{Kind: kind, Start: time.Now()}
	skip := func(why string) Fault { fl.Skipped, fl.Healed = why, time.Now(); return fl }
	var err error
	switch kind {
	case FaultKillLeader, FaultPause:
		if _, _, lerr := f.leader(ctx, tp); lerr != nil {
			return skip(lerr.Error())
		}
		// The leader and its epoch from one answer: the failover is a
		// leader in a later epoch.
		p, perr := f.partition(ctx, tp)
		if perr != nil || p.Leader < 0 {
			return skip(fmt.Sprintf("%s: no leader in the metadata (%v)", tp, perr))
		}
		leader := p.Leader
		fl.Target = fmt.Sprintf("node %d (leader of %s)", leader, tp)
		fl.Nodes = []int32{leader}
		if kind == FaultPause {
			err = f.pause(ctx, &fl, leader, hold)
			break
		}
		var seen <-chan failover
		err = f.killRestart(ctx, []int32{leader}, hold, func() { seen = f.watch(ctx, time.Now(), f.newLeader(tp, p.LeaderEpoch)) })
		if seen != nil {
			provedFailover(&fl, "leader of "+tp.String(), <-seen)
		}
		f.electAfterKill(ctx, &fl, err)
	case FaultKillController:
		controller, term, qerr := f.quorumLeader(ctx)
		if qerr != nil {
			return skip("describe quorum: " + qerr.Error())
		}
		if controller < 0 {
			return skip("no active controller to kill")
		}
		fl.Target = fmt.Sprintf("node %d (active controller)", controller)
		fl.Nodes = []int32{controller}
		var seen <-chan failover
		err = f.killRestart(ctx, []int32{controller}, hold, func() { seen = f.watch(ctx, time.Now(), f.newController(term)) })
		if seen != nil {
			provedFailover(&fl, "active controller", <-seen)
		}
		f.electAfterKill(ctx, &fl, err)
	case FaultKillCoordinator:
		why, cerr := f.killCoordinator(ctx, &fl, st, hold)
		if why != "" {
			return skip(why)
		}
		err = cerr
	case FaultKillTxnCoordinator:
		why, cerr := f.killTxnCoordinator(ctx, &fl, st, hold)
		if why != "" {
			return skip(why)
		}
		err = cerr
	case FaultPowerLoss:
		if f.power == nil {
			return skip("power loss is off (--power-loss=false)")
		}
		_, replicas, lerr := f.leader(ctx, tp)
		if lerr != nil {
			return skip(lerr.Error())
		}
		fl.Target = fmt.Sprintf("nodes %v (every replica of %s)", replicas, tp)
		fl.Nodes = replicas
		err = f.powerLoss(ctx, &fl, replicas, hold)
	case FaultPartition:
		if f.net == nil {
			return skip("network partitions need root, iptables and per-node addresses (--net-faults)")
		}
		fromController := st.FromController
		leader, replicas, lerr := f.leader(ctx, tp)
		if lerr != nil {
			return skip(lerr.Error())
		}
		var others []int32
		for _, r := range replicas {
			if r != leader {
				others = append(others, r)
			}
		}
		md, merr := f.metadata(ctx)
		if merr != nil {
			return skip(merr.Error())
		}
		switch {
		case fromController && (md.Controller < 0 || md.Controller == leader):
			fromController = false
			if len(others) == 0 {
				return skip(fmt.Sprintf("the leader of %s is the controller and has no followers", tp))
			}
		case !fromController && len(others) == 0:
			fromController = md.Controller >= 0 && md.Controller != leader
			if !fromController {
				return skip(fmt.Sprintf("%s has no followers and its leader is the controller", tp))
			}
		}
		fl.Nodes = []int32{leader}
		if fromController {
			fl.Target = fmt.Sprintf("node %d (leader of %s) from the controller %d", leader, tp, md.Controller)
		} else {
			fl.Target = fmt.Sprintf("node %d (leader of %s) from its followers %v", leader, tp, others)
		}
		var dropped int64
		dropped, err = f.net.isolate(ctx, leader, others, md.Controller, fromController, hold)
		fl.PacketsDropped = dropped
		if dropped > 0 {
			fl.Effect = fmt.Sprintf("%d packets dropped", dropped)
		} else {
			fl.NoEffect = "its rules dropped no packet"
		}
	}
	fl.Healed = time.Now()
	if err != nil {
		fl.Target += " (error: " + err.Error() + ")"
	}
	return fl
}

// allTPs are the partitions of every topic of the run.
func (f *faulter) allTPs() []TP { return slices.Concat(f.tps, f.ctps, f.etps) }

func (f *faulter) metadata(ctx context.Context) (kadm.Metadata, error) {
	var topics []string
	for _, tp := range f.allTPs() {
		if !slices.Contains(topics, tp.Topic) {
			topics = append(topics, tp.Topic)
		}
	}
	var last error
	for range 5 {
		mctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		md, err := f.adm.Metadata(mctx, topics...)
		cancel()
		if err == nil {
			return md, nil
		}
		last = err
		if !wait(ctx, 500*time.Millisecond) {
			break
		}
	}
	return kadm.Metadata{}, fmt.Errorf("no metadata: %v", last)
}

// leader finds tp's leader and replicas in the metadata, waiting up to
// 20 s for the partition to have one (after a power loss or a kill the
// election takes a session timeout).
func (f *faulter) leader(ctx context.Context, tp TP) (int32, []int32, error) {
	deadline := time.Now().Add(20 * time.Second)
	for {
		md, err := f.metadata(ctx)
		if err != nil {
			return -1, nil, err
		}
		p, ok := md.Topics[tp.Topic].Partitions[tp.Partition]
		if ok && p.Leader >= 0 {
			return p.Leader, p.Replicas, nil
		}
		if time.Now().After(deadline) || !wait(ctx, 500*time.Millisecond) {
			return -1, nil, fmt.Errorf("%s has had no leader for 20 s", tp)
		}
	}
}

// powerLoss SIGKILLs every node in ids at once, cuts each one's files
// back to what it had fsynced, waits hold, restarts them and (page-cache
// durability) elects leaders uncleanly as an operator must. Its effect is
// what it dropped: nothing dropped is no effect (a plain kill).
func (f *faulter) powerLoss(ctx context.Context, fl *Fault, ids []int32, hold time.Duration) error {
	var st powerfs.Stats
	var errs []error
	err := f.killRestart(ctx, ids, hold, func() {
		for _, id := range ids {
			s, dropped, err := f.power.drop(f.l, id, f.allTPs())
			st.Add(s)
			fl.Dropped = append(fl.Dropped, dropped...)
			errs = append(errs, err)
		}
	})
	fl.BytesDropped, fl.FilesDropped = st.BytesDropped, st.Files()
	// With sync durability a cut may find everything fsynced; but a
	// journal without a line means the nodes did not write through
	// powerfs: the power loss was a plain kill.
	switch derr := errors.Join(errs...); {
	case derr != nil:
		fl.NoEffect = "power loss not simulated: " + derr.Error()
	case st.Events == 0:
		fl.NoEffect = "the nodes' journals were empty: nothing went through powerfs, the power loss was a plain kill"
	default:
		fl.Effect = "dropped " + st.String() + droppedSummary(fl.Dropped)
	}
	if err == nil && f.operatorElects {
		fl.Target += "; " + f.electUnclean(ctx)
	}
	return err
}

// noElectionNeeded is what electUnclean says when every partition had a
// leader.
const noElectionNeeded = "operator's unclean election: none needed"

// electAfterKill: with page-cache durability, the operator's unclean
// election after a kill (see operatorElects), said in the fault's target
// only when it elected someone.
func (f *faulter) electAfterKill(ctx context.Context, fl *Fault, err error) {
	if err != nil || !f.operatorElects {
		return
	}
	if what := f.electUnclean(ctx); what != noElectionNeeded {
		fl.Target += "; " + what
	}
}

// killRestart SIGKILLs every node in ids at once, runs killed (if set)
// once they are all gone, waits hold and restarts them.
func (f *faulter) killRestart(ctx context.Context, ids []int32, hold time.Duration, killed func()) error {
	var errs []string
	for _, id := range ids {
		kctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := cluster.Kill(kctx, f.l, id); err != nil {
			errs = append(errs, err.Error())
		}
		cancel()
	}
	if killed != nil {
		killed()
	}
	wait(ctx, hold)
	for _, id := range ids {
		rctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
		if err := cluster.RestartWith(rctx, f.l, id, f.exe); err != nil {
			errs = append(errs, err.Error())
		}
		cancel()
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// pause stops a node with SIGSTOP for hold, then continues it (always,
// even when ctx ends first). Its effect is how long the kernel showed the
// process stopped.
func (f *faulter) pause(ctx context.Context, fl *Fault, id int32, hold time.Duration) error {
	at, err := f.stop(ctx, []int32{id})
	if err == nil {
		wait(ctx, hold)
	}
	if rerr := f.resume([]int32{id}); err == nil {
		err = rerr
	}
	if at.IsZero() {
		fl.NoEffect = "the process was not seen stopped"
		return err
	}
	fl.Stopped = time.Since(at)
	fl.Effect = fmt.Sprintf("stopped for %v", fl.Stopped.Round(10*time.Millisecond))
	return err
}

// electUnclean waits until every node is ready again (registered with
// this run's epoch: /readyz), then elects leaders uncleanly for the
// partitions that have none, and says what it did.
func (f *faulter) electUnclean(ctx context.Context) string {
	ectx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := waitReady(ectx, f.layout()); err != nil {
		return "no unclean election: " + err.Error()
	}
	set := kadm.TopicsSet{}
	for _, tp := range f.allTPs() {
		set.Add(tp.Topic, tp.Partition)
	}
	f.addOffsetsTopic(ectx, set)
	var elected []string
	for {
		res, err := f.adm.ElectLeaders(ectx, kadm.ElectLiveReplica, set)
		pending := 0
		if err == nil {
			for t, ps := range res {
				for p, r := range ps {
					switch {
					case r.Err == nil:
						elected = append(elected, TP{t, p}.String())
						set.Delete(t, p)
					case errors.Is(r.Err, kerr.ElectionNotNeeded):
						set.Delete(t, p)
					default:
						pending++
					}
				}
			}
		}
		if err == nil && pending == 0 {
			break
		}
		if !wait(ectx, time.Second) {
			slices.Sort(elected)
			return fmt.Sprintf("operator's unclean election: %v elected, %d partition(s) still failing (%v)", elected, pending, err)
		}
	}
	slices.Sort(elected)
	if len(elected) == 0 {
		return noElectionNeeded
	}
	return fmt.Sprintf("operator's unclean election of %s", strings.Join(shortOffsets(elected), " "))
}

// waitReady waits until every node of l answers 200 on /readyz.
func waitReady(ctx context.Context, l cluster.Layout) error {
	hc := &http.Client{Timeout: 2 * time.Second}
	for {
		ready := 0
		for _, n := range l.Nodes {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.HTTP+"/readyz", nil)
			if err != nil {
				return err
			}
			if resp, err := hc.Do(req); err == nil {
				_ = resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					ready++
				}
			}
		}
		if ready == len(l.Nodes) {
			return nil
		}
		if !wait(ctx, 250*time.Millisecond) {
			return fmt.Errorf("%d of %d nodes ready", ready, len(l.Nodes))
		}
	}
}

// wait waits d unless ctx ends first; it reports whether d passed.
func wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// logTail returns the last n lines of the file at path, joined by " | ".
func logTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	const most = 16 << 10
	st, err := f.Stat()
	if err != nil {
		return err.Error()
	}
	off := max(0, st.Size()-most)
	b := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(b, off); err != nil && !errors.Is(err, io.EOF) {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}
