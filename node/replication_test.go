package node

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-log/sluice/node/config"
	"github.com/sluice-log/sluice/node/kafka"
	"github.com/sluice-log/sluice/node/meta"
	"github.com/sluice-log/sluice/quorum"
)

// replNode is one node of a replicated test cluster: its logs live on a
// crashable in-memory filesystem (Raft's store is on the real disk), so
// the test can take what survives a process kill (everything written) or
// a power cut (only what was fsynced).
type replNode struct {
	*Node
	id       int32
	dir      string
	ctrlAddr string // controller (Raft) address: fixed, it is in meta.properties
	gossip   string
	fs       *vfs.MemFS
	extra    []string
	// proxy, when set before start, is the Kafka address the node
	// advertises (so its followers fetch through it).
	proxy *pauseProxy
	// full, when set, makes the node's log writes fail with ENOSPC
	// (logdir_test.go); nil for on-disk nodes.
	full *atomic.Bool
	// errors keeps the node's ERROR log lines (logdir_test.go).
	errors errorLines
}

// replCluster is n controller+broker nodes with gossip liveness on
// 127.0.0.1, started together.
type replCluster struct {
	t     testing.TB
	nodes []*replNode
	seeds []string
	// verifier, when set, is every node's Options.txnVerifier.
	verifier kafka.TxnVerifier
}

