package admin

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

// resetSpec is reset-offsets' flags: one --to-*/--shift-by/--by-duration
// and one of --dry-run/--execute.
type resetSpec struct {
	earliest, latest, current bool
	toOffset, shiftBy         int64
	offsetSet, shiftSet       bool // --to-offset, --shift-by given
	datetime, duration        string
	dryRun, execute           bool
}

// resetCommand is `groups reset-offsets`.
func (c *groupsCmd) resetCommand(bind func(func(*groupsCmd, context.Context, streams) error) func(*cobra.Command, []string) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "reset-offsets",
		Short: "Reset a group's committed offsets (the group must have no members)",
		Example: `  sluice groups reset-offsets --group orders-app --topic orders --to-earliest --dry-run
  sluice groups reset-offsets --group orders-app --topic orders:0,1 --shift-by -100 --execute
  sluice groups reset-offsets --group orders-app --all-topics --to-datetime 2026-12-01T09:00:00.000 --execute
  sluice groups reset-offsets --group orders-app --all-topics --by-duration PT1H --execute`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c.reset.shiftSet = cmd.Flags().Changed("shift-by")
			c.reset.offsetSet = cmd.Flags().Changed("to-offset")
			return bind((*groupsCmd).resetOffsets)(cmd, args)
		},
	}
	f := cmd.Flags()
	r := &c.reset
	f.StringArrayVar(&c.groups, "group", nil, "the group")
	f.StringArrayVar(&c.topics, "topic", nil, "TOPIC or TOPIC:P,P,... (repeatable)")
	f.BoolVar(&c.allTopics, "all-topics", false, "every topic the group has committed offsets for")
	f.BoolVar(&r.earliest, "to-earliest", false, "to each partition's log start offset")
	f.BoolVar(&r.latest, "to-latest", false, "to each partition's log end offset")
	f.BoolVar(&r.current, "to-current", false, "to the committed offset (the log end where none)")
	f.Int64Var(&r.toOffset, "to-offset", 0, "to this offset (kept within each partition's start and end)")
	f.Int64Var(&r.shiftBy, "shift-by", 0, "move the committed offset by N (negative: back)")
	f.StringVar(&r.datetime, "to-datetime", "", "to the first offset at or after this time: YYYY-MM-DDTHH:mm:SS[.sss][Z|±hh:mm] (local time without a zone)")
	f.StringVar(&r.duration, "by-duration", "", "to the first offset at or after now minus this ISO-8601 duration (PnDTnHnMnS, e.g. PT30M) or Go duration (30m)")
	f.BoolVar(&r.dryRun, "dry-run", false, "print the new offsets, change nothing (the default)")
	f.BoolVar(&r.execute, "execute", false, "commit the new offsets")
	return cmd
}

// resetTo is how to compute a partition's new offset.
type resetTo struct {
	kind   string // earliest, latest, current, offset, shift, time
	offset int64  // offset: the target; shift: the delta
	millis int64  // time: ms since the epoch
}

// plan checks that exactly one scenario is given and parses it; now is
// the clock for --by-duration.
func (r resetSpec) plan(now time.Time) (resetTo, error) {
	var tos []resetTo
	if r.earliest {
		tos = append(tos, resetTo{kind: "earliest"})
	}
	if r.latest {
		tos = append(tos, resetTo{kind: "latest"})
	}
	if r.current {
		tos = append(tos, resetTo{kind: "current"})
	}
	if r.offsetSet {
		if r.toOffset < 0 {
			return resetTo{}, fmt.Errorf("--to-offset %d: an offset is not negative", r.toOffset)
		}
		tos = append(tos, resetTo{kind: "offset", offset: r.toOffset})
	}
	if r.shiftSet {
		tos = append(tos, resetTo{kind: "shift", offset: r.shiftBy})
	}
	if r.datetime != "" {
		t, err := parseDatetime(r.datetime, time.Local)
		if err != nil {
			return resetTo{}, err
		}
		tos = append(tos, resetTo{kind: "time", millis: t.UnixMilli()})
	}
	if r.duration != "" {
		d, err := parseDuration(r.duration)
		if err != nil {
			return resetTo{}, err
		}
		tos = append(tos, resetTo{kind: "time", millis: now.Add(-d).UnixMilli()})
	}
	if len(tos) != 1 {
		return resetTo{}, errors.New("give one of --to-earliest, --to-latest, --to-current, --to-offset, --shift-by, --to-datetime, --by-duration")
	}
	return tos[0], nil
}

// datetimeRe is kafka-consumer-groups.sh's --to-datetime: seconds and
// milliseconds optional, then an optional zone (Z, ±hh, ±hhmm, ±hh:mm).
var datetimeRe = regexp.MustCompile(`^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2})(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}(:?\d{2})?)?$`)

