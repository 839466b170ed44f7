package replica

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Replication throttles (Kafka's ReplicationQuotaManager, KIP-73), as
// kafka-reassign-partitions.sh --throttle sets them:
//
//   - leader.replication.throttled.rate (bytes/s) bounds what this broker,
//     as leader, sends to followers of its leader-throttled replicas
//     (the topic's leader.replication.throttled.replicas names
//     partition:broker, or "*") that are not in the ISR: a fetch past
//     the quota gets no records for them (it long-polls like any fetch
//     with nothing new), else at most the bytes the quota has left (and
//     at least one batch, as every fetch).
//   - follower.replication.throttled.rate bounds what this broker fetches
//     for its follower-throttled replicas not in the ISR: past the quota
//     the fetcher leaves them out of its requests until the quota refills.
//
// In-sync replicas are never throttled, so acks=all produce does not wait
// on a throttle; a throttled replica still catches up, at about the rate.
// Each quota is a bucket that fills at the rate up to one second's worth
// (a burst of one second after idling), drained by the record bytes sent
// or fetched; it may go below zero by one batch.

// Unthrottled is the rate of a throttle that is off: Kafka's default,
// Long.MAX_VALUE.
const Unthrottled = math.MaxInt64

// quota is one broker-wide byte-rate throttle. Its lock is a leaf.
type quota struct {
	// moved counts the record bytes of throttled replicas moved through
	// it, whatever the rate (Kafka's LeaderReplication and
	// FollowerReplication byte-rate measure the same bytes).
	moved  atomic.Int64
	mu     sync.Mutex
	rate   int64 // bytes/s; Unthrottled: off
	tokens float64
	last   time.Time
}

func newQuota() *quota { return &quota{rate: Unthrottled} }

// set changes the rate, keeping the bucket (capped at the new rate).
func (q *quota) set(rate int64, now time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.fill(now)
	if q.rate == Unthrottled && rate != Unthrottled {
		q.tokens = float64(rate) // a fresh throttle starts with one second
	}
	q.rate = rate
	q.tokens = min(q.tokens, float64(rate))
}

// fill adds what the rate earned since the last call. q.mu must be held.
func (q *quota) fill(now time.Time) {
	if !q.last.IsZero() && now.After(q.last) && q.rate != Unthrottled {
		q.tokens = min(q.tokens+now.Sub(q.last).Seconds()*float64(q.rate), float64(q.rate))
	}
	q.last = now
}

// available returns the bytes that may be moved now (≤ 0: none;
// math.MaxInt: no throttle) and, when none, how long until some may.
func (q *quota) available(now time.Time) (int, time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.rate == Unthrottled {
		return math.MaxInt, 0
	}
	q.fill(now)
	if q.tokens >= 1 {
		return int(min(q.tokens, float64(math.MaxInt32))), 0
	}
	if q.rate <= 0 {
		return 0, time.Second
	}
	wait := time.Duration((1 - q.tokens) / float64(q.rate) * float64(time.Second))
	return 0, max(wait, time.Millisecond)
}

// record takes n bytes moved from the bucket.
func (q *quota) record(n int, now time.Time) {
	if n <= 0 {
		return
	}
	q.moved.Add(int64(n))
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.rate == Unthrottled {
		return
	}
	q.fill(now)
	q.tokens -= float64(n)
}

// Throttle is what a replica's topic configs and the image say about
// throttling it (set by the node on every reconcile): whether it is
// leader- and follower-throttled here, the partition's ISR, and the
// replicas a reassignment in progress adds (their bytes count as
// reassignment bytes).
type Throttle struct {
	Leader, Follower bool
	ISR              []int32
	Adding           []int32
}

// SetThrottle sets r's throttle (the ISR slice is the caller's, never
// changed afterwards).
func (r *Replica) SetThrottle(t Throttle) {
	r.throttle.Lock()
	r.throttle.t = t
	r.throttle.Unlock()
}

// leaderThrottled says whether a fetch by follower counts against the
// leader quota: the replica is leader-throttled and follower is not in
// the ISR.
func (r *Replica) leaderThrottled(follower int32) bool {
	r.throttle.Lock()
	defer r.throttle.Unlock()
	return r.throttle.t.Leader && !slices.Contains(r.throttle.t.ISR, follower)
}

// followerThrottled says whether this replica's fetches count against
// the follower quota: it is follower-throttled and not in the ISR.
func (r *Replica) followerThrottled() bool {
	r.throttle.Lock()
	defer r.throttle.Unlock()
	return r.throttle.t.Follower && !slices.Contains(r.throttle.t.ISR, r.m.nodeID)
}

// adding says whether id is a replica a reassignment in progress adds.
func (r *Replica) adding(id int32) bool {
	r.throttle.Lock()
	defer r.throttle.Unlock()
	return slices.Contains(r.throttle.t.Adding, id)
}

// ReplicationBytes counts record bytes moved by replication since the
// process started: those of throttled replicas (leader: sent to
// throttled followers; follower: fetched for throttled replicas here)
// and those of reassignments (in: fetched here as an adding replica;
// out: sent to adding replicas), Kafka's ReassignmentBytesInPerSec and
// ReassignmentBytesOutPerSec.
type ReplicationBytes struct {
	ThrottledLeader, ThrottledFollower int64
	ReassignmentIn, ReassignmentOut    int64
}

// ReplicationBytes returns the counts so far.
func (m *Manager) ReplicationBytes() ReplicationBytes {
	return ReplicationBytes{
		ThrottledLeader: m.leaderQuota.moved.Load(), ThrottledFollower: m.followerQuota.moved.Load(),
		ReassignmentIn: m.reassignIn.Load(), ReassignmentOut: m.reassignOut.Load(),
	}
}

// SetThrottleRates sets this broker's leader and follower replication
// throttles in bytes/s (Unthrottled: off), live.
func (m *Manager) SetThrottleRates(leader, follower int64) {
	now := time.Now()
	m.leaderQuota.set(leader, now)
	m.followerQuota.set(follower, now)
}
