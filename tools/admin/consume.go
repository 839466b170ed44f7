package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ConsumedRecord is one line of `sluice consume --format json`.
type ConsumedRecord struct {
	Topic     string         `json:"topic"`
	Partition int32          `json:"partition"`
	Offset    int64          `json:"offset"`
	Timestamp int64          `json:"timestamp"` // ms since the epoch
	Key       *string        `json:"key"`       // null when the record has none
	Value     string         `json:"value"`
	Headers   []HeaderRecord `json:"headers"`
}

// HeaderRecord is one header of a ConsumedRecord (headers may repeat).
type HeaderRecord struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// consumeStart is where consumption starts in each partition.
type consumeStart struct {
	partition     int32 // -1: every partition
	offset        int64 // -1: per fromBeginning
	fromBeginning bool
}

// opts assigns the topic's partitions directly (no consumer group).
func (s consumeStart) opts(topic string, ps []int32) []kgo.Opt {
	return []kgo.Opt{kgo.ConsumePartitions(s.offsets(topic, ps))}
}

// offsets is where consumption starts in each partition of the topic.
func (s consumeStart) offsets(topic string, ps []int32) map[string]map[int32]kgo.Offset {
	at := kgo.NewOffset().AtEnd()
	switch {
	case s.offset >= 0:
		at = kgo.NewOffset().At(s.offset)
	case s.fromBeginning:
		at = kgo.NewOffset().AtStart()
	}
	m := map[int32]kgo.Offset{}
	for _, p := range ps {
		if s.partition < 0 || p == s.partition {
			m[p] = at
		}
	}
	return map[string]map[int32]kgo.Offset{topic: m}
}

// consumeCmd is `sluice consume TOPIC`, after kafka-console-consumer.sh
// and rpk topic consume.
type consumeCmd struct {
	common
	topic                  string
	start                  consumeStart
	maxRecords             int
	printKey, printHeaders bool
	group                  string
}

// groupOpts join group as a member consuming topic, committing what was
// handed to the caller (marked) every second and when it stops; a
// partition without a committed offset starts at the earliest offset when
// fromBeginning, else at the end (auto.offset.reset).
func groupOpts(group, topic string, fromBeginning bool) []kgo.Opt {
	reset := kgo.NewOffset().AtEnd()
	if fromBeginning {
		reset = kgo.NewOffset().AtStart()
	}
	return []kgo.Opt{kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(reset),
		kgo.AutoCommitMarks(), kgo.AutoCommitInterval(time.Second)}
}

// NewConsumeCommand returns `sluice consume TOPIC`.
func NewConsumeCommand() *cobra.Command {
	var c consumeCmd
	cmd := &cobra.Command{
		Use:   "consume TOPIC",
		Short: "Print a topic's records (every partition, or as a member of --group)",
		Long: `Print a topic's records, one value per line (or one JSON object per line
with --format json), until --max-records are read, the command is
interrupted, or no record arrived for --timeout.

Without --group it reads the partitions directly. With --group it joins
the consumer group as one member, reads the partitions the group assigns
it, starting at the group's committed offsets, and commits what it
printed (every second and when it stops), like kafka-console-consumer.sh
--group.`,
		Example: `  sluice consume orders --from-beginning --max-records 10 --print-key
  sluice consume orders --partition 2 --offset 1000 --format json
  sluice consume orders --group audit --from-beginning`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c.topic = args[0]
			return c.run(cmd.Context(), streamsOf(cmd))
		},
	}
	c.register(cmd)
	f := cmd.Flags()
	f.BoolVar(&c.start.fromBeginning, "from-beginning", false, "start at the earliest offset (default: only new records)")
	f.Int32Var(&c.start.partition, "partition", -1, "only this partition (-1: every partition)")
	f.Int64Var(&c.start.offset, "offset", -1, "start at this offset (in --partition, or in every partition)")
	f.IntVar(&c.maxRecords, "max-records", 0, "stop after this many records (0: until interrupted or --timeout without records)")
	f.BoolVar(&c.printKey, "print-key", false, "print the key before the value (text output)")
	f.BoolVar(&c.printHeaders, "print-headers", false, "print the headers before the key and value (text output)")
	f.StringVar(&c.group, "group", "", "consume as a member of this consumer group, committing offsets")
	return cmd
}

