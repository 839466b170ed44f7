package soak

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/node/group"
)

// The consumer-group workload (--groups, groupcheck.go judges it): groups
// of kgo group consumers read the soak topic, each with its balancer
// (cooperative-sticky, range, ...). A member polls, records every record
// as delivered, and commits what it polled every --group-commit-every and
// when partitions are revoked (CommitOffsetsSync, whose request and answer
// give the generation and each partition's outcome). Rebalances are
// blocked while a poll's records are processed (BlockRebalanceOnPoll), as
// a careful application does. Every --group-churn a member of a random
// group leaves (LeaveGroup on Close) and, once the group settled, a new
// one joins; each change is a Rebalance in the history, timed until every
// live member holds partitions of a later generation, together each
// partition once. Every second the groups' committed offsets are read back
// (kadm FetchOffsets); at the end every member leaves and they are read
// once more.

// groupBalancers are the balancers the groups use in turn.
var groupBalancers = []string{"cooperative-sticky", "range", "sticky", "round-robin"}

func balancer(name string) kgo.GroupBalancer {
	switch name {
	case "range":
		return kgo.RangeBalancer()
	case "sticky":
		return kgo.StickyBalancer()
	case "round-robin":
		return kgo.RoundRobinBalancer()
	default:
		return kgo.CooperativeStickyBalancer()
	}
}

// groupWorkload runs the groups' members and records their history.
type groupWorkload struct {
	seeds  []string
	topic  string
	tps    []TP
	adm    *kadm.Client
	out    io.Writer
	o      *Options
	rng    *rand.Rand
	groups []string

	mu      sync.Mutex
	h       *GroupHistory
	members map[string]*member // live members by name
	next    int
	pending []pendingRebalance
	wg      sync.WaitGroup
}

// member is one incarnation of a group member.
type member struct {
	w      *groupWorkload
	name   string
	group  string
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
	wrong  bool // the negative control's member: commits what it did not process

	// Guarded by w.mu.
	owned   map[TP]bool
	gen     int32 // of its last recorded assignment event
	changes int   // how often gen changed
	leaving bool

	pmu      sync.Mutex
	pend     map[TP]kgo.EpochOffset // polled, not yet committed
	commits  int
	lastCmit time.Time
}

// groupNames are the group ids of n groups.
func groupNames(n int) []string {
	var gs []string
	for i := range n {
		gs = append(gs, fmt.Sprintf("soak-group-%c", 'a'+i))
	}
	return gs
}

func newGroupWorkload(seeds []string, tps []TP, adm *kadm.Client, out io.Writer, o *Options) *groupWorkload {
	w := &groupWorkload{seeds: seeds, topic: o.Topic, tps: tps, adm: adm, out: out, o: o,
		rng: rand.New(rand.NewPCG(o.Seed, 0x9e0)), groups: groupNames(o.Groups), members: map[string]*member{}}
	w.h = &GroupHistory{Topic: o.Topic, Partitions: tps, Groups: map[string]string{}}
	for i, g := range w.groups {
		w.h.Groups[g] = groupBalancers[i%len(groupBalancers)]
	}
	return w
}

// ErrNoGroups: the cluster serves no consumer groups (its ApiVersions
// lists no JoinGroup): a node built before the group coordinator.
var ErrNoGroups = errors.New("soak: the cluster serves no consumer groups (ApiVersions lists no JoinGroup); run with --groups 0")

// served checks that every broker lists JoinGroup and OffsetCommit.
func (w *groupWorkload) served(ctx context.Context) error {
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	vs, err := w.adm.ApiVersions(actx)
	if err != nil {
		return fmt.Errorf("soak: ApiVersions: %w", err)
	}
	for _, v := range vs.Sorted() {
		if v.Err != nil {
			continue
		}
		_, join := v.KeyMaxVersion(int16(kmsg.JoinGroup))
		_, commit := v.KeyMaxVersion(int16(kmsg.OffsetCommit))
		if !join || !commit {
			return fmt.Errorf("%w: node %d", ErrNoGroups, v.NodeID)
		}
	}
	return nil
}

// alignOffsetsTopic gives __consumer_offsets the run's durability and
// min.insync.replicas, as an operator would, so that the groups' commits
// are as durable as the records they point into: the node creates it (on
// first use, which a FindCoordinator here triggers) with the default
// durability, page-cache, whose commits a power loss of every replica
// may lose.
func (w *groupWorkload) alignOffsetsTopic(ctx context.Context) error {
	return alignInternalTopic(ctx, w.out, w.adm, w.o, group.OffsetsTopic, func(ctx context.Context) {
		w.adm.FindGroupCoordinators(ctx, w.groups...)
	})
}

