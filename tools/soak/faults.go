package soak

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/sluice-log/sluice/tools/cluster"
)

// Fault kinds.
const (
	FaultKillLeader     = "kill-leader"
	FaultKillController = "kill-controller"
	FaultPause          = "pause"
	FaultPowerLoss      = "power-loss"
	FaultPartition      = "net-partition"
)

// AllFaults is every fault kind, the default of --faults.
var AllFaults = []string{FaultKillLeader, FaultKillController, FaultPause, FaultPowerLoss, FaultPartition}

// weights make leader kills the most common fault.
var weights = map[string]int{FaultKillLeader: 4, FaultKillController: 2, FaultPause: 2, FaultPowerLoss: 1, FaultPartition: 2}

// faulter injects faults one at a time: inject, hold, heal, rest, next.
// The seed fixes the sequence of kinds, partitions and durations; which
// node a "leader of partition p" is depends on the run.
type faulter struct {
	l      cluster.Layout
	adm    *kadm.Client
	rng    *rand.Rand
	tps    []TP
	kinds  []string
	gap    time.Duration
	out    io.Writer
	power  *powerLoss // nil: power loss not enabled
	net    *netFaults // nil: network partitions not possible here
	faults []Fault
}

// run injects faults until ctx ends or the next one could not heal
// before until.
func (f *faulter) run(ctx context.Context, until time.Time) {
	for {
		rest := f.gap/2 + time.Duration(f.rng.Int64N(int64(f.gap)))
		if !wait(ctx, rest) {
			return
		}
		kind := f.pick()
		tp := f.tps[f.rng.IntN(len(f.tps))]
		hold := time.Second + time.Duration(f.rng.Int64N(int64(9*time.Second)))
		if kind == FaultPause || kind == FaultPartition {
			hold = 5*time.Second + time.Duration(f.rng.Int64N(int64(25*time.Second)))
		}
		// Every fault heals at least 15 s before until; a long hold is
		// shortened to fit, and the schedule ends when nothing fits.
		if room := time.Until(until) - 15*time.Second; hold > room {
			if room < time.Second {
				return
			}
			hold = room
		}
		fl := f.inject(ctx, kind, tp, hold)
		f.faults = append(f.faults, fl)
		if fl.Skipped != "" {
			fmt.Fprintf(f.out, "fault %-15s skipped: %s\n", kind, fl.Skipped)
		} else {
			fmt.Fprintf(f.out, "fault %-15s %s: %v, healed\n", kind, fl.Target, fl.Healed.Sub(fl.Start).Round(100*time.Millisecond))
		}
	}
}

func (f *faulter) pick() string {
	total := 0
	for _, k := range f.kinds {
		total += weights[k]
	}
	n := f.rng.IntN(total)
	for _, k := range f.kinds {
		if n -= weights[k]; n < 0 {
			return k
		}
	}
	return f.kinds[0]
}

// inject runs one fault to its heal.
func (f *faulter) inject(ctx context.Context, kind string, tp TP, hold time.Duration) Fault {
	fl := Fault{Kind: kind, Start: time.Now()}
	skip := func(why string) Fault { fl.Skipped, fl.Healed = why, time.Now(); return fl }
	var err error
	switch kind {
	case FaultKillLeader, FaultPause:
		leader, _, lerr := f.leader(ctx, tp)
		if lerr != nil {
			return skip(lerr.Error())
		}
		fl.Target = fmt.Sprintf("node %d (leader of %s)", leader, tp)
		if kind == FaultPause {
			err = f.pause(ctx, leader, hold)
		} else {
			err = f.killRestart(ctx, []int32{leader}, hold, nil)
		}
	case FaultKillController:
		md, merr := f.metadata(ctx)
		if merr != nil {
			return skip(merr.Error())
		}
		if md.Controller < 0 {
			return skip("no active controller to kill")
		}
		fl.Target = fmt.Sprintf("node %d (active controller)", md.Controller)
		err = f.killRestart(ctx, []int32{md.Controller}, hold, nil)
	case FaultPowerLoss:
		if f.power == nil {
			return skip("power loss is off (--power-loss=false)")
		}
		_, replicas, lerr := f.leader(ctx, tp)
		if lerr != nil {
			return skip(lerr.Error())
		}
		fl.Target = fmt.Sprintf("nodes %v (every replica of %s)", replicas, tp)
		err = f.killRestart(ctx, replicas, hold, func(id int32) error { return f.power.drop(f.l, id) })
	case FaultPartition:
		if f.net == nil {
			return skip("network partitions need root, iptables and per-node addresses (--net-faults)")
		}
		fromController := f.rng.IntN(2) == 0
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
		if fromController {
			fl.Target = fmt.Sprintf("node %d (leader of %s) from the controller %d", leader, tp, md.Controller)
		} else {
			fl.Target = fmt.Sprintf("node %d (leader of %s) from its followers %v", leader, tp, others)
		}
		var dropped int64
		dropped, err = f.net.isolate(ctx, leader, others, md.Controller, fromController, hold)
		fl.Target += fmt.Sprintf(", %d packets dropped", dropped)
	}
	fl.Healed = time.Now()
	if err != nil {
		fl.Target += " (error: " + err.Error() + ")"
	}
	return fl
}

func (f *faulter) metadata(ctx context.Context) (kadm.Metadata, error) {
	var topics []string
	for _, tp := range f.tps {
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

// leader finds tp's leader and replicas in the metadata.
func (f *faulter) leader(ctx context.Context, tp TP) (int32, []int32, error) {
	md, err := f.metadata(ctx)
	if err != nil {
		return -1, nil, err
	}
	p, ok := md.Topics[tp.Topic].Partitions[tp.Partition]
	if !ok || p.Leader < 0 {
		return -1, nil, fmt.Errorf("%s has no leader now", tp)
	}
	return p.Leader, p.Replicas, nil
}

// killRestart SIGKILLs every node in ids at once, runs between (if set) on
// each, waits hold and restarts them.
func (f *faulter) killRestart(ctx context.Context, ids []int32, hold time.Duration, between func(id int32) error) error {
	var errs []string
	for _, id := range ids {
		kctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := cluster.Kill(kctx, f.l, id); err != nil {
			errs = append(errs, err.Error())
		}
		cancel()
	}
	if between != nil {
		for _, id := range ids {
			if err := between(id); err != nil {
				errs = append(errs, err.Error())
			}
		}
	}
	wait(ctx, hold)
	for _, id := range ids {
		rctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
		if err := cluster.Restart(rctx, f.l, id); err != nil {
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
// even when ctx ends first).
func (f *faulter) pause(ctx context.Context, id int32, hold time.Duration) error {
	if err := cluster.Signal(f.l, id, syscall.SIGSTOP); err != nil {
		return err
	}
	wait(ctx, hold)
	return cluster.Signal(f.l, id, syscall.SIGCONT)
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
