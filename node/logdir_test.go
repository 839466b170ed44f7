package node

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/quorum"
)

// diskFullFS wraps fs so that, while full is set, every write, create and
// sync of the partition logs and checkpoints fails with ENOSPC, as on a
// full disk. The node's Pebble index (<dir>/index) is spared: Pebble
// treats a failed WAL write as fatal and exits the process, which is a
// different failure (the broker's session expires and it is fenced).
func diskFullFS(fs vfs.FS, full *atomic.Bool) vfs.FS {
	return errorfs.Wrap(fs, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if !full.Load() || strings.Contains(filepath.ToSlash(op.Path), "/index/") {
			return nil
		}
		switch op.Kind {
		case errorfs.OpCreate, errorfs.OpFileWrite, errorfs.OpFileWriteAt, errorfs.OpFileSync,
			errorfs.OpFileSyncData, errorfs.OpFileSyncTo, errorfs.OpFilePreallocate, errorfs.OpMkdirAll:
			return &os.PathError{Op: "write", Path: op.Path, Err: syscall.ENOSPC}
		}
		return nil
	}))
}

// errorLines is a slog.Handler that keeps the messages and attributes of
// ERROR records, one line each.
type errorLines struct {
	mu    sync.Mutex
	lines []string
}

func (e *errorLines) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelError }

func (e *errorLines) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	e.mu.Lock()
	defer e.mu.Unlock()
	e.lines = append(e.lines, b.String())
	return nil
}

func (e *errorLines) WithAttrs([]slog.Attr) slog.Handler { return e }
func (e *errorLines) WithGroup(string) slog.Handler      { return e }

// find returns the first line containing every part, or "".
func (e *errorLines) find(parts ...string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
next:
	for _, l := range e.lines {
		for _, p := range parts {
			if !strings.Contains(l, p) {
				continue next
			}
		}
		return l
	}
	return ""
}