// start starts every group's members; the first member of the first group
// is the wrong one in the groups negative control.
func (w *groupWorkload) start(ctx context.Context) error {
	if err := w.served(ctx); err != nil {
		return err
	}
	if err := w.alignOffsetsTopic(ctx); err != nil {
		return err
	}
	for gi, g := range w.groups {
		for i := range w.o.GroupMembers {
			wrong := w.o.NegativeControl == NegGroups && gi == 0 && i == 0
			if _, err := w.join(ctx, g, wrong); err != nil {
				return err
			}
		}
	}
	return nil
}

// join starts a new member of group g.
func (w *groupWorkload) join(ctx context.Context, g string, wrong bool) (*member, error) {
	w.mu.Lock()
	w.next++
	m := &member{w: w, name: fmt.Sprintf("%s/m%d", g, w.next), group: g, wrong: wrong, owned: map[TP]bool{}, gen: -1,
		pend: map[TP]kgo.EpochOffset{}, done: make(chan struct{})}
	if wrong {
		w.h.Wrong = m.name
	}
	w.mu.Unlock()
	opts := append(clientOpts(w.seeds),
		kgo.ConsumerGroup(g),
		kgo.ConsumeTopics(w.topic),
		kgo.Balancers(balancer(w.h.Groups[g])),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(w.o.GroupSession),
		kgo.HeartbeatInterval(w.o.GroupSession/6),
		kgo.RebalanceTimeout(2*w.o.GroupSession),
		kgo.FetchMaxWait(500*time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { m.changed("assigned", ps) }),
		kgo.OnPartitionsRevoked(func(ctx context.Context, _ *kgo.Client, ps map[string][]int32) {
			m.commit(ctx, ps) // what it processed of them, before they go
			m.changed("revoked", ps)
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { m.drop(ps); m.changed("lost", ps) }),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	m.cl = cl
	mctx, cancel := context.WithCancel(ctx)
	m.cancel = cancel
	w.mu.Lock()
	w.members[m.name] = m
	w.mu.Unlock()
	w.wg.Go(func() { defer close(m.done); m.run(mctx) })
	return m, nil
}

// run polls, records, and commits every GroupCommitEvery, until ctx ends.
func (m *member) run(ctx context.Context) {
	for ctx.Err() == nil {
		fs := m.cl.PollRecords(ctx, 2000)
		if fs.IsClientClosed() {
			return
		}
		now := time.Now()
		_, gen := m.cl.GroupMetadata()
		var ds []Delivery
		m.pmu.Lock()
		fs.EachRecord(func(r *kgo.Record) {
			k, ok := DecodeValue(r.Value)
			tp := TP{r.Topic, r.Partition}
			ds = append(ds, Delivery{Group: m.group, Member: m.name, Generation: gen, TP: tp, Offset: r.Offset, Key: k, Valid: ok, At: now})
			m.pend[tp] = kgo.EpochOffset{Epoch: r.LeaderEpoch, Offset: r.Offset + 1}
		})
		due := len(m.pend) > 0 && time.Since(m.lastCmit) >= m.w.o.GroupCommitEvery
		m.pmu.Unlock()
		if len(ds) > 0 {
			m.w.mu.Lock()
			m.w.h.Deliveries = append(m.w.h.Deliveries, ds...)
			m.w.mu.Unlock()
		}
		if due {
			m.commit(ctx, nil)
		}
		m.cl.AllowRebalance()
	}
}

// commit commits what the member polled and did not commit yet: of the
// partitions in only (nil: all). The wrong member of the negative control
// commits 100 past what it polled every third commit and 200 before it
// every third but one.
func (m *member) commit(_ context.Context, only map[string][]int32) {
	m.pmu.Lock()
	offs := map[string]map[int32]kgo.EpochOffset{}
	var tps []TP
	for tp, eo := range m.pend {
		if only != nil && !slices.Contains(only[tp.Topic], tp.Partition) {
			continue
		}
		if m.wrong {
			switch m.commits % 3 {
			case 1:
				eo.Offset += 100
			case 2:
				eo.Offset = max(eo.Offset-200, 0)
			}
		}
		if offs[tp.Topic] == nil {
			offs[tp.Topic] = map[int32]kgo.EpochOffset{}
		}
		offs[tp.Topic][tp.Partition] = eo
		tps = append(tps, tp)
	}
	for _, tp := range tps {
		delete(m.pend, tp)
	}
	m.commits++
	m.lastCmit = time.Now()
	m.pmu.Unlock()
	if len(tps) == 0 {
		return
	}
	cm := Commit{Group: m.group, Member: m.name, Generation: -1, Sent: time.Now()}
	// Not the member's context: a commit begun is seen to its end (or a
	// timeout: unknown outcome), also when the member is leaving.
	cctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	m.cl.CommitOffsetsSync(cctx, offs, func(_ *kgo.Client, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		cm.Done = time.Now()
		cm.Parts = commitParts(offs, req, resp, err)
		if req != nil {
			cm.MemberID, cm.Generation = req.MemberID, req.Generation
		}
	})
	if cm.Done.IsZero() {
		cm.Done = time.Now()
		cm.Parts = commitParts(offs, nil, nil, errors.New("no callback"))
	}
	m.w.mu.Lock()
	m.w.h.Commits = append(m.w.h.Commits, cm)
	m.w.mu.Unlock()
}

// refusedCommit are OffsetCommit errors the coordinator answers before
// writing anything (the generation, member and request checks): such a
// commit was definitely not written. Anything else may have been.
var refusedCommit = []error{kerr.IllegalGeneration, kerr.UnknownMemberID, kerr.RebalanceInProgress, kerr.FencedInstanceID,
	kerr.CoordinatorLoadInProgress, kerr.UnknownTopicOrPartition, kerr.OffsetMetadataTooLarge,
	kerr.GroupAuthorizationFailed, kerr.TopicAuthorizationFailed, kerr.StaleMemberEpoch, kerr.InvalidGroupID}

// commitParts turns a commit's request and answer into its parts: each
// partition of offs with the outcome the answer gave it (Unknown without
// one).
func commitParts(offs map[string]map[int32]kgo.EpochOffset, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) []CommitPart {
	codes := map[TP]int16{}
	if resp != nil && err == nil {
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				codes[TP{t.Topic, p.Partition}] = p.ErrorCode
			}
		}
	}
	sent := map[TP]int64{}
	if req != nil {
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				sent[TP{t.Topic, p.Partition}] = p.Offset
			}
		}
	}
	var parts []CommitPart
	for t, ps := range offs {
		for p, eo := range ps {
			tp := TP{t, p}
			cp := CommitPart{TP: tp, Offset: eo.Offset, Outcome: Unknown}
			if o, ok := sent[tp]; ok {
				cp.Offset = o
			}
			code, answered := codes[tp]
			switch {
			case err != nil:
				cp.Err = err.Error()
			case !answered:
				cp.Err = "no answer for the partition"
			case code == 0:
				cp.Outcome = Acked
			default:
				e := kerr.ErrorForCode(code)
				cp.Err = e.Error()
				for _, r := range refusedCommit {
					if errors.Is(e, r) {
						cp.Outcome = Failed
					}
				}
			}
			parts = append(parts, cp)
		}
	}
	slices.SortFunc(parts, func(a, b CommitPart) int { return cmpTP(a.TP, b.TP) })
	return parts
}

