package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// groupsCmd is `sluice groups`, after kafka-consumer-groups.sh. Its
// subcommands share the common flags; each has its own.
type groupsCmd struct {
	common
	args      []string // describe's arguments
	groups    []string // --group (repeatable)
	allGroups bool     // --all-groups
	states    []string // list --state
	types     []string // list --type
	view      describeView
	reset     resetSpec
	topics    []string // --topic T[:P,...] (repeatable)
	allTopics bool     // reset-offsets --all-topics
}

// describeView is what `groups describe` prints: Kafka's views are
// exclusive, --offsets the default.
type describeView struct {
	members, verbose, offsets, state bool
}

// NewGroupsCommand returns `sluice groups`.
func NewGroupsCommand() *cobra.Command {
	var c groupsCmd
	root := &cobra.Command{Use: "groups", Short: "List, describe, reset and delete consumer groups (like kafka-consumer-groups.sh)"}
	c.register(root)
	bind := func(run func(*groupsCmd, context.Context, streams) error) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, args []string) error {
			c.args = args
			return run(&c, cmd.Context(), streamsOf(cmd))
		}
	}

	list := &cobra.Command{
		Use:   "list",
		Short: "List consumer groups",
		Example: `  sluice groups list
  sluice groups list --state                  # with each group's state
  sluice groups list --state Stable,Empty --type classic`,
		Args: cobra.ArbitraryArgs, // the value of a bare --state or --type
		RunE: bind((*groupsCmd).list),
	}
	list.Flags().StringSliceVar(&c.states, "state", nil, "only groups in these states (Stable, PreparingRebalance, CompletingRebalance, Empty, Dead, Assigning, Reconciling); alone: show the STATE column")
	list.Flags().Lookup("state").NoOptDefVal = anyState
	list.Flags().StringSliceVar(&c.types, "type", nil, "only groups of these types (classic, consumer); alone: show the TYPE column")
	list.Flags().Lookup("type").NoOptDefVal = anyState

	describe := &cobra.Command{
		Use:   "describe [GROUP...]",
		Short: "Describe consumer groups: committed offsets and lag (default), members, or state",
		Example: `  sluice groups describe orders-app                 # GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG ...
  sluice groups describe orders-app --members --verbose
  sluice groups describe --all-groups --state`,
		RunE: bind((*groupsCmd).describe),
	}
	df := describe.Flags()
	df.StringArrayVar(&c.groups, "group", nil, "group to describe (repeatable; or give them as arguments)")
	df.BoolVar(&c.allGroups, "all-groups", false, "describe every group")
	df.BoolVar(&c.view.members, "members", false, "the members: GROUP CONSUMER-ID HOST CLIENT-ID #PARTITIONS")
	df.BoolVar(&c.view.verbose, "verbose", false, "with --members: each member's assignment too")
	df.BoolVar(&c.view.offsets, "offsets", false, "committed offsets and lag per partition (the default view)")
	df.BoolVar(&c.view.state, "state", false, "the group's state: GROUP COORDINATOR (ID) ASSIGNMENT-STRATEGY STATE #MEMBERS")

	del := &cobra.Command{
		Use:     "delete",
		Short:   "Delete consumer groups (only groups without members) and their committed offsets",
		Example: "  sluice groups delete --group orders-app --group billing",
		Args:    cobra.NoArgs,
		RunE:    bind((*groupsCmd).delete),
	}
	del.Flags().StringArrayVar(&c.groups, "group", nil, "group to delete (repeatable)")
	del.Flags().BoolVar(&c.allGroups, "all-groups", false, "delete every group")

	delOffsets := &cobra.Command{
		Use:     "delete-offsets",
		Short:   "Delete a group's committed offsets of topics it no longer consumes",
		Example: "  sluice groups delete-offsets --group orders-app --topic old-orders\n  sluice groups delete-offsets --group orders-app --topic orders:0,1",
		Args:    cobra.NoArgs,
		RunE:    bind((*groupsCmd).deleteOffsets),
	}
	delOffsets.Flags().StringArrayVar(&c.groups, "group", nil, "the group")
	delOffsets.Flags().StringArrayVar(&c.topics, "topic", nil, "TOPIC or TOPIC:P,P,... (repeatable)")

	root.AddCommand(list, describe, del, delOffsets, c.resetCommand(bind))
	return root
}

// anyState is the value of a bare --state or --type: no filter, but show
// the column.
const anyState = "*"

// groupStates are the states Kafka names (classic, then KIP-848's).
var groupStates = []string{"PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty", "Assigning", "Reconciling"}

