package cluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// RollOptions of Roll.
type RollOptions struct {
	// Executable is the sluice binary the nodes restart with; "": this
	// process's.
	Executable string
	// NodeTimeout bounds each node's turn: its clean stop, its start and
	// its return to every ISR. 0: 5 minutes.
	NodeTimeout time.Duration
}

// Roll restarts every node of the cluster in l.Dir, one at a time, the
// active controller last (so the quorum elects a new controller once, not
// once per node): SIGTERM (the node's controlled shutdown moves its
// leaderships and ISR memberships away first), wait for its exit (SIGKILL
// after 30 s), start it again with its config and arguments, and wait
// until it is registered and back in the ISR of every partition it
// replicates before the next node goes. Every node must run when it
// starts; a node that does not come back stops the roll with an error
// that names the partitions still waiting and quotes its log. Progress
// goes to w.
func Roll(ctx context.Context, w io.Writer, l Layout, o RollOptions) error {
	if cur, err := readLayout(l.Dir); err == nil {
		l = cur
	}
	exe := o.Executable
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return err
		}
	}
	if o.NodeTimeout <= 0 {
		o.NodeTimeout = 5 * time.Minute
	}
	for _, n := range l.Nodes {
		if !alive(n.PID) {
			return fmt.Errorf("node %d (pid %d) is not running: a roll restarts running nodes one at a time and keeps the others up; start it first with `sluice cluster restart --dir %s %d`", n.ID, n.PID, l.Dir, n.ID)
		}
	}
	cl, err := l.client(nil, kgo.RequestRetries(0))
	if err != nil {
		return err
	}
	defer cl.Close()

	order := rollOrder(ctx, cl, l)
	fmt.Fprintf(w, "rolling %d nodes of cluster %s, in the order %v\n", len(order), l.ClusterID, order)
	start := time.Now()
	for _, id := range order {
		if err := rollOne(ctx, w, cl, l, id, exe, o.NodeTimeout); err != nil {
			return err
		}
		if cur, err := readLayout(l.Dir); err == nil {
			l = cur
		}
	}
	fmt.Fprintf(w, "rolled %d nodes in %.1fs\n", len(order), time.Since(start).Seconds())
	return nil
}

// rollOrder is the node ids of l, the active controller last. When no
// node answers who the controller is, it is l's order.
func rollOrder(ctx context.Context, cl *kgo.Client, l Layout) []int32 {
	var ids []int32
	for _, n := range l.Nodes {
		ids = append(ids, n.ID)
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{}
	md, err := req.RequestWith(rctx, cl)
	if err != nil || md.ControllerID < 0 {
		return ids
	}
	if i := slices.Index(ids, md.ControllerID); i >= 0 {
		ids = append(slices.Delete(ids, i, i+1), md.ControllerID)
	}
	return ids
}

// rollOne is one node's turn of Roll.
func rollOne(ctx context.Context, w io.Writer, cl *kgo.Client, l Layout, id int32, exe string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	i := slices.IndexFunc(l.Nodes, func(n Node) bool { return n.ID == id })
	n := l.Nodes[i]
	fmt.Fprintf(w, "node %d: stopping (SIGTERM: its leaderships move first)\n", id)
	t0 := time.Now()
	if err := stopClean(ctx, n); err != nil {
		return fmt.Errorf("node %d: %w; the other nodes still run: fix it, then `sluice cluster restart --dir %s %d` and roll again", id, err, l.Dir, id)
	}
	fmt.Fprintf(w, "node %d: stopped after %.1fs\n", id, time.Since(t0).Seconds())
	pid, err := startNode(exe, n)
	if err != nil {
		return fmt.Errorf("node %d: %w; it is down now: `sluice cluster restart --dir %s %d` once fixed", id, err, l.Dir, id)
	}
	n.PID = pid
	l.Nodes[i].PID = pid
	if err := writeLayout(l); err != nil {
		return err
	}
	if err := waitStarted(ctx, n); err != nil {
		return fmt.Errorf("%w\nthe roll stopped with node %d down: fix it, then `sluice cluster restart --dir %s %d`", err, id, l.Dir, id)
	}
	fmt.Fprintf(w, "node %d: started (pid %d)\n", id, pid)
	t1 := time.Now()
	if err := waitInISRs(ctx, w, cl, n); err != nil {
		return fmt.Errorf("node %d: %w; see %s%s\nthe roll stopped; once the node is back in sync, roll again to restart the rest", id, err, n.LogFile, logTails(Layout{Nodes: []Node{n}}, 5))
	}
	fmt.Fprintf(w, "node %d: back in every ISR after %.1fs\n", id, time.Since(t1).Seconds())
	return nil
}

// waitInISRs waits until n is a registered broker and in the ISR of every
// partition that has it as a replica, printing progress every 2 s. It
// asks with Metadata requests of its own (kadm's BrokerMetadata answers
// from the client's cache).
func waitInISRs(ctx context.Context, w io.Writer, cl *kgo.Client, n Node) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	lastSay := time.Now()
	var why string
	for {
		if !alive(n.PID) {
			return fmt.Errorf("exited (pid %d) before it was back in sync", n.PID)
		}
		why = isrGap(ctx, cl, n.ID)
		if why == "" {
			return nil
		}
		if time.Since(lastSay) >= 2*time.Second {
			fmt.Fprintf(w, "node %d: waiting: %s\n", n.ID, why)
			lastSay = time.Now()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not back in every ISR in time: %s", why)
		case <-tick.C:
		}
	}
}