// freeAddr finds a port free for TCP and UDP (memberlist needs both) for a
// listener that is closed now and opened again by the node, also after a
// restart. It draws from below the kernel's ephemeral range (32768-60999
// by default): a port from there (what ":0" gives) can be taken in the
// meantime as the source port of any outgoing connection on the machine,
// which made node starts fail with "address already in use" under load.
// 12000-17999 keeps apart from the demo and soak tests' ranges, which run
// real node processes at the same time.
//
// A port is free when probed but bound only later, when its node starts,
// so two draws could hand out the same port: within one process a port
// is never handed out twice (portsGiven), and node/shards.sh gives each
// test process its own slice of the range (SLUICE_TEST_SHARD=i/n). Both
// collisions made a node start fail with "address already in use".
func freeAddr(t testing.TB) string {
	t.Helper()
	lo, span := shardPorts()
	portsMu.Lock()
	defer portsMu.Unlock()
	for range 500 {
		port := lo + rand.IntN(span)
		if portsGiven[port] {
			continue
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		pc, err := net.ListenPacket("udp", addr)
		ln.Close()
		if err == nil {
			pc.Close()
			portsGiven[port] = true
			return addr
		}
	}
	t.Fatalf("no free TCP+UDP port in %d-%d", lo, lo+span-1)
	return ""
}

var (
	portsMu    sync.Mutex
	portsGiven = map[int]bool{}
)

// shardPorts is this process's slice of 12000-17999: all of it, or the
// i-th of n when node/shards.sh set SLUICE_TEST_SHARD=i/n.
func shardPorts() (lo, span int) {
	lo, span = 12000, 6000
	var i, n int
	if _, err := fmt.Sscanf(os.Getenv("SLUICE_TEST_SHARD"), "%d/%d", &i, &n); err == nil && n > 0 && i >= 0 && i < n {
		span /= n
		lo += i * span
	}
	return lo, span
}

func startReplCluster(t testing.TB, n int, extra ...string) *replCluster {
	return startReplClusterOn(t, n, false, extra...)
}

// startReplClusterOn is startReplCluster with the logs on the real disk
// when disk is set (benchmarks), else on crashable in-memory filesystems.
func startReplClusterOn(t testing.TB, n int, disk bool, extra ...string) *replCluster {
	t.Helper()
	c := newReplCluster(t, n, disk, extra...)
	c.start()
	return c
}

// newReplCluster formats the nodes of a cluster for start; the test may
// set up each replNode (a proxy) in between.
func newReplCluster(t testing.TB, n int, disk bool, extra ...string) *replCluster {
	t.Helper()
	c := &replCluster{t: t}
	var voters []quorum.Voter
	for i := range n {
		rn := &replNode{id: int32(i + 1), dir: t.TempDir(), ctrlAddr: freeAddr(t), gossip: freeAddr(t), extra: extra}
		if !disk {
			rn.fs, rn.full = vfs.NewCrashableMem(), new(atomic.Bool)
		}
		voters = append(voters, quorum.Voter{ID: rn.id, Addr: rn.ctrlAddr})
		c.seeds = append(c.seeds, rn.gossip)
		c.nodes = append(c.nodes, rn)
	}
	clusterID := quorum.NewUUID().String()
	for _, rn := range c.nodes {
		if _, err := meta.Format(rn.dir, meta.Meta{ClusterID: clusterID, NodeID: rn.id, InitialControllers: voters}); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// start opens every node of c at once and closes them at the test's end.
func (c *replCluster) start() {
	t, n := c.t, len(c.nodes)
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, rn := range c.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.open(rn)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("node %d: %v", i+1, err)
		}
	}
	t.Cleanup(func() {
		for _, rn := range c.nodes {
			if rn.Node != nil {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_ = rn.Close(ctx)
				cancel()
			}
		}
	})
}

// open starts rn on its directory and filesystem.
// reopenAll opens every node again at once (they were killed or
// crashed: a full-cluster restart), failing the test if one does not.
func (c *replCluster) reopenAll(t *testing.T) {
	t.Helper()
	var wg sync.WaitGroup
	for _, rn := range c.nodes {
		wg.Go(func() {
			if err := c.open(rn); err != nil {
				t.Errorf("restart node %d: %v", rn.id, err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
}

func (c *replCluster) open(rn *replNode) error {
	var seeds []string
	for _, s := range c.seeds {
		if s != rn.gossip {
			seeds = append(seeds, s)
		}
	}
	kl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	advertised := kl.Addr().String()
	if rn.proxy != nil {
		rn.proxy.to(advertised)
		advertised = rn.proxy.addr()
	}
	fs := pflag.NewFlagSet("node", pflag.ContinueOnError)
	config.Flags(fs)
	args := []string{fmt.Sprintf("--node.id=%d", rn.id), "--log.dirs=" + rn.dir,
		"--listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://" + rn.ctrlAddr + ",GOSSIP://" + rn.gossip,
		"--advertised.listeners=PLAINTEXT://" + advertised,
		"--gossip.seeds=" + strings.Join(seeds, ","),
		"--broker.session.timeout.ms=2000", "--replica.lag.time.max.ms=3000"}
	for _, e := range rn.extra {
		args = append(args, "--"+e)
	}
	if err := fs.Parse(args); err != nil {
		kl.Close()
		return err
	}
	cfg, err := config.Load(fs, []string{})
	if err != nil {
		kl.Close()
		return err
	}
	opts := Options{KafkaListener: kl, RegisterTimeout: 45 * time.Second, Logger: slog.New(&rn.errors), txnVerifier: c.verifier}
	if rn.fs != nil {
		opts.FS = diskFullFS(rn.fs, rn.full)
	}
	nd, err := Open(cfg, opts)
	if err != nil {
		kl.Close()
		return err
	}
	rn.Node = nd
	return nil
}

// kill stops rn the way SIGKILL does: nothing is closed cleanly, and what
// survives is what the kernel had — every write, synced or not.
func (c *replCluster) kill(rn *replNode) {
	c.crash(rn, 100)
}

// crash stops rn keeping unsyncedPercent of its unsynced writes (0: a
// power cut), as a new filesystem for the restart.
func (c *replCluster) crash(rn *replNode, unsyncedPercent int) {
	clone := rn.fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: unsyncedPercent, RNG: rand.New(rand.NewPCG(1, 2))})
	rn.Node.abort()
	rn.Node, rn.fs = nil, clone
}

func (c *replCluster) restart(rn *replNode) {
	c.t.Helper()
	if err := c.open(rn); err != nil {
		c.t.Fatalf("restart node %d: %v", rn.id, err)
	}
}

func (c *replCluster) live() *replNode {
	for _, rn := range c.nodes {
		if rn.Node != nil {
			return rn
		}
	}
	c.t.Fatal("no live node")
	return nil
}

func (c *replCluster) client(opts ...kgo.Opt) *kgo.Client {
	c.t.Helper()
	var seeds []string
	for _, rn := range c.nodes {
		if rn.Node != nil {
			seeds = append(seeds, rn.KafkaAddr())
		}
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, opts...)...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(cl.Close)
	return cl
}

// waitImage waits until cond holds on the metadata image of a live node.
// createTopic creates topic with parts partitions, three replicas and
// cfg, and waits until every node's metadata has it.
func (c *replCluster) createTopic(ctx context.Context, topic string, parts int32, cfg map[string]*string) {
	c.t.Helper()
	if _, err := kadm.NewClient(c.client()).CreateTopic(ctx, parts, 3, cfg, topic); err != nil {
		c.t.Fatal(err)
	}
	c.waitImage(ctx, "the topic on every node", func(im *quorum.Image) bool { return im.Topics[topic] != nil })
}

func (c *replCluster) waitImage(ctx context.Context, what string, cond func(im *quorum.Image) bool) {
	c.t.Helper()
	for {
		rn := c.live()
		changed := (*broker)(rn.Node).Appended()
		var ok bool
		rn.ctrl.View(func(im *quorum.Image) { ok = cond(im) })
		if ok {
			return
		}
		t := time.NewTimer(100 * time.Millisecond)
		select {
		case <-changed:
		case <-t.C:
		case <-ctx.Done():
			c.t.Fatalf("waiting for %s: %v", what, ctx.Err())
		}
		t.Stop()
	}
}

// abort stops the node without its clean path: no clean-shutdown marker,
// no high-watermark checkpoint, no gossip leave. The logs are closed only
// to release them; a test that calls abort has taken a CrashClone of the
// node's filesystem first, and restarts on that.
func (n *Node) abort() {
	n.mu.Lock()
	n.mu.closed = true
	n.mu.Unlock()
	_ = n.srv.Close()
	<-n.served
	if n.httpSrv != nil {
		_ = n.httpSrv.Close()
	}
	if n.gossip != nil {
		_ = n.gossip.Close()
	}
	n.stopLoops()
	n.cleaner.Close()
	_ = n.ctrl.Close()
	n.reconcileMu.Lock()
	n.coord.Close()
	_ = n.rm.CloseLogs()
	n.reconcileMu.Unlock()
	_ = n.idx.Close()
}

// ackLog records what an idempotent producer had acknowledged.
type ackLog struct {
	mu    sync.Mutex
	acked map[string]int64 // value -> offset
	order map[int32][]string
}

func newAckLog() *ackLog { return &ackLog{acked: map[string]int64{}, order: map[int32][]string{}} }

func (a *ackLog) add(r *kgo.Record) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.acked[string(r.Value)] = r.Offset
	a.order[r.Partition] = append(a.order[r.Partition], string(r.Value))
}

func (a *ackLog) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.acked)
}

// leaderOf is the partition's leader in the image of a live node.
func (c *replCluster) leaderOf(topic string, p int) *replNode {
	var id int32 = -1
	c.live().ctrl.View(func(im *quorum.Image) {
		if t := im.Topics[topic]; t != nil {
			id = t.Partitions[p].Leader
		}
	})
	for _, rn := range c.nodes {
		if rn.id == id {
			return rn
		}
	}
	return nil
}

// readAll reads every partition from the start up to its high watermark
// and returns each value's offset and the values in log order; a value
// read twice fails the test.
func (c *replCluster) readAll(ctx context.Context, topic string, partitions int) (map[string]int64, map[int32][]string) {
	c.t.Helper()
	ends, err := kadm.NewClient(c.client()).ListEndOffsets(ctx, topic)
	if err != nil {
		c.t.Fatal(err)
	}
	offsets := map[int32]kgo.Offset{}
	left := map[int32]int64{}
	for p := range int32(partitions) {
		offsets[p] = kgo.NewOffset().AtStart()
		o, _ := ends.Lookup(topic, p)
		if o.Err != nil {
			c.t.Fatalf("end offset of partition %d: %v", p, o.Err)
		}
		if o.Offset > 0 {
			left[p] = o.Offset
		}
	}
	cons := c.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}), kgo.FetchMaxWait(200*time.Millisecond))
	seen := map[string]int64{}
	order := map[int32][]string{}
	for len(left) > 0 {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			c.t.Fatalf("reading back, partitions not at their end: %v: %v", left, ctx.Err())
		}
		fs.EachError(func(_ string, p int32, err error) { c.t.Logf("fetch partition %d: %v", p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			if off, dup := seen[v]; dup {
				c.t.Fatalf("%s at offsets %d and %d: duplicated", v, off, r.Offset)
			}
			seen[v] = r.Offset
			order[r.Partition] = append(order[r.Partition], v)
			if r.Offset+1 >= left[r.Partition] {
				delete(left, r.Partition)
			}
		})
	}
	return seen, order
}

