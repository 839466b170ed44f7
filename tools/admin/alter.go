package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AlterResult is one topic of `sluice topics alter`.
type AlterResult struct {
	Topic      string `json:"topic"`
	Partitions int    `json:"partitions"`
	Error      string `json:"error,omitempty"`
}

// alterCmd is `sluice topics alter`, after kafka-topics.sh --alter: it
// grows topics to --partitions partitions (CreatePartitions).
type alterCmd struct {
	*common
	topics       []string
	partitions   int
	validateOnly bool
	assignment   string
}

// newAlterCommand returns `sluice topics alter`.
func newAlterCommand(c *common) *cobra.Command {
	a := alterCmd{common: c}
	cmd := &cobra.Command{
		Use:   "alter TOPIC... --partitions N",
		Short: "Raise the partition count of topics (partitions can only be added)",
		Long: `Raise the partition count of topics to N, like kafka-topics.sh --alter
--partitions. New partitions are placed over the live brokers as topic
creation places them, or as --replica-assignment says (one topic only:
the replicas of every partition, existing ones first, as kafka-topics.sh
takes it; only the new partitions' lists are used). Keys hashed to a
partition may map to another one afterwards.`,
		Example: `  sluice topics alter orders --partitions 12
  sluice topics alter orders --partitions 4 --replica-assignment 1:2,2:3,3:1,1:3`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a.topics = args
			return a.run(cmd.Context(), cmd.OutOrStdout())
		},
	}
	cmd.Flags().IntVar(&a.partitions, "partitions", 0, "the partition count wanted (only increases are allowed)")
	cmd.Flags().BoolVar(&a.validateOnly, "validate-only", false, "check the change without making it")
	cmd.Flags().StringVar(&a.assignment, "replica-assignment", "", "replicas of every partition, e.g. 1:2,2:3,3:1 (existing partitions first; only the new ones are used)")
	return cmd
}

func (c *alterCmd) run(ctx context.Context, w io.Writer) error {
	if c.partitions < 1 {
		return errors.New("--partitions N is required: the partition count wanted, above the current one")
	}
	var assign [][]int32
	if c.assignment != "" {
		if len(c.topics) != 1 {
			return errors.New("--replica-assignment alters one topic at a time")
		}
		var err error
		if assign, err = parseAssignment(c.assignment); err != nil {
			return err
		}
		if len(assign) != c.partitions {
			return fmt.Errorf("--replica-assignment lists %d partitions, --partitions asks for %d: list every partition, existing ones first", len(assign), c.partitions)
		}
	}
	return c.with(ctx, func(s session) error {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.TimeoutMillis, req.ValidateOnly = int32(c.timeout.Milliseconds()), c.validateOnly
		for _, name := range c.topics {
			rt := kmsg.NewCreatePartitionsRequestTopic()
			rt.Topic, rt.Count = name, int32(c.partitions)
			req.Topics = append(req.Topics, rt)
		}
		if assign != nil {
			td, err := s.adm.ListTopics(s.ctx, c.topics[0])
			if err != nil {
				return c.unreachable(err)
			}
			have := len(td[c.topics[0]].Partitions)
			if td[c.topics[0]].Err != nil || have == 0 {
				return fmt.Errorf("topic %q does not exist (list them with `sluice topics list`)", c.topics[0])
			}
			if have >= c.partitions {
				return fmt.Errorf("topic %s has %d partitions: --partitions must be above that (partitions can only be added)", c.topics[0], have)
			}
			for _, reps := range assign[have:] {
				req.Topics[0].Assignment = append(req.Topics[0].Assignment, kmsg.CreatePartitionsRequestTopicAssignment{Replicas: reps})
			}
		}
		resp, err := req.RequestWith(s.ctx, s.cl)
		if err != nil {
			return c.unreachable(err)
		}
		var rows []AlterResult
		var failed []string
		for _, t := range resp.Topics {
			r := AlterResult{Topic: t.Topic, Partitions: c.partitions}
			if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
				r.Error = fmt.Sprintf("%v%s", err, detail(deref(t.ErrorMessage)))
				failed = append(failed, t.Topic+": "+r.Error)
			}
			rows = append(rows, r)
		}
		slices.SortFunc(rows, func(a, b AlterResult) int { return strings.Compare(a.Topic, b.Topic) })
		err = c.emit(w, rows, func() {
			for _, r := range rows {
				if r.Error != "" {
					continue
				}
				if c.validateOnly {
					fmt.Fprintf(w, "Topic %s can have %d partitions (validate only: nothing changed).\n", r.Topic, r.Partitions)
				} else {
					fmt.Fprintf(w, "Topic %s now has %d partitions.\n", r.Topic, r.Partitions)
				}
			}
		})
		if len(failed) > 0 {
			return fmt.Errorf("could not alter %s (see the counts with `sluice topics describe`)", strings.Join(failed, "; "))
		}
		return err
	})
}

// parseAssignment parses kafka-topics.sh's --replica-assignment:
// partitions separated by commas, the broker ids of one by colons.
func parseAssignment(s string) ([][]int32, error) {
	var out [][]int32
	for i, part := range strings.Split(s, ",") {
		var reps []int32
		for _, id := range strings.Split(strings.TrimSpace(part), ":") {
			n, err := strconv.ParseInt(id, 10, 32)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("--replica-assignment: partition %d: %q is not a broker id (want e.g. 1:2,2:3)", i, id)
			}
			reps = append(reps, int32(n))
		}
		out = append(out, reps)
	}
	return out, nil
}
