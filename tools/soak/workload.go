package soak

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// producer is one workload producer: its own kgo client (its own Kafka
// producer id), its own sequence numbers, its own sends.
type producer struct {
	id     int
	cl     *kgo.Client
	tps    []TP
	size   int
	capTP  int // most records in flight to one partition
	mu     sync.Mutex
	sends  []Send
	open   map[TP]int // records in flight by partition
	next   int        // round robin position
	acked  *atomic.Int64
	failed *atomic.Int64
	unk    *atomic.Int64
	byTP   *ackCounts   // nil: not counted by partition
	ck     *compactKeys // a compacted-topic producer's key space, else nil
}

// ackCounts counts acknowledged records by partition over all producers,
// so that a scenario can wait until a partition acknowledged more.
type ackCounts struct {
	mu sync.Mutex
	n  map[TP]int64
}

func newAckCounts() *ackCounts { return &ackCounts{n: map[TP]int64{}} }

func (a *ackCounts) add(tp TP) {
	a.mu.Lock()
	a.n[tp]++
	a.mu.Unlock()
}

func (a *ackCounts) get(tp TP) int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n[tp]
}

// clientOpts are the kgo options of every workload client.
func clientOpts(seeds []string) []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.RequestTimeoutOverhead(5 * time.Second),
		kgo.RetryTimeout(20 * time.Second),
		kgo.MetadataMinAge(250 * time.Millisecond),
	}
}

// Record sizes against the topic's max.message.bytes: the workload's
// batches stay far below it, a poison record is over it.
const (
	topicMaxMessageBytes = 256 << 10
	producerBatchBytes   = 64 << 10
	poisonSize           = topicMaxMessageBytes + 4<<10
)

// producerKind says what a producer sends.
type producerKind uint8

const (
	// workloadProducer: unkeyed records to the soak topic, idempotent
	// acks=all (acks=1 in the acks1 control).
	workloadProducer producerKind = iota
	// poisonProducer: records over the topic's max.message.bytes, which
	// the broker refuses with MESSAGE_TOO_LARGE before any append
	// (definitely failed sends); not idempotent (a failed batch would
	// reset an idempotent producer's sequences), and its batches may be
	// as large as a poison record.
	poisonProducer
	// compactProducer: keyed records and tombstones to the compacted
	// topic (compact.go), idempotent acks=all (acks=1 in the compaction
	// control).
	compactProducer
)

// newProducer makes producer id of the given kind.
func newProducer(id int, seeds []string, tps []TP, o *Options, acked, failed, unk *atomic.Int64, kind producerKind) (*producer, error) {
	size, batch := o.ValueSize, int32(producerBatchBytes)
	if kind == poisonProducer {
		size, batch = poisonSize, 2*poisonSize
	}
	opts := append(clientOpts(seeds),
		kgo.ProducerBatchMaxBytes(batch),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RecordDeliveryTimeout(o.DeliveryTimeout),
		kgo.ProduceRequestTimeout(10*time.Second),
		// Never block in Produce: produce caps what is in flight per
		// partition, so a partition without a leader cannot stall the
		// others behind a full buffer.
		kgo.MaxBufferedRecords(2*o.InFlight),
		kgo.ProducerLinger(5*time.Millisecond),
	)
	switch {
	case kind == workloadProducer && o.acks1(), kind == compactProducer && o.NegativeControl == NegCompaction:
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	case kind == poisonProducer:
		// Uncompressed: the limit is on the batch as sent, and the padding
		// compresses to almost nothing.
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite(), kgo.ProducerBatchCompression(kgo.NoCompression()))
	default:
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	capTP := max(o.InFlight/len(tps), 1)
	return &producer{id: id, cl: cl, tps: tps, size: size, capTP: capTP, open: map[TP]int{}, acked: acked, failed: failed, unk: unk}, nil
}

// produce sends up to n records, round robin over the partitions that
// have fewer than capTP in flight, each with the next sequence number;
// outcomes arrive in the callbacks.
func (p *producer) produce(ctx context.Context, n int) {
	for range n {
		if ctx.Err() != nil {
			return
		}
		p.mu.Lock()
		var tp TP
		found := false
		for range p.tps {
			tp = p.tps[p.next%len(p.tps)]
			p.next++
			if p.open[tp] < p.capTP {
				found = true
				break
			}
		}
		if !found {
			p.mu.Unlock()
			return // every partition is backed up: skip this tick
		}
		p.open[tp]++
		i := len(p.sends)
		k := Key{Producer: p.id, Seq: int64(i)}
		p.sends = append(p.sends, Send{Key: k, TP: tp, Outcome: Unknown, Offset: -1, Sent: time.Now()})
		p.mu.Unlock()
		rec := &kgo.Record{Topic: tp.Topic, Partition: tp.Partition, Value: EncodeValue(k, p.size)}
		// Not ctx: a record buffered when the workload ends still gets its
		// outcome while finish flushes.
		p.cl.Produce(context.Background(), rec, func(r *kgo.Record, err error) { p.done(i, r, err) })
	}
}

