package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/tools/internal/cli"
)

// TopicsToMove is kafka-reassign-partitions.sh's --topics-to-move-json-file:
// {"version":1,"topics":[{"topic":"foo"}]}.
type TopicsToMove struct {
	Version int `json:"version"`
	Topics  []struct {
		Topic string `json:"topic"`
	} `json:"topics"`
}

// Reassignment is kafka-reassign-partitions.sh's --reassignment-json-file,
// and what --generate prints: {"version":1,"partitions":[{"topic":"foo",
// "partition":0,"replicas":[1,2],"log_dirs":["any","any"]}]}.
type Reassignment struct {
	Version    int                   `json:"version"`
	Partitions []PartitionAssignment `json:"partitions"`
}

// PartitionAssignment is one partition of a Reassignment; log_dirs is
// read and written for Kafka's format ("any": Sluice has one log
// directory per broker).
type PartitionAssignment struct {
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
	Replicas  []int32  `json:"replicas"`
	LogDirs   []string `json:"log_dirs,omitempty"`
}

// reassignCmd is `sluice topics reassign`, after kafka-reassign-partitions.sh.
type reassignCmd struct {
	*common
	generate, execute, verify, cancel bool
	topicsFile, reassignFile          string
	brokerList                        string
	disableRackAware                  bool
	throttle                          int64
}

