package admin

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

// NewConfigsCommand returns `sluice configs`, after kafka-configs.sh.
func NewConfigsCommand() *cobra.Command {
	var c common
	var entityType, entityName string
	var all bool
	root := &cobra.Command{Use: "configs", Short: "Describe and alter topic and broker configs (Kafka admin API)"}
	c.register(root)
	root.PersistentFlags().StringVar(&entityType, "entity-type", "topics", "topics or brokers")
	root.PersistentFlags().StringVar(&entityName, "entity-name", "", "the topic name or broker id")

	describeCmd := &cobra.Command{
		Use:     "describe",
		Short:   "Describe the configs of a topic or broker",
		Example: "  sluice configs describe --entity-type topics --entity-name orders\n  sluice configs describe --entity-type brokers --entity-name 1 --all",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			adm, ctx, done, err := c.open(cmd)
			if err != nil {
				return err
			}
			defer done()
			var rc kadm.ResourceConfigs
			switch entityType {
			case "topics":
				if entityName == "" {
					return fmt.Errorf("--entity-name: name the topic")
				}
				rc, err = adm.DescribeTopicConfigs(ctx, entityName)
			case "brokers":
				id, perr := strconv.ParseInt(entityName, 10, 32)
				if perr != nil {
					return fmt.Errorf("--entity-name %q: want a broker id", entityName)
				}
				rc, err = adm.DescribeBrokerConfigs(ctx, int32(id))
			default:
				return fmt.Errorf("--entity-type %q: want topics or brokers", entityType)
			}
			if err != nil {
				return c.unreachable(err)
			}
			type entry struct {
				Key       string `json:"key"`
				Value     string `json:"value"`
				Source    string `json:"source"`
				Sensitive bool   `json:"sensitive"`
			}
			var out []entry
			for _, r := range rc {
				if r.Err != nil {
					return fmt.Errorf("%s %s: %v%s", entityType, r.Name, r.Err, detail(r.ErrMessage))
				}
				for _, e := range r.Configs {
					dynamic := strings.HasPrefix(e.Source.String(), "DYNAMIC")
					if !all && !dynamic {
						continue
					}
					v := ""
					if e.Value != nil {
						v = *e.Value
					}
					out = append(out, entry{Key: e.Key, Value: v, Source: e.Source.String(), Sensitive: e.Sensitive})
				}
			}
			slices.SortFunc(out, func(a, b entry) int { return strings.Compare(a.Key, b.Key) })
			return c.emit(cmd.OutOrStdout(), out, func() {
				what := "Dynamic configs"
				if all {
					what = "All configs"
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s for %s %s are:\n", what, strings.TrimSuffix(entityType, "s"), entityName)
				for _, e := range out {
					fmt.Fprintf(cmd.OutOrStdout(), "  %s=%s sensitive=%v source=%s\n", e.Key, e.Value, e.Sensitive, e.Source)
				}
			})
		},
	}
	describeCmd.Flags().BoolVar(&all, "all", false, "list every config, not only the dynamic (overridden) ones")

	var add, del []string
	alter := &cobra.Command{
		Use:     "alter",
		Short:   "Set or delete configs of a topic or broker (incremental)",
		Example: "  sluice configs alter --entity-type topics --entity-name orders --add-config retention.ms=86400000,min.insync.replicas=2",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sets, err := parseKVs(add)
			if err != nil {
				return err
			}
			var changes []kadm.AlterConfig
			for _, k := range slices.Sorted(maps.Keys(sets)) {
				v := sets[k]
				changes = append(changes, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v})
			}
			for _, d := range del {
				for _, k := range strings.Split(d, ",") {
					if k = strings.TrimSpace(k); k != "" {
						changes = append(changes, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
					}
				}
			}
			if len(changes) == 0 {
				return fmt.Errorf("nothing to alter: give --add-config KEY=VALUE or --delete-config KEY")
			}
			adm, ctx, done, err := c.open(cmd)
			if err != nil {
				return err
			}
			defer done()
			var resp kadm.AlterConfigsResponses
			switch entityType {
			case "topics":
				resp, err = adm.AlterTopicConfigs(ctx, changes, entityName)
			case "brokers":
				id, perr := strconv.ParseInt(entityName, 10, 32)
				if perr != nil {
					return fmt.Errorf("--entity-name %q: want a broker id", entityName)
				}
				resp, err = adm.AlterBrokerConfigs(ctx, changes, int32(id))
			default:
				return fmt.Errorf("--entity-type %q: want topics or brokers", entityType)
			}
			if err != nil {
				return c.unreachable(err)
			}
			for _, r := range resp {
				if r.Err != nil {
					return fmt.Errorf("alter %s %s: %v%s", entityType, r.Name, r.Err, detail(r.ErrMessage))
				}
			}
			if c.format == "text" {
				fmt.Fprintf(cmd.OutOrStdout(), "Completed updating config for %s %s.\n", strings.TrimSuffix(entityType, "s"), entityName)
			}
			return nil
		},
	}
	alter.Flags().StringArrayVar(&add, "add-config", nil, "KEY=VALUE[,KEY=VALUE] to set")
	alter.Flags().StringArrayVar(&del, "delete-config", nil, "KEY[,KEY] to remove (back to the default)")
	root.AddCommand(describeCmd, alter)
	return root
}
