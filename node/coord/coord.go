package coord

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/node/group"
	"github.com/sluice-log/sluice/node/kafka"
)

// Host is what the coordinator needs from the node. Every method may be
// called from any goroutine, with a shard's lock held (lock order:
// shard.mu before anything the node takes inside them).
type Host interface {
	// Append writes one batch to offsets partition p as its leader with
	// acks=all, through the path clients' Produce takes (validation,
	// replication); ctx bounds the wait. The result's Err, or else the
	// value its Pending delivers, is the outcome.
	Append(ctx context.Context, p int32, batch []byte) kafka.ProduceResult
	// Read returns whole batches of the local replica of offsets
	// partition p from offset, none at or past upTo, at least one when
	// there is one (buf is reused when large enough), and the offset
	// after the last batch returned.
	Read(p int32, offset, upTo int64, maxBytes int, buf []byte) (data []byte, next int64, err error)
	// Offsets are the log start, high watermark and log end of the local
	// replica of p; ok is false unless it leads p at epoch.
	Offsets(p, epoch int32) (start, hw, leo int64, ok bool)
	// Changed returns a channel closed at the next append or high
	// watermark change of any local partition.
	Changed() <-chan struct{}
}

// Machine is one shard's state machine: *group.Shard (see node/group for
// the contract); tests may put a smaller one in its place.
type Machine interface {
	Replay(offset int64, key, value []byte) error
	LoadDone(now time.Time)
	Step(now time.Time, r group.Request)
	Appended(now time.Time, id uint64, err error)
	TickTo(now time.Time)
	NextDue() time.Time
	Ready() group.Ready
	ListGroups(states, types []string) []kmsg.ListGroupsResponseGroup
	TopicsDeleted(now time.Time, topics []string)
	Stats() group.Stats
}

// TopicSetter is a Machine's optional capability to take the cluster's
// topics (KIP-848 consumer groups resolve subscriptions and assign
// partitions from them): *group.Shard has it. The coordinator calls it
// when a shard has loaded and whenever SetTopics brings new topics.
type TopicSetter interface {
	SetTopics(now time.Time, topics map[string]group.TopicInfo)
}

// Sequencer is a Host's optional capability that transactional offset
// commits need: NextSequence is the base sequence the next batch of
// producer pid at epoch must carry in partition p, as the log's producer
// state expects it (0 for a producer it does not know, or a new epoch),
// since a TxnOffsetCommit's offsets are a transactional batch of the
// client's producer, checked like the client's own batches. Without it
// every such batch starts at sequence 0.
type Sequencer interface {
	NextSequence(p int32, pid int64, epoch int16) int32
}

// TxnMachine is a Machine's optional capability to keep transactional
// offset commits (TxnOffsetCommit): *group.Shard has it. The coordinator
// hands it a transactional batch's records (ReplayTxn), control batches
// (ReplayMarker) and the node's CompleteTxn; a Machine without it
// replays a transactional batch's records as any others, and gets no
// markers.
type TxnMachine interface {
	ReplayTxn(offset, producerID int64, key, value []byte) error
	ReplayMarker(producerID int64, commit bool)
	CompleteTxn(now time.Time, producerID int64, commit bool)
}

var _ TxnMachine = (*group.Shard)(nil)

// Options configure a Coordinator.
type Options struct {
	// Config is every shard's.
	Config group.Config
	// Topic names the internal topic in logs (__consumer_offsets when
	// empty).
	Topic string
	// CommitTimeout is offsets.commit.timeout.ms: the bound of each
	// append's wait for acks=all (5 s when zero).
	CommitTimeout time.Duration
	// Logger; nil discards.
	Logger *slog.Logger
	// NewMachine makes the machine of a shard led at epoch; nil:
	// group.NewShard. node/txncoord puts node/txn's machine here (the
	// driver is the same for both coordinators).
	NewMachine func(p, epoch int32, cfg group.Config) Machine
	// OnLoaded, when set, is told each load's duration (metrics).
	OnLoaded func(p int32, took time.Duration)
	// Now is the clock; nil: time.Now.
	Now func() time.Time
}

// Coordinator runs the shards of the offsets partitions this node leads.
type Coordinator struct {
	host Host
	opts Options
	log  *slog.Logger

	mu struct {
		sync.Mutex
		shards map[int32]*shard
		closed bool
	}
	// topics is the last SetTopics (nil: none yet); shards read it when
	// they load. Not held with mu or a shard's lock taken.
	topics struct {
		sync.Mutex
		m map[string]group.TopicInfo
	}
	// commits counts offsets passed to OffsetCommit (metrics); wakeups
	// the shards' timer firings (tests of idle shards).
	commits, wakeups atomic.Int64
	wg               sync.WaitGroup
}