// drop forgets what the member polled of partitions it lost (it can no
// longer commit them).
func (m *member) drop(ps map[string][]int32) {
	m.pmu.Lock()
	defer m.pmu.Unlock()
	for t, parts := range ps {
		for _, p := range parts {
			delete(m.pend, TP{t, p})
		}
	}
}

// changed records an assignment event: ps were assigned (added) or
// revoked/lost (removed).
func (m *member) changed(ev string, ps map[string][]int32) {
	id, gen := m.cl.GroupMetadata()
	now := time.Now()
	w := m.w
	w.mu.Lock()
	defer w.mu.Unlock()
	var ch []TP
	for t, parts := range ps {
		for _, p := range parts {
			tp := TP{t, p}
			ch = append(ch, tp)
			if ev == "assigned" {
				m.owned[tp] = true
			} else {
				delete(m.owned, tp)
			}
		}
	}
	slices.SortFunc(ch, cmpTP)
	m.record(ev, id, gen, ch, now)
}

// record appends an assignment event of m (w.mu held).
func (m *member) record(ev, id string, gen int32, ch []TP, at time.Time) {
	owned := slices.SortedFunc(mapKeysTP(m.owned), cmpTP)
	if gen != m.gen {
		m.changes++
	}
	m.gen = gen
	m.w.h.Assignments = append(m.w.h.Assignments, Assignment{Group: m.group, Member: m.name, MemberID: id, Generation: gen,
		Event: ev, Changed: ch, Owned: owned, At: at})
	m.w.settle(at)
}

func mapKeysTP(m map[TP]bool) func(func(TP) bool) {
	return func(yield func(TP) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// leave stops m: its loop ends, Close leaves the group (revoking its
// partitions, which commits what it processed of them).
func (m *member) leave() {
	m.w.mu.Lock()
	m.leaving = true
	m.w.mu.Unlock()
	m.cancel()
	<-m.done
	m.commit(context.Background(), nil)
	m.cl.Close()
	id, gen := m.cl.GroupMetadata()
	w := m.w
	w.mu.Lock()
	delete(w.members, m.name)
	clear(m.owned)
	m.record("left", id, gen, nil, time.Now())
	w.mu.Unlock()
}