// checkAllAcked reads every partition back and checks that each
// acknowledged record is there exactly once, at the offset it was
// acknowledged with, in the order it was acknowledged.
func (c *replCluster) checkAllAcked(ctx context.Context, topic string, partitions int, acks *ackLog) {
	c.t.Helper()
	seen, order := c.readAll(ctx, topic, partitions)
	for v, off := range acks.acked {
		if got, ok := seen[v]; !ok || got != off {
			c.t.Errorf("%s acknowledged at offset %d, read at %d (found: %v)", v, off, got, ok)
		}
	}
	for p, vs := range acks.order {
		var got []string
		for _, v := range order[p] {
			if _, ok := acks.acked[v]; ok {
				got = append(got, v)
			}
		}
		if strings.Join(vs, ",") != strings.Join(got, ",") {
			c.t.Errorf("partition %d: acknowledged order differs from the log's", p)
		}
	}
}

// TestReplicationSurvivesLeaderKill: RF=3, min.insync.replicas=2, kgo's
// idempotent acks=all producer streaming records (one a millisecond, round
// robin over three partitions); the leader of partition 0 is killed (no
// clean shutdown) while produces to it are in flight, the stream goes on
// through the failover, and the node is restarted. Every record is
// acknowledged, every acknowledged record is read back exactly once, in
// order, and the restarted broker rejoins the ISR after catching up.
func TestReplicationSurvivesLeaderKill(t *testing.T) {
	c := startReplCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	const topic, parts = "repl", 3
	c.createTopic(ctx, topic, parts, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")})

	prod := c.client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))
	acks := newAckLog()
	var failed sync.Map
	// Sent and answered records of partition 0: in flight is their
	// difference.
	var sent0, done0, total atomic.Int64
	stop := make(chan struct{})
	var stream sync.WaitGroup
	stream.Go(func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			p := int32(i % parts)
			if p == 0 {
				sent0.Add(1)
			}
			total.Add(1)
			prod.Produce(ctx, &kgo.Record{Partition: p, Value: fmt.Appendf(nil, "v%06d", i)}, func(r *kgo.Record, err error) {
				if r.Partition == 0 {
					done0.Add(1)
				}
				if err != nil {
					failed.Store(string(r.Value), err)
					return
				}
				acks.add(r)
			})
		}
	})
	stopStream := sync.OnceFunc(func() { close(stop); stream.Wait() })
	defer stopStream()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		tick := time.NewTicker(200 * time.Microsecond)
		defer tick.Stop()
		for !cond() {
			select {
			case <-ctx.Done():
				t.Fatalf("waiting for %s: %v", what, ctx.Err())
			case <-tick.C:
			}
		}
	}
	waitFor("500 acknowledged records", func() bool { return acks.count() >= 500 })
	victim := c.leaderOf(topic, 0)
	if victim == nil {
		t.Fatal("partition 0 has no leader")
	}
	waitFor("produces to partition 0 in flight", func() bool { return sent0.Load() > done0.Load() })
	inFlight := sent0.Load() - done0.Load()
	c.kill(victim)
	before := acks.count()
	t.Logf("killed node %d, leader of partition 0, with %d produces to it in flight, after %d acknowledged records", victim.id, inFlight, before)
	if inFlight <= 0 {
		t.Fatalf("%d produces in flight at the kill", inFlight)
	}
	// The stream goes on through the failover until partition 0 took
	// writes again from its new leader.
	acked0 := func() int {
		acks.mu.Lock()
		defer acks.mu.Unlock()
		return len(acks.order[0])
	}
	n0 := acked0()
	waitFor("partition 0 acknowledging again after the failover", func() bool { return acked0() >= n0+300 })
	stopStream()
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	failed.Range(func(k, v any) bool {
		t.Errorf("record %s failed: %v", k, v)
		return true
	})
	if acks.count() != int(total.Load()) {
		t.Fatalf("%d of %d records acknowledged", acks.count(), total.Load())
	}
	c.restart(victim)
	c.waitImage(ctx, "the restarted broker back in every ISR", func(im *quorum.Image) bool {
		for _, p := range im.Topics[topic].Partitions {
			if len(p.ISR) != 3 {
				return false
			}
		}
		return true
	})
	c.checkAllAcked(ctx, topic, parts, acks)
}

