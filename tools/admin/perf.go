package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-log/sluice/tools/internal/stats"
)

// NewPerfCommand returns `sluice perf produce|consume`, after Kafka's
// kafka-producer-perf-test.sh and kafka-consumer-perf-test.sh, with their
// output lines.
func NewPerfCommand() *cobra.Command {
	var c common
	root := &cobra.Command{Use: "perf", Short: "Producer and consumer performance tests (Kafka's perf-test output)"}
	c.register(root)
	root.AddCommand(newPerfProduce(&c), newPerfConsume(&c))
	return root
}

// PerfProduceResult is `sluice perf produce --format json`.
type PerfProduceResult struct {
	Topic      string        `json:"topic"`
	Records    int64         `json:"records"`
	Failed     int64         `json:"failed"`
	Bytes      int64         `json:"bytes"`
	Seconds    float64       `json:"seconds"`
	RecPerSec  float64       `json:"records_per_sec"`
	MBPerSec   float64       `json:"mb_per_sec"`
	Latency    stats.Latency `json:"latency"`
	FirstError string        `json:"first_error,omitempty"`
}

// perfWindow is the latency of one reporting interval.
type perfWindow struct {
	mu                 sync.Mutex
	n, bytes           int64
	sum, max           time.Duration
	failed             int64
	err                error
	all                stats.Histogram
	total, totalBytes  int64
	windowStart, start time.Time
}

func (w *perfWindow) record(d time.Duration, size int, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.failed++
		if w.err == nil {
			w.err = err
		}
		return
	}
	w.all.Record(d)
	w.n++
	w.total++
	w.bytes += int64(size)
	w.totalBytes += int64(size)
	w.sum += d
	w.max = max(w.max, d)
}

// line prints the interval's kafka-producer-perf-test line and starts the next.
func (w *perfWindow) line(out io.Writer, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	secs := now.Sub(w.windowStart).Seconds()
	avg := 0.0
	if w.n > 0 {
		avg = float64(w.sum) / float64(w.n) / float64(time.Millisecond)
	}
	fmt.Fprintf(out, "%d records sent, %.1f records/sec (%.2f MB/sec), %.1f ms avg latency, %.1f ms max latency.\n",
		w.n, float64(w.n)/secs, float64(w.bytes)/secs/(1<<20), avg, float64(w.max)/float64(time.Millisecond))
	w.n, w.bytes, w.sum, w.max, w.windowStart = 0, 0, 0, 0, now
}

// perfProduceCmd is `sluice perf produce`.
type perfProduceCmd struct {
	*common
	topic, acks string
	numRecords  int64
	size        int
	throughput  float64
	interval    time.Duration
}

func newPerfProduce(common *common) *cobra.Command {
	c := perfProduceCmd{common: common}
	cmd := &cobra.Command{
		Use:     "produce",
		Short:   "Producer performance test, like kafka-producer-perf-test.sh",
		Example: "  sluice perf produce --topic perf --num-records 1000000 --record-size 1024 --throughput -1 --acks all",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.run(cmd.Context(), streamsOf(cmd))
		},
	}
	f := cmd.Flags()
	f.StringVar(&c.topic, "topic", "", "topic to produce to")
	f.Int64Var(&c.numRecords, "num-records", 0, "how many records to send")
	f.IntVar(&c.size, "record-size", 100, "value size in bytes")
	f.Float64Var(&c.throughput, "throughput", -1, "records per second at most (-1: as fast as possible)")
	f.StringVar(&c.acks, "acks", "all", "all (idempotent), 1 or 0")
	f.DurationVar(&c.interval, "reporting-interval", 5*time.Second, "how often to print a progress line (on standard error with --format json)")
	return cmd
}

