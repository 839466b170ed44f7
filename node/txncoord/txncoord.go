package txncoord

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/node/coord"
	"github.com/sluice-log/sluice/node/group"
	"github.com/sluice-log/sluice/node/kafka"
	"github.com/sluice-log/sluice/node/txn"
)

// Host is what the transaction coordinator needs from the node: the
// state partitions' log (coord.Host, for __transaction_state), producer
// ids, the metadata and connections to the other brokers. Every method
// may be called from any goroutine; the coord.Host methods with a
// shard's lock held, the others with no lock of this package held.
type Host interface {
	coord.Host
	// AllocateProducerIDs obtains a block of producer ids from the
	// controller (KRaft's AllocateProducerIds): [first, first+n).
	AllocateProducerIDs(ctx context.Context) (first, n int64, err error)
	// Leader is the leader of topic's partition in the metadata image:
	// exists is false when there is no such partition (a deleted topic),
	// leader -1 while it has none.
	Leader(topic string, partition int32) (leader int32, exists bool)
	// Dial connects to broker id's inter-broker listener with its
	// security (TLS, SASL), as the replica fetchers do.
	Dial(id int32) (*kafka.ClientConn, error)
}

// Options configure a Coordinator.
type Options struct {
	// Config is every shard's.
	Config txn.Config
	// WriteTimeout bounds each append to __transaction_state (Kafka uses
	// request.timeout.ms: 30 s when zero) and each WriteTxnMarkers round
	// trip.
	WriteTimeout time.Duration
	// Logger; nil discards.
	Logger *slog.Logger
	// Now is the clock; nil: time.Now.
	Now func() time.Time
}

// Coordinator runs the transaction coordinator's shards of the
// __transaction_state partitions this node leads.
type Coordinator struct {
	host    Host
	opts    Options
	log     *slog.Logger
	c       *coord.Coordinator
	markers *markerSender
	verify  verifier

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// lastLoad and maxLoad are in nanoseconds (metrics).
	lastLoad, maxLoad atomic.Int64
}

// New returns a Coordinator leading no shard.
func New(h Host, opts Options) *Coordinator {
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = 30 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	c := &Coordinator{host: h, opts: opts, log: opts.Logger}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.markers = newMarkerSender(c)
	c.c = coord.New(h, coord.Options{
		Topic:         txn.StateTopic,
		CommitTimeout: opts.WriteTimeout,
		Logger:        opts.Logger,
		Now:           opts.Now,
		NewMachine: func(p, epoch int32, _ group.Config) coord.Machine {
			return &machine{c: c, p: p, epoch: epoch, s: txn.NewShard(p, opts.Config)}
		},
		OnLoaded: func(_ int32, took time.Duration) {
			c.lastLoad.Store(int64(took))
			for {
				m := c.maxLoad.Load()
				if int64(took) <= m || c.maxLoad.CompareAndSwap(m, int64(took)) {
					break
				}
			}
		},
	})
	return c
}

// Sync makes the shards match led, the __transaction_state partitions
// this node leads with their leader epochs (see coord.Coordinator.Sync).
// A shard dropped forgets its markers in flight: the next coordinator
// sends them again.
func (c *Coordinator) Sync(led map[int32]int32) { c.c.Sync(led) }

// Close drops every shard, stops the marker senders and waits for them.
func (c *Coordinator) Close() {
	c.c.Close()
	c.cancel()
	c.markers.close()
	c.wg.Wait()
	c.verify.close()
}

// Do passes one request for transactional ids of shard p (see txn.Request
// for the bodies) and waits for its answer. Errors: NOT_COORDINATOR,
// COORDINATOR_LOAD_IN_PROGRESS, REQUEST_TIMED_OUT.
func (c *Coordinator) Do(ctx context.Context, p int32, req kafka.GroupRequest) (kmsg.Response, error) {
	return c.c.Do(ctx, p, req)
}

