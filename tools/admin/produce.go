package admin

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicPartitions asks the cluster for a topic's partitions without
// creating it (the broker may auto-create topics; these tools never ask it
// to). It asks the brokers directly (kadm's Metadata answers from a cache
// for 5 s) and gives a topic created a moment ago up to two seconds to
// reach the broker asked. Errors say what to do: start the cluster, or
// create the topic.
func (c *common) topicPartitions(ctx context.Context, cl *kgo.Client, topic string) ([]int32, error) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(2 * time.Second)
	for {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		req.AllowAutoTopicCreation = false
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return nil, c.unreachable(err)
		}
		if len(resp.Topics) != 1 {
			return nil, fmt.Errorf("metadata of %q: %d topics in the answer", topic, len(resp.Topics))
		}
		t := resp.Topics[0]
		err = kerr.ErrorForCode(t.ErrorCode)
		switch {
		case err == nil:
			ps := make([]int32, 0, len(t.Partitions))
			for _, p := range t.Partitions {
				ps = append(ps, p.Partition)
			}
			return ps, nil
		case !errors.Is(err, kerr.UnknownTopicOrPartition):
			return nil, fmt.Errorf("topic %q: %w", topic, err)
		case time.Now().After(deadline):
			return nil, unknownTopic(topic)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
}

func unknownTopic(topic string) error {
	return fmt.Errorf("topic %q does not exist: create it with `sluice topics create %s --partitions N --replication-factor R` (list them with `sluice topics list`)", topic, topic)
}

// checkPartition fails unless p is -1 (any) or one of ps.
func checkPartition(topic string, p int32, ps []int32) error {
	if p < 0 {
		return nil
	}
	for _, q := range ps {
		if q == p {
			return nil
		}
	}
	return fmt.Errorf("topic %q has no partition %d (it has %d; add some with `sluice topics alter %s --partitions N`)", topic, p, len(ps), topic)
}

// ackOpts are the producer options of --acks all|1|0; all is idempotent.
func ackOpts(acks string) ([]kgo.Opt, error) {
	switch acks {
	case "all", "-1":
		return []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks())}, nil
	case "1":
		return []kgo.Opt{kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite()}, nil
	case "0":
		return []kgo.Opt{kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite()}, nil
	}
	return nil, fmt.Errorf("--acks %q: want all, 1 or 0", acks)
}

// ProducedRecord is one line of `sluice produce --format json`.
type ProducedRecord struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"` // -1 with --acks 0
	Error     string `json:"error,omitempty"`
}

// produceCmd is `sluice produce TOPIC`, after kafka-console-producer.sh
// and rpk topic produce.
type produceCmd struct {
	common
	topic, value, key, acks string
	hasValue                bool // --value was given
	headers                 []string
	partition               int32
	progress                time.Duration
}

