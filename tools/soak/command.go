package soak

import (
	"context"
	"errors"
	"fmt"
	"github.com/sluice-log/sluice/tools/internal/cli"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-log/sluice/tools/cluster"
)

// Negative controls: runs that must lose acknowledged records, so that a
// passing soak means something.
const (
	NegAcks1     = "acks1"      // producers use acks=1 without idempotence
	NegUnclean   = "unclean"    // unclean.leader.election.enable=true, min.insync.replicas=1
	NegPageCache = "page-cache" // no fsync before ack, and only power-loss faults
	// NegCompaction: the compacted topic's producers use acks=1 without
	// idempotence (compact.go).
	NegCompaction = "compaction"
	// NegGroups: one member of the first consumer group commits offsets
	// past what it polled and behind what it committed (groups.go).
	NegGroups = "groups"
	// NegTxn: the exactly-once pipeline's members commit the produce and
	// the offsets in separate steps and sometimes leave between the two
	// (eos.go).
	NegTxn = "txn"
)

// Options of a soak run.
type Options struct {
	Dir             string
	Nodes           int
	BasePort        int
	Duration        time.Duration
	Seed            uint64
	Topic           string
	Partitions      int32
	RF              int16
	MinISR          int
	Producers       int
	Rate            int // records per second over all producers
	ValueSize       int
	InFlight        int // buffered records per producer
	DeliveryTimeout time.Duration
	Faults          []string
	FaultGap        time.Duration
	RecoveryBound   time.Duration
	PowerLoss       bool
	NetFaults       bool
	Durability      string // sync or page-cache
	NegativeControl string
	Report          string
	Keep            bool
	TopicConfigs    map[string]string // extra topic configs, applied last
	// NodeConfigs are extra server.properties of every node (e.g.
	// broker.session.timeout.ms).
	NodeConfigs map[string]string
	// PoisonEvery: a send the broker must refuse before any append (a
	// record over the topic's max.message.bytes: MESSAGE_TOO_LARGE) goes
	// out this often, so the failed-visible check sees definite failures;
	// 0 sends none.
	PoisonEvery time.Duration
	// BadClientEvery: the bad client (badclient.go) sends a forged replica
	// fetch, a future-epoch fetch or a poison batch this often; each must
	// be refused. 0 sends none.
	BadClientEvery time.Duration
	// Executable is the sluice binary the nodes run ("": this process's).
	Executable string
	// CompactPartitions is how many partitions the compacted topic
	// CompactTopic has (compact.go; 0: no compacted-topic workload);
	// CompactRate its records per second over its producers (half of
	// Producers, at least one), CompactKeys the keys they overwrite.
	CompactPartitions int32
	CompactTopic      string
	CompactRate       int
	CompactKeys       int
	// Groups is how many consumer groups read the soak topic (groups.go;
	// 0: none), each with GroupMembers members at a time; GroupChurn the
	// mean time between membership changes, GroupCommitEvery how often a
	// member commits what it polled, GroupSession its session timeout.
	Groups           int
	GroupMembers     int
	GroupChurn       time.Duration
	GroupCommitEvery time.Duration
	GroupSession     time.Duration
	// EOSMembers is how many members the exactly-once pipeline
	// (eos.go; 0: none) runs at a time, reading the soak topic and
	// writing EOSTopic (as many partitions); EOSChurn the mean time
	// between a member leaving and a new one joining, EOSTxnTimeout the
	// members' transaction.timeout.ms. The members' session timeout is
	// GroupSession.
	EOSMembers    int
	EOSTopic      string
	EOSChurn      time.Duration
	EOSTxnTimeout time.Duration
	// EOSControl makes the pipeline the txn negative control's (set by
	// --negative-control txn; the tests set it in the groups control's
	// run, which shares its cluster): members commit the produce and the
	// offsets separately and sometimes leave between.
	EOSControl bool
	// EOSIfServed: when the nodes serve no transactions, run without the
	// pipeline (FullReport.EOSOff says so) instead of failing.
	EOSIfServed bool
	// Docker runs the soak against the containers of a compose project
	// (docker.go) instead of node processes: ComposeFiles started as
	// ComposeProject with the image Image, faults from DockerFaults.
	Docker         bool
	ComposeFiles   []string
	ComposeProject string
	Image          string
}

func (o *Options) acks1() bool { return o.NegativeControl == NegAcks1 }