// New returns a Coordinator leading no shard.
func New(h Host, opts Options) *Coordinator {
	if opts.CommitTimeout <= 0 {
		opts.CommitTimeout = 5 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.NewMachine == nil {
		opts.NewMachine = func(p, _ int32, cfg group.Config) Machine { return group.NewShard(p, cfg) }
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Topic == "" {
		opts.Topic = group.OffsetsTopic
	}
	c := &Coordinator{host: h, opts: opts, log: opts.Logger}
	c.mu.shards = map[int32]*shard{}
	return c
}

// Sync makes the shards match led, the offsets partitions this node leads
// with their leader epochs: a shard is made (and starts loading) for each
// newly led partition or new epoch, and dropped for each no longer led.
// The reconciler calls it after the replicas became leaders.
func (c *Coordinator) Sync(led map[int32]int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.closed {
		return
	}
	for p, s := range c.mu.shards {
		if e, ok := led[p]; !ok || e != s.epoch {
			delete(c.mu.shards, p)
			s.drop()
		}
	}
	for p, e := range led {
		if c.mu.shards[p] != nil {
			continue
		}
		s := newShard(c, p, e)
		c.mu.shards[p] = s
		c.wg.Go(s.load)
	}
}

// Close drops every shard and waits for their loads.
func (c *Coordinator) Close() {
	c.mu.Lock()
	c.mu.closed = true
	for p, s := range c.mu.shards {
		delete(c.mu.shards, p)
		s.drop()
	}
	c.mu.Unlock()
	c.wg.Wait()
}

func (c *Coordinator) shard(p int32) *shard {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.shards[p]
}

func (c *Coordinator) shards() []*shard {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*shard, 0, len(c.mu.shards))
	for _, s := range c.mu.shards {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b *shard) int { return int(a.p - b.p) })
	return out
}

// Do passes one request for groups of shard p and waits for its answer:
// see kafka.Groups.Coordinate. ctx ending gives up the wait (the shard
// still completes the request).
func (c *Coordinator) Do(ctx context.Context, p int32, req kafka.GroupRequest) (kmsg.Response, error) {
	s := c.shard(p)
	if s == nil {
		return nil, kerr.NotCoordinator
	}
	if oc, ok := req.Body.(*kmsg.OffsetCommitRequest); ok {
		for _, t := range oc.Topics {
			c.commits.Add(int64(len(t.Partitions)))
		}
	}
	ch, id, err := s.step(req)
	if err != nil {
		return nil, err
	}
	select {
	case resp, ok := <-ch:
		if !ok {
			return nil, kerr.NotCoordinator
		}
		return resp, nil
	case <-ctx.Done():
		s.forget(id)
		return nil, kerr.RequestTimedOut
	}
}