// NewProduceCommand returns `sluice produce TOPIC`.
func NewProduceCommand() *cobra.Command {
	var c produceCmd
	cmd := &cobra.Command{
		Use:   "produce TOPIC",
		Short: "Produce records: one per line of standard input, or --value",
		Example: `  echo hello | sluice produce orders --key k1 --header source=cli
  sluice produce orders --value '{"id":1}' --partition 0 --acks 1 --format json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c.topic, c.hasValue = args[0], cmd.Flags().Changed("value")
			return c.run(cmd.Context(), streamsOf(cmd))
		},
	}
	c.register(cmd)
	f := cmd.Flags()
	f.StringVar(&c.value, "value", "", "produce this one record instead of reading standard input")
	f.StringVar(&c.key, "key", "", "record key (default none)")
	f.StringArrayVar(&c.headers, "header", nil, "record header KEY=VALUE (repeatable)")
	f.Int32Var(&c.partition, "partition", -1, "partition to write to (-1: round-robin over the topic's partitions)")
	f.StringVar(&c.acks, "acks", "all", "all (idempotent), 1 or 0")
	f.DurationVar(&c.progress, "progress", 5*time.Second, "how often to print progress on standard error for long inputs")
	return cmd
}

func (c *produceCmd) run(ctx context.Context, std streams) error {
	opts, err := ackOpts(c.acks)
	if err != nil {
		return err
	}
	hs, err := parseHeaders(c.headers)
	if err != nil {
		return err
	}
	opts = append(opts, kgo.DefaultProduceTopic(c.topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordDeliveryTimeout(max(c.timeout, time.Second)))
	return c.with(ctx, func(s session) error {
		ps, err := c.topicPartitions(s.ctx, s.cl, c.topic)
		if err != nil {
			return err
		}
		if err := checkPartition(c.topic, c.partition, ps); err != nil {
			return err
		}
		sctx, stop := signal.NotifyContext(ctx, os.Interrupt)
		defer stop()
		p := &producer{c: &c.common, out: std.out, topic: c.topic, noAck: c.acks == "0"}
		start := time.Now()
		pctx, stopProgress := context.WithCancel(sctx)
		progressDone := make(chan struct{})
		go func() {
			defer close(progressDone)
			p.progress(pctx, std.err, c.progress)
		}()
		next := roundRobin(ps)
		send := func(v []byte) {
			r := &kgo.Record{Value: v, Headers: hs, Partition: c.partition}
			if c.key != "" {
				r.Key = []byte(c.key)
			}
			if c.partition < 0 {
				r.Partition = next()
			}
			p.sent.Add(1)
			s.cl.Produce(ctx, r, p.done)
		}
		if c.hasValue {
			send([]byte(c.value))
		} else if err := readLines(sctx, std.in, send); err != nil {
			p.fail(err)
		}
		// Interrupted or not, deliver what was read, for at most --timeout.
		fctx, cancel := context.WithTimeout(ctx, c.timeout)
		ferr := s.cl.Flush(fctx)
		cancel()
		stopProgress()
		<-progressDone
		acked, failed := p.acked.Load(), p.failed.Load()
		fmt.Fprintf(std.err, "Produced %d records to %s in %.1f s (%d failed).\n", acked, c.topic, time.Since(start).Seconds(), failed)
		if err := p.firstErr(); err != nil {
			return fmt.Errorf("%d of %d records failed: %w", failed, p.sent.Load(), err)
		}
		if ferr != nil {
			return fmt.Errorf("%d records still unacknowledged after --timeout %s: %w", p.sent.Load()-acked-failed, c.timeout, ferr)
		}
		return nil
	}, opts...)
}

// readLines calls send with each line of in until its end or ctx's (an
// interrupt while a terminal waits for a line: the read goes on in the
// background and its line is dropped).
func readLines(ctx context.Context, in io.Reader, send func([]byte)) error {
	lines := make(chan []byte)
	errc := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			select {
			case lines <- append([]byte(nil), sc.Bytes()...):
			case <-ctx.Done():
				errc <- nil
				return
			}
		}
		if err := sc.Err(); err != nil {
			errc <- fmt.Errorf("read standard input: %w", err)
			return
		}
		errc <- nil
	}()
	for {
		select {
		case l := <-lines:
			send(l)
		case err := <-errc:
			return err
		case <-ctx.Done():
			return nil
		}
	}
}

// roundRobin cycles through ps.
func roundRobin(ps []int32) func() int32 {
	i := -1
	return func() int32 {
		i = (i + 1) % len(ps)
		return ps[i]
	}
}

func parseHeaders(vals []string) ([]kgo.RecordHeader, error) {
	var hs []kgo.RecordHeader
	for _, v := range vals {
		k, val, ok := strings.Cut(v, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--header %q: want KEY=VALUE, e.g. source=cli", v)
		}
		hs = append(hs, kgo.RecordHeader{Key: k, Value: []byte(val)})
	}
	return hs, nil
}

// producer prints each record's outcome as it is acknowledged.
type producer struct {
	c                   *common
	out                 io.Writer
	topic               string
	noAck               bool // acks=0: the broker says no offset
	sent, acked, failed atomic.Int64
	mu                  sync.Mutex
	err                 error
}

func (p *producer) done(r *kgo.Record, err error) {
	if err != nil {
		if errors.Is(err, kerr.UnknownTopicOrPartition) {
			err = unknownTopic(r.Topic)
		}
		p.failed.Add(1)
		p.fail(err)
	} else {
		p.acked.Add(1)
	}
	off := fmt.Sprint(r.Offset)
	if p.noAck {
		r.Offset, off = -1, "? (acks=0)"
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.c.format == "json" {
		pr := ProducedRecord{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}
		if err != nil {
			pr.Error = err.Error()
		}
		b, _ := json.Marshal(pr)
		fmt.Fprintf(p.out, "%s\n", b)
	} else if err == nil {
		fmt.Fprintf(p.out, "%s/%d@%s\n", r.Topic, r.Partition, off)
	}
}

func (p *producer) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err == nil {
		p.err = err
	}
}

func (p *producer) firstErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

func (p *producer) progress(ctx context.Context, w io.Writer, every time.Duration) {
	if every <= 0 {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fmt.Fprintf(w, "... %d records sent, %d acknowledged, %d failed\n", p.sent.Load(), p.acked.Load(), p.failed.Load())
		}
	}
}
