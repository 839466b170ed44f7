package group

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// MaxMemberMetadataBytes bounds what one member may hand the coordinator
// in a JoinGroup (the names and metadata of its protocols) and what the
// leader may assign one member in a SyncGroup. Kafka has no bound; over it
// the request is answered INVALID_REQUEST and nothing is kept, so that a
// client cannot exhaust the coordinator's memory.
const MaxMemberMetadataBytes = 1 << 20

// MaxGroupMetadataBytes bounds the protocols of all members of one group:
// a JoinGroup that would take a group past it is answered
// GROUP_MAX_SIZE_REACHED, as if group.max.size were reached, so that
// thousands of joins with large metadata cannot exhaust memory even when
// group.max.size is unbounded (Kafka's default).
const MaxGroupMetadataBytes = 64 << 20

// groupState is Kafka's ClassicGroupState.
type groupState int8

const (
	stateEmpty groupState = iota
	statePreparing
	stateCompleting
	stateStable
	stateDead
)

// stateNames are Kafka's names, as DescribeGroups and ListGroups show them.
var stateNames = [...]string{"Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"}

func (s groupState) String() string { return stateNames[s] }

// protocol is one protocol a member supports, in its order of preference.
type protocol struct {
	name     string
	metadata []byte
}

// waiter is a request waiting for its answer inside the state machine.
type waiter struct {
	id      uint64
	version int16
}

// member is one member of a classic group.
type member struct {
	id, instanceID       string // instanceID "" = dynamic
	clientID, clientHost string
	session, rebalance   time.Duration
	protocols            []protocol
	assignment           []byte
	join, sync           *waiter   // JoinGroup / SyncGroup waiting for an answer
	deadline             time.Time // session expiry
	joinedThisRebalance  bool      // rejoined since the rebalance began
}

func (m *member) static() bool { return m.instanceID != "" }

// protocolBytes is what m's protocols weigh against the bounds.
func protocolBytes(ps []protocol) int {
	n := 0
	for _, p := range ps {
		n += len(p.name) + len(p.metadata)
	}
	return n
}

func (m *member) metadata(proto string) []byte {
	for _, p := range m.protocols {
		if p.name == proto {
			return p.metadata
		}
	}
	return nil
}

// sameProtocols: Kafka's MemberMetadata.matches.
func (m *member) sameProtocols(ps []protocol) bool {
	return slices.EqualFunc(m.protocols, ps, func(a, b protocol) bool {
		return a.name == b.name && string(a.metadata) == string(b.metadata)
	})
}

// offset is one committed offset (Kafka's OffsetAndMetadata).
type offset struct {
	offset      int64
	leaderEpoch int32
	metadata    string
	commitMs    int64
	// order is where the commit's record lies in the log, for comparing
	// a transactional commit with a plain one (the later wins): the
	// record's offset when replayed, the Append's rank when written here
	// (ranks are above every offset replayed).
	order int64
}

// group is one classic group with its committed offsets.
type group struct {
	id           string
	state        groupState
	prevState    groupState
	stateTime    time.Time // when it entered state (currentStateTimestamp)
	generation   int32
	protocolType string // "" = none (a group of offsets only)
	protocol     string // selected protocol, "" = none
	leader       string
	members      map[string]*member
	static       map[string]string    // instance id → member id
	pending      map[string]time.Time // KIP-394 member ids given out → expiry

	// The rebalance: the join phase ends at joinDeadline (or when every
	// member has joined, unless initialDelay); newMemberAdded and
	// remaining drive the delayed initial join.
	joinDeadline   time.Time
	initialDelay   bool
	delay          time.Duration
	remaining      time.Duration
	newMemberAdded bool

	// Members that must still send SyncGroup before syncDeadline.
	pendingSync  map[string]bool
	syncDeadline time.Time
	assigning    uint64 // the leader's assignment Append in flight (0: none)

	subscribed map[string]bool // topics of the consumer protocol; nil = unknown

	offsets map[string]map[int32]offset
	// inflight counts commits in flight per partition (OffsetDelete and
	// DeleteGroups write tombstones for them too).
	inflight map[string]map[int32]int
	tombs    map[tp]*tombMark // see tombstones.go
	// txns are the pending transactional offsets by producer id (nil:
	// none): txn_offsets.go.
	txns map[int64]pendingTxn

	heapAt time.Time // the time of this group's entry in the timer heap

	// consumer is the KIP-848 group (nil: a classic group). A consumer
	// group has no classic members; its state is Empty or Stable here
	// (retention reads it) and its own (cgroup.stateName) elsewhere.
	consumer *cgroup
}

func newGroup(id string, now time.Time) *group {
	return &group{
		id: id, state: stateEmpty, prevState: stateEmpty, stateTime: now,
		members: map[string]*member{}, static: map[string]string{}, pending: map[string]time.Time{},
		pendingSync: map[string]bool{}, offsets: map[string]map[int32]offset{},
		inflight: map[string]map[int32]int{}, tombs: map[tp]*tombMark{},
	}
}

func (g *group) transition(to groupState, now time.Time) {
	g.prevState, g.state, g.stateTime = g.state, to, now
}

