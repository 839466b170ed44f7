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
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Feature is one row of `sluice features describe`, with the fields of
// kafka-features.sh describe.
type Feature struct {
	Feature               string `json:"feature"`
	SupportedMinVersion   int16  `json:"supported_min_version"`
	SupportedMaxVersion   int16  `json:"supported_max_version"`
	FinalizedVersionLevel int16  `json:"finalized_version_level"`
	Epoch                 int64  `json:"epoch"`
}

// featuresCmd is `sluice features`, after kafka-features.sh: describe
// through ApiVersions (what every client sees), upgrade, downgrade and
// disable through UpdateFeatures.
type featuresCmd struct {
	common
	features []string
	dryRun   bool
	unsafe   bool
}

// NewFeaturesCommand returns `sluice features`.
func NewFeaturesCommand() *cobra.Command {
	var c featuresCmd
	root := &cobra.Command{Use: "features", Short: "Describe and change the cluster's feature levels (Kafka's kafka-features.sh)",
		Long: `The cluster's feature flags (KIP-584), like kafka-features.sh. Sluice knows
transaction.version: 2 lets clients use KIP-890 part 2 (no AddPartitionsToTxn,
the producer epoch bumped at each transaction's end), 1 keeps them on the
earlier protocol. Levels live in the metadata quorum: every broker answers
the same in ApiVersions. Clients read them when they connect: clients already
connected keep the level they saw (franz-go does not look again).`}
	c.register(root)
	describe := &cobra.Command{
		Use:   "describe",
		Short: "Each feature's supported range, finalized level and epoch",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.describe(cmd.Context(), cmd.OutOrStdout())
		},
	}
	change := func(use, short, verb string) *cobra.Command {
		cmd := &cobra.Command{
			Use:   use,
			Short: short,
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return c.update(cmd.Context(), cmd.OutOrStdout(), verb)
			},
		}
		cmd.Flags().StringArrayVar(&c.features, "feature", nil, "a feature and its level, name=level (repeatable; disable takes the name only)")
		cmd.Flags().BoolVar(&c.dryRun, "dry-run", false, "validate only: say what would happen")
		return cmd
	}
	upgrade := change("upgrade --feature NAME=LEVEL", "Raise feature levels", "upgrade")
	upgrade.Example = "  sluice features upgrade --feature transaction.version=2"
	downgrade := change("downgrade --feature NAME=LEVEL", "Lower feature levels", "downgrade")
	downgrade.Example = "  sluice features downgrade --feature transaction.version=1"
	disable := change("disable --feature NAME", "Set feature levels to 0 (not finalized)", "disable")
	for _, cmd := range []*cobra.Command{downgrade, disable} {
		cmd.Flags().BoolVar(&c.unsafe, "unsafe", false, "allow a downgrade that may lose metadata (Kafka's unsafe downgrade)")
	}
	root.AddCommand(describe, upgrade, downgrade, disable)
	return root
}

func (c *featuresCmd) describe(ctx context.Context, w io.Writer) error {
	return c.with(ctx, func(s session) error {
		req := kmsg.NewPtrApiVersionsRequest()
		req.ClientSoftwareName, req.ClientSoftwareVersion = "sluice", "1"
		resp, err := req.RequestWith(s.ctx, s.cl)
		if err != nil {
			return c.unreachable(err)
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return fmt.Errorf("ApiVersions: %w", err)
		}
		rows := featureRows(resp)
		return c.emit(w, rows, func() {
			for _, f := range rows {
				fmt.Fprintf(w, "Feature: %s\tSupportedMinVersion: %d\tSupportedMaxVersion: %d\tFinalizedVersionLevel: %d\tEpoch: %d\n",
					f.Feature, f.SupportedMinVersion, f.SupportedMaxVersion, f.FinalizedVersionLevel, f.Epoch)
			}
		})
	})
}

// featureRows lists an ApiVersions answer's features by name: every
// supported one with its finalized level (0 when not finalized).
func featureRows(resp *kmsg.ApiVersionsResponse) []Feature {
	rows := []Feature{}
	for _, sf := range resp.SupportedFeatures {
		f := Feature{Feature: sf.Name, SupportedMinVersion: sf.MinVersion, SupportedMaxVersion: sf.MaxVersion, Epoch: resp.FinalizedFeaturesEpoch}
		if resp.FinalizedFeaturesEpoch >= 0 {
			for _, ff := range resp.FinalizedFeatures {
				if ff.Name == sf.Name {
					f.FinalizedVersionLevel = ff.MaxVersionLevel
				}
			}
		}
		rows = append(rows, f)
	}
	slices.SortFunc(rows, func(a, b Feature) int { return strings.Compare(a.Feature, b.Feature) })
	return rows
}

