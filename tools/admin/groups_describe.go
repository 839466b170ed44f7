package admin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// GroupDescription is one group of `groups describe --format json`: every
// view at once.
type GroupDescription struct {
	Group string `json:"group"`
	// Type is classic (JoinGroup/SyncGroup) or consumer (KIP-848).
	Type               string           `json:"type"`
	State              string           `json:"state"`
	AssignmentStrategy string           `json:"assignment_strategy"`
	Coordinator        GroupCoordinator `json:"coordinator"`
	Members            []GroupMember    `json:"members"`
	Offsets            []GroupOffsetRow `json:"offsets"`
	Error              string           `json:"error,omitempty"`
}

// GroupCoordinator is the broker that coordinates a group.
type GroupCoordinator struct {
	ID   int32  `json:"id"`
	Host string `json:"host"`
	Port int32  `json:"port"`
}

// GroupMember is one member of a GroupDescription.
type GroupMember struct {
	ConsumerID string  `json:"consumer_id"`
	InstanceID *string `json:"group_instance_id"`
	Host       string  `json:"host"`
	ClientID   string  `json:"client_id"`
	// Assignment is topic → partitions, sorted.
	Assignment map[string][]int32 `json:"assignment"`
}

func (m GroupMember) partitions() int {
	n := 0
	for _, ps := range m.Assignment {
		n += len(ps)
	}
	return n
}

// GroupOffsetRow is one partition of `groups describe --offsets`: a
// partition assigned to a member or with a committed offset. Current and
// Lag are null when the group has committed nothing there.
type GroupOffsetRow struct {
	Topic      string `json:"topic"`
	Partition  int32  `json:"partition"`
	Current    *int64 `json:"current_offset"`
	LogEnd     int64  `json:"log_end_offset"`
	Lag        *int64 `json:"lag"`
	ConsumerID string `json:"consumer_id"`
	Host       string `json:"host"`
	ClientID   string `json:"client_id"`
}

// errNoGroup marks a group that does not exist.
var errNoGroup = errors.New("does not exist")

