package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// KafkaTarget runs cells against a Kafka-protocol cluster (Sluice).
type KafkaTarget struct {
	Seeds []string
	// Linger is the producer linger of BatchLinger cells.
	Linger time.Duration
	// Prefix starts every topic name; each cell uses a fresh topic and
	// deletes it afterwards.
	Prefix string
	seq    int
}

// setupTimeout bounds topic creation, the leader wait and the probe.
const setupTimeout = 20 * time.Second

// drainTimeout bounds the flush of the last produces and the consumer's
// catching up after the load stops.
const drainTimeout = 15 * time.Second

// Run runs one cell for d, printing progress to w.
func (k *KafkaTarget) Run(ctx context.Context, w io.Writer, c Cell, d time.Duration) Result {
	k.seq++
	topic := fmt.Sprintf("%s-%d-%d", k.Prefix, time.Now().Unix()%100000, k.seq)
	fail := func(format string, args ...any) Result {
		return Result{System: "sluice", Cell: c, Name: c.Name(), Err: fmt.Sprintf(format, args...)}
	}
	admCl, err := kgo.NewClient(kgo.SeedBrokers(k.Seeds...))
	if err != nil {
		return fail("client: %v", err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	sctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	resp, err := adm.CreateTopic(sctx, int32(c.Partitions), int16(c.RF), c.TopicConfigs(), topic)
	if err == nil && resp.Err != nil {
		err = resp.Err
		if resp.ErrMessage != "" {
			err = fmt.Errorf("%w (%s)", resp.Err, resp.ErrMessage)
		}
	}
	if err != nil {
		return fail("create topic (rf %d, %d partitions, %v): %v", c.RF, c.Partitions, configString(c), err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = adm.DeleteTopics(dctx, topic)
	}()
	if err := waitLeaders(sctx, adm, topic); err != nil {
		return fail("%v", err)
	}
	if err := k.probe(sctx, c, topic, d); err != nil {
		return fail("probe produce (acks=%s): %v", c.Acks, err)
	}
	prod, err := kgo.NewClient(k.producerOpts(c, topic, d)...)
	if err != nil {
		return fail("producer: %v", err)
	}
	defer prod.Close()
	cons, err := kgo.NewClient(kgo.SeedBrokers(k.Seeds...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		return fail("consumer: %v", err)
	}
	defer cons.Close()
	return k.load(ctx, w, c, d, prod, cons)
}

// probe produces one record with few retries: a cell the broker refuses
// (NOT_ENOUGH_REPLICAS is retriable, and kgo would retry it for the whole
// cell) fails here, fast, with the broker's error.
func (k *KafkaTarget) probe(ctx context.Context, c Cell, topic string, d time.Duration) error {
	cl, err := kgo.NewClient(append(k.producerOpts(c, topic, d), kgo.RecordRetries(3))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// A zero stamp: the consumer does not count it.
	err = cl.ProduceSync(pctx, &kgo.Record{Value: make([]byte, c.Size)}).FirstErr()
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return fmt.Errorf("no acknowledgement within 10s: the cluster took the record but did not answer (acks=%s, RF %d)", c.Acks, c.RF)
	}
	return err
}

func configString(c Cell) string {
	cfg := c.TopicConfigs()
	if len(cfg) == 0 {
		return "no topic configs"
	}
	s := ""
	for k, v := range cfg {
		s += k + "=" + *v
	}
	return s
}

func (k *KafkaTarget) producerOpts(c Cell, topic string, d time.Duration) []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(k.Seeds...), kgo.DefaultProduceTopic(topic),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordDeliveryTimeout(d + drainTimeout)}
	switch c.Acks {
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	case "1":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	default: // all: kgo's default, idempotent
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	}
	if c.Batching == BatchLinger {
		opts = append(opts, kgo.ProducerLinger(k.Linger))
	}
	return opts
}

// load produces for d (paced if the cell has a rate) while a consumer reads
// the topic, then waits for the acks and the consumer to catch up.
func (k *KafkaTarget) load(ctx context.Context, w io.Writer, c Cell, d time.Duration, prod, cons *kgo.Client) Result {
	m := newMeter()
	start := time.Now()
	cctx, stopConsumer := context.WithCancel(ctx)
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		for cctx.Err() == nil {
			fs := cons.PollFetches(cctx)
			now := time.Now()
			fs.EachError(func(t string, p int32, err error) {
				if !errors.Is(err, context.Canceled) {
					m.consumeErr(fmt.Errorf("consume %s/%d: %w", t, p, err))
				}
			})
			fs.EachRecord(func(r *kgo.Record) {
				if sent, ok := stamp(r.Value); ok && !sent.Before(start) {
					m.e2e.Record(now.Sub(sent))
					m.consumed.Add(1)
				}
			})
		}
	}()
	pctx, stopProgress := context.WithCancel(ctx)
	go m.progress(pctx, w, 5*time.Second)

	vals := newValuePool(c.Size)
	promise := func(r *kgo.Record, err error) {
		now := time.Now()
		if err != nil {
			m.fail(fmt.Errorf("produce: %w", err))
		} else if sent, ok := stamp(r.Value); ok {
			m.ack(sent, len(r.Value), now)
		}
		vals.put(r.Value)
	}
	produceLoop(ctx, m, c, start, d, vals, func(v []byte) bool {
		// Produce blocks while kgo's buffer is full: that is the
		// back-pressure of an unpaced cell. With acks=0 the promise
		// runs once the request is written.
		prod.Produce(ctx, &kgo.Record{Value: v}, promise)
		return true
	})
	fctx, cancel := context.WithTimeout(ctx, drainTimeout)
	defer cancel()
	if err := prod.Flush(fctx); err != nil {
		m.fail(fmt.Errorf("flush after the load: %w", err))
	}
	elapsed := time.Since(start)
	stopProgress()
	waitConsumed(fctx, m)
	stopConsumer()
	<-consumed
	return m.result("sluice", c, elapsed)
}

// waitLeaders waits until every partition of topic has a leader.
func waitLeaders(ctx context.Context, adm *kadm.Client, topic string) error {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			ps := md.Topics[topic].Partitions.Sorted()
			ok := len(ps) > 0
			for _, p := range ps {
				ok = ok && p.Leader >= 0 && p.Err == nil
			}
			if ok {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topic %s: not every partition has a leader in time", topic)
		case <-t.C:
		}
	}
}
