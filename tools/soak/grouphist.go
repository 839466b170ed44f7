package soak

import (
	"fmt"
	"slices"
	"time"
)

// The consumer-group workload's history (groups.go builds it, groupcheck.go
// judges it). Members are named by the workload ("<group>/m<n>", one name
// per incarnation: a member that leaves and a new one that joins are two
// names), beside the member id the coordinator gave them.

// GroupHistory is what the group workload observed.
type GroupHistory struct {
	Topic      string `json:"topic"`
	Partitions []TP   `json:"partitions"`
	// Groups are the group ids with the balancer their members use.
	Groups map[string]string `json:"groups"`
	// Deliveries: every record a member got from a poll.
	Deliveries []Delivery `json:"-"`
	// Commits: every OffsetCommit a member sent, with its outcome per
	// partition.
	Commits []Commit `json:"-"`
	// Assignments: every change of a member's partitions (kgo's
	// OnPartitionsAssigned/Revoked/Lost, and its leaving).
	Assignments []Assignment `json:"-"`
	// Resets: explicit resets of a group's committed offsets (outside
	// them, a committed offset never moves backwards).
	Resets []Reset `json:"-"`
	// Snapshots: the groups' committed offsets read back (kadm
	// FetchOffsets) during the run.
	Snapshots []OffsetSnapshot `json:"-"`
	// Rebalances: each membership change the workload made, until every
	// live member got a new generation (the same), together owning every
	// partition once.
	Rebalances []Rebalance `json:"rebalances,omitempty"`
	// Final is each group's committed offsets read back after every
	// member left (-1: none); FinalErr why a group's could not be read.
	Final    map[string]map[TP]int64 `json:"-"`
	FinalAt  time.Time               `json:"final_at"`
	FinalErr map[string]string       `json:"final_err,omitempty"`
	// Wrong names the deliberately wrong member of the negative control
	// ("": none).
	Wrong string `json:"wrong_member,omitempty"`
}

// Delivery is one record a group member got from a poll.
type Delivery struct {
	Group      string
	Member     string
	Generation int32
	TP         TP
	Offset     int64
	// Key is the record's workload key; Valid false for a value the
	// workload did not write.
	Key   Key
	Valid bool
	At    time.Time
}

// Commit is one OffsetCommit request of a member.
type Commit struct {
	Group      string
	Member     string
	MemberID   string
	Generation int32
	Parts      []CommitPart
	// Sent before the request went out, Done when its answer (or error)
	// came back: the commit took effect, if at all, in between.
	Sent time.Time
	Done time.Time
}

// CommitPart is one partition of a commit and its outcome: Acked (error
// code 0), Failed (refused before any write: a generation or member
// check, see commitOutcome) or Unknown (anything else: it may have been
// written).
type CommitPart struct {
	TP      TP
	Offset  int64
	Outcome Outcome
	Err     string
}

// Assignment is one change of a member's partitions: Owned is what it owns
// after the change, under Generation (kgo's GroupMetadata at the
// callback).
type Assignment struct {
	Group      string
	Member     string
	MemberID   string
	Generation int32
	// Event is "assigned", "revoked", "lost" or "left".
	Event   string
	Changed []TP
	Owned   []TP
	At      time.Time
}

// Reset is an explicit reset of a group's committed offset of a partition,
// in effect somewhere in [Sent, Done].
type Reset struct {
	Group  string
	TP     TP
	Offset int64
	Sent   time.Time
	Done   time.Time
}

// OffsetSnapshot is a group's committed offsets as one FetchOffsets
// answered them, somewhere in [Sent, Done]; -1: no committed offset.
type OffsetSnapshot struct {
	Group   string
	Offsets map[TP]int64
	Sent    time.Time
	Done    time.Time
}

// Rebalance is one membership change and how long the group took to settle
// after it.
type Rebalance struct {
	Group string `json:"group"`
	// Cause is what started it ("member m3 left", "member m5 joined",
	// "coordinator node 2 killed").
	Cause string    `json:"cause"`
	Start time.Time `json:"start"`
	// End is when every live member had a new generation (the same),
	// together owning every partition once; zero when it never settled.
	// FromGen is the highest generation of a live member at Start.
	End     time.Time `json:"end"`
	FromGen int32     `json:"from_generation"`
	ToGen   int32     `json:"to_generation"`
	// Unsettled is, for one that did not settle within 30 s, each live
	// member's generation and partitions then.
	Unsettled string `json:"unsettled,omitempty"`
}

// GroupCounts are the group workload's numbers.
type GroupCounts struct {
	Groups     int `json:"groups"`
	Members    int `json:"members"` // member incarnations
	Deliveries int `json:"deliveries"`
	// Redelivered: deliveries of a record its group had delivered before
	// (at-least-once allows them: after a rebalance or a failed commit).
	Redelivered  int `json:"redelivered"`
	Commits      int `json:"commits"`
	CommitAcked  int `json:"commit_parts_acked"`
	CommitFailed int `json:"commit_parts_failed"`
	CommitUnk    int `json:"commit_parts_unknown"`
	Snapshots    int `json:"snapshots"`
	Assignments  int `json:"assignment_events"`
	// Checked: acknowledged records below a group's committed offsets
	// whose delivery the at-least-once invariant checked.
	Checked   int `json:"at_least_once_checked"`
	Explained int `json:"explained"` // losses a power loss explains
	// CommitLatency: acknowledged commits, from send to answer.
	CommitLatency Percentiles `json:"commit_latency"`
	// RebalanceTime: rebalances that settled; Unsettled the others.
	RebalanceTime Percentiles `json:"rebalance_time"`
	Unsettled     int         `json:"rebalances_unsettled"`
	Rebalances    []Rebalance `json:"rebalances,omitempty"`
	// GenRegressions: a member given a generation (JoinGroup) or an
	// assignment (SyncGroup) more than a second after another member
	// of its group completed SyncGroup in a later generation. The
	// coordinator writes a generation's record before any SyncGroup of
	// it is answered, so a lower one after it suggests a lost group
	// record; counted, with examples, not a violation (yet: it needs a
	// closer look at the coordinator's load).
	GenRegressions int      `json:"generation_regressions"`
	GenExamples    []string `json:"generation_regression_examples,omitempty"`
	// Lag: per group, the final high watermarks minus the final committed
	// offsets, over the partitions.
	Lag map[string]int64 `json:"final_lag"`
}

// Percentiles of a set of durations.
type Percentiles struct {
	N   int           `json:"n"`
	P50 time.Duration `json:"p50_ns"`
	P99 time.Duration `json:"p99_ns"`
	Max time.Duration `json:"max_ns"`
}

func percentiles(ds []time.Duration) Percentiles {
	p := Percentiles{N: len(ds)}
	if len(ds) == 0 {
		return p
	}
	s := append([]time.Duration(nil), ds...)
	slices.Sort(s)
	p.P50, p.P99, p.Max = rank(s, 0.5), rank(s, 0.99), s[len(s)-1]
	return p
}

func (p Percentiles) String() string {
	if p.N == 0 {
		return "none"
	}
	return fmt.Sprintf("n %d, p50 %s, p99 %s, max %s", p.N, round(p.P50), round(p.P99), round(p.Max))
}