// canonical maps each of vals to its spelling in valid, ignoring case, as
// kafka-consumer-groups.sh parses --state and --type; anyState passes.
func canonical(flag string, vals, valid []string) ([]string, bool, error) {
	var out []string
	shown := false
	for _, v := range vals {
		v = strings.TrimSpace(v)
		if v == anyState {
			shown = true
			continue
		}
		i := slices.IndexFunc(valid, func(s string) bool { return strings.EqualFold(s, v) })
		if i < 0 {
			return nil, false, fmt.Errorf("--%s %q: want one of %s", flag, v, strings.Join(valid, ", "))
		}
		out, shown = append(out, valid[i]), true
	}
	return out, shown, nil
}

// ListedGroupRow is one group of `groups list --format json`.
type ListedGroupRow struct {
	Group       string `json:"group"`
	Type        string `json:"type,omitempty"`
	State       string `json:"state,omitempty"`
	Coordinator int32  `json:"coordinator"`
}

// optionalValues gives a bare --state or --type (pflag's NoOptDefVal
// takes no separate word) the words after it, so that Kafka's
// `--state Stable,Empty` works as well as `--state=Stable,Empty`.
func (c *groupsCmd) optionalValues() error {
	if len(c.args) == 0 {
		return nil
	}
	bareState := slices.Equal(c.states, []string{anyState})
	bareType := slices.Equal(c.types, []string{anyState})
	var vals []string
	for _, a := range c.args {
		vals = append(vals, strings.Split(a, ",")...)
	}
	switch {
	case bareState && !bareType:
		c.states = vals
	case bareType && !bareState:
		c.types = vals
	default:
		return fmt.Errorf("unexpected arguments %q (filter with --state=S,... or --type=T,...)", c.args)
	}
	return nil
}

func (c *groupsCmd) list(ctx context.Context, std streams) error {
	if err := c.optionalValues(); err != nil {
		return err
	}
	states, showState, err := canonical("state", c.states, groupStates)
	if err != nil {
		return err
	}
	types, showType, err := canonical("type", c.types, []string{"classic", "consumer"})
	if err != nil {
		return err
	}
	return c.with(ctx, func(s session) error {
		var listed kadm.ListedGroups
		if len(types) > 0 {
			listed, err = s.adm.ListGroupsByType(s.ctx, types, states...)
		} else {
			listed, err = s.adm.ListGroups(s.ctx, states...)
		}
		if err != nil {
			return c.groupErr(err)
		}
		var rows []ListedGroupRow
		for _, g := range listed.Sorted() {
			typ := g.GroupType
			if typ == "" && g.ProtocolType != "" {
				typ = "classic" // before ListGroups v5 every group is classic
			}
			rows = append(rows, ListedGroupRow{Group: g.Group, Type: typ, State: g.State, Coordinator: g.Coordinator})
		}
		if rows == nil {
			rows = []ListedGroupRow{}
		}
		return c.emit(std.out, rows, func() {
			if !showState && !showType {
				for _, r := range rows {
					fmt.Fprintln(std.out, r.Group)
				}
				return
			}
			tw := tabwriter.NewWriter(std.out, 0, 8, 1, ' ', 0)
			head := []string{"GROUP"}
			if showType {
				head = append(head, "TYPE")
			}
			if showState {
				head = append(head, "STATE")
			}
			fmt.Fprintln(tw, strings.Join(head, "\t"))
			for _, r := range rows {
				line := []string{r.Group}
				if showType {
					line = append(line, r.Type)
				}
				if showState {
					line = append(line, r.State)
				}
				fmt.Fprintln(tw, strings.Join(line, "\t"))
			}
			tw.Flush()
		})
	})
}

// groupErr says what to do about an error of the group APIs.
func (c *groupsCmd) groupErr(err error) error {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		switch {
		case errors.Is(err, kerr.GroupAuthorizationFailed), errors.Is(err, kerr.CoordinatorNotAvailable):
			return fmt.Errorf("%w (does the cluster serve consumer groups? it needs a node version with the group coordinator)", err)
		case errors.Is(err, kerr.UnsupportedVersion):
			return fmt.Errorf("%w (the cluster does not serve this group API)", err)
		}
		return err
	}
	return c.unreachable(err)
}

// names are the groups a command names: --group, the arguments, or every
// group (--all-groups).
func (c *groupsCmd) names(s session) ([]string, error) {
	names := append(slices.Clone(c.groups), c.args...)
	switch {
	case c.allGroups && len(names) > 0:
		return nil, errors.New("--all-groups and named groups: give one of them")
	case c.allGroups:
		listed, err := s.adm.ListGroups(s.ctx)
		if err != nil {
			return nil, c.groupErr(err)
		}
		return listed.Groups(), nil
	case len(names) == 0:
		return nil, errors.New("which groups? name them (--group G) or give --all-groups (list them with `sluice groups list`)")
	}
	for _, g := range names {
		if g == "" {
			return nil, errors.New("a group id cannot be empty")
		}
	}
	return names, nil
}

