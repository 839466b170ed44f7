//go:build linux

package node

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/sluice-log/sluice/node/config"
	"github.com/sluice-log/sluice/partition"
)

// TestBenchScale is `make bench-scale` (skipped otherwise): what idle
// partitions cost. For each count N in SCALE_PARTITIONS it starts a fresh
// 3-node cluster in this process (real nodes, real TCP), creates one topic
// of N RF=3 partitions (so every node hosts N replicas), waits until every
// leader has its full ISR and every follower fetches, lets it settle, and
// then measures over SCALE_ROUNDS windows of SCALE_SECONDS each, with no
// traffic: the CPU the process used (getrusage, user+system: the three
// nodes together, plus the test's own negligible share), the replica
// wakeups of the nodes' clocks (replica.Manager.Wakeups), and, against
// the same cluster before the topic existed, heap in use after a GC, RSS,
// goroutines and open descriptors (the nodes run with
// sluice.log.max.open.files=SCALE_MAX_OPEN_FILES each). The smallest N
// (1: the same cluster with one topic of one partition) is the baseline:
// the per-1,000-replica figures subtract it (the median of each), and the
// last lines hold issue 21's target against the largest N: 10,000 idle
// replicas per node at most 2% of a core, at most 32 KiB each.
//
// Environment: SCALE_PARTITIONS ("1 1000 3000"), SCALE_MAX_OPEN_FILES
// (256), SCALE_SECONDS (5),
// SCALE_ROUNDS (3), SCALE_SETTLE_SECONDS (3), SCALE_CPUPROFILE=PATH
// (a CPU profile of the measured windows in PATH.N for each N). The machine's load moves
// these figures: compare builds by running them back to back.
func TestBenchScale(t *testing.T) {
	if os.Getenv("SLUICE_BENCH_SCALE") == "" {
		t.Skip("make bench-scale runs this (SLUICE_BENCH_SCALE=1)")
	}
	var counts []int
	for _, f := range strings.Fields(envString("SCALE_PARTITIONS", "1 1000 3000")) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 {
			t.Fatalf("SCALE_PARTITIONS=%q: want non-negative integers", f)
		}
		counts = append(counts, n)
	}
	cfg := scaleConfig{
		window: time.Duration(envInt(t, "SCALE_SECONDS", 5)) * time.Second,
		rounds: int(max(envInt(t, "SCALE_ROUNDS", 3), 1)),
		settle: time.Duration(envInt(t, "SCALE_SETTLE_SECONDS", 3)) * time.Second,
		files:  int(envInt(t, "SCALE_MAX_OPEN_FILES", 256)),
	}
	var results []scaleResult
	for _, n := range counts {
		t.Run(fmt.Sprint(n), func(t *testing.T) { results = append(results, benchIdle(t, n, cfg)) })
	}
	var base, top *scaleResult
	for i := range results {
		if base == nil || results[i].partitions < base.partitions {
			base = &results[i]
		}
		if top == nil || results[i].partitions > top.partitions {
			top = &results[i]
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "idle cost, 3 in-process nodes, RF=3, sluice.log.max.open.files=%d, %d×%v windows (cores: user+system CPU / wall); baseline: %d partition(s)\n",
		cfg.files, cfg.rounds, cfg.window, base.partitions)
	fmt.Fprintf(&b, "%-10s %-9s %-22s %-12s %-12s %-14s %-10s %-10s %-10s %-10s %-8s %-10s %-8s\n",
		"partitions", "replicas", "cores (rounds)", "cores/node", "wakeups/s", "core/1k repl", "heap/repl", "rss/repl", "gor/repl", "fds/repl", "fds", "seg files", "opens/s")
	for _, r := range results {
		repl := 3 * (r.partitions - base.partitions)
		perK, per := "-", func(float64, string) string { return "-" }
		if repl > 0 {
			per = func(v float64, unit string) string { return fmt.Sprintf("%.2f%s", v/float64(repl), unit) }
			perK = fmt.Sprintf("%.4f", (r.median()-base.median())/float64(repl)*1000)
		}
		rounds := make([]string, len(r.cores))
		for i, c := range r.cores {
			rounds[i] = fmt.Sprintf("%.3f", c)
		}
		fmt.Fprintf(&b, "%-10d %-9d %-22s %-12.3f %-12.0f %-14s %-10s %-10s %-10s %-10s %-8d %-10d %-8.1f\n",
			r.partitions, 3*r.partitions, fmt.Sprintf("%.3f (%s)", r.median(), strings.Join(rounds, " ")), r.median()/3, r.wakeupsPerSec,
			perK, per(r.heap-base.heap, " B"), per(r.rss-base.rss, " B"), per(r.goroutines-base.goroutines, ""), per(r.fds-base.fds, ""),
			r.fdsNow, r.segFiles, r.opensPerSec)
	}
	if repl := 3 * (top.partitions - base.partitions); repl > 0 {
		// Every node hosts every partition: a node's replicas are the
		// partitions, and it pays a third of the process's CPU.
		perRepl := (top.median() - base.median()) / 3 / float64(top.partitions-base.partitions)
		mem := (top.heap - base.heap) / float64(repl)
		fmt.Fprintf(&b, "target (issue 21): 10,000 idle replicas per node <= 0.020 core and <= 32 KiB each\n")
		fmt.Fprintf(&b, "  at %d replicas per node, scaled to 10,000: %.3f core per node (%s), %.1f KiB heap per replica (%s)\n",
			top.partitions, perRepl*10000, verdict(perRepl*10000 <= 0.02), mem/1024, verdict(mem <= 32<<10))
	}
	fmt.Print(b.String())
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

type scaleConfig struct {
	window, settle time.Duration
	rounds         int
	files          int // sluice.log.max.open.files of each node
}

type scaleResult struct {
	partitions    int
	cores         []float64 // per round
	wakeupsPerSec float64
	heap, rss     float64 // bytes added by the topic
	goroutines    float64
	fds           float64
	opensPerSec   float64 // segment files opened per second in the windows
	fdsNow        int     // the process's descriptors after settling
	segFiles      int64   // segment files open on the three nodes then
}

func (r scaleResult) median() float64 {
	s := slices.Clone(r.cores)
	slices.Sort(s)
	return s[len(s)/2]
}

func benchIdle(t *testing.T, n int, cfg scaleConfig) scaleResult {
	nodes := startClusterWith(t, 3, config.ListenerKafka, fmt.Sprintf("sluice.log.max.open.files=%d", cfg.files))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	before := sampleProcess()
	if n > 0 {
		cl := newClient(t, nodes[0])
		if _, err := kadm.NewClient(cl).CreateTopic(ctx, int32(n), 3, nil, "idle"); err != nil {
			t.Fatal(err)
		}
		cl.Close()
		// Until every node hosts n replicas, every leader has its full
		// ISR and every follower has fetched from its leader.
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for !scaleReady(nodes, n) {
			select {
			case <-ctx.Done():
				t.Fatalf("%d partitions not ready: %v", n, ctx.Err())
			case <-tick.C:
			}
		}
	}
	wait(ctx, cfg.settle)
	after := sampleProcess()
	res := scaleResult{partitions: n,
		heap: float64(after.heap) - float64(before.heap), rss: float64(after.rss) - float64(before.rss),
		goroutines: float64(after.goroutines - before.goroutines), fds: float64(after.fds - before.fds), fdsNow: after.fds}
	for _, tn := range nodes {
		res.segFiles += tn.files.Stats().Open
	}
	if path := os.Getenv("SCALE_CPUPROFILE"); path != "" {
		f, err := os.Create(fmt.Sprintf("%s.%d", path, n))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			t.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	var wakeups int64
	var elapsed time.Duration
	opens0 := segmentOpens(nodes)
	for range cfg.rounds {
		w0, c0, t0 := scaleWakeups(nodes), cpuTime(), time.Now()
		wait(ctx, cfg.window)
		c1, t1 := cpuTime(), time.Now()
		wakeups += scaleWakeups(nodes) - w0
		elapsed += t1.Sub(t0)
		res.cores = append(res.cores, (c1-c0).Seconds()/t1.Sub(t0).Seconds())
	}
	res.wakeupsPerSec = float64(wakeups) / elapsed.Seconds()
	res.opensPerSec = float64(segmentOpens(nodes)-opens0) / elapsed.Seconds()
	t.Logf("%d partitions: cores %v, wakeups/s %.0f, heap +%d B, rss +%d B, goroutines +%d, fds +%d",
		n, res.cores, res.wakeupsPerSec, after.heap-before.heap, after.rss-before.rss, after.goroutines-before.goroutines, after.fds-before.fds)
	return res
}

// scaleReady says whether every node hosts n replicas, every leader
// has all three in its ISR, and every follower has fetched.
func scaleReady(nodes []*testNode, n int) bool {
	for _, tn := range nodes {
		if tn.rm.Len() != n {
			return false
		}
		for _, r := range tn.rm.Replicas() {
			st := r.Status()
			if st.Role != partition.Leader {
				continue
			}
			if len(st.ISR) != 3 || len(st.Followers) != 2 {
				return false
			}
			for _, f := range st.Followers {
				if f.Acked < 0 {
					return false
				}
			}
		}
	}
	return true
}

func scaleWakeups(nodes []*testNode) int64 {
	var w int64
	for _, tn := range nodes {
		w += tn.rm.Wakeups()
	}
	return w
}

// wait lets d of wall time pass: the benchmark's measurement window, not
// a synchronisation.
func wait(ctx context.Context, d time.Duration) {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
	case <-tm.C:
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type processSample struct {
	heap, rss       int64
	goroutines, fds int
}

func sampleProcess() processSample {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s := processSample{heap: int64(ms.HeapInuse), goroutines: runtime.NumGoroutine()}
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 1 {
			pages, _ := strconv.ParseInt(f[1], 10, 64)
			s.rss = pages * int64(os.Getpagesize())
		}
	}
	if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
		s.fds = len(ents)
	}
	return s
}

func envString(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
