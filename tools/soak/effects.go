package soak

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/tools/cluster"
)

// Each fault proves its effect (Fault.Effect), or the run fails
// (Fault.NoEffect, a no-effect violation): a kill shows the new leader (or
// active controller) and how long the failover took, a pause how long the
// process was seen stopped, a power loss what it dropped, a network
// partition how many packets its rules dropped.

// failoverLimit is how long after a kill the soak waits to see the new
// leader or controller: a session timeout (fencing), an election and the
// metadata reaching a broker, on a loaded machine.
const failoverLimit = 60 * time.Second

// failover is what watch saw: the new leader (or controller) and when.
type failover struct {
	id   int32
	took time.Duration
	err  error
}

// watch polls the cluster every 100 ms from start until seen reports the
// new leader, or failoverLimit passes; the result arrives once on the
// channel.
func (f *faulter) watch(ctx context.Context, start time.Time, seen func(context.Context) (int32, bool)) <-chan failover {
	ch := make(chan failover, 1)
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			mctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			id, ok := seen(mctx)
			cancel()
			if ok {
				ch <- failover{id: id, took: time.Since(start)}
				return
			}
			if time.Since(start) > failoverLimit {
				ch <- failover{id: -1, err: fmt.Errorf("no failover seen within %v", failoverLimit)}
				return
			}
			select {
			case <-ctx.Done():
				ch <- failover{id: -1, err: ctx.Err()}
				return
			case <-t.C:
			}
		}
	}()
	return ch
}

// partition returns tp's state in one metadata answer.
func (f *faulter) partition(ctx context.Context, tp TP) (kadm.PartitionDetail, error) {
	md, err := f.adm.Metadata(ctx, tp.Topic)
	if err != nil {
		return kadm.PartitionDetail{}, err
	}
	p, ok := md.Topics[tp.Topic].Partitions[tp.Partition]
	if !ok {
		return kadm.PartitionDetail{}, fmt.Errorf("%s: not in the metadata", tp)
	}
	return p, nil
}

// newLeader is the seen function of a leader kill: tp has a leader with an
// epoch above epoch.
func (f *faulter) newLeader(tp TP, epoch int32) func(context.Context) (int32, bool) {
	return func(ctx context.Context) (int32, bool) {
		p, err := f.partition(ctx, tp)
		return p.Leader, err == nil && p.Leader >= 0 && p.LeaderEpoch > epoch
	}
}

// quorumLeader asks DescribeQuorum for the active controller and its
// Raft term.
func (f *faulter) quorumLeader(ctx context.Context) (leader, term int32, err error) {
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}
	req.Topics = []kmsg.DescribeQuorumRequestTopic{rt}
	resp, err := req.RequestWith(ctx, f.cl)
	if err != nil {
		return -1, -1, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return -1, -1, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return -1, -1, errors.New("describe quorum: no metadata partition in the answer")
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return -1, -1, err
	}
	return p.LeaderID, p.LeaderEpoch, nil
}

// newController is the seen function of a controller kill: the quorum has
// a leader in a term above term.
func (f *faulter) newController(term int32) func(context.Context) (int32, bool) {
	return func(ctx context.Context) (int32, bool) {
		l, t, err := f.quorumLeader(ctx)
		return l, err == nil && l >= 0 && t > term
	}
}

// provedFailover fills fl's effect from a watch result.
func provedFailover(fl *Fault, what string, r failover) {
	if r.err != nil {
		fl.NoEffect = fmt.Sprintf("no new %s: %v", what, r.err)
		return
	}
	id := r.id
	fl.NewLeader, fl.Failover = &id, r.took
	fl.Effect = fmt.Sprintf("new %s node %d after %v", what, id, r.took.Round(10*time.Millisecond))
}

// stopped reports whether the process pid is stopped (state T in
// /proc/pid/stat).
func stopped(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && i+2 < len(b) && (b[i+2] == 'T' || b[i+2] == 't')
}

// stop sends SIGSTOP to the nodes and waits (up to 5 s each) until the
// kernel shows each one stopped; it returns when they were seen stopped.
func (f *faulter) stop(ctx context.Context, ids []int32) (time.Time, error) {
	for _, id := range ids {
		if err := cluster.Signal(f.l, id, syscall.SIGSTOP); err != nil {
			return time.Time{}, err
		}
	}
	for _, id := range ids {
		pid := f.pid(id)
		deadline := time.Now().Add(5 * time.Second)
		for !stopped(pid) {
			if time.Now().After(deadline) || !wait(ctx, 5*time.Millisecond) {
				return time.Time{}, fmt.Errorf("node %d (pid %d) not seen stopped 5 s after SIGSTOP", id, pid)
			}
		}
	}
	return time.Now(), nil
}

// resume sends SIGCONT to every node in ids (always, whatever ctx says).
func (f *faulter) resume(ids []int32) error {
	var errs []error
	for _, id := range ids {
		if err := cluster.Signal(f.l, id, syscall.SIGCONT); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (f *faulter) pid(id int32) int {
	for _, n := range f.l.Nodes {
		if n.ID == id {
			return n.PID
		}
	}
	return -1
}
