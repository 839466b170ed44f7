package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/sluice-log/sluice/tools/internal/cli"
	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicsCmd is `sluice topics`, after kafka-topics.sh. Its subcommands
// share the common flags; each has its own.
type topicsCmd struct {
	common
	topics     []string  // the arguments
	progress   io.Writer // standard error: create's and delete's progress
	partitions int32     // create --partitions
	rf         int16     // create --replication-factor
	configs    []string  // create --config
	filters    filters   // describe's filters
	internal   internalFlags
}

// internalFlags choose whether listing all topics shows the internal ones
// (__consumer_offsets, __transaction_state: Metadata's is_internal, or a
// name starting with "__"). Hidden unless --include-internal;
// --exclude-internal, kafka-topics.sh's flag, says so explicitly.
type internalFlags struct {
	include, exclude bool
}

func (f *internalFlags) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.include, "include-internal", false, "show internal topics (__consumer_offsets, ...) too")
	cmd.Flags().BoolVar(&f.exclude, "exclude-internal", false, "hide internal topics (the default)")
}

// keep drops the internal topics of details unless --include-internal.
func (f *internalFlags) keep(details kadm.TopicDetails) (kadm.TopicDetails, error) {
	if f.include && f.exclude {
		return nil, errors.New("--include-internal and --exclude-internal: give one of them")
	}
	if f.include {
		return details, nil
	}
	out := kadm.TopicDetails{}
	for name, d := range details {
		if !d.IsInternal && !strings.HasPrefix(name, "__") {
			out[name] = d
		}
	}
	return out, nil
}

// NewTopicsCommand returns `sluice topics`.
func NewTopicsCommand() *cobra.Command {
	var c topicsCmd
	root := &cobra.Command{Use: "topics", Short: "Create, delete, list and describe topics (Kafka admin API)"}
	c.register(root)
	bind := func(run func(*topicsCmd, context.Context, io.Writer) error) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, args []string) error {
			c.topics, c.progress = args, cmd.ErrOrStderr()
			return run(&c, cmd.Context(), cmd.OutOrStdout())
		}
	}

	create := &cobra.Command{
		Use:     "create TOPIC...",
		Short:   "Create topics",
		Example: "  sluice topics create orders --partitions 6 --replication-factor 3 --config min.insync.replicas=2\n  sluice topics create table --config cleanup.policy=compact",
		Args:    cobra.MinimumNArgs(1),
		RunE:    bind((*topicsCmd).create),
	}
	create.Flags().Int32Var(&c.partitions, "partitions", -1, "partition count (-1: the broker's num.partitions)")
	create.Flags().Int16Var(&c.rf, "replication-factor", -1, "replicas per partition (-1: the broker's default.replication.factor)")
	create.Flags().StringArrayVar(&c.configs, "config", nil, "topic config KEY=VALUE (repeatable)")

	del := &cobra.Command{
		Use:   "delete TOPIC...",
		Short: "Delete topics",
		Args:  cobra.MinimumNArgs(1),
		RunE:  bind((*topicsCmd).delete),
	}

	list := &cobra.Command{
		Use:   "list",
		Short: "List topic names (internal topics with --include-internal)",
		Args:  cobra.NoArgs,
		RunE:  bind((*topicsCmd).list),
	}

	describeCmd := &cobra.Command{
		Use:   "describe [TOPIC...]",
		Short: "Describe topics: partitions, leaders, replicas, ISR, configs",
		Example: `  sluice topics describe orders
  sluice topics describe --under-min-isr-partitions`,
		RunE: bind((*topicsCmd).describe),
	}
	c.filters.register(describeCmd)
	c.internal.register(list)
	c.internal.register(describeCmd)
	root.AddCommand(create, del, list, describeCmd, newAlterCommand(&c.common), newReassignCommand(&c.common))
	return root
}

func (c *topicsCmd) create(ctx context.Context, w io.Writer) error {
	cfg, err := parseKVs(c.configs)
	if err != nil {
		return err
	}
	return c.with(ctx, func(s session) error {
		kcfg := map[string]*string{}
		for k, v := range cfg {
			kcfg[k] = &v
		}
		resp, err := askInBatches(c, "created", func(batch []string) (kadm.CreateTopicResponses, error) {
			return s.adm.CreateTopics(s.ctx, c.partitions, c.rf, kcfg, batch...)
		}, func(t kadm.CreateTopicResponse) error { return t.Err })
		if err != nil {
			return err
		}
		sorted := resp.Sorted()
		failed := failures(sorted, func(t kadm.CreateTopicResponse) (string, string, error) { return t.Topic, t.ErrMessage, t.Err })
		err = c.emit(w, sorted, func() {
			for _, t := range sorted {
				if t.Err == nil {
					fmt.Fprintf(w, "Created topic %s.\n", t.Topic)
				}
			}
		})
		if len(failed) > 0 {
			return fmt.Errorf("could not create %s", strings.Join(failed, "; "))
		}
		return err
	})
}