func (c *perfProduceCmd) run(ctx context.Context, std streams) error {
	if c.topic == "" || c.numRecords <= 0 || c.size < 0 {
		return errors.New("need --topic, --num-records > 0 and --record-size >= 0")
	}
	opts, err := ackOpts(c.acks)
	if err != nil {
		return err
	}
	opts = append(opts, kgo.DefaultProduceTopic(c.topic), kgo.RecordDeliveryTimeout(max(c.timeout, time.Second)))
	return c.with(ctx, func(s session) error {
		if _, err := c.topicPartitions(s.ctx, s.cl, c.topic); err != nil {
			return err
		}
		sctx, stop := signal.NotifyContext(ctx, os.Interrupt)
		defer stop()
		value := make([]byte, c.size)
		for i := range value {
			value[i] = byte('A' + i%26)
		}
		w := &perfWindow{start: time.Now()}
		w.windowStart = w.start
		pctx, stopLines := context.WithCancel(sctx)
		linesDone := make(chan struct{})
		lines := std.out // Kafka's tool prints them with the final line
		if c.format == "json" {
			lines = std.err
		}
		go func() {
			defer close(linesDone)
			t := time.NewTicker(c.interval)
			defer t.Stop()
			for {
				select {
				case <-pctx.Done():
					return
				case now := <-t.C:
					w.line(lines, now)
				}
			}
		}()
		var pace *time.Timer
		for i := int64(0); i < c.numRecords && sctx.Err() == nil; i++ {
			if c.throughput > 0 {
				due := w.start.Add(time.Duration(float64(i) / c.throughput * float64(time.Second)))
				if d := time.Until(due); d > 0 {
					if pace == nil {
						pace = time.NewTimer(d)
					} else {
						pace.Reset(d)
					}
					select {
					case <-pace.C:
					case <-sctx.Done():
					}
				}
			}
			sent := time.Now()
			s.cl.Produce(sctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
				if errors.Is(err, kerr.UnknownTopicOrPartition) {
					err = unknownTopic(c.topic)
				}
				w.record(time.Since(sent), c.size, err)
			})
		}
		ferr := s.cl.Flush(sctx)
		stopLines()
		<-linesDone
		elapsed := time.Since(w.start)
		w.mu.Lock()
		defer w.mu.Unlock()
		res := PerfProduceResult{Topic: c.topic, Records: w.total, Failed: w.failed, Bytes: w.totalBytes,
			Seconds: elapsed.Seconds(), Latency: w.all.Summary()}
		if s := elapsed.Seconds(); s > 0 {
			res.RecPerSec, res.MBPerSec = float64(res.Records)/s, float64(res.Bytes)/s/(1<<20)
		}
		if w.err != nil {
			res.FirstError = w.err.Error()
		}
		if err := c.emit(std.out, res, func() {
			fmt.Fprintln(std.out, stats.PerfLine(res.Records, res.RecPerSec, res.MBPerSec, res.Latency))
		}); err != nil {
			return err
		}
		if w.err != nil {
			return fmt.Errorf("%d of %d records failed: %w", w.failed, c.numRecords, w.err)
		}
		if ferr != nil {
			return fmt.Errorf("interrupted: %w", ferr)
		}
		return nil
	}, opts...)
}

// PerfConsumeResult is `sluice perf consume`'s summary, with
// kafka-consumer-perf-test.sh's columns.
type PerfConsumeResult struct {
	Start       string  `json:"start.time"`
	End         string  `json:"end.time"`
	MB          float64 `json:"data.consumed.in.MB"`
	MBPerSec    float64 `json:"MB.sec"`
	Messages    int64   `json:"data.consumed.in.nMsg"`
	MsgPerSec   float64 `json:"nMsg.sec"`
	RebalanceMS int64   `json:"rebalance.time.ms"`
	FetchMS     int64   `json:"fetch.time.ms"`
	FetchMBSec  float64 `json:"fetch.MB.sec"`
	FetchMsgSec float64 `json:"fetch.nMsg.sec"`
}

// perfTime is kafka-consumer-perf-test's yyyy-MM-dd HH:mm:ss:SSS.
func perfTime(t time.Time) string {
	return fmt.Sprintf("%s:%03d", t.Format("2006-01-02 15:04:05"), t.Nanosecond()/int(time.Millisecond))
}

// perfConsumeCmd is `sluice perf consume`.
type perfConsumeCmd struct {
	*common
	topic    string
	messages int64
	group    string
}

// rebalanceClock adds up the time a group member spends rebalancing, as
// kafka-consumer-perf-test.sh: from the start (or from losing its
// partitions) to being assigned some.
type rebalanceClock struct {
	now   func() time.Time
	mu    sync.Mutex
	since time.Time // zero: not rebalancing
	total time.Duration
}

