//go:build linux

package node

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-log/sluice/node/replica"
	"github.com/sluice-log/sluice/node/writeback"
)

// TestBenchWriteback is `make bench-writeback` (skipped otherwise): produce
// latency and the durability window with and without batched writeback
// (sluice.log.writeback.interval.bytes), under a sustained load that reaches
// the dirty thresholds.
//
// One in-process node on the real disk, one partition, a kgo producer
// (acks=1, no compression, random values) paced at a fixed rate; latency
// runs from each record's scheduled send time to its acknowledgement (so a
// stalled producer counts its backlog). Rounds alternate off/on so that
// drift in the machine's load hits both; ratios are within this run.
//
// The window is sampled every 100 ms three ways: the log files' page-cache
// pages still dirty or under writeback (segment.Log.Unwritten, cachestat(2),
// sluice_log_unwritten_bytes: what a power cut of this machine would take
// now), segment.Log.Unflushed (the fsync window, sluice_log_unflushed_bytes
// and _age_seconds, which writeback hints do not move: they are not
// fsyncs), and the machine's Dirty (other processes included).
//
// As root it lowers vm.dirty_background_bytes and vm.dirty_bytes for its
// duration (24 GiB of RAM would otherwise let gigabytes pile up before any
// threshold is reached), saving the old values in a file first (node/
// writeback Save: `sluice tune writeback --restore FILE` puts them back if
// the process dies) and restoring them at the end or on SIGINT/SIGTERM.
//
// Environment: WB_SECONDS (15), WB_RATE_MIB (150), WB_RECORD_BYTES (16384),
// WB_INTERVAL_BYTES (1048576), WB_ROUNDS per mode (3), WB_BG_BYTES
// (16 MiB), WB_DIRTY_BYTES (64 MiB), WB_KEEP_SYSCTLS=1 to leave vm.dirty_*
// alone.
func TestBenchWriteback(t *testing.T) {
	if os.Getenv("SLUICE_BENCH_WRITEBACK") == "" {
		t.Skip("make bench-writeback runs this (SLUICE_BENCH_WRITEBACK=1)")
	}
	cfg := wbBenchConfig{
		seconds: envInt(t, "WB_SECONDS", 15), rateMiB: envInt(t, "WB_RATE_MIB", 150),
		record: envInt(t, "WB_RECORD_BYTES", 16384), interval: envInt(t, "WB_INTERVAL_BYTES", 1<<20),
		rounds: envInt(t, "WB_ROUNDS", 3), bg: envInt(t, "WB_BG_BYTES", 16<<20), dirty: envInt(t, "WB_DIRTY_BYTES", 64<<20),
	}
	settings := lowerDirtyThresholds(t, cfg)

	res := map[bool]*wbResult{false: {}, true: {}}
	for round := int64(0); round < cfg.rounds; round++ {
		for _, on := range []bool{false, true} {
			name := fmt.Sprintf("round%d/writeback=%v", round, on)
			t.Run(name, func(t *testing.T) {
				r := runWritebackRound(t, cfg, on)
				t.Logf("%s: %d records, %.0f MiB/s, p99.9 %v, log dirty max %.1f MiB", name, len(r.lat), r.mibps(), r.pct(0.999), mib(r.fileDirtyMax))
				res[on].add(r)
			})
		}
	}
	report := formatWritebackTable(cfg, settings, res[false], res[true])
	fmt.Print(report)
	if err := os.MkdirAll("../bin", 0o755); err == nil {
		_ = os.WriteFile("../bin/bench-writeback.txt", []byte(report), 0o644)
	}
}

type wbBenchConfig struct {
	seconds, rateMiB, record, interval, rounds, bg, dirty int64
}

func envInt(t *testing.T, name string, def int64) int64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: want a non-negative integer", name, v)
	}
	return n
}