// parseDatetime parses a --to-datetime value; one without a zone is in loc.
func parseDatetime(s string, loc *time.Location) (time.Time, error) {
	m := datetimeRe.FindStringSubmatch(s)
	if m == nil {
		return time.Time{}, fmt.Errorf("--to-datetime %q: want YYYY-MM-DDTHH:mm:SS.sss, optionally with a zone (Z or +hh:mm), e.g. 2026-12-01T09:00:00.000Z", s)
	}
	base := m[1] + m[2]
	if m[2] == "" {
		base += ":00"
	}
	layout := "2006-01-02T15:04:05"
	if m[3] != "" {
		layout += ".999999999"
	}
	zone := m[4]
	switch {
	case zone == "":
		t, err := time.ParseInLocation(layout, base, loc)
		if err != nil {
			return time.Time{}, fmt.Errorf("--to-datetime %q: %w", s, err)
		}
		return t, nil
	case zone == "Z":
		zone = "+00:00"
	case len(zone) == 3:
		zone += ":00"
	case len(zone) == 5:
		zone = zone[:3] + ":" + zone[3:]
	}
	t, err := time.Parse(layout+"-07:00", base+zone)
	if err != nil {
		return time.Time{}, fmt.Errorf("--to-datetime %q: %w", s, err)
	}
	return t, nil
}

// isoDurationRe is java.time.Duration's text: PnDTnHnMn.nS, each part
// optional, a sign on the whole.
var isoDurationRe = regexp.MustCompile(`^([-+]?)P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)(?:\.(\d{1,9}))?S)?)?$`)

// parseDuration parses --by-duration: ISO-8601 as Kafka (PT30M, P1DT2H),
// or a Go duration (30m). It must not be negative.
func parseDuration(s string) (time.Duration, error) {
	bad := fmt.Errorf("--by-duration %q: want an ISO-8601 duration like PT30M or P1DT2H (or 30m)", s)
	u := strings.ToUpper(s)
	if !strings.Contains(u, "P") {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return 0, bad
		}
		return d, nil
	}
	m := isoDurationRe.FindStringSubmatch(u)
	if m == nil || u == "P" || strings.HasSuffix(u, "T") {
		return 0, bad
	}
	var total time.Duration
	for i, unit := range []time.Duration{24 * time.Hour, time.Hour, time.Minute, time.Second} {
		if m[i+2] == "" {
			continue
		}
		n, err := strconv.ParseInt(m[i+2], 10, 64)
		if err != nil || n > int64(1<<63-1)/int64(unit) || total > time.Duration(1<<63-1)-time.Duration(n)*unit {
			return 0, bad
		}
		total += time.Duration(n) * unit
	}
	if m[6] != "" {
		frac := (m[6] + "000000000")[:9]
		ns, _ := strconv.ParseInt(frac, 10, 64)
		total += time.Duration(ns)
	}
	if m[1] == "-" && total > 0 {
		return 0, fmt.Errorf("--by-duration %q: the duration must not be negative", s)
	}
	return total, nil
}

// topicScope is one --topic: a topic and its partitions (nil: all).
type topicScope struct {
	topic      string
	partitions []int32
}

// parseTopicScopes parses --topic values: TOPIC or TOPIC:P,P,... The
// topic may itself contain no ':' (Kafka's legal characters are
// [a-zA-Z0-9._-]).
func parseTopicScopes(vals []string) ([]topicScope, error) {
	var out []topicScope
	for _, v := range vals {
		t, ps, hasPs := strings.Cut(v, ":")
		if t == "" {
			return nil, fmt.Errorf("--topic %q: want TOPIC or TOPIC:P,P,...", v)
		}
		sc := topicScope{topic: t}
		if hasPs {
			for _, p := range strings.Split(ps, ",") {
				n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
				if err != nil || n < 0 {
					return nil, fmt.Errorf("--topic %q: partition %q is not a number (want TOPIC:0,1,2)", v, p)
				}
				if !slices.Contains(sc.partitions, int32(n)) {
					sc.partitions = append(sc.partitions, int32(n))
				}
			}
		}
		out = append(out, sc)
	}
	return out, nil
}

