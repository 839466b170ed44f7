package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/tools/cluster"
)

// FailoverOptions of RunFailover (`sluice bench --failover N`).
type FailoverOptions struct {
	Faults     int     // SIGKILLs, and as many SIGTERMs, per mode
	RateMBps   float64 // offered acks=all load
	Partitions int
	BasePort   int
	// Modes are the settings compared; nil: FailoverModes().
	Modes []FailoverMode
}

// FailoverMode is one cluster setting the failover bench measures.
type FailoverMode struct {
	Name       string
	Properties map[string]string // server.properties of every node
}

// FailoverModes are today's failure detection and clean stop, and the
// baseline without them: the session timeout (and gossip) alone, and a
// SIGTERM that closes without moving its leaderships.
func FailoverModes() []FailoverMode {
	return []FailoverMode{
		{Name: "probes+controlled", Properties: nil},
		{Name: "baseline", Properties: map[string]string{"sluice.broker.probe.interval.ms": "0", "controlled.shutdown.enable": "false"}},
	}
}

// FailoverResult is one mode's and fault kind's measurements.
type FailoverResult struct {
	Mode, Fault string
	// Writable has, per fault, the longest an acks=all write to a
	// partition the victim led waited: from the fault (or its send, if
	// later) to its ack.
	Writable []time.Duration
	// Failed counts sends that failed (delivery timeout or a
	// non-retriable error) while this mode and fault kind ran.
	Failed int64
}

// failoverRecordSize is the record size of the load; failoverDelivery
// bounds each send (kgo retries until then).
const (
	failoverRecordSize = 1024
	failoverDelivery   = 30 * time.Second
)

// RunFailover starts a fresh local cluster per mode, creates an RF=3 topic
// (min.insync.replicas=2), produces a steady paced acks=all load with an
// idempotent franz-go client, and o.Faults times SIGKILLs, then o.Faults
// times SIGTERMs, the leader of one partition (in turn), waits until
// every partition it led took a write sent after it was gone, restarts it
// and waits until it is back in every ISR. It prints a line per fault and
// a table of p50/p99/max time to writable and failed sends per mode.
func RunFailover(ctx context.Context, w io.Writer, o FailoverOptions) ([]FailoverResult, error) {
	if o.Faults < 1 {
		return nil, fmt.Errorf("--failover %d: want at least 1 fault of each kind", o.Faults)
	}
	if o.Partitions < 1 {
		o.Partitions = 3
	}
	if o.RateMBps <= 0 {
		o.RateMBps = 2
	}
	modes := o.Modes
	if modes == nil {
		modes = FailoverModes()
	}
	fmt.Fprintf(w, "failover bench: %d SIGKILLs and %d SIGTERMs of a partition leader per mode; 3 nodes, %d partitions RF=3, acks=all at %.1f MB/s of %d B records\n",
		o.Faults, o.Faults, o.Partitions, o.RateMBps, failoverRecordSize)
	var all []FailoverResult
	for _, m := range modes {
		rs, err := runFailoverMode(ctx, w, o, m)
		all = append(all, rs...)
		if err != nil {
			WriteFailoverTable(w, all)
			return all, fmt.Errorf("mode %s: %w", m.Name, err)
		}
	}
	WriteFailoverTable(w, all)
	return all, nil
}