func (c *consumeCmd) run(ctx context.Context, std streams) error {
	if c.start.offset >= 0 && c.start.fromBeginning {
		return errors.New("--offset and --from-beginning: give one of them")
	}
	ps, err := c.partitions(ctx, c.topic)
	if err != nil {
		return err
	}
	if err := checkPartition(c.topic, c.start.partition, ps); err != nil {
		return err
	}
	opts := c.start.opts(c.topic, ps)
	if c.group != "" {
		if c.start.partition >= 0 || c.start.offset >= 0 {
			return errors.New("--group and --partition/--offset: a group member reads the partitions its group assigns, from the committed offsets (move them with `sluice groups reset-offsets`)")
		}
		opts = groupOpts(c.group, c.topic, c.start.fromBeginning)
	}
	n := 0
	err = c.consume(ctx, opts, func(cl *kgo.Client, fs kgo.Fetches, idle bool) (bool, error) {
		for _, r := range fs.Records() {
			if c.maxRecords > 0 && n >= c.maxRecords {
				break
			}
			n++
			if err := printRecord(std.out, &c.common, r, c.printKey, c.printHeaders); err != nil {
				return false, err
			}
			if c.group != "" {
				cl.MarkCommitRecords(r)
			}
		}
		return (c.maxRecords <= 0 || n < c.maxRecords) && !(fs.NumRecords() == 0 && idle), nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(std.err, "Processed a total of %d messages\n", n)
	return nil
}

// partitions asks for a topic's partitions on a client of its own, to
// assign them to the consuming client.
func (c *common) partitions(ctx context.Context, topic string) ([]int32, error) {
	var ps []int32
	err := c.with(ctx, func(s session) error {
		var err error
		ps, err = c.topicPartitions(s.ctx, s.cl, topic)
		return err
	})
	return ps, err
}

// consume reads what opts say (partitions from offsets, or a group's
// assignment) until interrupted or each returns false. Each poll waits up
// to --timeout; idle says it ended without records. A fetch error other
// than that wait's end ends it. A group member commits the offsets each
// marked before it leaves.
func (c *common) consume(ctx context.Context, opts []kgo.Opt, each func(cl *kgo.Client, fs kgo.Fetches, idle bool) (bool, error)) error {
	return c.with(ctx, func(s session) error {
		sctx, stop := signal.NotifyContext(ctx, os.Interrupt)
		defer stop()
		for more := true; more; {
			pctx, cancel := context.WithTimeout(sctx, c.timeout)
			fs := s.cl.PollFetches(pctx)
			idle := pctx.Err() != nil
			cancel()
			for _, fe := range fs.Errors() {
				if !errors.Is(fe.Err, context.DeadlineExceeded) && !errors.Is(fe.Err, context.Canceled) {
					return fmt.Errorf("fetch %s/%d: %w", fe.Topic, fe.Partition, fe.Err)
				}
			}
			var err error
			if more, err = each(s.cl, fs, idle); err != nil {
				return err
			}
		}
		// A no-op unless a group member: commit what each marked.
		cctx, cancel := c.ctx(context.WithoutCancel(ctx))
		defer cancel()
		if err := s.cl.CommitMarkedOffsets(cctx); err != nil {
			return fmt.Errorf("committing the group's offsets: %w", err)
		}
		return nil
	}, opts...)
}

// printRecord prints r like kafka-console-consumer.sh (headers, key and
// value separated by tabs; "NO_HEADERS" and "null" for none) or as JSON.
func printRecord(w io.Writer, c *common, r *kgo.Record, printKey, printHeaders bool) error {
	if c.format == "json" {
		cr := ConsumedRecord{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp.UnixMilli(),
			Value: string(r.Value), Headers: []HeaderRecord{}}
		if r.Key != nil {
			k := string(r.Key)
			cr.Key = &k
		}
		for _, h := range r.Headers {
			cr.Headers = append(cr.Headers, HeaderRecord{Key: h.Key, Value: string(h.Value)})
		}
		b, err := json.Marshal(cr)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	var fields []string
	if printHeaders {
		hs := make([]string, len(r.Headers))
		for i, h := range r.Headers {
			hs[i] = h.Key + ":" + string(h.Value)
		}
		if len(hs) == 0 {
			hs = []string{"NO_HEADERS"}
		}
		fields = append(fields, strings.Join(hs, ","))
	}
	if printKey {
		k := "null"
		if r.Key != nil {
			k = string(r.Key)
		}
		fields = append(fields, k)
	}
	fields = append(fields, string(r.Value))
	_, err := fmt.Fprintln(w, strings.Join(fields, "\t"))
	return err
}
