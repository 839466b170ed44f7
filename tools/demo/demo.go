// Package demo is `sluice demo`: it drives a running local cluster (started
// by `sluice cluster start`) through what a newcomer wants to see: a topic
// with replication factor 3 and min.insync.replicas=2 is created, records
// are produced with Kafka's own client (franz-go, idempotent, acks=all) and
// read back; then the leader of partition 0 is killed (SIGKILL), the new
// leader is shown, more records are produced, every acknowledged record is
// checked to be there, in order, exactly once, and the killed node is
// restarted and rejoins the ISR.
package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-log/sluice/tools/cluster"
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
			return o.run(ctx, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&o.dir, "dir", "./sluice-cluster", "the cluster's directory (cluster.json)")
	cmd.Flags().StringVar(&o.topic, "topic", "demo", "topic to (re)create")
	cmd.Flags().Int32Var(&o.partitions, "partitions", 3, "partitions of the topic")
	cmd.Flags().Int16Var(&o.rf, "replication-factor", 3, "replication factor of the topic (at most the number of nodes)")
	cmd.Flags().BoolVar(&o.noKill, "no-kill", false, "skip killing the partition leader")
	cmd.Flags().IntVar(&o.records, "records", 5000, "records to produce")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 2*time.Minute, "give up after this long")
	return cmd
}

// options are `sluice demo`'s flags; run is the command.
type options struct {
	dir, topic string
	partitions int32
	rf         int16
	records    int
	noKill     bool
	timeout    time.Duration
	exe        string // sluice executable for the restart; "": this one
}

// run is the demo; o is a copy (it lowers rf to the node count).
func (o options) run(ctx context.Context, w io.Writer) error {
	b, err := os.ReadFile(filepath.Join(o.dir, "cluster.json"))
	if err != nil {
		return fmt.Errorf("no running cluster in %s: start one with `sluice cluster start --dir %s` (%v)", o.dir, o.dir, err)
	}
	var layout cluster.Layout
	if err := json.Unmarshal(b, &layout); err != nil {
		return err
	}
	if int(o.rf) > len(layout.Nodes) {
		o.rf = int16(len(layout.Nodes))
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
	minISR := max(min(int(o.rf)-1, 2), 1)
	configs := map[string]*string{"min.insync.replicas": kadm.StringPtr(fmt.Sprint(minISR))}
	resp, err := adm.CreateTopic(ctx, o.partitions, o.rf, configs, o.topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", o.topic, err)
	}
	fmt.Fprintf(w, "created topic %s: %d partitions, replication factor %d, min.insync.replicas=%d\n", o.topic, o.partitions, o.rf, minISR)
	if _, err := describe(ctx, w, adm, o.topic, -1); err != nil {
		return err
	}

	// Produce: idempotent, acks=all (kgo's defaults), each record numbered.
	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(o.topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		return err
	}
	defer prod.Close()
	acked := make(map[int32][]string)
	n, err := produce(ctx, w, prod, 0, o.records, acked)
	if err != nil {
		return err
	}
	if err := consume(ctx, w, seeds, o, n, acked); err != nil {
		return err
	}
	if o.noKill || o.rf < 2 {
		return nil
	}

	// Kill the leader of partition 0 the hard way and watch the failover.
	md, err := adm.Metadata(ctx, o.topic)
	if err != nil {
		return err
	}
	p0 := md.Topics[o.topic].Partitions[0]
	var victim cluster.Node
	for _, nd := range layout.Nodes {
		if nd.ID == p0.Leader {
			victim = nd
		}
	}
	if victim.PID == 0 {
		return fmt.Errorf("partition 0 is led by broker %d, which is not in %s", p0.Leader, o.dir)
	}
	if err := syscall.Kill(victim.PID, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill node %d (pid %d): %w", victim.ID, victim.PID, err)
	}
	killed := time.Now()
	fmt.Fprintf(w, "killed node %d (pid %d), the leader of partition 0, with SIGKILL\n", victim.ID, victim.PID)
	fmt.Fprintf(w, "waiting for the controller to fence it (broker.session.timeout.ms) and elect a new leader from the ISR...\n")
	if _, err := describe(ctx, w, adm, o.topic, victim.ID); err != nil {
		return err
	}
	fmt.Fprintf(w, "partitions have new leaders %v after the kill\n", time.Since(killed).Round(100*time.Millisecond))
	m, err := produce(ctx, w, prod, o.records, o.records, acked)
	if err != nil {
		return err
	}
	if err := consume(ctx, w, seeds, o, n+m, acked); err != nil {
		return err
	}

	// Bring the killed node back: it catches up from the new leaders and
	// rejoins the ISR.
	restart := cluster.Restart
	if o.exe != "" {
		restart = func(ctx context.Context, l cluster.Layout, id int32) error {
			return cluster.RestartWith(ctx, l, id, o.exe)
		}
	}
	if err := restart(ctx, layout, victim.ID); err != nil {
		return fmt.Errorf("restart node %d: %w", victim.ID, err)
	}
	fmt.Fprintf(w, "restarted node %d; waiting for it to catch up and rejoin the ISR...\n", victim.ID)
	return waitISR(ctx, w, adm, o.topic, int(o.rf))
}

// produce sends count numbered records starting at from and records what
// was acknowledged per partition; it returns how many were.
func produce(ctx context.Context, w io.Writer, prod *kgo.Client, from, count int, acked map[int32][]string) (int, error) {
	start := time.Now()
	type result struct {
		r   *kgo.Record
		err error
	}
	results := make(chan result, count) // callbacks run on kgo's goroutines
	for i := from; i < from+count; i++ {
		prod.Produce(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("record-%06d", i))}, func(r *kgo.Record, err error) {
			results <- result{r, err}
		})
	}
	if err := prod.Flush(ctx); err != nil {
		return 0, err
	}
	close(results)
	n := 0
	for res := range results {
		if res.err != nil {
			return n, fmt.Errorf("produce: %w", res.err)
		}
		acked[res.r.Partition] = append(acked[res.r.Partition], string(res.r.Value))
		n++
	}
	fmt.Fprintf(w, "produced %d records, all acknowledged (acks=all, idempotent) in %v\n", n, time.Since(start).Round(time.Millisecond))
	return n, nil
}