func runFailoverMode(ctx context.Context, w io.Writer, o FailoverOptions, m FailoverMode) ([]FailoverResult, error) {
	dir, err := os.MkdirTemp("", "sluice-failover-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	sctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	fmt.Fprintf(w, "mode %s: starting a 3-node local cluster in %s\n", m.Name, dir)
	l, err := cluster.Start(sctx, io.Discard, cluster.Options{Dir: dir, Nodes: 3, BasePort: o.BasePort, Properties: m.Properties})
	defer func() { _ = cluster.Stop(context.Background(), io.Discard, l) }()
	if err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	seeds := strings.Split(l.BootstrapServers, ",")
	const topic = "failover"
	admCl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return nil, err
	}
	defer admCl.Close()
	if _, err := kadm.NewClient(admCl).CreateTopic(ctx, int32(o.Partitions), 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, topic); err != nil {
		return nil, fmt.Errorf("create topic: %w", err)
	}
	if err := waitLeaders(ctx, kadm.NewClient(admCl), topic); err != nil {
		return nil, err
	}

	// A client that refreshes its metadata at most every 100 ms: kgo's
	// default of 5 s would measure the client, not the cluster.
	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordDeliveryTimeout(failoverDelivery),
		kgo.MetadataMinAge(100*time.Millisecond), kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }))
	if err != nil {
		return nil, err
	}
	win := &faultWindow{}
	var failed atomic.Int64
	lctx, stopLoad := context.WithCancel(ctx)
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		failoverLoad(lctx, prod, o, win, &failed)
	}()
	defer func() {
		stopLoad()
		<-loadDone
		prod.Close()
	}()

	var out []FailoverResult
	for _, fault := range []string{"SIGKILL", "SIGTERM"} {
		// Faults of the active controller also wait for a Raft
		// election: their own line.
		r := FailoverResult{Mode: m.Name, Fault: fault}
		rc := FailoverResult{Mode: m.Name, Fault: fault + "(ctrl)"}
		before := failed.Load()
		for i := range o.Faults {
			if l, err = cluster.ReadLayout(dir); err != nil {
				return out, err
			}
			f, err := oneFault(ctx, admCl, l, exe, win, fault, int32(i%o.Partitions))
			if err != nil {
				r.Failed = failed.Load() - before
				return append(out, r, rc), fmt.Errorf("%s %d: %w", fault, i+1, err)
			}
			what := ""
			if f.controller {
				rc.Writable = append(rc.Writable, f.writable)
				what = ", the active controller"
			} else {
				r.Writable = append(r.Writable, f.writable)
			}
			fmt.Fprintf(w, "  %s %s %d/%d: node %d%s, leader of %v: writable after %.3fs\n", m.Name, fault, i+1, o.Faults, f.victim, what, f.parts, f.writable.Seconds())
		}
		r.Failed = failed.Load() - before
		out = append(out, r)
		if len(rc.Writable) > 0 {
			out = append(out, rc)
		}
	}
	return out, nil
}

