package admin

import (
	"fmt"
	"github.com/sluice-log/sluice/tools/internal/cli"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// NewTopicsCommand returns `sluice topics`, after kafka-topics.sh.
func NewTopicsCommand() *cobra.Command {
	var c common
	root := &cobra.Command{Use: "topics", Short: "Create, delete, list and describe topics (Kafka admin API)"}
	c.register(root)

	var partitions int32
	var rf int16
	var configs []string
	create := &cobra.Command{
		Use:     "create TOPIC...",
		Short:   "Create topics",
		Example: "  sluice topics create orders --partitions 6 --replication-factor 3 --config min.insync.replicas=2",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := parseKVs(configs)
			if err != nil {
				return err
			}
			adm, ctx, done, err := c.open(cmd)
			if err != nil {
				return err
			}
			defer done()
			kcfg := map[string]*string{}
			for k, v := range cfg {
				kcfg[k] = &v
			}
			resp, err := adm.CreateTopics(ctx, partitions, rf, kcfg, args...)
			if err != nil {
				return c.unreachable(err)
			}
			var failed []string
			for _, t := range resp.Sorted() {
				if t.Err != nil {
					failed = append(failed, fmt.Sprintf("%s: %v%s", t.Topic, t.Err, detail(t.ErrMessage)))
				}
			}
			err = c.emit(cmd.OutOrStdout(), resp.Sorted(), func() {
				for _, t := range resp.Sorted() {
					if t.Err == nil {
						fmt.Fprintf(cmd.OutOrStdout(), "Created topic %s.\n", t.Topic)
					}
				}
			})
			if len(failed) > 0 {
				return fmt.Errorf("could not create %s", strings.Join(failed, "; "))
			}
			return err
		},
	}
	create.Flags().Int32Var(&partitions, "partitions", -1, "partition count (-1: the broker's num.partitions)")
	create.Flags().Int16Var(&rf, "replication-factor", -1, "replicas per partition (-1: the broker's default.replication.factor)")
	create.Flags().StringArrayVar(&configs, "config", nil, "topic config KEY=VALUE (repeatable)")

	del := &cobra.Command{
		Use:   "delete TOPIC...",
		Short: "Delete topics",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			adm, ctx, done, err := c.open(cmd)
			if err != nil {
				return err
			}
			defer done()
			resp, err := adm.DeleteTopics(ctx, args...)
			if err != nil {
				return c.unreachable(err)
			}
			var failed []string
			for _, t := range resp.Sorted() {
				if t.Err != nil {
					failed = append(failed, fmt.Sprintf("%s: %v%s", t.Topic, t.Err, detail(t.ErrMessage)))
				} else if c.format == "text" {
					fmt.Fprintf(cmd.OutOrStdout(), "Deleted topic %s.\n", t.Topic)
				}
			}
			if len(failed) > 0 {
				return fmt.Errorf("could not delete %s", strings.Join(failed, "; "))
			}
			return nil
		},
	}

	list := &cobra.Command{
		Use:   "list",
		Short: "List topic names",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			details, err := describe(&c, cmd, nil)
			if err != nil {
				return err
			}
			names := details.Names()
			return c.emit(cmd.OutOrStdout(), names, func() {
				for _, n := range names {
					fmt.Fprintln(cmd.OutOrStdout(), n)
				}
			})
		},
	}

	var f filters
	describeCmd := &cobra.Command{
		Use:   "describe [TOPIC...]",
		Short: "Describe topics: partitions, leaders, replicas, ISR, configs",
		Example: `  sluice topics describe orders
  sluice topics describe --under-min-isr-partitions`,
		RunE: func(cmd *cobra.Command, args []string) error {
			details, err := describe(&c, cmd, args)
			if err != nil {
				return err
			}
			adm, ctx, done, err := c.open(cmd)
			if err != nil {
				return err
			}
			defer done()
			brokers, err := adm.BrokerMetadata(ctx)
			if err != nil {
				return c.unreachable(err)
			}
			live := map[int32]bool{}
			for _, b := range brokers.Brokers {
				live[b.NodeID] = true
			}
			cfgs := map[string]string{}
			if rc, err := adm.DescribeTopicConfigs(ctx, details.Names()...); err == nil {
				for _, r := range rc {
					var kv []string
					for _, e := range r.Configs {
						if e.Source == kmsg.ConfigSourceDynamicTopicConfig && e.Value != nil {
							kv = append(kv, e.Key+"="+*e.Value)
						}
					}
					slices.Sort(kv)
					cfgs[r.Name] = strings.Join(kv, ",")
				}
			}
			rows := f.apply(details, live, cfgs)
			err = c.emit(cmd.OutOrStdout(), rows, func() { printTopics(cmd.OutOrStdout(), rows, f.any()) })
			if err == nil && f.any() && len(rows) > 0 {
				return cli.ErrProblem
			}
			return err
		},
	}
	f.register(describeCmd)
	root.AddCommand(create, del, list, describeCmd, newAlterCommand(&c))
	return root
}

// describe fetches metadata of the named topics (all when none).
func describe(c *common, cmd *cobra.Command, topics []string) (kadm.TopicDetails, error) {
	adm, ctx, done, err := c.open(cmd)
	if err != nil {
		return nil, err
	}
	defer done()
	md, err := adm.Metadata(ctx, topics...)
	if err != nil {
		return nil, c.unreachable(err)
	}
	for _, t := range topics {
		if d, ok := md.Topics[t]; !ok || d.Err != nil {
			return nil, fmt.Errorf("topic %q does not exist (list them with `sluice topics list`)", t)
		}
	}
	return md.Topics, nil
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
	Topic             string         `json:"topic"`
	TopicID           string         `json:"topic_id"`
	PartitionCount    int            `json:"partition_count"`
	ReplicationFactor int            `json:"replication_factor"`
	Configs           string         `json:"configs"`
	Partitions        []PartitionRow `json:"partitions"`
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
