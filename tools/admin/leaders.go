package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
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

// leadersCmd is `sluice leaders elect`, after kafka-leader-election.sh.
type leadersCmd struct {
	common
	typ, topic string
	partition  int32
	onePart    bool // --partition was given
	all        bool
}

// NewLeadersCommand returns `sluice leaders`.
func NewLeadersCommand() *cobra.Command {
	var c leadersCmd
	root := &cobra.Command{Use: "leaders", Short: "Elect partition leaders (Kafka's ElectLeaders)"}
	c.register(root)
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
			c.onePart = cmd.Flags().Changed("partition")
			return c.run(cmd.Context(), cmd.OutOrStdout())
		},
	}
	elect.Flags().StringVar(&c.typ, "type", "", "preferred or unclean (kafka-leader-election.sh's --election-type)")
	elect.Flags().StringVar(&c.typ, "election-type", "", "same as --type")
	elect.Flags().StringVar(&c.topic, "topic", "", "the topic whose partitions to elect")
	elect.Flags().Int32Var(&c.partition, "partition", 0, "only this partition of --topic")
	elect.Flags().BoolVar(&c.all, "all-topic-partitions", false, "every partition of every topic")
	root.AddCommand(elect)
	return root
}

func (c *leadersCmd) run(ctx context.Context, w io.Writer) error {
	var how kadm.ElectLeadersHow
	label := strings.ToUpper(c.typ)
	switch strings.ToLower(c.typ) {
	case "preferred":
		how = kadm.ElectPreferredReplica
	case "unclean":
		how = kadm.ElectLiveReplica
	default:
		return fmt.Errorf("--type %q: want preferred or unclean", c.typ)
	}
	if c.all == (c.topic != "") {
		return errors.New("give either --topic (with --partition) or --all-topic-partitions")
	}
	var out []ElectionResult
	err := c.with(ctx, func(s session) error {
		var err error
		out, err = c.elect(s, how)
		return err
	})
	if err != nil {
		return err
	}
	err = c.emit(w, out, func() { printElections(w, out, label) })
	failed := 0
	for _, e := range out {
		if e.Outcome == "error" {
			failed++
		}
	}
	if err == nil && failed > 0 {
		err = fmt.Errorf("%d partition elections failed", failed)
	}
	return err
}

// elect runs the elections and returns their results, sorted.
func (c *leadersCmd) elect(s session, how kadm.ElectLeadersHow) ([]ElectionResult, error) {
	var set kadm.TopicsSet
	switch {
	case c.all:
		set = nil // every partition
	case c.onePart:
		set = kadm.TopicsSet{c.topic: {c.partition: {}}}
	default:
		ps, err := c.topicPartitions(s.ctx, s.cl, c.topic)
		if err != nil {
			return nil, err
		}
		set = kadm.TopicsSet{c.topic: {}}
		for _, p := range ps {
			set[c.topic][p] = struct{}{}
		}
	}
	res, err := s.adm.ElectLeaders(s.ctx, how, set)
	if err != nil {
		return nil, c.unreachable(err)
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
	return out, nil
}

func printElections(w io.Writer, out []ElectionResult, label string) {
	var ok, none []string
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
}