// failoverLoad produces o.RateMBps to the partitions in turn, every 5 ms,
// until ctx ends, telling win about every ack.
func failoverLoad(ctx context.Context, cl *kgo.Client, o FailoverOptions, win *faultWindow, failed *atomic.Int64) {
	vals := newValuePool(failoverRecordSize)
	pace := newPacer(o.RateMBps, failoverRecordSize, time.Now())
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	next := 0
	for {
		n := pace.allowance(time.Now(), 256)
		for range n {
			p := int32(next % o.Partitions)
			next++
			sent := time.Now()
			v := vals.get(sent)
			cl.Produce(ctx, &kgo.Record{Partition: p, Value: v}, func(r *kgo.Record, err error) {
				if err != nil && ctx.Err() == nil {
					failed.Add(1)
				}
				win.ack(p, sent, time.Now(), err)
				vals.put(r.Value)
			})
		}
		pace.sent += n
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// faultWindow follows the writes to the partitions a victim led, from the
// fault until each took a write sent after the victim was gone.
type faultWindow struct {
	mu     sync.Mutex
	active bool
	t0     time.Time      // the signal
	gone   time.Time      // the victim's exit; zero until then
	parts  map[int32]bool // the victim's partitions at t0
	after  map[int32]bool // which acked a write sent after gone
	worst  time.Duration
}

func (f *faultWindow) start(t0 time.Time, parts []int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.active, f.t0, f.gone, f.worst = true, t0, time.Time{}, 0
	f.parts, f.after = map[int32]bool{}, map[int32]bool{}
	for _, p := range parts {
		f.parts[p] = true
	}
}

func (f *faultWindow) exited(at time.Time) {
	f.mu.Lock()
	f.gone = at
	f.mu.Unlock()
}

// ack is one record's outcome.
func (f *faultWindow) ack(p int32, sent, at time.Time, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.active || !f.parts[p] || at.Before(f.t0) {
		return
	}
	f.worst = max(f.worst, at.Sub(later(sent, f.t0)))
	if err == nil && !f.gone.IsZero() && !sent.Before(f.gone) {
		f.after[p] = true
	}
}

// done reports whether every partition took a write sent after the exit,
// and the longest wait then.
func (f *faultWindow) done() (bool, time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.after) < len(f.parts) {
		return false, 0
	}
	f.active = false
	return true, f.worst
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// aFault is what oneFault measured.
type aFault struct {
	victim     int32
	controller bool // the victim was the active controller
	parts      []int32
	writable   time.Duration
}

// oneFault signals the leader of partition part, measures, restarts it
// and waits until it is back in sync.
func oneFault(ctx context.Context, cl *kgo.Client, l cluster.Layout, exe string, win *faultWindow, fault string, part int32) (aFault, error) {
	var f aFault
	leaders, ctrl, err := partitionLeaders(ctx, cl)
	if err != nil {
		return f, err
	}
	victim, ok := leaders[part]
	if !ok || victim < 0 {
		return f, fmt.Errorf("partition %d has no leader", part)
	}
	f.victim, f.controller = victim, victim == ctrl
	var parts []int32
	for p, id := range leaders {
		if id == victim {
			parts = append(parts, p)
		}
	}
	slices.Sort(parts)
	f.parts = parts
	fctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	t0 := time.Now()
	win.start(t0, parts)
	if fault == "SIGKILL" {
		err = cluster.Kill(fctx, l, victim)
	} else {
		err = cluster.Terminate(fctx, l, victim)
	}
	if err != nil {
		return f, err
	}
	win.exited(time.Now())
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		var ok bool
		if ok, f.writable = win.done(); ok {
			break
		}
		select {
		case <-fctx.Done():
			return f, fmt.Errorf("node %d's partitions %v took no write in time", victim, parts)
		case <-tick.C:
		}
	}
	if err := cluster.RestartWith(fctx, l, victim, exe); err != nil {
		return f, err
	}
	if err := cluster.WaitInSync(fctx, io.Discard, l, victim); err != nil {
		return f, fmt.Errorf("node %d after its restart: %w", victim, err)
	}
	return f, nil
}

// partitionLeaders asks for the leaders of every partition of "failover",
// and the active controller.
func partitionLeaders(ctx context.Context, cl *kgo.Client) (map[int32]int32, int32, error) {
	req := kmsg.NewPtrMetadataRequest()
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr("failover")
	req.Topics = append(req.Topics, t)
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	md, err := req.RequestWith(rctx, cl)
	if err != nil {
		return nil, -1, err
	}
	out := map[int32]int32{}
	for _, t := range md.Topics {
		for _, p := range t.Partitions {
			out[p.Partition] = p.Leader
		}
	}
	return out, md.ControllerID, nil
}

// WriteFailoverTable prints the results, one line per mode and fault kind.
func WriteFailoverTable(w io.Writer, rs []FailoverResult) {
	fmt.Fprintf(w, "\n%-18s %-14s %4s %9s %9s %9s %7s\n", "MODE", "FAULT", "N", "P50(s)", "P99(s)", "MAX(s)", "FAILED")
	for _, r := range rs {
		p50, p99, mx := durationQuantile(r.Writable, 0.50), durationQuantile(r.Writable, 0.99), durationQuantile(r.Writable, 1)
		fmt.Fprintf(w, "%-18s %-14s %4d %9.3f %9.3f %9.3f %7d\n", r.Mode, r.Fault, len(r.Writable), p50.Seconds(), p99.Seconds(), mx.Seconds(), r.Failed)
	}
}

// durationQuantile is the nearest-rank q-quantile of ds (0 when empty).
func durationQuantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}