// TestPowerCutAllReplicas cuts power to all three replicas at once (each
// node keeps only what it fsynced) and restarts them. With
// sluice.durability=sync nothing acknowledged is lost. With page-cache
// (Kafka's model, flush never) the loss is bounded by what was unflushed —
// every acknowledged record below the least-flushed replica's flushed
// offset survives — and the nodes report it: the log ends below the
// high watermark they checkpointed. The page-cache run losing records at
// all is the control that the power cut is real.
func TestPowerCutAllReplicas(t *testing.T) {
	for _, mode := range []string{"sync", "page-cache"} {
		t.Run(mode, func(t *testing.T) {
			c := startReplCluster(t, 3)
			ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
			defer cancel()
			const topic, parts, total = "cut", 2, 600
			cfg := map[string]*string{"min.insync.replicas": kadm.StringPtr("2"), "sluice.durability": kadm.StringPtr(mode)}
			c.createTopic(ctx, topic, parts, cfg)
			prod := c.client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			acks := newAckLog()
			for i := range total {
				prod.Produce(ctx, &kgo.Record{Partition: int32(i % parts), Value: fmt.Appendf(nil, "v%05d", i)}, func(r *kgo.Record, err error) {
					if err != nil {
						t.Errorf("produce %s: %v", r.Value, err)
						return
					}
					acks.add(r)
				})
			}
			if err := prod.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			prod.Close()
			// What each partition keeps for sure: the least flushed offset
			// over its replicas. Checkpoint the HWs so the loss report below
			// does not depend on the 5 s checkpoint timer.
			minFlushed := map[int32]int64{}
			for _, rn := range c.nodes {
				if err := rn.rm.WriteHWCheckpoint(); err != nil {
					t.Fatal(err)
				}
				for p := range int32(parts) {
					f := rn.replica(topic, p).Log().FlushedOffset()
					if m, ok := minFlushed[p]; !ok || f < m {
						minFlushed[p] = f
					}
				}
			}
			for _, rn := range c.nodes {
				c.crash(rn, 0)
			}
			c.reopenAll(t)
			allLed := func(im *quorum.Image) bool {
				for _, p := range im.Topics[topic].Partitions {
					if p.Leader == quorum.NoLeader {
						return false
					}
				}
				return true
			}
			if mode == "page-cache" {
				// Every ISR member restarted uncleanly and may have lost
				// acknowledged records: the controller elects none of them
				// on its own (KIP-966); the operator chooses an unclean
				// election, which is recorded.
				c.waitImage(ctx, "every broker back", func(im *quorum.Image) bool {
					for _, rn := range c.nodes {
						if !im.Brokers[rn.id].Alive() {
							return false
						}
					}
					return true
				})
				c.live().ctrl.View(func(im *quorum.Image) {
					for i, p := range im.Topics[topic].Partitions {
						// No replica is electable cleanly: the ISR is empty and
						// so is the ELR (every member went to the last-known
						// ELR), or, with eligible.leader.replicas.version 0,
						// the ISR's last member is stale.
						if p.Leader != quorum.NoLeader || !p.StaleISR && (len(p.ISR) > 0 || len(p.ELR) > 0) {
							t.Errorf("partition %d after an all-replica power cut in page-cache mode: %s", i, p)
						}
					}
				})
				res, err := kadm.NewClient(c.client()).ElectLeaders(ctx, kadm.ElectLiveReplica, kadm.TopicsSet{topic: nil})
				if err != nil {
					t.Fatal(err)
				}
				for _, ps := range res {
					for p, r := range ps {
						if r.Err != nil {
							t.Fatalf("unclean election of partition %d: %v", p, r.Err)
						}
					}
				}
			}
			c.waitImage(ctx, "leaders for every partition", allLed)
			c.waitImage(ctx, "every replica back in every ISR", func(im *quorum.Image) bool {
				for _, p := range im.Topics[topic].Partitions {
					if len(p.ISR) != 3 {
						return false
					}
				}
				return true
			})
			var reported int64
			for _, rn := range c.nodes {
				reported += rn.rm.LostOnRecovery()
			}
			for _, rn := range c.nodes {
				for p := range int32(parts) {
					if r := rn.replica(topic, p); r != nil {
						st := r.Status()
						t.Logf("node %d partition %d: %v leader %d epoch %d LEO %d HW %d flushed %d isr %v", rn.id, p, st.Role, st.Leader, st.LeaderEpoch, st.LEO, st.HW, st.Flushed, st.ISR)
					}
				}
			}
			t.Logf("min flushed before the cut: %v", minFlushed)
			if mode == "sync" {
				c.checkAllAcked(ctx, topic, parts, acks)
				if reported != 0 {
					t.Errorf("sync mode: nodes report %d committed records lost", reported)
				}
				return
			}
			seen, _ := c.readAll(ctx, topic, parts)
			lost := 0
			for v, off := range acks.acked {
				if got, ok := seen[v]; ok && got == off {
					continue
				}
				lost++
				var p int32
				fmt.Sscanf(v, "v%d", &p)
				if p %= parts; off < minFlushed[p] {
					t.Errorf("%s at offset %d lost although every replica had fsynced partition %d below %d", v, off, p, minFlushed[p])
				}
			}
			t.Logf("page-cache power cut: %d of %d acknowledged records lost; nodes report %d committed records lost; min flushed %v", lost, total, reported, minFlushed)
			if lost == 0 {
				t.Error("page-cache mode lost nothing to a power cut with flush never: the cut is not real")
			}
			if reported == 0 {
				t.Error("acknowledged records were lost and no node reported it")
			}
		})
	}
}