func (c *topicsCmd) delete(ctx context.Context, w io.Writer) error {
	return c.with(ctx, func(s session) error {
		resp, err := askInBatches(c, "deleted", func(batch []string) (kadm.DeleteTopicResponses, error) {
			return s.adm.DeleteTopics(s.ctx, batch...)
		}, func(t kadm.DeleteTopicResponse) error { return t.Err })
		if err != nil {
			return err
		}
		sorted := resp.Sorted()
		for _, t := range sorted {
			if t.Err == nil && c.format == "text" {
				fmt.Fprintf(w, "Deleted topic %s.\n", t.Topic)
			}
		}
		if failed := failures(sorted, func(t kadm.DeleteTopicResponse) (string, string, error) { return t.Topic, t.ErrMessage, t.Err }); len(failed) > 0 {
			return fmt.Errorf("could not delete %s", strings.Join(failed, "; "))
		}
		return nil
	})
}

// topicBatch is how many topics one CreateTopics or DeleteTopics request
// names. A larger request goes in batches, each followed by a progress
// line on standard error, so that it does not sit silent; standard output
// is what one request would print.
const topicBatch = 100

// inBatches calls ask with each batch of topics in turn. When there is
// more than one batch, it prints "VERB N of M topics" on progress after
// each, N counting the topics ask reported done so far.
func inBatches(topics []string, progress io.Writer, verb string, ask func(batch []string) (done int, err error)) error {
	done := 0
	for i := 0; i < len(topics); i += topicBatch {
		n, err := ask(topics[i:min(i+topicBatch, len(topics))])
		if err != nil {
			return err
		}
		done += n
		if len(topics) > topicBatch {
			fmt.Fprintf(progress, "%s %d of %d topics\n", verb, done, len(topics))
		}
	}
	return nil
}

// askInBatches asks for c.topics in batches (inBatches), merges the
// answers, and counts the topics answered without an error (errOf) for
// the progress lines. A batch that gets no answer ends it.
func askInBatches[M ~map[string]R, R any](c *topicsCmd, verb string, ask func(batch []string) (M, error), errOf func(R) error) (M, error) {
	all := M{}
	err := inBatches(c.topics, c.progress, verb, func(batch []string) (int, error) {
		r, err := ask(batch)
		if err != nil {
			return 0, c.unreachable(err)
		}
		maps.Copy(all, r)
		done := 0
		for _, a := range r {
			if errOf(a) == nil {
				done++
			}
		}
		return done, nil
	})
	return all, err
}

// failures lists the topics of rs answered with an error, as
// "TOPIC: ERROR (message)"; of says what each answer carries.
func failures[R any](rs []R, of func(R) (topic, msg string, err error)) []string {
	var failed []string
	for _, r := range rs {
		if t, msg, err := of(r); err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v%s", t, err, detail(msg)))
		}
	}
	return failed
}

func (c *topicsCmd) list(ctx context.Context, w io.Writer) error {
	details, err := c.metadata(ctx, nil)
	if err != nil {
		return err
	}
	if details, err = c.internal.keep(details); err != nil {
		return err
	}
	names := details.Names()
	return c.emit(w, names, func() {
		for _, n := range names {
			fmt.Fprintln(w, n)
		}
	})
}

func (c *topicsCmd) describe(ctx context.Context, w io.Writer) error {
	details, err := c.metadata(ctx, c.topics)
	if err != nil {
		return err
	}
	if len(c.topics) == 0 {
		// Every topic: internal ones only when asked; named ones always.
		if details, err = c.internal.keep(details); err != nil {
			return err
		}
	}
	return c.with(ctx, func(s session) error {
		brokers, err := s.adm.BrokerMetadata(s.ctx)
		if err != nil {
			return c.unreachable(err)
		}
		live := map[int32]bool{}
		for _, b := range brokers.Brokers {
			live[b.NodeID] = true
		}
		cfgs, policies := map[string]string{}, map[string]string{}
		if rc, err := s.adm.DescribeTopicConfigs(s.ctx, details.Names()...); err == nil {
			for _, r := range rc {
				var kv []string
				for _, e := range r.Configs {
					// The overrides, as kafka-topics.sh, and the cleanup
					// policy wherever it comes from: whether a topic is
					// compacted matters to whoever reads it.
					if e.Value != nil && (e.Source == kmsg.ConfigSourceDynamicTopicConfig || e.Key == "cleanup.policy") {
						kv = append(kv, e.Key+"="+*e.Value)
					}
					if e.Value != nil && e.Key == "cleanup.policy" {
						policies[r.Name] = *e.Value
					}
				}
				slices.Sort(kv)
				cfgs[r.Name] = strings.Join(kv, ",")
			}
		}
		f := &c.filters
		rows := f.apply(details, live, cfgs)
		for i := range rows {
			rows[i].CleanupPolicy = policies[rows[i].Topic]
		}
		err = c.emit(w, rows, func() { printTopics(w, rows, f.any()) })
		if err == nil && f.any() && len(rows) > 0 {
			return cli.ErrProblem
		}
		return err
	})
}