// NewCommand returns `sluice soak`.
func NewCommand() *cobra.Command {
	o := Options{}
	var faults string
	var topicConfigs, nodeConfigs []string
	cmd := &cobra.Command{
		Use:   "soak",
		Short: "Run producers and consumers against a local cluster while killing, pausing, partitioning and powering off nodes; check no acknowledged record was lost",
		Long: `soak starts a cluster of real node processes in --dir, creates a topic,
runs idempotent acks=all producers and a consumer through franz-go, and
injects faults on a schedule fixed by --seed. At the end it reads every
partition back from its start and checks the invariants (see
tools/soak/doc.go): nothing acknowledged lost, no offset with two values,
no duplicates, per-producer order, no definitely failed record visible,
nothing read at or above the high watermark, every partition writable again
within --recovery-bound of the last heal. Beside it, keyed records and
tombstones go to a compacted topic (--compacted-partitions; 0: none) whose
cleaners run during the run: every key's latest acknowledged value must
survive compaction, and nothing else may appear. Consumer groups
(--groups; kgo group consumers that commit after processing, leave and
join) read the soak topic: committed offsets never go backwards, every
record below an acknowledged commit was delivered first, no partition has
two owners in one generation, and the final offsets are the last
acknowledged commits. An exactly-once pipeline (--eos-members; franz-go's
GroupTransactSession, read_committed) transforms the soak topic into
--eos-topic, committing its offsets in each transaction: read back with
read_committed, the output holds every input record below the committed
offsets exactly once, in order, and nothing of an aborted transaction.
It prints a summary table and writes a JSON report.

With --docker the nodes are the containers of a compose project
(deploy/compose.yaml and compose.brokers.yaml, make image's image), and
the faults those of separate hosts: docker kill, stop and pause, network
disconnects, iptables cuts (full, inbound or outbound only) and packet
loss inside a container's namespace, and a host lost with its disk,
replaced by a new broker id and its partitions reassigned to it.

Exit status: 0 every invariant held; 2 an invariant was broken (or, with
--negative-control, the control lost nothing: the checker caught nothing);
1 the tool itself failed.`,
		Example: `  sluice soak --duration 10m
  sluice soak --duration 2m --replication-factor 1 --seed 42
  sluice soak --duration 2m --replication-factor 1 --negative-control page-cache
  sluice soak --docker --duration 10m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Faults = nil
			known := AllFaults
			if o.Docker {
				known = DockerFaults
				if !cmd.Flags().Changed("faults") {
					faults = strings.Join(DockerFaults, ",")
				}
			}
			for _, f := range strings.Split(faults, ",") {
				if f = strings.TrimSpace(f); f == "" {
					continue
				}
				if !slices.Contains(known, f) {
					return fmt.Errorf("--faults: unknown fault %q (known: %s)", f, strings.Join(known, ","))
				}
				o.Faults = append(o.Faults, f)
			}
			var err error
			if o.TopicConfigs, err = keyValues("--topic-config", topicConfigs); err != nil {
				return err
			}
			if o.NodeConfigs, err = keyValues("--node-config", nodeConfigs); err != nil {
				return err
			}
			// Ctrl-C ends the workload early: faults heal, rules go, the
			// run is still checked.
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return Run(ctx, cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Dir, "dir", "./soak-cluster", "the cluster's directory (replaced)")
	f.IntVar(&o.Nodes, "nodes", 3, "nodes (each controller and broker)")
	f.IntVar(&o.BasePort, "base-port", 29092, "Kafka port of node 0 (node i adds 100*i; other ports follow as in sluice cluster)")
	f.DurationVar(&o.Duration, "duration", 10*time.Minute, "how long the workload runs (faults stop --recovery-bound before the end)")
	f.Uint64Var(&o.Seed, "seed", 0, "seed of the fault schedule (0: pick one and print it)")
	f.StringVar(&o.Topic, "topic", "soak", "topic to create")
	f.Int32Var(&o.Partitions, "partitions", 6, "partitions of the topic")
	f.Int16Var(&o.RF, "replication-factor", 3, "replication factor of the topic")
	f.IntVar(&o.MinISR, "min-insync-replicas", 2, "min.insync.replicas of the topic (capped at the replication factor)")
	f.IntVar(&o.Producers, "producers", 4, "producer clients (each its own producer id and sequence)")
	f.IntVar(&o.Rate, "rate", 1500, "records per second over all producers")
	f.IntVar(&o.ValueSize, "value-size", 64, "bytes per record value")
	f.IntVar(&o.InFlight, "in-flight", 2000, "records a producer may buffer before it waits")
	f.DurationVar(&o.DeliveryTimeout, "delivery-timeout", 30*time.Second, "a record not acknowledged this long after it was sent fails (outcome unknown)")
	f.StringVar(&faults, "faults", strings.Join(AllFaults, ","), "fault kinds to inject, comma separated")
	f.DurationVar(&o.FaultGap, "fault-gap", 4*time.Second, "mean rest between a heal and the next fault")
	f.DurationVar(&o.RecoveryBound, "recovery-bound", 30*time.Second, "every partition must take a write this soon after the last heal")
	f.BoolVar(&o.PowerLoss, "power-loss", true, "run nodes on the power-loss filesystem (tools/soak/powerfs) and inject power-loss faults")
	f.BoolVar(&o.NetFaults, "net-faults", true, "inject network partitions (needs root and iptables; skipped with a message otherwise)")
	f.StringVar(&o.Durability, "durability", "sync", "the topic's sluice.durability: sync (fsync before ack, group commit) or page-cache")
	f.StringVar(&o.NegativeControl, "negative-control", "", "acks1, unclean, page-cache, compaction, groups or txn: a run that must lose records or break a group or exactly-once invariant (exit 0 only if the checker reports it)")
	f.StringVar(&o.Report, "report", "", "JSON report path (default DIR/soak-report.json)")
	f.BoolVar(&o.Keep, "keep", false, "leave the cluster running at the end")
	f.StringArrayVar(&topicConfigs, "topic-config", nil, "extra topic config KEY=VALUE (repeatable; applied after the ones the flags imply)")
	f.StringArrayVar(&nodeConfigs, "node-config", nil, "extra server.properties KEY=VALUE of every node (repeatable), e.g. broker.session.timeout.ms=3000")
	f.DurationVar(&o.PoisonEvery, "poison-every", 5*time.Second, "send a record over the topic's max.message.bytes this often (the broker must refuse it: a definitely failed send); 0: never")
	f.Int32Var(&o.CompactPartitions, "compacted-partitions", 2, "partitions of a second, compacted topic (cleanup.policy=compact, 16 KiB segments) written with keyed records and tombstones; 0: none")
	f.StringVar(&o.CompactTopic, "compacted-topic", "soak-compacted", "name of the compacted topic")
	f.IntVar(&o.CompactRate, "compacted-rate", 300, "records per second to the compacted topic")
	f.IntVar(&o.CompactKeys, "compacted-keys", 1000, "distinct keys written to the compacted topic (each overwritten about rate×duration/keys times)")
	f.IntVar(&o.Groups, "groups", 2, "consumer groups reading the soak topic (kgo group consumers, balancers cooperative-sticky, range, sticky, round-robin in turn); 0: none")
	f.IntVar(&o.GroupMembers, "group-members", 3, "members of each group at a time")
	f.DurationVar(&o.GroupChurn, "group-churn", 15*time.Second, "mean time between a member leaving a group (and a new one joining)")
	f.DurationVar(&o.GroupCommitEvery, "group-commit-every", 500*time.Millisecond, "a member commits what it polled this often (and when partitions are revoked)")
	f.DurationVar(&o.GroupSession, "group-session-timeout", 10*time.Second, "session timeout of the group members")
	f.IntVar(&o.EOSMembers, "eos-members", 2, "members of the exactly-once pipeline (franz-go GroupTransactSession: read_committed, one transaction per poll, offsets committed in it) from the soak topic to --eos-topic; 0: none")
	f.StringVar(&o.EOSTopic, "eos-topic", "soak-eos-out", "the exactly-once pipeline's output topic")
	f.DurationVar(&o.EOSChurn, "eos-churn", 20*time.Second, "mean time between a pipeline member leaving (and a new one joining)")
	f.DurationVar(&o.EOSTxnTimeout, "eos-transaction-timeout", 20*time.Second, "transaction.timeout.ms of the pipeline's members")
	f.BoolVar(&o.Docker, "docker", false, "run against the containers of a compose project (each node its own host: docker kill/stop/pause, network disconnects, iptables cuts and loss in a container's namespace, a host lost with its disk) instead of node processes; --dir, --nodes, --base-port, --node-config and power loss do not apply")
	f.StringArrayVar(&o.ComposeFiles, "compose-file", []string{"deploy/compose.yaml", "deploy/compose.brokers.yaml"}, "with --docker: the compose files (repeatable; the broker-only nodes of compose.brokers.yaml are what host-loss replaces)")
	f.StringVar(&o.ComposeProject, "compose-project", "sluice-soak", "with --docker: the compose project name (its containers, network and volumes are removed at the start and the end)")
	f.StringVar(&o.Image, "image", "sluice:dev", "with --docker: the image the nodes run (make image)")
	f.DurationVar(&o.BadClientEvery, "bad-client-every", 2*time.Second, "send a forged replica fetch, a future-epoch fetch or a poison batch this often (each must be refused); 0: never")
	return cmd
}

// keyValues parses repeated KEY=VALUE flags.
func keyValues(flag string, kvs []string) (map[string]string, error) {
	m := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%s %q: want KEY=VALUE, e.g. unclean.leader.election.enable=true", flag, kv)
		}
		m[k] = v
	}
	return m, nil
}

// errViolated is returned when the checker found a broken invariant.
var errViolated = fmt.Errorf("soak: invariants violated: %w", cli.ErrProblem)

func (o *Options) validate() error {
	switch {
	case o.Nodes < 1 && !o.Docker:
		return fmt.Errorf("--nodes %d: need at least 1", o.Nodes)
	case o.Partitions < 1 || o.RF < 1 || (int(o.RF) > o.Nodes && !o.Docker):
		return fmt.Errorf("--partitions %d --replication-factor %d with %d nodes: need ≥1 partition and 1 ≤ RF ≤ nodes", o.Partitions, o.RF, o.Nodes)
	case o.Producers < 1 || o.Rate < 1:
		return fmt.Errorf("--producers and --rate must be at least 1")
	case o.Duration < 2*o.RecoveryBound:
		return fmt.Errorf("--duration %v: need at least twice --recovery-bound (%v), the quiet end of the run", o.Duration, o.RecoveryBound)
	case o.Durability != "sync" && o.Durability != "page-cache":
		return fmt.Errorf("--durability %q: want sync or page-cache", o.Durability)
	}
	if o.Docker {
		if err := o.validateDocker(); err != nil {
			return err
		}
	}
	switch o.NegativeControl {
	case "":
	case NegAcks1:
		if o.RF < 2 {
			return fmt.Errorf("--negative-control acks1 needs followers: --replication-factor %d", o.RF)
		}
	case NegUnclean:
		// The followers are stopped until they leave the ISR, which the
		// quorum must still be able to commit: at most a minority of the
		// nodes may be stopped.
		if most := int16(o.Nodes - o.Nodes/2); o.RF > most {
			o.RF = most
		}
		if o.RF < 2 {
			return fmt.Errorf("--negative-control unclean needs at least 3 nodes and --replication-factor ≥ 2 (nodes %d)", o.Nodes)
		}
	case NegPageCache:
		o.Durability, o.PowerLoss = "page-cache", true
	case NegCompaction:
		if o.CompactPartitions < 1 || o.RF < 2 {
			return fmt.Errorf("--negative-control compaction needs the compacted topic (--compacted-partitions %d) with followers (--replication-factor %d)", o.CompactPartitions, o.RF)
		}
		// A lost latest value shows only while its key is not written
		// again: with a small key space the writes after a scenario
		// overwrite every key it lost (and the cleaner removes what
		// refilled its offsets).
		o.CompactKeys = max(o.CompactKeys, minControlKeys)
	case NegGroups:
		o.Groups, o.GroupMembers = max(o.Groups, 1), max(o.GroupMembers, 2)
	case NegTxn:
		o.EOSMembers, o.EOSControl = max(o.EOSMembers, 2), true
	default:
		return fmt.Errorf("--negative-control %q: want acks1, unclean, page-cache, compaction, groups or txn", o.NegativeControl)
	}
	switch {
	case o.EOSMembers < 0 || (o.EOSMembers > 0 && (o.EOSChurn <= 0 || o.EOSTxnTimeout <= 0 || o.GroupSession <= 0)):
		return fmt.Errorf("--eos-members %d, --eos-churn %v, --eos-transaction-timeout %v, --group-session-timeout %v: want members ≥ 0 and the rest positive",
			o.EOSMembers, o.EOSChurn, o.EOSTxnTimeout, o.GroupSession)
	case o.EOSMembers > 0 && (o.EOSTopic == "" || o.EOSTopic == o.Topic || o.EOSTopic == o.CompactTopic):
		return fmt.Errorf("--eos-topic %q: want a name other than --topic and --compacted-topic", o.EOSTopic)
	}
	switch {
	case o.Groups < 0 || (o.Groups > 0 && (o.GroupMembers < 1 || o.GroupChurn <= 0 || o.GroupCommitEvery <= 0 || o.GroupSession <= 0)):
		return fmt.Errorf("--groups %d, --group-members %d, --group-churn %v, --group-commit-every %v, --group-session-timeout %v: want groups ≥ 0 and the rest positive",
			o.Groups, o.GroupMembers, o.GroupChurn, o.GroupCommitEvery, o.GroupSession)
	case o.Groups > 26:
		return fmt.Errorf("--groups %d: at most 26", o.Groups)
	}
	switch {
	case o.CompactPartitions < 0:
		return fmt.Errorf("--compacted-partitions %d: want 0 (none) or more", o.CompactPartitions)
	case o.CompactPartitions > 0 && (o.CompactRate < 1 || o.CompactKeys < 1 || o.CompactTopic == "" || o.CompactTopic == o.Topic):
		return fmt.Errorf("--compacted-rate %d, --compacted-keys %d, --compacted-topic %q: want ≥ 1, ≥ 1 and a name other than --topic", o.CompactRate, o.CompactKeys, o.CompactTopic)
	}
	if o.NegativeControl != "" {
		// The control's scripted scenario replaces the random schedule
		// (the groups control has none: its wrong member is the fault).
		o.Faults = nil
		if sc := scenarioOf(o.NegativeControl); sc != "" {
			o.Faults = []string{sc}
		}
	}
	if o.Groups == 0 {
		// No coordinator to kill; not in the schedule, so that its quota
		// goes to no one.
		o.Faults = slices.DeleteFunc(slices.Clone(o.Faults), func(k string) bool { return k == FaultKillCoordinator })
	}
	if o.EOSMembers == 0 {
		o.Faults = slices.DeleteFunc(slices.Clone(o.Faults), func(k string) bool { return k == FaultKillTxnCoordinator })
	}
	if o.MinISR > int(o.RF) {
		o.MinISR = int(o.RF)
	}
	if o.NegativeControl == NegUnclean {
		o.MinISR = 1
	}
	if len(o.Faults) == 0 {
		o.Faults = nil
	}
	if o.Report == "" {
		o.Report = filepath.Join(o.Dir, "soak-report.json")
	}
	if o.Seed == 0 {
		o.Seed = uint64(time.Now().UnixNano())
	}
	return nil
}

// topicConfigs are the configs the topic is created with.
func (o *Options) topicConfigs() map[string]*string {
	s := func(v string) *string { return &v }
	c := map[string]*string{"min.insync.replicas": s(strconv.Itoa(o.MinISR)), "max.message.bytes": s(strconv.Itoa(topicMaxMessageBytes))}
	// sluice.durability=sync: replicas count towards acks=all only with
	// what they fsynced (group commit); page-cache: replication is the
	// durability.
	c["sluice.durability"] = s(o.Durability)
	if o.NegativeControl == NegUnclean {
		c["unclean.leader.election.enable"] = s("true")
	}
	for k, v := range o.TopicConfigs {
		c[k] = s(v)
	}
	return c
}

// Run is one soak: start, load, faults, final read, check, report.
func Run(ctx context.Context, w io.Writer, o Options) error {
	fr, err := run(ctx, w, o)
	if err != nil {
		return err
	}
	r := fr.Report
	if o.NegativeControl != "" {
		// Lost counts every lost acknowledged record; with page-cache
		// durability the ones a power loss explains are no violation, and
		// still the loss the control must show.
		c := r.Counts
		if o.NegativeControl == NegTxn {
			if c.TxnDuplicate == 0 {
				fmt.Fprintf(w, "NEGATIVE CONTROL %s: the checker reported no duplicate in the pipeline's output: the control did not do its job\n", o.NegativeControl)
				return errViolated
			}
			fmt.Fprintf(w, "NEGATIVE CONTROL %s: the checker reported the duplicates of the separate offset commits, as it must\n", o.NegativeControl)
			return nil
		}
		if o.NegativeControl == NegGroups {
			if c.GroupUndelivered+c.GroupBackwards+c.GroupCommitLost == 0 {
				fmt.Fprintf(w, "NEGATIVE CONTROL %s: the checker reported no broken group invariant: the control did not do its job\n", o.NegativeControl)
				return errViolated
			}
			fmt.Fprintf(w, "NEGATIVE CONTROL %s: the checker reported the wrong member's commits, as it must\n", o.NegativeControl)
			return nil
		}
		if c.Lost+c.Vanished+c.VanishedExplained+c.Conflicts+c.ConflictsExplained+c.CompactLostLatest+c.CompactConflicts == 0 {
			fmt.Fprintf(w, "NEGATIVE CONTROL %s: the checker reported no loss: the control did not do its job\n", o.NegativeControl)
			return errViolated
		}
		fmt.Fprintf(w, "NEGATIVE CONTROL %s: the checker reported the loss, as it must\n", o.NegativeControl)
		return nil
	}
	if !r.OK {
		return errViolated
	}
	return nil
}

// lockedWriter lets the workload, the faulter and the progress line write
// to one writer.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// run is Run up to the verdict: it returns the report it wrote, or the
// error that kept it from checking.
func run(ctx context.Context, w io.Writer, o Options) (*FullReport, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	w = &lockedWriter{w: w}
	fmt.Fprintf(w, "soak: seed %d, %v, %d nodes, topic %s: %d partitions, RF %d, durability %s, acks %s, faults %s\n",
		o.Seed, o.Duration, o.Nodes, o.Topic, o.Partitions, o.RF, o.Durability, map[bool]string{true: "1", false: "all (idempotent)"}[o.acks1()], strings.Join(o.Faults, ","))
	var cfgs []string
	for k, v := range o.topicConfigs() {
		cfgs = append(cfgs, k+"="+*v)
	}
	slices.Sort(cfgs)
	fmt.Fprintf(w, "soak: topic configs %s\n", strings.Join(cfgs, " "))
	if o.CompactPartitions > 0 {
		var ccfgs []string
		for k, v := range o.compactTopicConfigs() {
			ccfgs = append(ccfgs, k+"="+*v)
		}
		slices.Sort(ccfgs)
		fmt.Fprintf(w, "soak: compacted topic %s: %d partitions, %d records/s over %d keys, configs %s\n",
			o.CompactTopic, o.CompactPartitions, o.CompactRate, o.CompactKeys, strings.Join(ccfgs, " "))
	}
	if o.Groups > 0 {
		fmt.Fprintf(w, "soak: consumer groups %v: %d members each, a member leaves and one joins every ~%v, commits every %v, session timeout %v\n",
			groupNames(o.Groups), o.GroupMembers, o.GroupChurn, o.GroupCommitEvery, o.GroupSession)
	}
	if o.EOSMembers > 0 {
		fmt.Fprintf(w, "soak: exactly-once pipeline %s → %s: group %s, %d members, a member leaves and one joins every ~%v, transaction timeout %v\n",
			o.Topic, o.EOSTopic, eosGroup, o.EOSMembers, o.EOSChurn, o.EOSTxnTimeout)
	}
	if o.NegativeControl != "" {
		fmt.Fprintf(w, "soak: NEGATIVE CONTROL %s: this run must lose acknowledged records or break a group or exactly-once invariant\n", o.NegativeControl)
	}
	exe := o.Executable
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, err
		}
	}

	var power *powerLoss
	var l cluster.Layout
	var hosts *dockerHosts
	var net *netFaults
	why := "docker backend: net-partition is iptables inside the containers' namespaces"
	if o.Docker {
		var stop func()
		var err error
		if hosts, stop, err = startDockerRun(ctx, w, &o); err != nil {
			return nil, err
		}
		defer stop()
		l = hosts.layout()
	} else {
		copts := cluster.Options{Dir: o.Dir, Nodes: o.Nodes, BasePort: o.BasePort, Executable: exe, Properties: map[string]string{}}
		maps.Copy(copts.Properties, o.NodeConfigs)
		if o.NegativeControl == NegUnclean {
			copts.Properties["unclean.leader.election.enable"] = "true"
		}
		if o.CompactPartitions > 0 {
			// The cleaner must run during the run, not every 15 s.
			if _, set := o.NodeConfigs["log.cleaner.backoff.ms"]; !set {
				copts.Properties["log.cleaner.backoff.ms"] = compactCleanerBackoff
			}
		}
		if o.PowerLoss {
			power = &powerLoss{}
			copts.NodeArgs = power.nodeArgs
		}
		net, why = newNetFaults(o.NetFaults && slices.Contains(o.Faults, FaultPartition), &copts)
		if why != "" {
			fmt.Fprintf(w, "soak: network partitions off: %s\n", why)
			// Not in the schedule at all, so that their quota goes to no one.
			o.Faults = slices.DeleteFunc(slices.Clone(o.Faults), func(k string) bool { return k == FaultPartition })
		}
		if net != nil {
			defer net.close() // after the nodes stopped (defers run last first)
		}
		sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		var err error
		l, err = cluster.Start(sctx, w, copts)
		cancel()
		if net != nil {
			net.l = l
		}
		if err != nil {
			sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_ = cluster.Stop(sctx, io.Discard, l)
			return nil, fmt.Errorf("soak: start the cluster: %w", err)
		}
		if !o.Keep {
			defer func() {
				sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				_ = cluster.Stop(sctx, io.Discard, l)
			}()
		}
	}
	seeds := strings.Split(l.BootstrapServers, ",")
	admCl, err := kgo.NewClient(clientOpts(seeds)...)
	if err != nil {
		return nil, err
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	tps, err := createTopic(ctx, w, adm, &o)
	if err != nil {
		return nil, err
	}

	h := &History{Partitions: tps}
	var ctps []TP
	if o.CompactPartitions > 0 {
		if ctps, err = createCompactTopic(ctx, w, adm, &o); err != nil {
			return nil, err
		}
		h.Compact = &CompactHistory{Topic: o.CompactTopic, Partitions: ctps, DeleteRetention: compactDeleteRetain}
	}
	var etps []TP
	var eos *eosWorkload
	var eosOff string
	if o.EOSMembers > 0 {
		eos = newEOSWorkload(seeds, tps, adm, w, &o)
		err := eos.served(ctx)
		switch {
		case errors.Is(err, ErrNoTransactions) && o.EOSIfServed:
			eosOff, eos = err.Error(), nil
			fmt.Fprintf(w, "soak: exactly-once pipeline off: %v\n", err)
			o.Faults = slices.DeleteFunc(o.Faults, func(k string) bool { return k == FaultKillTxnCoordinator })
		case err != nil:
			return nil, err
		default:
			if etps, err = createEOSTopic(ctx, w, adm, &o); err != nil {
				return nil, err
			}
		}
	}
	var acked, failed, unk atomic.Int64
	var cacked, cfailed, cunk atomic.Int64
	var prods []*producer
	byTP := newAckCounts()
	for i := range o.Producers {
		p, err := newProducer(i, seeds, tps, &o, &acked, &failed, &unk, workloadProducer)
		if err != nil {
			return nil, err
		}
		p.byTP = byTP
		prods = append(prods, p)
	}
	var poison *producer
	if o.PoisonEvery > 0 {
		// One more producer number, so its keys are its own.
		if poison, err = newProducer(o.Producers, seeds, tps, &o, &acked, &failed, &unk, poisonProducer); err != nil {
			return nil, err
		}
		prods = append(prods, poison)
	}
	var cprods []*producer
	if len(ctps) > 0 {
		if cprods, err = newCompactProducers(seeds, ctps, &o, o.Seed, &cacked, &cfailed, &cunk); err != nil {
			return nil, err
		}
		for _, p := range cprods {
			p.byTP = byTP
		}
	}
	cons, err := newConsumer(seeds, tps)
	if err != nil {
		return nil, err
	}
	f := &faulter{l: l, exe: exe, adm: adm, cl: admCl, tps: tps, ctps: ctps, out: w, power: power, net: net,
		sched: newScheduleFor(o.quota(), o.Seed, o.Faults, o.FaultGap, len(tps)), hosts: hosts,
		operatorElects: o.Durability == "page-cache", acks: byTP, groups: groupNames(o.Groups), etps: etps}
	control := scenarioOf(o.NegativeControl)
	switch {
	case control != "":
		fmt.Fprintf(w, "soak: scripted scenario %s, repeated while the run has room\n", control)
	case len(o.Faults) > 0:
		fmt.Fprintf(w, "soak: fault quota for %v: %v (then weighted draws)\n", o.Duration, o.quota())
	}

	h.Start = time.Now()
	end := h.Start.Add(o.Duration)
	// A scenario runs to its end: with one, the workload stops at the end
	// of the run or controlTail after the last scenario, the later.
	wctx, stopLoad := context.WithDeadline(ctx, end)
	if control != "" {
		stopLoad()
		wctx, stopLoad = context.WithCancel(ctx)
	}
	defer stopLoad()
	cctx, stopCons := context.WithCancel(ctx)
	defer stopCons()
	var wg, cwg, clwg sync.WaitGroup
	var cleans *cleanCounter
	clctx, stopCleans := context.WithCancel(ctx)
	defer stopCleans()
	if len(ctps) > 0 {
		cleans = newCleanCounter(f.layout)
		clwg.Go(func() { cleans.run(clctx, 2*time.Second) })
	}
	for _, p := range prods {
		if p == poison {
			wg.Go(func() { drivePoison(wctx, p, o.PoisonEvery) })
			continue
		}
		wg.Go(func() { drive(wctx, p.produce, o.Rate/o.Producers) })
	}
	for _, p := range cprods {
		wg.Go(func() { drive(wctx, p.produceKeyed, o.CompactRate/len(cprods)) })
	}
	cwg.Go(func() { cons.live(cctx) })
	var groups *groupWorkload
	gctx, stopGroups := context.WithCancel(ctx)
	defer stopGroups()
	if o.Groups > 0 {
		groups = newGroupWorkload(seeds, tps, adm, w, &o)
		if err := groups.start(gctx); err != nil {
			return nil, err
		}
		cwg.Go(func() { groups.watchGenerations(gctx) })
		cwg.Go(func() { groups.snapshots(gctx, time.Second) })
		wg.Go(func() { groups.churn(wctx) })
	}
	ectx, stopEOS := context.WithCancel(ctx)
	defer stopEOS()
	if eos != nil {
		if err := eos.start(ectx); err != nil {
			return nil, err
		}
		f.txnIDs = eos.txnIDs
		wg.Go(func() { eos.churn(wctx) })
	}
	var bad *badClient
	if o.BadClientEvery > 0 {
		bad = newBadClient(admCl, tps, o.BadClientEvery, int64(o.Seed))
		wg.Go(func() { bad.run(wctx) })
	}
	switch {
	case control != "":
		wg.Go(func() {
			f.runScenarios(wctx, control, end)
			wait(wctx, max(time.Until(end), controlTail))
			stopLoad()
		})
	case len(o.Faults) > 0:
		// The last heal leaves a quiet end: the recovery bound plus a
		// margin (up to 15 s) to see every partition take writes again.
		lastHeal := end.Add(-o.RecoveryBound - min(15*time.Second, o.RecoveryBound/2))
		wg.Go(func() { f.run(wctx, lastHeal) })
	}
	progress(wctx, w, h.Start, &acked, &failed, &unk, cons, &cacked)
	wg.Wait()
	h.End = time.Now()

	fmt.Fprintf(w, "soak: workload over; waiting up to %v for outstanding sends\n", o.DeliveryTimeout)
	post := context.WithoutCancel(ctx) // an interrupted run is still checked
	dctx, cancel := context.WithTimeout(post, o.DeliveryTimeout)
	var fwg sync.WaitGroup
	for _, p := range append(slices.Clone(prods), cprods...) {
		fwg.Go(func() { p.finish(dctx) })
	}
	if groups != nil {
		fwg.Go(func() { h.Groups = groups.stop(post, 30*time.Second) })
	}
	fwg.Wait()
	cancel()
	stopCleans()
	clwg.Wait()
	if cleans != nil {
		h.Compact.Cleans, h.Compact.CleanFailures = cleans.total[0], cleans.total[1]
	}
	stopCons()
	stopGroups()
	cwg.Wait()
	cons.cl.Close()
	h.Live = cons.reads
	for _, p := range prods {
		h.Sends = append(h.Sends, p.history()...)
	}
	for _, p := range cprods {
		h.Compact.Sends = append(h.Compact.Sends, p.history()...)
	}
	h.Faults = f.faults
	if bad != nil {
		h.Bad = bad.requests()
	}

	fctx, cancel := context.WithTimeout(post, 3*time.Minute)
	defer cancel()
	fmt.Fprintf(w, "soak: asking every partition for its high watermark (up to %v)\n", o.RecoveryBound)
	if hosts != nil {
		if started, err := hosts.ensureRunning(fctx); err != nil {
			fmt.Fprintf(w, "soak: WARNING: not every container runs for the final read: %v\n", err)
		} else if len(started) > 0 {
			fmt.Fprintf(w, "soak: nodes %v were down at the end; started them for the final read\n", started)
		}
	}
	for _, n := range l.Nodes {
		if hosts == nil && !cluster.Alive(l, n.ID) {
			fmt.Fprintf(w, "soak: node %d is down at the end; restarting it for the final read\n", n.ID)
			if err := cluster.RestartWith(fctx, l, n.ID, exe); err != nil {
				return nil, err
			}
		}
	}
	if eos != nil {
		fmt.Fprintf(w, "soak: exactly-once pipeline: members leave; waiting up to %v for the output's last stable offsets\n", o.EOSTxnTimeout+o.RecoveryBound)
		h.EOS = eos.stop(fctx, o.EOSTxnTimeout+o.RecoveryBound)
	}
	ectx2, cancel2 := context.WithTimeout(fctx, o.RecoveryBound)
	h.FinalHW, err = endOffsets(ectx2, adm, append(slices.Clone(tps), ctps...))
	cancel2()
	if h.Compact != nil {
		h.Compact.FinalHW = map[TP]int64{}
		for _, tp := range ctps {
			if hw, ok := h.FinalHW[tp]; ok {
				h.Compact.FinalHW[tp] = hw
				delete(h.FinalHW, tp)
			}
		}
	}
	if err != nil {
		fmt.Fprintf(w, "soak: WARNING: %v: those partitions cannot be read back; their acknowledged records count as lost\n", err)
	}
	fmt.Fprintf(w, "soak: reading every partition back from the start (high watermarks %v)\n", hwList(tps, h.FinalHW))
	var missing []TP
	h.Final, missing, err = finalRead(fctx, seeds, h.FinalHW)
	if err != nil {
		fmt.Fprintf(w, "soak: WARNING: %v: %v (their unread acknowledged records count as lost)\n", err, missing)
	}
	if h.Compact != nil {
		fmt.Fprintf(w, "soak: reading the compacted topic %s back from the start (high watermarks %v)\n", o.CompactTopic, hwList(ctps, h.Compact.FinalHW))
		h.Compact.FinalAt = time.Now()
		if h.Compact.Final, err = compactFinalRead(fctx, seeds, h.Compact.FinalHW, 5*time.Second); err != nil {
			fmt.Fprintf(w, "soak: WARNING: %v (its unread latest values count as lost)\n", err)
		}
	}

	r := Check(h, CheckOptions{RecoveryBound: o.RecoveryBound, Quota: o.quota(), PageCache: o.Durability == "page-cache"})
	fmt.Fprintln(w)
	PrintSummary(w, r)
	fr := &FullReport{Settings: o, Start: h.Start, End: h.End, Faults: h.Faults, NetFaultsOff: why, EOSOff: eosOff, Report: r}
	if err := WriteJSON(o.Report, *fr); err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "report: %s (seed %d)\n", o.Report, o.Seed)
	return fr, nil
}

// drivePoison sends one record the broker must refuse every period.
func drivePoison(ctx context.Context, p *producer, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		p.produce(ctx, 1)
	}
}

// drive produces rate records per second until ctx ends.
func drive(ctx context.Context, produce func(context.Context, int), rate int) {
	const tick = 20 * time.Millisecond
	t := time.NewTicker(tick)
	defer t.Stop()
	per := float64(max(rate, 1)) * tick.Seconds()
	carry := 0.0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		carry += per
		n := int(carry)
		carry -= float64(n)
		produce(ctx, n)
	}
}

func progress(ctx context.Context, w io.Writer, start time.Time, acked, failed, unk *atomic.Int64, c *consumer, compacted *atomic.Int64) {
	t := time.NewTicker(10 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fmt.Fprintf(w, "soak: %4ds acked %d, failed %d, unknown %d, read live %d; compacted topic acked %d\n",
				int(time.Since(start).Seconds()), acked.Load(), failed.Load(), unk.Load(), c.n.Load(), compacted.Load())
		}
	}
}

func createTopic(ctx context.Context, w io.Writer, adm *kadm.Client, o *Options) ([]TP, error) {
	return createTopicWith(ctx, w, adm, o, o.topicConfigs())
}

// createTopicWith creates o.Topic with cfgs and waits for its leaders.
func createTopicWith(ctx context.Context, w io.Writer, adm *kadm.Client, o *Options, cfgs map[string]*string) ([]TP, error) {
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	resp, err := adm.CreateTopic(cctx, o.Partitions, o.RF, cfgs, o.Topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return nil, fmt.Errorf("soak: create topic %s: %w", o.Topic, err)
	}
	var tps []TP
	for p := range o.Partitions {
		tps = append(tps, TP{o.Topic, p})
	}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		md, err := adm.Metadata(cctx, o.Topic)
		if err == nil {
			ps := md.Topics[o.Topic].Partitions
			ready := len(ps) == int(o.Partitions)
			for _, p := range ps {
				ready = ready && p.Leader >= 0
			}
			if ready {
				fmt.Fprintf(w, "soak: topic %s ready:", o.Topic)
				for _, p := range ps.Sorted() {
					fmt.Fprintf(w, " p%d→%d%v", p.Partition, p.Leader, p.Replicas)
				}
				fmt.Fprintln(w)
				return tps, nil
			}
		}
		select {
		case <-cctx.Done():
			return nil, errors.New("soak: the topic has no leader for every partition after a minute")
		case <-tick.C:
		}
	}
}

// endOffsets asks for every partition's high watermark, retrying until
// each answered or ctx ends.
func endOffsets(ctx context.Context, adm *kadm.Client, tps []TP) (map[TP]int64, error) {
	hw := map[TP]int64{}
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		for _, tp := range tps {
			if _, ok := hw[tp]; ok {
				continue
			}
			lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			lo, err := adm.ListEndOffsets(lctx, tp.Topic)
			cancel()
			if err != nil {
				last = err // partitions whose leaders answered are in lo still
			}
			if o, ok := lo.Lookup(tp.Topic, tp.Partition); ok && o.Err == nil {
				hw[tp] = o.Offset
			} else if ok {
				last = fmt.Errorf("%s: %w", tp, o.Err)
			}
		}
		if len(hw) == len(tps) {
			return hw, nil
		}
		select {
		case <-ctx.Done():
			return hw, fmt.Errorf("no high watermark for %d partition(s): %v", len(tps)-len(hw), last)
		case <-tick.C:
		}
	}
}

func hwList(tps []TP, hw map[TP]int64) string {
	var s []string
	for _, tp := range tps {
		s = append(s, strconv.FormatInt(hw[tp], 10))
	}
	return strings.Join(s, " ")
}