// TestFullDiskMovesLeadership fills the disk of partition 0's leader
// while an idempotent acks=all producer writes to every partition (RF=3,
// min.insync.replicas=2). The node takes its log dir offline and tells
// the controller, which moves its leaderships to in-sync replicas within
// the session timeout (without fencing the broker: it is still alive);
// the node answers KAFKA_STORAGE_ERROR for its replicas, /readyz says
// why and the offline-dir gauge is 1. Every record the producer sent is
// acknowledged, and every acknowledged record reads back once, in order.
// With space freed, a restart brings the node back: it registers again,
// its replicas catch up and rejoin every ISR.
func TestFullDiskMovesLeadership(t *testing.T) {
	const session = 6 * time.Second
	c := startReplCluster(t, 3, fmt.Sprintf("broker.session.timeout.ms=%d", session.Milliseconds()))
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	const topic, parts = "full", 3
	adm := kadm.NewClient(c.client())
	c.createTopic(ctx, topic, parts, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")})

	prod := c.client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))
	acks := newAckLog()
	var failed sync.Map
	var sent atomic.Int64
	var p0mu sync.Mutex
	var p0acks []time.Time // when partition 0's acknowledgements came
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the load: as fast as the cluster acknowledges, bounded in flight
		defer wg.Done()
		inflight := make(chan struct{}, 200)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case inflight <- struct{}{}:
			}
			sent.Add(1)
			prod.Produce(ctx, &kgo.Record{Partition: int32(i % parts), Value: fmt.Appendf(nil, "v%06d", i)}, func(r *kgo.Record, err error) {
				<-inflight
				if err != nil {
					failed.Store(string(r.Value), err)
					return
				}
				acks.add(r)
				if r.Partition == 0 {
					p0mu.Lock()
					p0acks = append(p0acks, time.Now())
					p0mu.Unlock()
				}
			})
		}
	}()
	waitAcks := func(n int) {
		t.Helper()
		for acks.count() < n {
			c.waitImage(ctx, fmt.Sprintf("%d acknowledged records", n), func(*quorum.Image) bool { return acks.count() >= n })
		}
	}
	waitAcks(1000)

	victim := c.leaderOf(topic, 0)
	if victim == nil {
		t.Fatal("partition 0 has no leader")
	}
	t.Logf("filling the disk of node %d, leader of partition 0, after %d acknowledged records", victim.id, acks.count())
	start := time.Now()
	victim.full.Store(true)
	var epoch int64
	c.waitImage(ctx, "the broker's log dir offline and its replicas out of leadership and ISRs", func(im *quorum.Image) bool {
		b := im.Brokers[victim.id]
		if b == nil || len(b.OfflineLogDirs) == 0 {
			return false
		}
		epoch = b.Epoch
		for _, p := range im.Topics[topic].Partitions {
			if p.Leader == victim.id || p.Leader == quorum.NoLeader || contains(p.ISR, victim.id) {
				return false
			}
		}
		return true
	})
	moved := time.Since(start)
	t.Logf("leadership moved off node %d %v after its disk filled", victim.id, moved)
	if moved > session {
		t.Errorf("leadership moved after %v, beyond the session timeout %v", moved, session)
	}
	c.live().ctrl.View(func(im *quorum.Image) {
		if b := im.Brokers[victim.id]; b.Fenced || b.Epoch != epoch {
			t.Errorf("the broker was fenced or re-registered (%+v): the move must come from its report", *b)
		}
	})

	// The node says so: KAFKA_STORAGE_ERROR for its replicas, /readyz, the gauge.
	direct := c.client(kgo.SeedBrokers(victim.KafkaAddr()))
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MaxBytes = 0, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic // Fetch v13+ (what kgo picks) names it by ID
	victim.ctrl.View(func(im *quorum.Image) { ft.TopicID = im.Topics[topic].ID })
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = 0, 0, 1<<20, -1
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	resp, err := req.RequestWith(ctx, direct.Broker(int(victim.id)))
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.KafkaStorageError.Code {
		t.Errorf("fetch from the node with the full disk: %v, want KAFKA_STORAGE_ERROR", kerr.ErrorForCode(code))
	}
	if l := victim.errors.find("log dir offline", "dir="+victim.dir, "no space left on device"); l == "" {
		t.Errorf("no ERROR line names the offline log dir %s and its cause", victim.dir)
	} else {
		t.Logf("node %d logged: %s", victim.id, l)
	}
	if why := victim.notReady(); !strings.Contains(why, "offline") {
		t.Errorf("/readyz reason %q does not say the log dir is offline", why)
	}
	// Metadata lists its replicas offline (what `sluice cluster health`
	// shows) once the broker answering has applied the record.
	tick := time.NewTicker(50 * time.Millisecond)
	for offline := false; !offline; {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		offline = true
		for _, p := range md.Topics[topic].Partitions {
			offline = offline && contains(p.OfflineReplicas, victim.id)
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("metadata never listed node %d's replicas offline: %v", victim.id, md.Topics[topic].Partitions)
		}
	}
	tick.Stop()
	if v := gatherNode(t, victim.Node)["kafka_log_logmanager_offlinelogdirectorycount"].GetMetric()[0].GetGauge().GetValue(); v != 1 {
		t.Errorf("offline log dir gauge %v, want 1", v)
	}

	// The producer goes on with the new leaders.
	waitAcks(acks.count() + 1000)
	close(stop)
	wg.Wait()
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	failed.Range(func(k, v any) bool {
		t.Errorf("record %s failed: %v", k, v)
		return true
	})
	if n := acks.count(); int64(n) != sent.Load() {
		t.Fatalf("%d of %d records acknowledged", n, sent.Load())
	}
	// What the producer saw: the longest pause in partition 0's
	// acknowledgements after the disk filled (kgo retries a
	// KAFKA_STORAGE_ERROR and learns the new leader from a metadata
	// refresh, at most every MetadataMinAge, 5 s by default).
	var gap time.Duration
	p0mu.Lock()
	for i := 1; i < len(p0acks); i++ {
		if prev := p0acks[i-1]; p0acks[i].After(start) {
			if prev.Before(start) {
				prev = start
			}
			gap = max(gap, p0acks[i].Sub(prev))
		}
	}
	p0mu.Unlock()
	t.Logf("partition 0: longest pause in acknowledgements after the disk filled: %v", gap)

	// Space is freed and the operator restarts the node.
	cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
	if err := victim.Close(cctx); err != nil {
		t.Logf("closing the node with the failed log dir: %v", err)
	}
	ccancel()
	victim.Node = nil
	victim.full.Store(false)
	c.restart(victim)
	c.waitImage(ctx, "the restarted broker back in every ISR", func(im *quorum.Image) bool {
		if b := im.Brokers[victim.id]; b == nil || len(b.OfflineLogDirs) > 0 || !b.Alive() {
			return false
		}
		for _, p := range im.Topics[topic].Partitions {
			if len(p.ISR) != 3 {
				return false
			}
		}
		return true
	})
	if why := victim.notReady(); why != "" {
		t.Errorf("restarted node not ready: %s", why)
	}
	c.checkAllAcked(ctx, topic, parts, acks)
	t.Logf("%d records acknowledged, all read back", acks.count())
}