func (p *producer) done(i int, r *kgo.Record, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := &p.sends[i]
	p.open[s.TP]--
	s.Done = time.Now()
	s.Outcome = classify(err)
	switch s.Outcome {
	case Acked:
		s.Offset = r.Offset
		p.acked.Add(1)
		if p.byTP != nil {
			p.byTP.add(s.TP)
		}
	case Failed:
		s.Err = err.Error()
		p.failed.Add(1)
	default:
		s.Err = err.Error()
		p.unk.Add(1)
	}
}

// definite are the broker errors that reject a batch for its bytes before
// any append: a retry of the same bytes gets the same answer, so no earlier
// attempt can have been written either.
var definite = []error{kerr.MessageTooLarge, kerr.InvalidRecord, kerr.CorruptMessage, kerr.RecordListTooLarge, kerr.InvalidTopicException, kerr.InvalidRequiredAcks}

// classify turns a produce callback's error into an outcome: nil is Acked,
// a definite rejection Failed, anything else (timeouts, NOT_ENOUGH_REPLICAS
// after retries, closed clients, lost connections) Unknown.
func classify(err error) Outcome {
	if err == nil {
		return Acked
	}
	for _, d := range definite {
		if errors.Is(err, d) {
			return Failed
		}
	}
	return Unknown
}

// finish waits until ctx ends for outstanding sends, then closes the
// client (whatever is still in flight stays Unknown).
func (p *producer) finish(ctx context.Context) {
	_ = p.cl.Flush(ctx)
	p.cl.Close()
}

func (p *producer) history() []Send {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Send(nil), p.sends...)
}

// consumer reads every partition from the start, keeping each record with
// the high watermark of the fetch that returned it.
type consumer struct {
	cl    *kgo.Client
	mu    sync.Mutex
	reads []Read
	n     atomic.Int64
	errs  atomic.Int64
}

func newConsumer(seeds []string, tps []TP) (*consumer, error) {
	return newConsumerWith(seeds, tps)
}

// newConsumerWith is newConsumer with more client options (the
// exactly-once pipeline's final read: read_committed).
func newConsumerWith(seeds []string, tps []TP, opts ...kgo.Opt) (*consumer, error) {
	offs := map[string]map[int32]kgo.Offset{}
	for _, tp := range tps {
		if offs[tp.Topic] == nil {
			offs[tp.Topic] = map[int32]kgo.Offset{}
		}
		offs[tp.Topic][tp.Partition] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(append(append(clientOpts(seeds), kgo.ConsumePartitions(offs), kgo.FetchMaxWait(500*time.Millisecond)), opts...)...)
	if err != nil {
		return nil, err
	}
	return &consumer{cl: cl}, nil
}

// poll reads until ctx ends; each fetch goes through add.
func (c *consumer) poll(ctx context.Context, add func(Read)) {
	for ctx.Err() == nil {
		fs := c.cl.PollFetches(ctx)
		now := time.Now()
		fs.EachError(func(string, int32, error) { c.errs.Add(1) })
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			for _, r := range p.Records {
				rd := Read{TP: TP{p.Topic, p.Partition}, Offset: r.Offset, Value: append([]byte(nil), r.Value...), HW: p.HighWatermark, At: now, Tombstone: r.Value == nil}
				if r.Key != nil {
					rd.Key = append([]byte{}, r.Key...)
				}
				add(rd)
				c.n.Add(1)
			}
		})
	}
}

func (c *consumer) live(ctx context.Context) {
	c.poll(ctx, func(r Read) {
		c.mu.Lock()
		c.reads = append(c.reads, r)
		c.mu.Unlock()
	})
}

// finalRead reads every partition from its start to the high watermark
// it has when the read starts (hw), within ctx. It returns the reads and
// the partitions it could not finish.
func finalRead(ctx context.Context, seeds []string, hw map[TP]int64) ([]Read, []TP, error) {
	return finalReadWith(ctx, seeds, hw, nil)
}

// finalReadWith is finalRead calling progress (when not nil) on every
// record read.
func finalReadWith(ctx context.Context, seeds []string, hw map[TP]int64, progress func()) ([]Read, []TP, error) {
	var tps []TP
	left := map[TP]bool{}
	for tp, h := range hw {
		tps = append(tps, tp)
		if h > 0 {
			left[tp] = true
		}
	}
	c, err := newConsumer(seeds, tps)
	if err != nil {
		return nil, nil, err
	}
	defer c.cl.Close()
	var reads []Read
	if len(left) == 0 {
		return nil, nil, nil
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c.poll(rctx, func(r Read) {
		if progress != nil {
			progress()
		}
		if r.Offset >= hw[r.TP] {
			return // written after the end of the workload? none should be
		}
		reads = append(reads, r)
		if r.Offset >= hw[r.TP]-1 {
			delete(left, r.TP)
		}
		if len(left) == 0 {
			cancel()
		}
	})
	if len(left) == 0 {
		return reads, nil, nil
	}
	var missing []TP
	for tp := range left {
		missing = append(missing, tp)
	}
	return reads, missing, fmt.Errorf("final read incomplete for %d partition(s) by the deadline", len(missing))
}