// lowerDirtyThresholds sets the benchmark's vm.dirty_* (as root, unless
// WB_KEEP_SYSCTLS) and arranges for the old values to come back; it
// returns a description of the settings in force.
func lowerDirtyThresholds(t *testing.T, cfg wbBenchConfig) string {
	cur, err := writeback.Read("/proc")
	if err != nil {
		t.Fatal(err)
	}
	describe := func(s writeback.Settings) string {
		return fmt.Sprintf("vm.dirty_background_bytes=%d vm.dirty_background_ratio=%d vm.dirty_bytes=%d vm.dirty_ratio=%d vm.dirty_expire_centisecs=%d",
			s["dirty_background_bytes"], s["dirty_background_ratio"], s["dirty_bytes"], s["dirty_ratio"], s["dirty_expire_centisecs"])
	}
	if os.Getenv("WB_KEEP_SYSCTLS") != "" || os.Geteuid() != 0 {
		t.Logf("leaving vm.dirty_* as they are (root and WB_KEEP_SYSCTLS unset lowers them): %s", describe(cur))
		return describe(cur) + " (the machine's)"
	}
	saved := filepath.Join(os.TempDir(), fmt.Sprintf("sluice-bench-writeback-vm-%d.json", os.Getpid()))
	if err := writeback.Save(saved, cur); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	restore := func() {
		once.Do(func() {
			if err := writeback.Apply("/proc", cur); err != nil {
				fmt.Fprintf(os.Stderr, "bench-writeback: restoring vm.dirty_*: %v; run: sluice tune writeback --restore %s\n", err, saved)
				return
			}
			_ = os.Remove(saved)
		})
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sig:
			restore()
			fmt.Fprintf(os.Stderr, "bench-writeback: %v: vm.dirty_* restored\n", s)
			os.Exit(1)
		case <-done:
		}
	}()
	t.Cleanup(func() {
		restore()
		close(done)
		signal.Stop(sig)
	})
	set := writeback.Settings{"dirty_background_bytes": cfg.bg, "dirty_bytes": cfg.dirty}
	if err := writeback.Apply("/proc", set); err != nil {
		t.Fatal(err)
	}
	now, _ := writeback.Read("/proc")
	t.Logf("vm.dirty_* lowered for the benchmark (saved in %s, restored at the end): %s", saved, describe(now))
	return describe(now) + " (lowered for the run; restored after)"
}

// wbResult is one round, or the rounds of one mode added up.
type wbResult struct {
	lat                            []time.Duration
	bytes                          int64
	elapsed                        time.Duration
	fileDirtyMax, unflushedMax     int64
	fileDirtySum, samples          float64
	ageMax                         time.Duration
	memDirtyMax, requested, rounds int64
	// p999s are the p99.9 latencies of the rounds added up, rows their
	// one-line summaries.
	p999s []time.Duration
	rows  []string
}

func (r *wbResult) add(o *wbResult) {
	r.lat = append(r.lat, o.lat...)
	r.bytes += o.bytes
	r.elapsed += o.elapsed
	r.fileDirtyMax = max(r.fileDirtyMax, o.fileDirtyMax)
	r.unflushedMax = max(r.unflushedMax, o.unflushedMax)
	r.fileDirtySum += o.fileDirtySum
	r.samples += o.samples
	r.ageMax = max(r.ageMax, o.ageMax)
	r.memDirtyMax = max(r.memDirtyMax, o.memDirtyMax)
	r.requested += o.requested
	r.rounds++
	r.p999s = append(r.p999s, o.pct(0.999))
	r.rows = append(r.rows, fmt.Sprintf("p99.9 %.1f ms, max %.1f ms, log not written back max %.1f MiB, machine dirty+writeback max %.1f MiB",
		float64(o.pct(0.999))/1e6, float64(o.pct(1))/1e6, mib(o.fileDirtyMax), mib(o.memDirtyMax)))
}

// medianP999 is the median of the rounds' p99.9: one round disturbed by
// the machine's other work moves it less than the pooled p99.9.
func (r *wbResult) medianP999() time.Duration {
	if len(r.p999s) == 0 {
		return 0
	}
	s := slices.Clone(r.p999s)
	slices.Sort(s)
	return s[len(s)/2]
}

func (r *wbResult) mibps() float64 { return mib(r.bytes) / r.elapsed.Seconds() }