// describeGroups describes the groups: classic groups through
// DescribeGroups, KIP-848 groups (which DescribeGroups answers
// GROUP_ID_NOT_FOUND) through ConsumerGroupDescribe, then their committed
// offsets and the log end offsets of every partition involved.
func (c *groupsCmd) describeGroups(s session, names []string) ([]GroupDescription, error) {
	classic, err := s.adm.DescribeGroups(s.ctx, names...)
	if err != nil && len(classic) == 0 {
		return nil, c.groupErr(err)
	}
	var out []GroupDescription
	var next []string
	byName := map[string]*GroupDescription{}
	for _, g := range names {
		d, ok := classic[g]
		switch {
		case !ok:
			out = append(out, GroupDescription{Group: g, Error: "no answer from its coordinator"})
		case errors.Is(d.Err, kerr.GroupIDNotFound):
			next = append(next, g)
			out = append(out, GroupDescription{Group: g, State: "Dead", Error: errNoGroup.Error()})
		case d.Err != nil:
			out = append(out, GroupDescription{Group: g, Error: d.Err.Error() + detail(d.ErrMessage)})
		default:
			out = append(out, fromClassic(d))
		}
	}
	for i := range out {
		byName[out[i].Group] = &out[i]
	}
	if len(next) > 0 {
		// A broker without KIP-848 answers UNSUPPORTED_VERSION: those
		// groups then do not exist.
		if cg, err := s.adm.DescribeConsumerGroups(s.ctx, next...); err == nil || len(cg) > 0 {
			for _, g := range next {
				if d, ok := cg[g]; ok && d.Err == nil && d.State != "Dead" {
					*byName[g] = fromConsumer(d)
				}
			}
		}
	}
	for i := range out {
		if err := c.addOffsets(s, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func coordinator(b kadm.BrokerDetail) GroupCoordinator {
	return GroupCoordinator{ID: b.NodeID, Host: b.Host, Port: b.Port}
}

func fromClassic(d kadm.DescribedGroup) GroupDescription {
	g := GroupDescription{Group: d.Group, Type: "classic", State: d.State, AssignmentStrategy: d.Protocol,
		Coordinator: coordinator(d.Coordinator), Members: []GroupMember{}}
	if d.State == "Dead" && len(d.Members) == 0 {
		g.Error = errNoGroup.Error()
	}
	for _, m := range d.Members {
		gm := GroupMember{ConsumerID: m.MemberID, InstanceID: m.InstanceID, Host: m.ClientHost, ClientID: m.ClientID, Assignment: map[string][]int32{}}
		if a, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range a.Topics {
				gm.Assignment[t.Topic] = append(gm.Assignment[t.Topic], t.Partitions...)
				slices.Sort(gm.Assignment[t.Topic])
			}
		}
		g.Members = append(g.Members, gm)
	}
	return g
}

func fromConsumer(d kadm.DescribedConsumerGroup) GroupDescription {
	g := GroupDescription{Group: d.Group, Type: "consumer", State: d.State, AssignmentStrategy: d.AssignorName,
		Coordinator: coordinator(d.Coordinator), Members: []GroupMember{}}
	for _, m := range d.Members {
		gm := GroupMember{ConsumerID: m.MemberID, InstanceID: m.InstanceID, Host: m.ClientHost, ClientID: m.ClientID, Assignment: map[string][]int32{}}
		for _, tp := range m.Assignment.Sorted() {
			gm.Assignment[tp.Topic] = tp.Partitions
		}
		g.Members = append(g.Members, gm)
	}
	return g
}

// addOffsets fills g.Offsets: a row for each partition assigned to a
// member or with a committed offset, with the log end offset.
func (c *groupsCmd) addOffsets(s session, g *GroupDescription) error {
	g.Offsets = []GroupOffsetRow{}
	if g.Error != "" {
		return nil
	}
	committed, err := s.adm.FetchOffsets(s.ctx, g.Group)
	if err != nil {
		g.Error = "fetching its offsets: " + err.Error()
		return nil
	}
	type tp struct {
		t string
		p int32
	}
	owner := map[tp]GroupMember{}
	set := kadm.TopicsSet{}
	for _, m := range g.Members {
		for t, ps := range m.Assignment {
			set.Add(t, ps...)
			for _, p := range ps {
				owner[tp{t, p}] = m
			}
		}
	}
	committed.Each(func(o kadm.OffsetResponse) {
		if o.Err == nil {
			set.Add(o.Topic, o.Partition)
		}
	})
	var ends kadm.ListedOffsets
	if topics := set.Topics(); len(topics) > 0 {
		if ends, err = s.adm.ListEndOffsets(s.ctx, topics...); err != nil && len(ends) == 0 {
			return c.unreachable(err)
		}
	}
	for _, t := range set.Sorted() {
		for _, p := range t.Partitions {
			row := GroupOffsetRow{Topic: t.Topic, Partition: p, LogEnd: -1, ConsumerID: "-", Host: "-", ClientID: "-"}
			if e, ok := ends.Lookup(t.Topic, p); ok && e.Err == nil {
				row.LogEnd = e.Offset
			}
			if o, ok := committed.Lookup(t.Topic, p); ok && o.Err == nil && o.At >= 0 {
				at := o.At
				row.Current = &at
				if row.LogEnd >= 0 {
					lag := max(row.LogEnd-at, 0)
					row.Lag = &lag
				}
			}
			if m, ok := owner[tp{t.Topic, p}]; ok {
				row.ConsumerID, row.Host, row.ClientID = m.ConsumerID, m.Host, m.ClientID
			}
			g.Offsets = append(g.Offsets, row)
		}
	}
	return nil
}

func (c *groupsCmd) describe(ctx context.Context, std streams) error {
	v := c.view
	n := 0
	for _, on := range []bool{v.members, v.offsets, v.state} {
		if on {
			n++
		}
	}
	if n > 1 {
		return errors.New("--members, --offsets and --state: give one of them")
	}
	if v.verbose && !v.members {
		return errors.New("--verbose goes with --members")
	}
	return c.with(ctx, func(s session) error {
		names, err := c.names(s)
		if err != nil {
			return err
		}
		groups, err := c.describeGroups(s, names)
		if err != nil {
			return err
		}
		var missing []string
		for _, g := range groups {
			if g.Error != "" {
				missing = append(missing, fmt.Sprintf("consumer group '%s' %s", g.Group, g.Error))
			}
		}
		if groups == nil {
			groups = []GroupDescription{}
		}
		err = c.emit(std.out, groups, func() {
			for i, g := range groups {
				if g.Error != "" {
					continue
				}
				if i > 0 {
					fmt.Fprintln(std.out)
				}
				printGroup(std, g, v)
			}
		})
		if len(missing) > 0 {
			return fmt.Errorf("%s (list the groups with `sluice groups list`)", strings.Join(missing, "; "))
		}
		return err
	})
}

// printGroup prints one group in the view asked, as kafka-consumer-groups.sh.
func printGroup(std streams, g GroupDescription, v describeView) {
	w := std.out
	switch {
	case v.state:
		coord := net.JoinHostPort(g.Coordinator.Host, strconv.Itoa(int(g.Coordinator.Port))) + " (" + strconv.Itoa(int(g.Coordinator.ID)) + ")"
		describeTable(w, "GROUP\tCOORDINATOR (ID)\tASSIGNMENT-STRATEGY\tSTATE\t#MEMBERS",
			[][]string{{g.Group, coord, dash(g.AssignmentStrategy), g.State, strconv.Itoa(len(g.Members))}})
	case v.members:
		if len(g.Members) == 0 {
			fmt.Fprintf(std.err, "Consumer group '%s' has no active members.\n", g.Group)
			return
		}
		head := "GROUP\tCONSUMER-ID\tHOST\tCLIENT-ID\t#PARTITIONS"
		if v.verbose {
			head = "GROUP\tCONSUMER-ID\tGROUP-INSTANCE-ID\tHOST\tCLIENT-ID\t#PARTITIONS\tASSIGNMENT"
		}
		var rows [][]string
		for _, m := range g.Members {
			if !v.verbose {
				rows = append(rows, []string{g.Group, m.ConsumerID, m.Host, m.ClientID, strconv.Itoa(m.partitions())})
				continue
			}
			inst := "-"
			if m.InstanceID != nil {
				inst = *m.InstanceID
			}
			rows = append(rows, []string{g.Group, m.ConsumerID, inst, m.Host, m.ClientID, strconv.Itoa(m.partitions()), assignment(m.Assignment)})
		}
		describeTable(w, head, rows)
	default:
		if len(g.Members) == 0 {
			fmt.Fprintf(std.err, "Consumer group '%s' has no active members.\n", g.Group)
		}
		var rows [][]string
		for _, r := range g.Offsets {
			rows = append(rows, []string{g.Group, r.Topic, strconv.Itoa(int(r.Partition)), optInt(r.Current),
				optInt(&r.LogEnd), optInt(r.Lag), r.ConsumerID, r.Host, r.ClientID})
		}
		describeTable(w, "GROUP\tTOPIC\tPARTITION\tCURRENT-OFFSET\tLOG-END-OFFSET\tLAG\tCONSUMER-ID\tHOST\tCLIENT-ID", rows)
	}
}

// assignment is Kafka's "topic(0,1,2),other(3)", or "-" for none.
func assignment(a map[string][]int32) string {
	topics := make([]string, 0, len(a))
	for t := range a {
		topics = append(topics, t)
	}
	slices.Sort(topics)
	var parts []string
	for _, t := range topics {
		if len(a[t]) > 0 {
			parts = append(parts, t+"("+joinIDs(a[t])+")")
		}
	}
	return dash(strings.Join(parts, ","))
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func optInt(v *int64) string {
	if v == nil || *v < 0 {
		return "-"
	}
	return strconv.FormatInt(*v, 10)
}