// Run calls f with the machine of shard p, if this node leads p at epoch
// and has loaded it, under the shard's lock, then acts on what the
// machine's Ready asks; false if it does not. Outcomes that arrive from
// elsewhere (node/txncoord's markers and producer ids) go in this way. f
// must not call the Coordinator.
func (c *Coordinator) Run(p, epoch int32, f func(m Machine, now time.Time)) bool {
	s := c.shard(p)
	if s == nil || s.epoch != epoch {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.gone || !s.mu.loaded {
		return false
	}
	now := c.opts.Now()
	f(s.mu.m, now)
	s.processLocked(now)
	return true
}

// Visit calls f with the machine of every loaded shard, by partition,
// each under its shard's lock, and returns how many shards are still
// loading. f must not call the Coordinator nor change the machine.
func (c *Coordinator) Visit(f func(p int32, m Machine, now time.Time)) (loading int) {
	for _, s := range c.shards() {
		s.mu.Lock()
		if s.mu.loaded && !s.mu.gone {
			f(s.p, s.mu.m, c.opts.Now())
		} else if !s.mu.loaded {
			loading++
		}
		s.mu.Unlock()
	}
	return loading
}

// ListGroups merges the groups of every shard; a shard still loading
// answers COORDINATOR_LOAD_IN_PROGRESS for all.
func (c *Coordinator) ListGroups(states, types []string) ([]kmsg.ListGroupsResponseGroup, error) {
	var out []kmsg.ListGroupsResponseGroup
	for _, s := range c.shards() {
		s.mu.Lock()
		if !s.mu.loaded {
			s.mu.Unlock()
			return nil, kerr.CoordinatorLoadInProgress
		}
		out = append(out, s.mu.m.ListGroups(states, types)...)
		s.mu.Unlock()
	}
	return out, nil
}

// CompleteTxn tells the shard of offsets partition p, if this node runs
// it, that the marker ending producerID's transaction is committed in
// the partition (the node calls it once WriteTxnMarkers' marker is below
// the high watermark): the producer's pending transactional offsets are
// committed or dropped. A shard still loading applies it when loaded.
func (c *Coordinator) CompleteTxn(p int32, producerID int64, commit bool) {
	s := c.shard(p)
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.gone {
		return
	}
	if !s.mu.loaded {
		// The load may start over with a new machine: kept here and
		// handed to the machine that loads.
		s.mu.lateTxns = append(s.mu.lateTxns, lateTxn{producerID, commit})
		return
	}
	tm, ok := s.mu.m.(TxnMachine)
	if !ok {
		return
	}
	now := c.opts.Now()
	tm.CompleteTxn(now, producerID, commit)
	s.processLocked(now)
}

// TopicsDeleted tells every loaded shard that topics are gone.
func (c *Coordinator) TopicsDeleted(topics []string) {
	for _, s := range c.shards() {
		s.mu.Lock()
		if s.mu.loaded && !s.mu.gone {
			now := c.opts.Now()
			s.mu.m.TopicsDeleted(now, topics)
			s.processLocked(now)
		}
		s.mu.Unlock()
	}
}

// SetTopics gives every loaded shard (and every shard that loads later)
// the cluster's topics; the node calls it when they change (created,
// deleted, partitions added). topics is not modified afterwards.
func (c *Coordinator) SetTopics(topics map[string]group.TopicInfo) {
	c.topics.Lock()
	c.topics.m = topics
	c.topics.Unlock()
	for _, s := range c.shards() {
		s.mu.Lock()
		if ts, ok := s.mu.m.(TopicSetter); ok && s.mu.loaded && !s.mu.gone {
			now := c.opts.Now()
			ts.SetTopics(now, topics)
			s.processLocked(now)
		}
		s.mu.Unlock()
	}
}

func (c *Coordinator) lastTopics() map[string]group.TopicInfo {
	c.topics.Lock()
	defer c.topics.Unlock()
	return c.topics.m
}

// ShardStats is one loaded shard's Stats, with its partition.
type ShardStats struct {
	Partition int32
	group.Stats
}

// Stats reads every loaded shard (metrics); Loading counts the others.
func (c *Coordinator) Stats() (loaded []ShardStats, loading int) {
	for _, s := range c.shards() {
		s.mu.Lock()
		if s.mu.loaded {
			loaded = append(loaded, ShardStats{Partition: s.p, Stats: s.mu.m.Stats()})
		} else {
			loading++
		}
		s.mu.Unlock()
	}
	return loaded, loading
}

// OffsetsCommitted counts the offsets OffsetCommit requests asked to
// commit here since the start (Kafka's offset-commit-rate is its rate).
func (c *Coordinator) OffsetsCommitted() int64 { return c.commits.Load() }

// Wakeups counts the shards' timer firings since the start.
func (c *Coordinator) Wakeups() int64 { return c.wakeups.Load() }

// Scheduled counts the shards with a timer set.
func (c *Coordinator) Scheduled() int {
	n := 0
	for _, s := range c.shards() {
		s.mu.Lock()
		if !s.mu.due.IsZero() {
			n++
		}
		s.mu.Unlock()
	}
	return n
}

// Led lists the shards by partition: true once loaded.
func (c *Coordinator) Led() map[int32]bool {
	out := map[int32]bool{}
	for _, s := range c.shards() {
		s.mu.Lock()
		out[s.p] = s.mu.loaded
		s.mu.Unlock()
	}
	return out
}

// WaitLoaded waits until this node leads offsets partition p and has
// loaded it, or ctx ends.
func (c *Coordinator) WaitLoaded(ctx context.Context, p int32) error {
	for {
		s := c.shard(p)
		if s == nil {
			return kerr.NotCoordinator
		}
		select {
		case <-s.loadedCh:
			return nil
		case <-s.ctx.Done():
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// appendError is the outcome of an append for Machine.Appended: nil, or
// the Kafka error of the write (the machine maps it as Kafka does).
func appendError(err error) error {
	var ke *kerr.Error
	if err == nil || errors.As(err, &ke) {
		return err
	}
	return fmt.Errorf("%w: %v", kerr.UnknownServerError, err)
}