// metadata fetches metadata of the named topics (all when none).
func (c *topicsCmd) metadata(ctx context.Context, topics []string) (kadm.TopicDetails, error) {
	var details kadm.TopicDetails
	err := c.with(ctx, func(s session) error {
		md, err := s.adm.Metadata(s.ctx, topics...)
		if err != nil {
			return c.unreachable(err)
		}
		for _, t := range topics {
			if d, ok := md.Topics[t]; !ok || d.Err != nil {
				return fmt.Errorf("topic %q does not exist (list them with `sluice topics list`)", t)
			}
		}
		details = md.Topics
		return nil
	})
	return details, err
}

// filters are kafka-topics.sh's describe filters.
type filters struct {
	underReplicated, underMinISR, atMinISR, unavailable bool
}

func (f *filters) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.underReplicated, "under-replicated-partitions", false, "only partitions whose ISR is smaller than their replica set")
	cmd.Flags().BoolVar(&f.underMinISR, "under-min-isr-partitions", false, "only partitions whose ISR is below min.insync.replicas")
	cmd.Flags().BoolVar(&f.atMinISR, "at-min-isr-partitions", false, "only partitions whose ISR equals min.insync.replicas")
	cmd.Flags().BoolVar(&f.unavailable, "unavailable-partitions", false, "only partitions without a live leader")
}

func (f *filters) any() bool {
	return f.underReplicated || f.underMinISR || f.atMinISR || f.unavailable
}

// TopicRow is one topic of `topics describe`, as text or JSON.
type TopicRow struct {
	Topic             string `json:"topic"`
	TopicID           string `json:"topic_id"`
	PartitionCount    int    `json:"partition_count"`
	ReplicationFactor int    `json:"replication_factor"`
	// Configs are the topic's overrides and its cleanup.policy, as
	// KEY=VALUE,...
	Configs string `json:"configs"`
	// CleanupPolicy is the topic's effective cleanup.policy.
	CleanupPolicy string         `json:"cleanup_policy"`
	Partitions    []PartitionRow `json:"partitions"`
}

// PartitionRow is one partition of a TopicRow.
type PartitionRow struct {
	Partition int32   `json:"partition"`
	Leader    int32   `json:"leader"`
	Replicas  []int32 `json:"replicas"`
	Isr       []int32 `json:"isr"`
	Offline   []int32 `json:"offline_replicas,omitempty"`
	Error     string  `json:"error,omitempty"`
}

func (f *filters) apply(details kadm.TopicDetails, live map[int32]bool, cfgs map[string]string) []TopicRow {
	var rows []TopicRow
	for _, name := range details.Names() {
		d := details[name]
		row := TopicRow{Topic: name, TopicID: d.ID.String(), PartitionCount: len(d.Partitions), Configs: cfgs[name]}
		minISR := minISRof(cfgs[name])
		for _, p := range d.Partitions.Sorted() {
			row.ReplicationFactor = max(row.ReplicationFactor, len(p.Replicas))
			keep := !f.any() ||
				f.underReplicated && len(p.ISR) < len(p.Replicas) ||
				f.underMinISR && len(p.ISR) < minISR ||
				f.atMinISR && len(p.ISR) == minISR ||
				f.unavailable && (p.Leader < 0 || !live[p.Leader])
			if !keep {
				continue
			}
			pr := PartitionRow{Partition: p.Partition, Leader: p.Leader, Replicas: p.Replicas, Isr: p.ISR, Offline: p.OfflineReplicas}
			if p.Err != nil {
				pr.Error = p.Err.Error()
			}
			row.Partitions = append(row.Partitions, pr)
		}
		if !f.any() || len(row.Partitions) > 0 {
			rows = append(rows, row)
		}
	}
	return rows
}

// minISRof reads min.insync.replicas from a describe's config string; 1
// (Kafka's default) when the topic does not override it.
func minISRof(cfg string) int {
	for _, kv := range strings.Split(cfg, ",") {
		if v, ok := strings.CutPrefix(kv, "min.insync.replicas="); ok {
			var n int
			if _, err := fmt.Sscan(v, &n); err == nil {
				return n
			}
		}
	}
	return 1
}

func printTopics(w io.Writer, rows []TopicRow, filtered bool) {
	for _, r := range rows {
		if !filtered {
			fmt.Fprintf(w, "Topic: %s\tTopicId: %s\tPartitionCount: %d\tReplicationFactor: %d\tConfigs: %s\n",
				r.Topic, r.TopicID, r.PartitionCount, r.ReplicationFactor, r.Configs)
		}
		for _, p := range r.Partitions {
			fmt.Fprintf(w, "\tTopic: %s\tPartition: %d\tLeader: %s\tReplicas: %s\tIsr: %s", r.Topic, p.Partition, leader(p.Leader), joinIDs(p.Replicas), joinIDs(p.Isr))
			if len(p.Offline) > 0 {
				fmt.Fprintf(w, "\tOffline: %s", joinIDs(p.Offline))
			}
			if p.Error != "" {
				fmt.Fprintf(w, "\tError: %s", p.Error)
			}
			fmt.Fprintln(w)
		}
	}
}

func leader(id int32) string {
	if id < 0 {
		return "none"
	}
	return fmt.Sprint(id)
}

func detail(msg string) string {
	if msg == "" {
		return ""
	}
	return " (" + msg + ")"
}
