// Package demo is `sluice demo`: it drives a running local cluster (started
// by `sluice cluster start`) through what a newcomer wants to see: a topic
// is created, records are produced with Kafka's own client (franz-go,
// idempotent, acks=all) and read back, and every acknowledged record is
// checked to be there, in order, exactly once.
package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// NewCommand returns `sluice demo`.
func NewCommand() *cobra.Command {
	var o options
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Produce and consume through a running local cluster and check every acknowledged record",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), o.timeout)
			defer cancel()
			return run(ctx, cmd.OutOrStdout(), o)
		},
	}
	cmd.Flags().StringVar(&o.dir, "dir", "./sluice-cluster", "the cluster's directory (cluster.json)")
	cmd.Flags().StringVar(&o.topic, "topic", "demo", "topic to (re)create")
	cmd.Flags().Int32Var(&o.partitions, "partitions", 3, "partitions of the topic")
	cmd.Flags().Int16Var(&o.rf, "replication-factor", 1, "replication factor of the topic")
	cmd.Flags().IntVar(&o.records, "records", 5000, "records to produce")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 2*time.Minute, "give up after this long")
	return cmd
}

type options struct {
	dir, topic string
	partitions int32
	rf         int16
	records    int
	timeout    time.Duration
}

func run(ctx context.Context, w io.Writer, o options) error {
	b, err := os.ReadFile(filepath.Join(o.dir, "cluster.json"))
	if err != nil {
		return fmt.Errorf("no running cluster in %s: start one with `sluice cluster start --dir %s` (%v)", o.dir, o.dir, err)
	}
	var layout struct {
		BootstrapServers string `json:"bootstrap_servers"`
	}
	if err := json.Unmarshal(b, &layout); err != nil {
		return err
	}
	seeds := strings.Split(layout.BootstrapServers, ",")
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	_, _ = adm.DeleteTopics(ctx, o.topic) // a rerun starts from a fresh topic
	if err := waitGone(ctx, adm, o.topic); err != nil {
		return err
	}
	resp, err := adm.CreateTopic(ctx, o.partitions, o.rf, nil, o.topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", o.topic, err)
	}
	fmt.Fprintf(w, "created topic %s: %d partitions, replication factor %d\n", o.topic, o.partitions, o.rf)
	if err := describe(ctx, w, adm, o.topic); err != nil {
		return err
	}

	// Produce: idempotent, acks=all (kgo's defaults), each record numbered.
	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(o.topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		return err
	}
	defer prod.Close()
	start := time.Now()
	type result struct {
		r   *kgo.Record
		err error
	}
	results := make(chan result, o.records) // callbacks run on kgo's goroutines
	for i := 0; i < o.records; i++ {
		prod.Produce(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("record-%06d", i))}, func(r *kgo.Record, err error) {
			results <- result{r, err}
		})
	}
	if err := prod.Flush(ctx); err != nil {
		return err
	}
	close(results)
	acked := make(map[int32][]string)
	n := 0
	for res := range results {
		if res.err != nil {
			return fmt.Errorf("produce: %w", res.err)
		}
		acked[res.r.Partition] = append(acked[res.r.Partition], string(res.r.Value))
		n++
	}
	took := time.Since(start)
	fmt.Fprintf(w, "produced %d records, all acknowledged (acks=all, idempotent) in %v\n", n, took.Round(time.Millisecond))

	// Consume every partition from the start and compare with what was acked.
	offsets := map[string]map[int32]kgo.Offset{o.topic: {}}
	for p := int32(0); p < o.partitions; p++ {
		offsets[o.topic][p] = kgo.NewOffset().AtStart()
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumePartitions(offsets))
	if err != nil {
		return err
	}
	defer cons.Close()
	got := make(map[int32][]string)
	read := 0
	var fetchErr error
	for read < n {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("consumed %d of %d acknowledged records before the deadline", read, n)
		}
		fs.EachError(func(t string, p int32, err error) { fetchErr = fmt.Errorf("fetch %s/%d: %w", t, p, err) })
		if fetchErr != nil {
			return fetchErr
		}
		fs.EachRecord(func(r *kgo.Record) {
			got[r.Partition] = append(got[r.Partition], string(r.Value))
			read++
		})
	}
	for p, want := range acked {
		if strings.Join(got[p], ",") != strings.Join(want, ",") {
			return fmt.Errorf("partition %d: read back %d records that differ from the %d acknowledged", p, len(got[p]), len(want))
		}
	}
	fmt.Fprintf(w, "consumed %d records: every acknowledged record is there, once, in order\n", read)
	return nil
}

func waitGone(ctx context.Context, adm *kadm.Client, topic string) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			if d, ok := md.Topics[topic]; !ok || d.Err != nil {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topic %s still exists after delete", topic)
		case <-tick.C:
		}
	}
}

// describe waits until every partition of topic has a leader, then prints
// them: metadata reaches each broker a moment after the topic is created.
func describe(ctx context.Context, w io.Writer, adm *kadm.Client, topic string) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			ps := md.Topics[topic].Partitions.Sorted()
			ready := len(ps) > 0
			for _, p := range ps {
				ready = ready && p.Leader >= 0 && p.Err == nil
			}
			if ready {
				for _, p := range ps {
					fmt.Fprintf(w, "  partition %d: leader %d, replicas %v, isr %v\n", p.Partition, p.Leader, p.Replicas, p.ISR)
				}
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topic %s has no leader for every partition yet: check `sluice cluster health`", topic)
		case <-tick.C:
		}
	}
}