func newReassignCommand(com *common) *cobra.Command {
	c := reassignCmd{common: com}
	cmd := &cobra.Command{
		Use:   "reassign --generate|--execute|--verify|--cancel",
		Short: "Move partition replicas between brokers, like kafka-reassign-partitions.sh",
		Long: `Move partition replicas between brokers (KIP-455), like kafka-reassign-partitions.sh,
with its JSON files.

--generate --topics-to-move-json-file F --broker-list 1,2,3 prints the current
assignment and a proposed one spreading the topics over the brokers listed;
when the brokers have racks (broker.rack), the replicas of each partition are
spread over racks, as Kafka's rack-aware assignment (--disable-rack-aware
ignores them; every listed broker needs a rack, or none).
--execute --reassignment-json-file F starts the moves (save the current
assignment it prints to roll back). --verify --reassignment-json-file F says,
per partition, whether its move completed or is in progress (exit 2 while any
is). --cancel --reassignment-json-file F cancels the moves in progress: each
partition goes back to its replicas before the move.`,
		Example: `  sluice topics reassign --generate --topics-to-move-json-file move.json --broker-list 2,3,4
  sluice topics reassign --execute --reassignment-json-file plan.json
  sluice topics reassign --verify --reassignment-json-file plan.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return c.run(cmd.Context(), cmd.OutOrStdout()) },
	}
	f := cmd.Flags()
	f.BoolVar(&c.generate, "generate", false, "propose an assignment of --topics-to-move-json-file over --broker-list")
	f.BoolVar(&c.execute, "execute", false, "start the reassignment of --reassignment-json-file")
	f.BoolVar(&c.verify, "verify", false, "report the progress of the reassignment of --reassignment-json-file")
	f.BoolVar(&c.cancel, "cancel", false, "cancel the reassignment of --reassignment-json-file in progress")
	f.StringVar(&c.topicsFile, "topics-to-move-json-file", "", "the topics to move (--generate)")
	f.StringVar(&c.reassignFile, "reassignment-json-file", "", "the target assignment (--execute, --verify, --cancel)")
	f.StringVar(&c.brokerList, "broker-list", "", "the brokers to spread the topics over (--generate)")
	f.BoolVar(&c.disableRackAware, "disable-rack-aware", false, "ignore the brokers' racks (--generate)")
	f.Int64Var(&c.throttle, "throttle", -1, "with --execute: the replication throttle in bytes/s for the moving replicas (removed by --verify once done)")
	return cmd
}

func (c *reassignCmd) run(ctx context.Context, w io.Writer) error {
	n := 0
	for _, b := range []bool{c.generate, c.execute, c.verify, c.cancel} {
		if b {
			n++
		}
	}
	if n != 1 {
		return errors.New("give exactly one of --generate, --execute, --verify, --cancel")
	}
	if c.throttle >= 0 && !c.execute {
		return errors.New("--throttle goes with --execute")
	}
	if c.generate {
		return c.runGenerate(ctx, w)
	}
	plan, err := readReassignment(c.reassignFile)
	if err != nil {
		return err
	}
	return c.with(ctx, func(s session) error {
		switch {
		case c.execute:
			return c.runExecute(s, w, plan)
		case c.verify:
			return c.runVerify(s, w, plan)
		}
		return c.runCancel(s, w, plan)
	})
}

func readReassignment(path string) (*Reassignment, error) {
	if path == "" {
		return nil, errors.New("--reassignment-json-file is required")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Reassignment
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(r.Partitions) == 0 {
		return nil, fmt.Errorf("%s: no partitions", path)
	}
	for _, p := range r.Partitions {
		if len(p.Replicas) == 0 {
			return nil, fmt.Errorf("%s: %s-%d has no replicas", path, p.Topic, p.Partition)
		}
	}
	return &r, nil
}

// current is the assignment of the given topics now, in Kafka's format.
func current(md kadm.Metadata, topics []string) (*Reassignment, error) {
	r := &Reassignment{Version: 1}
	for _, name := range topics {
		td, ok := md.Topics[name]
		if !ok || td.Err != nil {
			return nil, fmt.Errorf("topic %q does not exist", name)
		}
		for _, pd := range td.Partitions.Sorted() {
			r.Partitions = append(r.Partitions, partAssign(name, pd.Partition, pd.Replicas))
		}
	}
	return r, nil
}

func partAssign(topic string, p int32, reps []int32) PartitionAssignment {
	dirs := make([]string, len(reps))
	for i := range dirs {
		dirs[i] = "any"
	}
	return PartitionAssignment{Topic: topic, Partition: p, Replicas: slices.Clone(reps), LogDirs: dirs}
}

func (c *reassignCmd) runGenerate(ctx context.Context, w io.Writer) error {
	if c.topicsFile == "" || c.brokerList == "" {
		return errors.New("--generate needs --topics-to-move-json-file and --broker-list")
	}
	b, err := os.ReadFile(c.topicsFile)
	if err != nil {
		return err
	}
	var tm TopicsToMove
	if err := json.Unmarshal(b, &tm); err != nil {
		return fmt.Errorf("%s: %w", c.topicsFile, err)
	}
	var brokers []int32
	for _, s := range strings.Split(c.brokerList, ",") {
		id, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
		if err != nil {
			return fmt.Errorf("--broker-list %q: %w", c.brokerList, err)
		}
		if slices.Contains(brokers, int32(id)) {
			return fmt.Errorf("--broker-list names broker %d twice", id)
		}
		brokers = append(brokers, int32(id))
	}
	var topics []string
	for _, t := range tm.Topics {
		topics = append(topics, t.Topic)
	}
	return c.with(ctx, func(s session) error {
		md, err := s.adm.Metadata(s.ctx, topics...)
		if err != nil {
			return c.unreachable(err)
		}
		cur, err := current(md, topics)
		if err != nil {
			return err
		}
		racks := map[int32]string{}
		if !c.disableRackAware {
			for _, b := range md.Brokers {
				if b.Rack != nil && *b.Rack != "" {
					racks[b.NodeID] = *b.Rack
				}
			}
		}
		prop, err := ProposeRackAware(cur, brokers, racks)
		if err != nil {
			return err
		}
		return c.emit(w, map[string]*Reassignment{"current": cur, "proposed": prop}, func() {
			fmt.Fprintf(w, "Current partition replica assignment\n%s\n\nProposed partition reassignment configuration\n%s\n", mustJSON(cur), mustJSON(prop))
		})
	})
}

// Propose spreads each topic's partitions over brokers, keeping each
// partition's replication factor, with Kafka's rack-unaware placement
// (AdminUtils.assignReplicasToBrokers) started at the first broker: the
// first replica of partition p is brokers[p mod n], the others follow at
// a shift that grows every n partitions.
func Propose(cur *Reassignment, brokers []int32) (*Reassignment, error) {
	out := &Reassignment{Version: 1}
	n := len(brokers)
	shift := map[string]int{}
	for _, p := range cur.Partitions {
		rf := len(p.Replicas)
		if rf > n {
			return nil, fmt.Errorf("%s-%d has %d replicas, more than the %d brokers listed", p.Topic, p.Partition, rf, n)
		}
		i := int(p.Partition)
		if i > 0 && i%n == 0 {
			shift[p.Topic]++
		}
		first := i % n
		reps := []int32{brokers[first]}
		for j := range rf - 1 {
			var k int
			if n > 1 {
				k = (first + 1 + (shift[p.Topic]+j)%(n-1)) % n
			}
			reps = append(reps, brokers[k])
		}
		out.Partitions = append(out.Partitions, partAssign(p.Topic, p.Partition, reps))
	}
	return out, nil
}

// ProposeRackAware is Propose over brokers with racks (racks maps a
// broker to its rack; brokers without one are absent): Kafka's rack-aware
// placement (AdminUtils.assignReplicasToBrokersRackAware, started at the
// first broker). The brokers are listed alternating racks (racks sorted,
// brokers by id within a rack); partition p's first replica is the
// broker at p mod n of that list, and each further replica is the next
// one walked at the partition's shift whose rack, and broker, the
// partition does not use yet (any rack once every rack is used). With no
// racks it is Propose; with racks on some brokers only it fails, as
// Kafka's tool does.
func ProposeRackAware(cur *Reassignment, brokers []int32, racks map[int32]string) (*Reassignment, error) {
	var with, without []int32
	for _, b := range brokers {
		if racks[b] != "" {
			with = append(with, b)
		} else {
			without = append(without, b)
		}
	}
	if len(with) == 0 {
		return Propose(cur, brokers)
	}
	if len(without) > 0 {
		return nil, fmt.Errorf("brokers %v have a rack and %v have none: give every broker a broker.rack, or add --disable-rack-aware", with, without)
	}
	arranged := RackAlternated(brokers, racks)
	n := len(arranged)
	nRacks := 0
	seen := map[string]bool{}
	for _, b := range brokers {
		if !seen[racks[b]] {
			seen[racks[b]] = true
			nRacks++
		}
	}
	out := &Reassignment{Version: 1}
	shift := map[string]int{}
	for _, p := range cur.Partitions {
		rf := len(p.Replicas)
		if rf > n {
			return nil, fmt.Errorf("%s-%d has %d replicas, more than the %d brokers listed", p.Topic, p.Partition, rf, n)
		}
		i := int(p.Partition)
		if i > 0 && i%n == 0 {
			shift[p.Topic]++
		}
		first := i % n
		reps := []int32{arranged[first]}
		usedRacks := map[string]bool{racks[arranged[first]]: true}
		for k := 0; len(reps) < rf; k++ {
			b := arranged[first]
			if n > 1 {
				b = arranged[(first+1+(shift[p.Topic]*nRacks+k)%(n-1))%n]
			}
			r := racks[b]
			if (!usedRacks[r] || len(usedRacks) == nRacks) && !slices.Contains(reps, b) {
				reps = append(reps, b)
				usedRacks[r] = true
			}
		}
		out.Partitions = append(out.Partitions, partAssign(p.Topic, p.Partition, reps))
	}
	return out, nil
}

// RackAlternated lists brokers alternating between racks: racks in name
// order, brokers by id within a rack (Kafka's getRackAlternatedBrokerList).
func RackAlternated(brokers []int32, racks map[int32]string) []int32 {
	byRack := map[string][]int32{}
	var names []string
	for _, b := range brokers {
		r := racks[b]
		if _, ok := byRack[r]; !ok {
			names = append(names, r)
		}
		byRack[r] = append(byRack[r], b)
	}
	sort.Strings(names)
	for _, r := range names {
		slices.Sort(byRack[r])
	}
	var out []int32
	for i := 0; len(out) < len(brokers); i++ {
		for _, r := range names {
			if i < len(byRack[r]) {
				out = append(out, byRack[r][i])
			}
		}
	}
	return out
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func (c *reassignCmd) topicsOf(plan *Reassignment) []string {
	var names []string
	for _, p := range plan.Partitions {
		if !slices.Contains(names, p.Topic) {
			names = append(names, p.Topic)
		}
	}
	return names
}

func (c *reassignCmd) runExecute(s session, w io.Writer, plan *Reassignment) error {
	md, err := s.adm.Metadata(s.ctx, c.topicsOf(plan)...)
	if err != nil {
		return c.unreachable(err)
	}
	cur := &Reassignment{Version: 1}
	var req kadm.AlterPartitionAssignmentsReq
	for _, p := range plan.Partitions {
		td, ok := md.Topics[p.Topic]
		pd, pok := td.Partitions[p.Partition]
		if !ok || td.Err != nil || !pok {
			return fmt.Errorf("partition %s-%d does not exist", p.Topic, p.Partition)
		}
		cur.Partitions = append(cur.Partitions, partAssign(p.Topic, p.Partition, pd.Replicas))
		req.Assign(p.Topic, p.Partition, p.Replicas)
	}
	if c.throttle >= 0 {
		// The throttle first, as Kafka's tool: the moves start under it.
		if err := c.setThrottles(s, w, cur, plan); err != nil {
			return err
		}
	}
	resp, err := s.adm.AlterPartitionAssignments(s.ctx, req)
	if err != nil {
		return c.unreachable(err)
	}
	var ok, failed []string
	for _, r := range resp.Sorted() {
		if r.Err != nil {
			failed = append(failed, fmt.Sprintf("%s-%d: %v: %s", r.Topic, r.Partition, r.Err, r.ErrMessage))
		} else {
			ok = append(ok, fmt.Sprintf("%s-%d", r.Topic, r.Partition))
		}
	}
	err = c.emit(w, map[string]any{"current": cur, "started": ok, "failed": failed}, func() {
		fmt.Fprintf(w, "Current partition replica assignment\n\n%s\n\nSave this to use as the --reassignment-json-file option during rollback\n", mustJSON(cur))
		if len(ok) > 0 {
			fmt.Fprintf(w, "Successfully started partition reassignments for %s\n", strings.Join(ok, ","))
		}
		for _, f := range failed {
			fmt.Fprintf(w, "Error reassigning partition %s\n", f)
		}
	})
	if err == nil && len(failed) > 0 {
		err = fmt.Errorf("%d partition reassignments failed", len(failed))
	}
	return err
}

// PartitionProgress is one partition of `--verify --format json`.
type PartitionProgress struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// State is "complete", "in-progress" or "differs" (no move runs but
	// the replicas are not the target's).
	State    string  `json:"state"`
	Replicas []int32 `json:"replicas"`
	Adding   []int32 `json:"adding,omitempty"`
	Removing []int32 `json:"removing,omitempty"`
}

// progress compares the plan with the cluster: one row per partition.
func progress(s session, plan *Reassignment, topics []string) ([]PartitionProgress, error) {
	md, err := s.adm.Metadata(s.ctx, topics...)
	if err != nil {
		return nil, err
	}
	ongoing, err := s.adm.ListPartitionReassignments(s.ctx, nil)
	if err != nil {
		return nil, err
	}
	var rows []PartitionProgress
	for _, p := range plan.Partitions {
		row := PartitionProgress{Topic: p.Topic, Partition: p.Partition, State: "complete"}
		if pd, ok := md.Topics[p.Topic].Partitions[p.Partition]; ok {
			row.Replicas = pd.Replicas
		}
		if o, ok := ongoing[p.Topic][p.Partition]; ok {
			row.State, row.Replicas, row.Adding, row.Removing = "in-progress", o.Replicas, o.AddingReplicas, o.RemovingReplicas
		} else if !slices.Equal(row.Replicas, p.Replicas) {
			row.State = "differs"
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func (c *reassignCmd) runVerify(s session, w io.Writer, plan *Reassignment) error {
	rows, err := progress(s, plan, c.topicsOf(plan))
	if err != nil {
		return c.unreachable(err)
	}
	moving := 0
	err = c.emit(w, rows, func() {
		fmt.Fprintln(w, "Status of partition reassignment:")
		for _, r := range rows {
			tp := fmt.Sprintf("%s-%d", r.Topic, r.Partition)
			switch r.State {
			case "complete":
				fmt.Fprintf(w, "Reassignment of partition %s is completed.\n", tp)
			case "in-progress":
				fmt.Fprintf(w, "Reassignment of partition %s is still in progress (replicas %v, adding %v, removing %v).\n", tp, r.Replicas, r.Adding, r.Removing)
			default:
				fmt.Fprintf(w, "There is no active reassignment of partition %s, but replica set is %v rather than %v.\n", tp, r.Replicas, targetOf(plan, r))
			}
		}
	})
	for _, r := range rows {
		if r.State != "complete" {
			moving++
		}
	}
	if err == nil && moving > 0 {
		return fmt.Errorf("%w: %d of %d partitions not yet moved", cli.ErrProblem, moving, len(rows))
	}
	if err == nil {
		err = c.clearThrottles(s, w, plan)
	}
	return err
}

func targetOf(plan *Reassignment, r PartitionProgress) []int32 {
	for _, p := range plan.Partitions {
		if p.Topic == r.Topic && p.Partition == r.Partition {
			return p.Replicas
		}
	}
	return nil
}

func (c *reassignCmd) runCancel(s session, w io.Writer, plan *Reassignment) error {
	var req kadm.AlterPartitionAssignmentsReq
	for _, p := range plan.Partitions {
		req.CancelAssign(p.Topic, p.Partition)
	}
	resp, err := s.adm.AlterPartitionAssignments(s.ctx, req)
	if err != nil {
		return c.unreachable(err)
	}
	var ok, failed []string
	for _, r := range resp.Sorted() {
		if r.Err != nil {
			failed = append(failed, fmt.Sprintf("%s-%d: %v", r.Topic, r.Partition, r.Err))
		} else {
			ok = append(ok, fmt.Sprintf("%s-%d", r.Topic, r.Partition))
		}
	}
	err = c.emit(w, map[string][]string{"cancelled": ok, "failed": failed}, func() {
		if len(ok) > 0 {
			fmt.Fprintf(w, "Successfully cancelled partition reassignments for: %s\n", strings.Join(ok, ","))
		}
		for _, f := range failed {
			fmt.Fprintf(w, "Error cancelling partition reassignment of %s\n", f)
		}
	})
	if err == nil && len(failed) > 0 {
		err = fmt.Errorf("%d cancellations failed", len(failed))
	}
	return err
}

// decommissionCmd is `sluice cluster decommission --broker-id N`.
type decommissionCmd struct {
	common
	broker int32
	wait   time.Duration
}

// NewDecommissionCommand returns `sluice cluster decommission`.
func NewDecommissionCommand() *cobra.Command {
	var c decommissionCmd
	cmd := &cobra.Command{
		Use:   "decommission --broker-id N",
		Short: "Move every replica off a broker (reassignments), reporting progress",
		Long: `Move every replica off a broker so that it can be stopped for good.

Each partition with a replica on the broker gets a reassignment that puts the
live broker hosting the fewest replicas (and not already a replica) in its
place; the command then reports progress until no partition has a replica on
it, or --wait passes, and ends by unregistering the broker (UnregisterBroker,
as kafka-cluster.sh unregister): it leaves the cluster's metadata. Stop it
afterwards; if it starts again it registers anew.`,
		Example: "  sluice cluster decommission --broker-id 4",
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return c.run(cmd.Context(), cmd.OutOrStdout()) },
	}
	c.register(cmd)
	cmd.Flags().Int32Var(&c.broker, "broker-id", -1, "the broker to empty")
	cmd.Flags().DurationVar(&c.wait, "wait", 10*time.Minute, "how long to wait for the moves to complete")
	return cmd
}

// DecommissionPlan is the reassignment that moves every replica off
// broker: each replica on it is replaced by the broker of live that is not
// a replica of the partition and hosts the fewest replicas (counting the
// plan so far; ties to the lower id).
func DecommissionPlan(md kadm.Metadata, broker int32, live []int32) (*Reassignment, error) {
	load := map[int32]int{}
	for _, b := range live {
		load[b] = 0
	}
	for _, td := range md.Topics {
		for _, pd := range td.Partitions {
			for _, r := range pd.Replicas {
				load[r]++
			}
		}
	}
	plan := &Reassignment{Version: 1}
	for _, td := range md.Topics.Sorted() {
		for _, pd := range td.Partitions.Sorted() {
			i := slices.Index(pd.Replicas, broker)
			if i < 0 {
				continue
			}
			best := int32(-1)
			cands := slices.Clone(live)
			sort.Slice(cands, func(a, b int) bool { return cands[a] < cands[b] })
			for _, b := range cands {
				if b == broker || slices.Contains(pd.Replicas, b) {
					continue
				}
				if best < 0 || load[b] < load[best] {
					best = b
				}
			}
			if best < 0 {
				return nil, fmt.Errorf("%s-%d: no live broker outside its replicas %v to move to", td.Topic, pd.Partition, pd.Replicas)
			}
			reps := slices.Clone(pd.Replicas)
			reps[i] = best
			load[best]++
			plan.Partitions = append(plan.Partitions, partAssign(td.Topic, pd.Partition, reps))
		}
	}
	return plan, nil
}

func (c *decommissionCmd) run(ctx context.Context, w io.Writer) error {
	if c.broker < 0 {
		return errors.New("--broker-id is required")
	}
	c.timeout = max(c.timeout, c.wait)
	return c.with(ctx, func(s session) error {
		md, err := s.adm.Metadata(s.ctx)
		if err != nil {
			return c.unreachable(err)
		}
		if !slices.Contains(md.Brokers.NodeIDs(), c.broker) {
			return fmt.Errorf("broker %d is not in the cluster's metadata (brokers %v)", c.broker, md.Brokers.NodeIDs())
		}
		plan, err := DecommissionPlan(md, c.broker, md.Brokers.NodeIDs())
		if err != nil {
			return err
		}
		if len(plan.Partitions) == 0 {
			fmt.Fprintf(w, "Broker %d hosts no replicas.\n", c.broker)
			return unregister(s, w, c.broker)
		}
		rc := reassignCmd{common: &c.common, throttle: -1}
		if err := rc.runExecute(s, w, plan); err != nil {
			return err
		}
		topics := rc.topicsOf(plan)
		last := -1
		for {
			rows, err := progress(s, plan, topics)
			if err != nil {
				return c.unreachable(err)
			}
			done := 0
			for _, r := range rows {
				if r.State == "complete" {
					done++
				}
			}
			if done != last {
				fmt.Fprintf(w, "%d of %d partitions moved off broker %d\n", done, len(rows), c.broker)
				last = done
			}
			if done == len(rows) {
				return unregister(s, w, c.broker)
			}
			t := time.NewTimer(500 * time.Millisecond)
			select {
			case <-s.ctx.Done():
				t.Stop()
				return fmt.Errorf("%w: %d of %d partitions still moving after %v (see sluice topics reassign --verify)", cli.ErrProblem, len(rows)-done, len(rows), c.wait)
			case <-t.C:
			}
		}
	})
}

// unregister removes broker's registration (UnregisterBroker), which the
// controller refuses while the broker hosts a replica.
func unregister(s session, w io.Writer, broker int32) error {
	req := kmsg.NewPtrUnregisterBrokerRequest()
	req.BrokerID = broker
	resp, err := req.RequestWith(s.ctx, s.cl)
	if err != nil {
		return fmt.Errorf("unregister broker %d: %w", broker, err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		msg := ""
		if resp.ErrorMessage != nil {
			msg = ": " + *resp.ErrorMessage
		}
		return fmt.Errorf("%w: unregister broker %d: %v%s", cli.ErrProblem, broker, err, msg)
	}
	fmt.Fprintf(w, "Broker %d unregistered: stop it now (if it starts again it registers anew).\n", broker)
	return nil
}

// unregisterCmd is `sluice cluster unregister --id N`.
type unregisterCmd struct {
	common
	broker int32
}

// NewUnregisterCommand returns `sluice cluster unregister`.
func NewUnregisterCommand() *cobra.Command {
	var c unregisterCmd
	cmd := &cobra.Command{
		Use:   "unregister --id N",
		Short: "Remove a broker that hosts no replicas from the cluster's metadata",
		Long: `Remove a broker's registration from the cluster's metadata (UnregisterBroker),
like kafka-cluster.sh unregister. The controller refuses a broker that still hosts
replicas: move them off first (sluice cluster decommission does both).`,
		Example: "  sluice cluster unregister --id 4",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if c.broker < 0 {
				return errors.New("--id is required")
			}
			return c.with(cmd.Context(), func(s session) error { return unregister(s, cmd.OutOrStdout(), c.broker) })
		},
	}
	c.register(cmd)
	cmd.Flags().Int32Var(&c.broker, "id", -1, "the broker to unregister")
	return cmd
}