// ResetOffsetRow is one partition of `groups reset-offsets`.
type ResetOffsetRow struct {
	Group     string `json:"group"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	NewOffset int64  `json:"new_offset"`
}

func (c *groupsCmd) resetOffsets(ctx context.Context, std streams) error {
	if len(c.groups) != 1 || c.groups[0] == "" {
		return errors.New("reset-offsets needs one --group")
	}
	group, r := c.groups[0], c.reset
	if (len(c.topics) > 0) == c.allTopics {
		return errors.New("give --topic TOPIC[:P,...] or --all-topics")
	}
	if r.dryRun && r.execute {
		return errors.New("--dry-run and --execute: give one of them")
	}
	to, err := r.plan(time.Now())
	if err != nil {
		return err
	}
	scopes, err := parseTopicScopes(c.topics)
	if err != nil {
		return err
	}
	if !r.dryRun && !r.execute {
		fmt.Fprintln(std.err, "WARN: No action will be performed as the --execute option is missing. Add --dry-run to say so explicitly.")
	}
	return c.with(ctx, func(s session) error {
		described, err := c.describeGroups(s, []string{group})
		if err != nil {
			return err
		}
		if e := described[0].Error; e != "" && e != errNoGroup.Error() {
			return fmt.Errorf("consumer group '%s': %s", group, e)
		}
		if st := described[0].State; len(described[0].Members) > 0 || st != "" && st != "Empty" && st != "Dead" {
			return fmt.Errorf("assignments can only be reset if the group '%s' is inactive, but the current state is %s (stop its consumers first)", group, st)
		}
		committed, err := s.adm.FetchOffsets(s.ctx, group)
		if err != nil {
			return c.groupErr(err)
		}
		set := kadm.TopicsSet{}
		if c.allTopics {
			committed.Each(func(o kadm.OffsetResponse) {
				if o.Err == nil && o.At >= 0 {
					set.Add(o.Topic, o.Partition)
				}
			})
		}
		for _, sc := range scopes {
			ps, err := c.topicPartitions(s.ctx, s.cl, sc.topic)
			if err != nil {
				return err
			}
			for _, p := range sc.partitions {
				if err := checkPartition(sc.topic, p, ps); err != nil {
					return err
				}
			}
			if sc.partitions != nil {
				ps = sc.partitions
			}
			set.Add(sc.topic, ps...)
		}
		rows, err := c.newOffsets(s, group, to, set, committed)
		if err != nil {
			return err
		}
		if r.execute && len(rows) > 0 {
			os := kadm.Offsets{}
			for _, row := range rows {
				os.Add(kadm.Offset{Topic: row.Topic, Partition: row.Partition, At: row.NewOffset, LeaderEpoch: -1})
			}
			resp, err := s.adm.CommitOffsets(s.ctx, group, os)
			if err != nil {
				return c.groupErr(err)
			}
			if err := resp.Error(); err != nil {
				return fmt.Errorf("committing the new offsets: %w", err)
			}
		}
		if rows == nil {
			rows = []ResetOffsetRow{}
		}
		return c.emit(std.out, rows, func() {
			var lines [][]string
			for _, row := range rows {
				lines = append(lines, []string{row.Group, row.Topic, strconv.Itoa(int(row.Partition)), strconv.FormatInt(row.NewOffset, 10)})
			}
			describeTable(std.out, "GROUP\tTOPIC\tPARTITION\tNEW-OFFSET", lines)
		})
	})
}

// newOffsets computes the new offset of every partition of set, kept
// within each partition's log start and end, as Kafka does.
func (c *groupsCmd) newOffsets(s session, group string, to resetTo, set kadm.TopicsSet, committed kadm.OffsetResponses) ([]ResetOffsetRow, error) {
	topics := set.Topics()
	if len(topics) == 0 {
		return nil, nil
	}
	starts, err := s.adm.ListStartOffsets(s.ctx, topics...)
	if err != nil {
		return nil, c.unreachable(err)
	}
	ends, err := s.adm.ListEndOffsets(s.ctx, topics...)
	if err != nil {
		return nil, c.unreachable(err)
	}
	var after kadm.ListedOffsets
	if to.kind == "time" {
		if after, err = s.adm.ListOffsetsAfterMilli(s.ctx, to.millis, topics...); err != nil {
			return nil, c.unreachable(err)
		}
	}
	var rows []ResetOffsetRow
	for _, tp := range set.Sorted() {
		for _, p := range tp.Partitions {
			lo, ok1 := starts.Lookup(tp.Topic, p)
			hi, ok2 := ends.Lookup(tp.Topic, p)
			if !ok1 || !ok2 || lo.Err != nil || hi.Err != nil {
				return nil, fmt.Errorf("%s/%d: could not list its start and end offsets (is its leader up? see `sluice topics describe %s`)", tp.Topic, p, tp.Topic)
			}
			cur, hasCur := committed.Lookup(tp.Topic, p)
			hasCur = hasCur && cur.Err == nil && cur.At >= 0
			var at int64
			switch to.kind {
			case "earliest":
				at = lo.Offset
			case "latest":
				at = hi.Offset
			case "current":
				at = hi.Offset
				if hasCur {
					at = cur.At
				}
			case "offset":
				at = to.offset
			case "shift":
				if !hasCur {
					return nil, fmt.Errorf("cannot shift the offset of %s/%d: group %s has no committed offset there", tp.Topic, p, group)
				}
				at = cur.At + to.offset
			case "time":
				at = hi.Offset
				if a, ok := after.Lookup(tp.Topic, p); ok && a.Err == nil && a.Offset >= 0 {
					at = a.Offset
				}
			}
			at = min(max(at, lo.Offset), hi.Offset)
			rows = append(rows, ResetOffsetRow{Group: group, Topic: tp.Topic, Partition: p, NewOffset: at})
		}
	}
	return rows, nil
}
