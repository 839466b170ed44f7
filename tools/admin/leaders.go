package admin

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// ElectionResult is one partition of `sluice leaders elect --format json`.
type ElectionResult struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Outcome is "elected", "not-needed" (a valid leader was already
	// elected) or "error".
	Outcome string `json:"outcome"`
	Error   string `json:"error,omitempty"`
}

// NewLeadersCommand returns `sluice leaders`, after kafka-leader-election.sh.
func NewLeadersCommand() *cobra.Command {
	var c common
	root := &cobra.Command{Use: "leaders", Short: "Elect partition leaders (Kafka's ElectLeaders)"}
	c.register(root)
	var typ, topic string
	var partition int32
	var all bool
	elect := &cobra.Command{
		Use:   "elect --type preferred|unclean (--topic T [--partition P] | --all-topic-partitions)",
		Short: "Run preferred or unclean leader elections, like kafka-leader-election.sh",
		Long: `Run leader elections through the controller, like kafka-leader-election.sh.

preferred moves leadership back to each partition's first replica when it is
in sync. unclean elects a live replica from outside the ISR for partitions
that have no leader: the records only the old ISR held are lost, and the
election is recorded (sluice cluster health shows it). Exit status 1 when
any partition's election failed.`,
		Example: `  sluice leaders elect --type preferred --all-topic-partitions
  sluice leaders elect --type unclean --topic orders --partition 0`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var how kadm.ElectLeadersHow
			label := strings.ToUpper(typ)
			switch strings.ToLower(typ) {
			case "preferred":
				how = kadm.ElectPreferredReplica
			case "unclean":
				how = kadm.ElectLiveReplica
			default:
				return fmt.Errorf("--type %q: want preferred or unclean", typ)
			}
			if all == (topic != "") {
				return errors.New("give either --topic (with --partition) or --all-topic-partitions")
			}
			cl, ctx, done, err := c.openClient(cmd)
			if err != nil {
				return err
			}
			defer done()
			adm := kadm.NewClient(cl)
			var set kadm.TopicsSet
			switch {
			case all:
				set = nil // every partition
			case cmd.Flags().Changed("partition"):
				set = kadm.TopicsSet{topic: {partition: {}}}
			default:
				ps, err := c.topicPartitions(ctx, cl, topic)
				if err != nil {
					return err
				}
				set = kadm.TopicsSet{topic: {}}
				for _, p := range ps {
					set[topic][p] = struct{}{}
				}
			}
			res, err := adm.ElectLeaders(ctx, how, set)
			if err != nil {
				return c.unreachable(err)
			}
			var out []ElectionResult
			for t, ps := range res {
				for p, r := range ps {
					e := ElectionResult{Topic: t, Partition: p, Outcome: "elected"}
					switch {
					case errors.Is(r.Err, kerr.ElectionNotNeeded):
						e.Outcome = "not-needed"
					case r.Err != nil:
						e.Outcome, e.Error = "error", r.Err.Error()
						if r.ErrMessage != "" {
							e.Error += ": " + r.ErrMessage
						}
					}
					out = append(out, e)
				}
			}
			sort.Slice(out, func(i, j int) bool {
				if out[i].Topic != out[j].Topic {
					return out[i].Topic < out[j].Topic
				}
				return out[i].Partition < out[j].Partition
			})
			failed := 0
			err = c.emit(cmd.OutOrStdout(), out, func() {
				var ok, none []string
				w := cmd.OutOrStdout()
				for _, e := range out {
					name := fmt.Sprintf("%s-%d", e.Topic, e.Partition)
					switch e.Outcome {
					case "elected":
						ok = append(ok, name)
					case "not-needed":
						none = append(none, name)
					default:
						fmt.Fprintf(w, "Error completing leader election (%s) for partition: %s: %s\n", label, name, e.Error)
					}
				}
				if len(ok) > 0 {
					fmt.Fprintf(w, "Successfully completed leader election (%s) for partitions %s\n", label, strings.Join(ok, ", "))
				}
				if len(none) > 0 {
					fmt.Fprintf(w, "Valid replica already elected for partitions %s\n", strings.Join(none, ", "))
				}
			})
			for _, e := range out {
				if e.Outcome == "error" {
					failed++
				}
			}
			if err == nil && failed > 0 {
				err = fmt.Errorf("%d partition elections failed", failed)
			}
			return err
		},
	}
	elect.Flags().StringVar(&typ, "type", "", "preferred or unclean (kafka-leader-election.sh's --election-type)")
	elect.Flags().StringVar(&typ, "election-type", "", "same as --type")
	elect.Flags().StringVar(&topic, "topic", "", "the topic whose partitions to elect")
	elect.Flags().Int32Var(&partition, "partition", 0, "only this partition of --topic")
	elect.Flags().BoolVar(&all, "all-topic-partitions", false, "every partition of every topic")
	root.AddCommand(elect)
	return root
}