// isrGap says why broker id is not yet back in sync ("" when it is): not
// registered, or the partitions whose ISR lacks it.
func isrGap(ctx context.Context, cl *kgo.Client, id int32) string {
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest() // Topics nil: every topic
	md, err := req.RequestWith(rctx, cl)
	if err != nil {
		return "no metadata answer: " + err.Error()
	}
	if !slices.ContainsFunc(md.Brokers, func(b kmsg.MetadataResponseBroker) bool { return b.NodeID == id }) {
		return "not registered (or fenced) yet"
	}
	var missing []string
	total := 0
	for _, t := range md.Topics {
		name := "?"
		if t.Topic != nil {
			name = *t.Topic
		}
		for _, p := range t.Partitions {
			if !slices.Contains(p.Replicas, id) {
				continue
			}
			total++
			if !slices.Contains(p.ISR, id) {
				missing = append(missing, fmt.Sprintf("%s/%d", name, p.Partition))
			}
		}
	}
	if len(missing) == 0 {
		return ""
	}
	slices.Sort(missing)
	if len(missing) > 5 {
		missing = append(missing[:5], "...")
	}
	return fmt.Sprintf("in %d of %d ISRs; not yet in %s", total-len(missing), total, strings.Join(missing, ", "))
}

// WaitInSync waits until node id of l is a registered broker and in the
// ISR of every partition that has it as a replica, printing progress to w
// every 2 s; an error names the partitions still waiting.
func WaitInSync(ctx context.Context, w io.Writer, l Layout, id int32) error {
	n, ok := l.node(id)
	if !ok {
		return fmt.Errorf("no node %d in %s", id, layoutPath(l.Dir))
	}
	cl, err := l.client(nil, kgo.RequestRetries(0))
	if err != nil {
		return err
	}
	defer cl.Close()
	return waitInISRs(ctx, w, cl, n)
}

// Terminate stops node id of l cleanly: SIGTERM, and waits for its exit
// (SIGKILL after 30 s).
func Terminate(ctx context.Context, l Layout, id int32) error {
	n, ok := l.node(id)
	if !ok {
		return fmt.Errorf("no node %d in %s", id, layoutPath(l.Dir))
	}
	return stopClean(ctx, n)
}
