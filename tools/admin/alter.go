package admin

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// AlterResult is one topic of `sluice topics alter`.
type AlterResult struct {
	Topic      string `json:"topic"`
	Partitions int    `json:"partitions"`
	Error      string `json:"error,omitempty"`
}

// newAlterCommand returns `sluice topics alter`, after kafka-topics.sh
// --alter: it grows topics to --partitions partitions (CreatePartitions).
func newAlterCommand(c *common) *cobra.Command {
	var partitions int
	var validateOnly bool
	cmd := &cobra.Command{
		Use:   "alter TOPIC... --partitions N",
		Short: "Raise the partition count of topics (partitions can only be added)",
		Long: `Raise the partition count of topics to N, like kafka-topics.sh --alter
--partitions. New partitions are placed over the live brokers as topic
creation places them. Keys hashed to a partition may map to another one
afterwards.`,
		Example: "  sluice topics alter orders --partitions 12",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if partitions < 1 {
				return errors.New("--partitions N is required: the partition count wanted, above the current one")
			}
			adm, ctx, done, err := c.open(cmd)
			if err != nil {
				return err
			}
			defer done()
			update := adm.UpdatePartitions
			if validateOnly {
				update = adm.ValidateUpdatePartitions
			}
			resp, err := update(ctx, partitions, args...)
			if err != nil {
				return c.unreachable(err)
			}
			var rows []AlterResult
			var failed []string
			for _, t := range resp.Sorted() {
				r := AlterResult{Topic: t.Topic, Partitions: partitions}
				if t.Err != nil {
					r.Error = fmt.Sprintf("%v%s", t.Err, detail(t.ErrMessage))
					failed = append(failed, t.Topic+": "+r.Error)
				}
				rows = append(rows, r)
			}
			err = c.emit(cmd.OutOrStdout(), rows, func() {
				for _, r := range rows {
					if r.Error != "" {
						continue
					}
					if validateOnly {
						fmt.Fprintf(cmd.OutOrStdout(), "Topic %s can have %d partitions (validate only: nothing changed).\n", r.Topic, r.Partitions)
					} else {
						fmt.Fprintf(cmd.OutOrStdout(), "Topic %s now has %d partitions.\n", r.Topic, r.Partitions)
					}
				}
			})
			if len(failed) > 0 {
				return fmt.Errorf("could not alter %s (see the counts with `sluice topics describe`)", strings.Join(failed, "; "))
			}
			return err
		},
	}
	cmd.Flags().IntVar(&partitions, "partitions", 0, "the partition count wanted (only increases are allowed)")
	cmd.Flags().BoolVar(&validateOnly, "validate-only", false, "check the change without making it")
	return cmd
}