// parseFeatureUpdates reads the --feature flags of verb.
func parseFeatureUpdates(flags []string, verb string, unsafe bool) ([]kadm.FeatureUpdate, error) {
	if len(flags) == 0 {
		return nil, errors.New("give at least one --feature")
	}
	typ := int8(1) // upgrade
	if verb != "upgrade" {
		typ = 2 // safe downgrade
		if unsafe {
			typ = 3
		}
	}
	var out []kadm.FeatureUpdate
	for _, f := range flags {
		name, level := f, int64(0)
		if verb == "disable" {
			if strings.Contains(f, "=") {
				return nil, fmt.Errorf("--feature %q: disable takes a feature name only", f)
			}
		} else {
			var l string
			var ok bool
			if name, l, ok = strings.Cut(f, "="); !ok || name == "" {
				return nil, fmt.Errorf("--feature %q: want name=level, e.g. transaction.version=2", f)
			}
			var err error
			if level, err = strconv.ParseInt(l, 10, 16); err != nil || level < 1 {
				return nil, fmt.Errorf("--feature %q: the level must be a whole number of at least 1 (to remove a feature: sluice features disable)", f)
			}
		}
		out = append(out, kadm.FeatureUpdate{Feature: name, MaxVersionLevel: int16(level), UpgradeType: typ})
	}
	return out, nil
}

func (c *featuresCmd) update(ctx context.Context, w io.Writer, verb string) error {
	updates, err := parseFeatureUpdates(c.features, verb, c.unsafe)
	if err != nil {
		return err
	}
	return c.with(ctx, func(s session) error {
		req := kmsg.NewPtrUpdateFeaturesRequest()
		req.TimeoutMillis, req.ValidateOnly = int32(c.timeout.Milliseconds()), c.dryRun
		for _, u := range updates {
			fu := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
			fu.Feature, fu.MaxVersionLevel, fu.UpgradeType = u.Feature, u.MaxVersionLevel, u.UpgradeType
			fu.AllowDowngrade = u.UpgradeType >= 2
			req.FeatureUpdates = append(req.FeatureUpdates, fu)
		}
		resp, err := req.RequestWith(s.ctx, s.cl)
		if err != nil {
			return c.unreachable(err)
		}
		code, msg := resp.ErrorCode, deref(resp.ErrorMessage)
		if code == kerr.ClusterAuthorizationFailed.Code {
			return fmt.Errorf("update features: %w (needs ALTER on the cluster)", kerr.ErrorForCode(code))
		}
		type result struct {
			Feature string `json:"feature"`
			Level   int16  `json:"level"`
			Error   string `json:"error,omitempty"`
		}
		var out []result
		for _, u := range updates {
			r := result{Feature: u.Feature, Level: u.MaxVersionLevel}
			for _, rr := range resp.Results { // v0-1
				if rr.Feature == u.Feature && rr.ErrorCode != 0 && code == 0 {
					code, msg = rr.ErrorCode, deref(rr.ErrorMessage)
				}
			}
			if code != 0 {
				r.Error = kerr.ErrorForCode(code).Error()
				if msg != "" {
					r.Error = msg
				}
			}
			out = append(out, r)
		}
		err = c.emit(w, out, func() {
			for _, r := range out {
				fmt.Fprintln(w, featureOutcome(verb, r.Feature, r.Level, c.dryRun, r.Error))
			}
		})
		if err == nil && code != 0 {
			err = fmt.Errorf("no feature was changed: %w", kerr.ErrorForCode(code))
		}
		return err
	})
}

// featureOutcome is kafka-features.sh's line for one update.
func featureOutcome(verb, name string, level int16, dryRun bool, errMsg string) string {
	past := map[string]string{"upgrade": "upgraded", "downgrade": "downgraded", "disable": "disabled"}[verb]
	to := fmt.Sprintf(" to %d", level)
	if verb == "disable" {
		to = ""
	}
	switch {
	case errMsg != "":
		return fmt.Sprintf("Could not %s %s%s. %s", verb, name, to, errMsg)
	case dryRun:
		return fmt.Sprintf("%s can be %s%s.", name, past, to)
	}
	return fmt.Sprintf("%s was %s%s.", name, past, to)
}
