package admin

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

// configsCmd is `sluice configs`, after kafka-configs.sh. Its
// subcommands share the entity flags.
type configsCmd struct {
	common
	entityType, entityName string
	entityDefault          bool     // --entity-default (users, clients)
	all                    bool     // describe --all
	add, del               []string // alter --add-config, --delete-config
}

// NewConfigsCommand returns `sluice configs`.
func NewConfigsCommand() *cobra.Command {
	var c configsCmd
	root := &cobra.Command{Use: "configs", Short: "Describe and alter topic and broker configs, users' SCRAM credentials and client quotas (Kafka admin API)"}
	c.register(root)
	root.PersistentFlags().StringVar(&c.entityType, "entity-type", "topics", "topics, brokers, users or clients")
	root.PersistentFlags().StringVar(&c.entityName, "entity-name", "", "the topic name, broker id, user name or client id")
	root.PersistentFlags().BoolVar(&c.entityDefault, "entity-default", false, "users or clients: the default quotas (of every user or client id without its own)")

	describeCmd := &cobra.Command{
		Use:     "describe",
		Short:   "Describe the configs of a topic or broker",
		Example: "  sluice configs describe --entity-type topics --entity-name orders\n  sluice configs describe --entity-type brokers --entity-name 1 --all\n  sluice configs describe --entity-type users\n  sluice configs describe --entity-type clients --entity-name app",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.describe(cmd.Context(), cmd.OutOrStdout())
		},
	}
	describeCmd.Flags().BoolVar(&c.all, "all", false, "list every config, not only the dynamic (overridden) ones")

	alter := &cobra.Command{
		Use:     "alter",
		Short:   "Set or delete configs of a topic or broker (incremental)",
		Example: "  sluice configs alter --entity-type topics --entity-name orders --add-config retention.ms=86400000,min.insync.replicas=2\n  sluice configs alter --entity-name table --add-config cleanup.policy=[compact,delete]\n  sluice configs alter --entity-type users --entity-name alice --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret]'\n  sluice configs alter --entity-type users --entity-name alice --delete-config SCRAM-SHA-256\n  sluice configs alter --entity-type clients --entity-name app --add-config producer_byte_rate=1048576,consumer_byte_rate=2097152\n  sluice configs alter --entity-type users --entity-default --add-config request_percentage=50",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.alter(cmd.Context(), cmd.OutOrStdout())
		},
	}
	alter.Flags().StringArrayVar(&c.add, "add-config", nil, "KEY=VALUE[,KEY=VALUE] to set")
	alter.Flags().StringArrayVar(&c.del, "delete-config", nil, "KEY[,KEY] to remove (back to the default)")
	root.AddCommand(describeCmd, alter)
	return root
}

// broker parses --entity-name as a broker id.
func (c *configsCmd) broker() (int32, error) {
	id, err := strconv.ParseInt(c.entityName, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("--entity-name %q: want a broker id", c.entityName)
	}
	return int32(id), nil
}

func (c *configsCmd) badType() error {
	return fmt.Errorf("--entity-type %q: want topics, brokers, users or clients", c.entityType)
}

func (c *configsCmd) describe(ctx context.Context, w io.Writer) error {
	return c.with(ctx, func(s session) error {
		switch c.entityType {
		case "users":
			return c.describeUsers(s, w)
		case "clients":
			quotas, err := c.describeQuotas(s)
			if err != nil {
				return err
			}
			return c.emit(w, quotas, func() { printQuotas(w, quotas) })
		}
		var rc kadm.ResourceConfigs
		var err error
		switch c.entityType {
		case "topics":
			if c.entityName == "" {
				return fmt.Errorf("--entity-name: name the topic")
			}
			rc, err = s.adm.DescribeTopicConfigs(s.ctx, c.entityName)
		case "brokers":
			id, perr := c.broker()
			if perr != nil {
				return perr
			}
			rc, err = s.adm.DescribeBrokerConfigs(s.ctx, id)
		default:
			return c.badType()
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
				return fmt.Errorf("%s %s: %v%s", c.entityType, r.Name, r.Err, detail(r.ErrMessage))
			}
			for _, e := range r.Configs {
				dynamic := strings.HasPrefix(e.Source.String(), "DYNAMIC")
				if !c.all && !dynamic {
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
		return c.emit(w, out, func() {
			what := "Dynamic configs"
			if c.all {
				what = "All configs"
			}
			fmt.Fprintf(w, "%s for %s %s are:\n", what, strings.TrimSuffix(c.entityType, "s"), c.entityName)
			for _, e := range out {
				fmt.Fprintf(w, "  %s=%s sensitive=%v source=%s\n", e.Key, e.Value, e.Sensitive, e.Source)
			}
		})
	})
}

func (c *configsCmd) alter(ctx context.Context, w io.Writer) error {
	if c.entityType == "users" || c.entityType == "clients" {
		return c.with(ctx, func(s session) error { return c.alterPrincipal(s, w) })
	}
	sets, err := parseKVs(c.add)
	if err != nil {
		return err
	}
	var changes []kadm.AlterConfig
	for _, k := range slices.Sorted(maps.Keys(sets)) {
		v := sets[k]
		changes = append(changes, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v})
	}
	for _, d := range c.del {
		for _, k := range strings.Split(d, ",") {
			if k = strings.TrimSpace(k); k != "" {
				changes = append(changes, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
			}
		}
	}
	if len(changes) == 0 {
		return fmt.Errorf("nothing to alter: give --add-config KEY=VALUE or --delete-config KEY")
	}
	return c.with(ctx, func(s session) error {
		var resp kadm.AlterConfigsResponses
		switch c.entityType {
		case "topics":
			resp, err = s.adm.AlterTopicConfigs(s.ctx, changes, c.entityName)
		case "brokers":
			id, perr := c.broker()
			if perr != nil {
				return perr
			}
			resp, err = s.adm.AlterBrokerConfigs(s.ctx, changes, id)
		default:
			return c.badType()
		}
		if err != nil {
			return c.unreachable(err)
		}
		for _, r := range resp {
			if r.Err != nil {
				return fmt.Errorf("alter %s %s: %v%s", c.entityType, r.Name, r.Err, detail(r.ErrMessage))
			}
		}
		if c.format == "text" {
			fmt.Fprintf(w, "Completed updating config for %s %s.\n", strings.TrimSuffix(c.entityType, "s"), c.entityName)
		}
		return nil
	})
}