// WaitLoaded waits until this node leads state partition p and has
// loaded it, or ctx ends.
func (c *Coordinator) WaitLoaded(ctx context.Context, p int32) error { return c.c.WaitLoaded(ctx, p) }

// Led lists the shards by partition: true once loaded.
func (c *Coordinator) Led() map[int32]bool { return c.c.Led() }

// Wakeups counts the shards' timer firings since the start.
func (c *Coordinator) Wakeups() int64 { return c.c.Wakeups() }

// ListTransactions merges the transactions of every shard (see
// txn.Shard.ListTransactions); a shard still loading makes the answer
// COORDINATOR_LOAD_IN_PROGRESS.
func (c *Coordinator) ListTransactions(states []string, pids []int64, minDuration time.Duration) ([]kmsg.ListTransactionsResponseTransactionState, []string, error) {
	var out []kmsg.ListTransactionsResponseTransactionState
	var unknown []string
	loading := c.c.Visit(func(_ int32, m coord.Machine, now time.Time) {
		t, u := m.(*machine).s.ListTransactions(now, states, pids, minDuration)
		out = append(out, t...)
		unknown = u
	})
	if loading > 0 {
		return nil, nil, kerr.CoordinatorLoadInProgress
	}
	if len(out) == 0 && len(unknown) == 0 {
		// No shard: the filter's unknown states are still unknown.
		_, unknown = txn.NewShard(0, c.opts.Config).ListTransactions(c.opts.Now(), states, nil, 0)
	}
	return out, unknown, nil
}

// Stats is the coordinator for metrics.
type Stats struct {
	// Shards led and loaded, Loading those still loading.
	Shards, Loading int
	// Transactions by state name, over the loaded shards.
	Transactions map[string]int
	// Committed, Aborted, TimedOut since each shard loaded.
	Committed, Aborted, TimedOut int64
	// LastLoad and MaxLoad are the last and the longest partition load.
	LastLoad, MaxLoad time.Duration
	// MarkersQueued are the markers waiting to be sent or for their
	// answer; MarkersSent and MarkersFailed count the (partition)
	// markers answered without and with an error; MarkerLatency sums
	// the time from queueing to answer of the answered ones.
	MarkersQueued               int
	MarkersSent, MarkersFailed  int64
	MarkerLatency               time.Duration
	MarkerRequests, MarkerBatch int64
}

// Stats reads the shards and the marker senders.
func (c *Coordinator) Stats() Stats {
	st := Stats{Transactions: map[string]int{}}
	st.Loading = c.c.Visit(func(_ int32, m coord.Machine, _ time.Time) {
		s := m.(*machine).s.Stats()
		st.Shards++
		for k, v := range s.Transactions {
			st.Transactions[k] += v
		}
		st.Committed += s.Committed
		st.Aborted += s.Aborted
		st.TimedOut += s.TimedOut
	})
	st.LastLoad, st.MaxLoad = time.Duration(c.lastLoad.Load()), time.Duration(c.maxLoad.Load())
	c.markers.stats(&st)
	return st
}

// allocate obtains a block of producer ids for shard (p, epoch).
func (c *Coordinator) allocate(p, epoch int32) {
	ctx, cancel := context.WithTimeout(c.ctx, c.opts.WriteTimeout)
	defer cancel()
	first, n, err := c.host.AllocateProducerIDs(ctx)
	if err != nil {
		c.log.Warn("txncoord: allocating producer ids failed", "partition", p, "err", err)
	}
	c.c.Run(p, epoch, func(m coord.Machine, now time.Time) {
		if err != nil {
			m.(*machine).s.ProducerIDsFailed(now, err)
			return
		}
		m.(*machine).s.ProducerIDs(now, first, n)
	})
}

// markersDone reports a Markers of shard (p, epoch).
func (c *Coordinator) markersDone(p, epoch int32, id uint64, failed []txn.TopicPartition) {
	c.c.Run(p, epoch, func(m coord.Machine, now time.Time) {
		m.(*machine).s.MarkersWritten(now, id, failed)
	})
}