// consume reads every partition from the start and compares it with what
// was acknowledged: want records in all.
func consume(ctx context.Context, w io.Writer, seeds []string, o options, want int, acked map[int32][]string) error {
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
	for read < want {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("consumed %d of %d acknowledged records before the deadline", read, want)
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

// waitISR waits until every partition's ISR has rf members, then prints them.
func waitISR(ctx context.Context, w io.Writer, adm *kadm.Client, topic string, rf int) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			ps := md.Topics[topic].Partitions.Sorted()
			full := len(ps) > 0
			for _, p := range ps {
				full = full && len(p.ISR) == rf
			}
			if full {
				for _, p := range ps {
					fmt.Fprintf(w, "  partition %d: leader %d, replicas %v, isr %v\n", p.Partition, p.Leader, p.Replicas, p.ISR)
				}
				fmt.Fprintf(w, "every replica is back in sync\n")
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the restarted node did not rejoin every ISR in time: check `sluice topics describe %s` and its node.log", topic)
		case <-tick.C:
		}
	}
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

// describe waits until every partition of topic has a leader other than
// notLeader, then prints them: metadata reaches each broker a moment after
// the topic is created, and a new leader a moment after the old one dies.
func describe(ctx context.Context, w io.Writer, adm *kadm.Client, topic string, notLeader int32) ([]kadm.PartitionDetail, error) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			ps := md.Topics[topic].Partitions.Sorted()
			ready := len(ps) > 0
			for _, p := range ps {
				ready = ready && p.Leader >= 0 && p.Leader != notLeader && p.Err == nil
			}
			if ready {
				for _, p := range ps {
					fmt.Fprintf(w, "  partition %d: leader %d, replicas %v, isr %v\n", p.Partition, p.Leader, p.Replicas, p.ISR)
				}
				return ps, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("topic %s has no leader for every partition yet: check `sluice cluster health`", topic)
		case <-tick.C:
		}
	}
}