// sortedMembers is the members ordered by id (Kafka's order is a hash
// map's; ours is stable so that answers and records are reproducible).
func (g *group) sortedMembers() []*member {
	ms := make([]*member, 0, len(g.members))
	for _, m := range g.members {
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b *member) int {
		switch {
		case a.id < b.id:
			return -1
		case a.id > b.id:
			return 1
		}
		return 0
	})
	return ms
}

// validateMember is Kafka's ClassicGroup.validateMember.
func (g *group) validateMember(memberID string, instanceID *string) int16 {
	if instanceID != nil && *instanceID != "" {
		id, ok := g.static[*instanceID]
		if !ok {
			return codeUnknownMember
		}
		if id != memberID {
			return codeFenced
		}
		return 0
	}
	if _, ok := g.members[memberID]; !ok {
		return codeUnknownMember
	}
	return 0
}

// rebalanceTimeout is the longest of the members'.
func (g *group) rebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalance)
	}
	return d
}

// allJoined: every member rejoined and no KIP-394 member is on its way.
func (g *group) allJoined() bool {
	for _, m := range g.members {
		if m.join == nil {
			return false
		}
	}
	return len(g.pending) == 0
}

// supportsProtocols is Kafka's ClassicGroup.supportsProtocols: an empty
// group takes any non-empty protocol type and list; otherwise the type must
// match and one of the protocols must be supported by every member.
func (g *group) supportsProtocols(protocolType string, ps []protocol) bool {
	if len(g.members) == 0 {
		return protocolType != "" && len(ps) > 0
	}
	if protocolType != g.protocolType {
		return false
	}
	for _, p := range ps {
		if g.supportedByAll(p.name, nil) {
			return true
		}
	}
	return false
}

// supportedByAll: every member but skip supports proto.
func (g *group) supportedByAll(proto string, skip *member) bool {
	for _, m := range g.members {
		if m == skip {
			continue
		}
		if !slices.ContainsFunc(m.protocols, func(p protocol) bool { return p.name == proto }) {
			return false
		}
	}
	return true
}

// selectProtocol is Kafka's ClassicGroup.selectProtocol: among the
// protocols every member supports, each member votes for the first it
// lists; the most votes win. Ties go to the candidate the leader (else the
// first member) prefers, where Kafka's pick is a hash map's.
func (g *group) selectProtocol() string {
	ms := g.sortedMembers()
	if len(ms) == 0 {
		return ""
	}
	var candidates []string
	first := ms[0]
	if l := g.members[g.leader]; l != nil {
		first = l
	}
	for _, p := range first.protocols {
		if g.supportedByAll(p.name, nil) {
			candidates = append(candidates, p.name)
		}
	}
	votes := map[string]int{}
	for _, m := range ms {
		for _, p := range m.protocols {
			if slices.Contains(candidates, p.name) {
				votes[p.name]++
				break
			}
		}
	}
	best := ""
	for _, c := range candidates {
		if best == "" || votes[c] > votes[best] {
			best = c
		}
	}
	return best
}

// computeSubscribed decodes the consumer protocol's subscriptions (Kafka's
// ClassicGroup.computeSubscribedTopics): nil when the group does not use
// the consumer protocol, has no protocol yet, or a subscription does not
// decode. Like Kafka it reads only the version-0 prefix (topics, user
// data) that every version of the subscription begins with.
func (g *group) computeSubscribed() {
	g.subscribed = nil
	if g.protocolType != "consumer" {
		return
	}
	if len(g.members) == 0 {
		g.subscribed = map[string]bool{}
		return
	}
	if g.protocol == "" {
		return
	}
	topics := map[string]bool{}
	for _, m := range g.members {
		b := m.metadata(g.protocol)
		if len(b) < 2 {
			return
		}
		v0 := append([]byte{0, 0}, b[2:]...)
		var meta kmsg.ConsumerMemberMetadata
		if err := meta.ReadFrom(v0); err != nil {
			return
		}
		for _, t := range meta.Topics {
			topics[t] = true
		}
	}
	g.subscribed = topics
}

// subscribedTo is Kafka's ClassicGroup.isSubscribedToTopic: a group that
// does not know its subscriptions counts as subscribed to every topic if
// it uses the consumer protocol (so OffsetDelete does not remove offsets
// a live member may be using), to none otherwise.
func (g *group) subscribedTo(topic string) bool {
	if g.subscribed == nil {
		return g.protocolType == "consumer"
	}
	return g.subscribed[topic]
}

func (g *group) hasInflight(topic string, p int32) bool { return g.inflight[topic][p] > 0 }

func (g *group) addInflight(topic string, p int32, n int) {
	ps := g.inflight[topic]
	if ps == nil {
		ps = map[int32]int{}
		g.inflight[topic] = ps
	}
	ps[p] += n
	if ps[p] <= 0 {
		delete(ps, p)
		delete(g.tombs, tp{topic, p})
		if len(ps) == 0 {
			delete(g.inflight, topic)
		}
	}
}

// metadataBytes is what the members' protocols weigh.
func (g *group) metadataBytes() int {
	n := 0
	for _, m := range g.members {
		n += protocolBytes(m.protocols)
	}
	return n
}