func (c *groupsCmd) delete(ctx context.Context, std streams) error {
	return c.with(ctx, func(s session) error {
		names, err := c.names(s)
		if err != nil {
			return err
		}
		if len(names) == 0 {
			fmt.Fprintln(std.err, "No consumer groups to delete.")
			return nil
		}
		resp, err := s.adm.DeleteGroups(s.ctx, names...)
		if err != nil {
			return c.groupErr(err)
		}
		var ok, failed []string
		var rows []DeletedGroupRow
		for _, g := range names {
			r, found := resp[g]
			row := DeletedGroupRow{Group: g}
			switch {
			case !found:
				row.Error = "no answer"
			case r.Err != nil:
				row.Error = r.Err.Error() + detail(r.ErrMessage)
				if errors.Is(r.Err, kerr.NonEmptyGroup) {
					row.Error += " (the group has members: stop its consumers first)"
				}
			default:
				ok = append(ok, "'"+g+"'")
			}
			if row.Error != "" {
				failed = append(failed, fmt.Sprintf("* Group '%s' could not be deleted due to: %s", g, row.Error))
			}
			rows = append(rows, row)
		}
		err = c.emit(std.out, rows, func() {
			if len(ok) > 0 {
				fmt.Fprintf(std.out, "Deletion of requested consumer groups (%s) was successful.\n", strings.Join(ok, ", "))
			}
		})
		if len(failed) > 0 {
			return fmt.Errorf("deletion of some consumer groups failed:\n%s", strings.Join(failed, "\n"))
		}
		return err
	})
}

// DeletedGroupRow is one group of `groups delete --format json`.
type DeletedGroupRow struct {
	Group string `json:"group"`
	Error string `json:"error,omitempty"`
}

// DeletedOffsetRow is one partition of `groups delete-offsets`.
type DeletedOffsetRow struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Error     string `json:"error,omitempty"`
}

func (c *groupsCmd) deleteOffsets(ctx context.Context, std streams) error {
	if len(c.groups) != 1 || c.groups[0] == "" {
		return errors.New("delete-offsets needs one --group")
	}
	group := c.groups[0]
	if len(c.topics) == 0 {
		return errors.New("delete-offsets needs --topic TOPIC[:P,...]")
	}
	scopes, err := parseTopicScopes(c.topics)
	if err != nil {
		return err
	}
	return c.with(ctx, func(s session) error {
		set := kadm.TopicsSet{}
		for _, sc := range scopes {
			ps := sc.partitions
			if ps == nil {
				if ps, err = c.topicPartitions(s.ctx, s.cl, sc.topic); err != nil {
					return err
				}
			}
			set.Add(sc.topic, ps...)
		}
		resp, err := s.adm.DeleteOffsets(s.ctx, group, set)
		if err != nil {
			if errors.Is(err, kerr.GroupIDNotFound) {
				return fmt.Errorf("consumer group '%s' does not exist", group)
			}
			return c.groupErr(err)
		}
		var rows []DeletedOffsetRow
		failed := 0
		for _, tp := range set.Sorted() {
			for _, p := range tp.Partitions {
				row := DeletedOffsetRow{Topic: tp.Topic, Partition: p}
				if e, ok := resp.Lookup(tp.Topic, p); !ok {
					row.Error = "no answer"
				} else if e != nil {
					row.Error = e.Error()
				}
				if row.Error != "" {
					failed++
				}
				rows = append(rows, row)
			}
		}
		err = c.emit(std.out, rows, func() {
			if failed == 0 {
				fmt.Fprintf(std.out, "Request succeed for deleting offsets from group %s.\n\n", group)
			} else {
				fmt.Fprintf(std.out, "Request failed for deleting offsets from group %s.\n\n", group)
			}
			tw := tabwriter.NewWriter(std.out, 0, 8, 1, ' ', 0)
			fmt.Fprintln(tw, "TOPIC\tPARTITION\tSTATUS")
			for _, r := range rows {
				status := "Successful"
				if r.Error != "" {
					status = "Error: " + r.Error
				}
				fmt.Fprintf(tw, "%s\t%d\t%s\n", r.Topic, r.Partition, status)
			}
			tw.Flush()
		})
		if failed > 0 {
			return fmt.Errorf("%d of %d partitions kept their offsets (a group still subscribed to a topic keeps them: stop its consumers first)", failed, len(rows))
		}
		return err
	})
}

// describeTable writes rows under head, columns aligned like Kafka's.
func describeTable(w io.Writer, head string, rows [][]string) {
	tw := tabwriter.NewWriter(w, 0, 8, 1, ' ', 0)
	fmt.Fprintln(tw, head)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
}
