//go:build linux

package node

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestBenchGroupsScale is `make bench-groups-scale` (skipped otherwise):
// issue 17's scale bar. A 3-node cluster in this process on the real disk
// (RF=3, __consumer_offsets with its defaults: 50 partitions,
// offsets.topic.segment.bytes 100 MiB, the node's cleaner settings)
// takes GROUPS_N standalone groups (default 10,000) each committing one
// offset once a second (OffsetCommit, generation -1, the offset counting
// up) for GROUPS_SECONDS (600), from GROUPS_WORKERS (64) goroutines over
// 4 kgo clients; when the cluster answers slower than that, the pacer
// falls behind (counted) and the run takes longer. Every
// GROUPS_SAMPLE_SECONDS (30) it prints the commits answered in the window
// (rate; errors), the process's Go heap in use after a GC, RSS and open
// descriptors (the three nodes and the load together), the coordinators'
// Shard.Stats summed (groups, committed offsets, commits), the cleaner
// pools' cleans, and __consumer_offsets on disk: bytes and segment files
// over every node's replicas. Bounded means these level off while the
// commits go on. The cleaner never cleans the active segment, so until
// segments roll the topic grows by every commit: GROUPS_SEGMENT_BYTES
// overrides offsets.topic.segment.bytes to see compaction within a short
// run (the bytes' bound is about partitions × segment.bytes per replica).
func TestBenchGroupsScale(t *testing.T) {
	if os.Getenv("SLUICE_BENCH_GROUPS_SCALE") == "" {
		t.Skip("make bench-groups-scale runs this (SLUICE_BENCH_GROUPS_SCALE=1)")
	}
	groups := int(envInt(t, "GROUPS_N", 10_000))
	seconds := envInt(t, "GROUPS_SECONDS", 600)
	sample := time.Duration(envInt(t, "GROUPS_SAMPLE_SECONDS", 30)) * time.Second
	workers := int(envInt(t, "GROUPS_WORKERS", 64))
	settings := []string{"group.initial.rebalance.delay.ms=0"}
	if v := os.Getenv("GROUPS_SEGMENT_BYTES"); v != "" {
		settings = append(settings, "offsets.topic.segment.bytes="+v)
	}
	c := startReplClusterOn(t, 3, true, settings...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(seconds)*time.Second+10*time.Minute)
	defer cancel()
	c.createTopic(ctx, "scale", 1, nil)
	var cls []*kgo.Client
	for range 4 {
		cls = append(cls, c.client(kgo.MaxVersions(offsetsByName()))) // commits by topic name
	}
	adm := kadm.NewClient(cls[0])
	waitFor(ctx, t, "a first commit", func() bool {
		o := kadm.Offsets{}
		o.Add(kadm.Offset{Topic: "scale", Partition: 0, At: 0, LeaderEpoch: -1})
		r, err := adm.CommitOffsets(ctx, "scale-0", o)
		return err == nil && r.Error() == nil
	})
	waitFor(ctx, t, "every shard loaded", func() bool {
		n := 0
		for _, rn := range c.nodes {
			loaded, loading := rn.coord.Stats()
			if loading > 0 {
				return false
			}
			n += len(loaded)
		}
		return n == 50
	})
	var ok, failed, behind atomic.Int64
	var firstErr atomic.Value
	work := make(chan [2]int, workers*4) // group, second
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := cls[w%len(cls)]
			for job := range work {
				req := kmsg.NewPtrOffsetCommitRequest()
				req.Group, req.Generation = fmt.Sprintf("scale-%d", job[0]), -1
				rt := kmsg.NewOffsetCommitRequestTopic()
				rt.Topic = "scale"
				rp := kmsg.NewOffsetCommitRequestTopicPartition()
				rp.Offset = int64(job[1])
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
				resp, err := req.RequestWith(ctx, cl)
				if err == nil && resp.Topics[0].Partitions[0].ErrorCode != 0 {
					err = fmt.Errorf("error code %d", resp.Topics[0].Partitions[0].ErrorCode)
				}
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				ok.Add(1)
			}
		}()
	}
	// The pacer: second s sends every group's commit spread over the
	// second; a job that finds the queue full waits (and counts as behind).
	go func() {
		defer close(work)
		t0 := time.Now()
		for s := range int(seconds) {
			for g := range groups {
				due := t0.Add(time.Duration(s)*time.Second + time.Duration(g)*time.Second/time.Duration(groups))
				if d := time.Until(due); d > 0 {
					tm := time.NewTimer(d) // the pace, not synchronisation
					<-tm.C
				} else if d < -time.Second {
					behind.Add(1)
				}
				select {
				case work <- [2]int{g, s}:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	t.Logf("%d groups committing once a second for %d s; samples every %v", groups, seconds, sample)
	fmt.Printf("%-6s %-10s %-7s %-7s %-9s %-9s %-6s %-8s %-9s %-10s %-7s %-12s %-6s\n",
		"t(s)", "commits/s", "errors", "behind", "heap-MiB", "rss-MiB", "fds", "groups", "offsets", "co-commits", "cleans", "offsets-MiB", "segs")
	start, last, lastOK := time.Now(), time.Now(), int64(0)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(sample)
	defer tick.Stop()
	for running := true; running; {
		select {
		case <-tick.C:
		case <-done:
			running = false
		}
		now, n := time.Now(), ok.Load()
		ps := sampleProcess()
		var gs, offs int
		var commits, cleans int64
		for _, rn := range c.nodes {
			loaded, _ := rn.coord.Stats()
			for _, s := range loaded {
				for _, k := range s.Groups {
					gs += k
				}
				for _, ts := range s.Offsets {
					for _, ps := range ts {
						offs += len(ps)
					}
				}
				commits += s.Commits
			}
			cleans += rn.cleaner.Stats(nil).Cleans
		}
		bytes, segs := offsetsOnDisk(t, c)
		fmt.Printf("%-6.0f %-10.0f %-7d %-7d %-9.1f %-9.1f %-6d %-8d %-9d %-10d %-7d %-12.1f %-6d\n",
			now.Sub(start).Seconds(), float64(n-lastOK)/now.Sub(last).Seconds(), failed.Load(), behind.Load(),
			float64(ps.heap)/(1<<20), float64(ps.rss)/(1<<20), ps.fds, gs, offs, commits, cleans, float64(bytes)/(1<<20), segs)
		last, lastOK = now, n
	}
	if e := firstErr.Load(); e != nil {
		t.Logf("first commit error: %v", e)
	}
	t.Logf("answered %d commits (%d failed) of %d asked in %v", ok.Load(), failed.Load(), int64(groups)*seconds, time.Since(start).Round(time.Second))
}

// offsetsOnDisk sums the files of every __consumer_offsets replica in c's
// node directories: bytes and segment (.log) files.
func offsetsOnDisk(t *testing.T, c *replCluster) (bytes int64, segs int) {
	for _, rn := range c.nodes {
		dirs, _ := filepath.Glob(filepath.Join(rn.dir, "__consumer_offsets-*"))
		for _, d := range dirs {
			_ = filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
				if err != nil || e.IsDir() {
					return nil
				}
				if info, err := e.Info(); err == nil {
					bytes += info.Size()
				}
				if strings.HasSuffix(p, ".log") {
					segs++
				}
				return nil
			})
		}
	}
	return bytes, segs
}