func (r *wbResult) pct(p float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	s := slices.Clone(r.lat)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// runWritebackRound runs one node through one paced produce run.
func runWritebackRound(t *testing.T, cfg wbBenchConfig, on bool) *wbResult {
	dir := t.TempDir()
	var extra []string
	if on {
		extra = append(extra, fmt.Sprintf("sluice.log.writeback.interval.bytes=%d", cfg.interval))
	}
	tn := startNode(t, dir, extra...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(cfg.seconds)*time.Second+5*time.Minute)
	defer cancel()
	cl := newClient(t, tn, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.MaxBufferedBytes(64<<20),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.DefaultProduceTopic("wb"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	createTopic(ctx, t, cl, "wb", 1)
	var r *replica.Replica
	deadline := time.Now().Add(30 * time.Second)
	poll := time.NewTicker(10 * time.Millisecond)
	for r = tn.replica("wb", 0); r == nil; r = tn.replica("wb", 0) {
		if time.Now().After(deadline) {
			t.Fatal("the partition never opened")
		}
		<-poll.C
	}
	poll.Stop()

	values := make([][]byte, 64)
	for i := range values {
		values[i] = make([]byte, cfg.record)
		_, _ = rand.Read(values[i])
	}
	res := &wbResult{}
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		sampleWindow(r, res, stopSampling)
	}()

	per := time.Duration(float64(time.Second) * float64(cfg.record) / float64(cfg.rateMiB<<20))
	var mu sync.Mutex
	var failed error
	pace := time.NewTicker(time.Millisecond)
	defer pace.Stop()
	start := time.Now()
	end := start.Add(time.Duration(cfg.seconds) * time.Second)
	for i := 0; ; {
		now := time.Now()
		if now.After(end) {
			break
		}
		for ; ; i++ {
			sched := start.Add(time.Duration(i) * per)
			if sched.After(now) {
				break
			}
			cl.Produce(ctx, &kgo.Record{Value: values[i%len(values)]}, func(_ *kgo.Record, err error) {
				lat := time.Since(sched)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					failed = err
					return
				}
				res.lat = append(res.lat, lat)
				res.bytes += cfg.record
			})
		}
		<-pace.C
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	res.elapsed = time.Since(start)
	close(stopSampling)
	<-sampled
	mu.Lock()
	defer mu.Unlock()
	if failed != nil {
		t.Fatal(failed)
	}
	mfs := gatherNode(t, tn.Node)
	res.requested = int64(value(t, mfs, "sluice_log_writeback_requested_bytes_total"))
	return res
}

// sampleWindow samples the durability window every 100 ms until stop.
func sampleWindow(r *replica.Replica, res *wbResult, stop <-chan struct{}) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		dirty, _ := r.Log().Unwritten() // 0 where the kernel cannot tell
		u := r.Log().Unflushed()
		var age time.Duration
		if !u.Since.IsZero() {
			age = time.Since(u.Since)
		}
		mem, _ := writeback.ReadMemory("/proc")
		res.fileDirtyMax = max(res.fileDirtyMax, dirty)
		res.fileDirtySum += float64(dirty)
		res.samples++
		res.unflushedMax = max(res.unflushedMax, u.Bytes)
		res.ageMax = max(res.ageMax, age)
		res.memDirtyMax = max(res.memDirtyMax, mem.Dirty+mem.Writeback)
	}
}

func formatWritebackTable(cfg wbBenchConfig, settings string, off, on *wbResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nbatched writeback: 1 partition, %d B records paced at %d MiB/s for %d s, %d rounds per mode (off/on interleaved), interval %d B\n%s\n\n",
		cfg.record, cfg.rateMiB, cfg.seconds, cfg.rounds, cfg.interval, settings)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	rows := []struct {
		name    string
		off, on float64
	}{
		{"throughput MiB/s", off.mibps(), on.mibps()},
		{"produce p50 ms", ms(off.pct(0.5)), ms(on.pct(0.5))},
		{"produce p99 ms", ms(off.pct(0.99)), ms(on.pct(0.99))},
		{"produce p99.9 ms", ms(off.pct(0.999)), ms(on.pct(0.999))},
		{"produce max ms", ms(off.pct(1)), ms(on.pct(1))},
		{"produce p99.9 ms, median of rounds", ms(off.medianP999()), ms(on.medianP999())},
		{"log not written back, mean MiB", mib(int64(off.fileDirtySum / max(off.samples, 1))), mib(int64(on.fileDirtySum / max(on.samples, 1)))},
		{"log not written back, max MiB", mib(off.fileDirtyMax), mib(on.fileDirtyMax)},
		{"unflushed (no fsync) max MiB", mib(off.unflushedMax), mib(on.unflushedMax)},
		{"unflushed age max s", off.ageMax.Seconds(), on.ageMax.Seconds()},
		{"machine Dirty+Writeback max MiB", mib(off.memDirtyMax), mib(on.memDirtyMax)},
		{"writeback requested MiB", mib(off.requested), mib(on.requested)},
	}
	fmt.Fprintf(&b, "%-36s %12s %12s %8s\n", "", "off", "on", "on/off")
	for _, r := range rows {
		ratio := "-"
		if r.off > 0 {
			ratio = fmt.Sprintf("%.2f", r.on/r.off)
		}
		fmt.Fprintf(&b, "%-36s %12.1f %12.1f %8s\n", r.name, r.off, r.on, ratio)
	}
	b.WriteString("\n")
	for i := range off.rows {
		fmt.Fprintf(&b, "round %d off: %s\n", i, off.rows[i])
		if i < len(on.rows) {
			fmt.Fprintf(&b, "round %d on:  %s\n", i, on.rows[i])
		}
	}
	fmt.Fprintf(&b, "\n'log not written back' is the log files' page cache still dirty or under writeback (cachestat): what a power cut\n"+
		"would take. 'unflushed' is segment.Log.Unflushed (sluice_log_unflushed_*): since the last fsync, which writeback\n"+
		"hints do not move. Records: %d off, %d on.\n", len(off.lat), len(on.lat))
	return b.String()
}