func (r *rebalanceClock) lost(context.Context, *kgo.Client, map[string][]int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.since.IsZero() {
		r.since = r.now()
	}
}

func (r *rebalanceClock) assigned(context.Context, *kgo.Client, map[string][]int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.since.IsZero() {
		r.total += r.now().Sub(r.since)
		r.since = time.Time{}
	}
}

func (r *rebalanceClock) spent() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total
}

func newPerfConsume(common *common) *cobra.Command {
	c := perfConsumeCmd{common: common}
	cmd := &cobra.Command{
		Use:     "consume",
		Short:   "Consumer performance test, like kafka-consumer-perf-test.sh (from the earliest offset; as a group member with --group)",
		Example: "  sluice perf consume --topic perf --messages 1000000\n  sluice perf consume --topic perf --messages 1000000 --group perf-consumer  # rebalance.time.ms: time to be assigned",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.run(cmd.Context(), streamsOf(cmd))
		},
	}
	f := cmd.Flags()
	f.StringVar(&c.topic, "topic", "", "topic to consume")
	f.Int64Var(&c.messages, "messages", 0, "how many records to consume")
	f.StringVar(&c.group, "group", "", "consume as a member of this consumer group (from its committed offsets, else the earliest), committing as it goes")
	return cmd
}

func (c *perfConsumeCmd) run(ctx context.Context, std streams) error {
	if c.topic == "" || c.messages <= 0 {
		return errors.New("need --topic and --messages > 0")
	}
	ps, err := c.partitions(ctx, c.topic)
	if err != nil {
		return err
	}
	start := time.Now()
	var n, bytes int64
	var short error
	opts := consumeStart{partition: -1, offset: -1, fromBeginning: true}.opts(c.topic, ps)
	rebalance := &rebalanceClock{now: time.Now, since: start}
	if c.group != "" {
		opts = append(groupOpts(c.group, c.topic, true), kgo.OnPartitionsAssigned(rebalance.assigned),
			kgo.OnPartitionsRevoked(rebalance.lost), kgo.OnPartitionsLost(rebalance.lost))
	}
	err = c.consume(ctx, opts, func(cl *kgo.Client, fs kgo.Fetches, idle bool) (bool, error) {
		fs.EachRecord(func(r *kgo.Record) {
			if n < c.messages {
				n++
				bytes += int64(len(r.Value))
				if c.group != "" {
					cl.MarkCommitRecords(r)
				}
			}
		})
		if fs.NumRecords() == 0 && idle {
			short = fmt.Errorf("exiting before consuming the expected number of messages: no record for --timeout %s, %d of %d consumed", c.timeout, n, c.messages)
			fmt.Fprintln(std.err, "WARNING:", short)
			return false, nil
		}
		return n < c.messages, nil
	})
	if err != nil {
		return err
	}
	end := time.Now()
	secs := end.Sub(start).Seconds()
	mb := float64(bytes) / (1 << 20)
	var rebalanced time.Duration
	if c.group != "" {
		rebalanced = rebalance.spent()
	}
	fetching := end.Sub(start) - rebalanced
	res := PerfConsumeResult{Start: perfTime(start), End: perfTime(end), MB: mb, Messages: n,
		RebalanceMS: rebalanced.Milliseconds(), FetchMS: fetching.Milliseconds()}
	if secs > 0 {
		res.MBPerSec, res.MsgPerSec = mb/secs, float64(n)/secs
	}
	if fs := fetching.Seconds(); fs > 0 {
		res.FetchMBSec, res.FetchMsgSec = mb/fs, float64(n)/fs
	}
	out := std.out
	if err := c.emit(out, res, func() {
		fmt.Fprintln(out, "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec")
		fmt.Fprintf(out, "%s, %s, %.4f, %.4f, %d, %.4f, %d, %d, %.4f, %.4f\n", res.Start, res.End, res.MB, res.MBPerSec,
			res.Messages, res.MsgPerSec, res.RebalanceMS, res.FetchMS, res.FetchMBSec, res.FetchMsgSec)
	}); err != nil {
		return err
	}
	return short
}
