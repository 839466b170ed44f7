package replica

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/node/kafka"
	"github.com/sluice-log/sluice/partition"
	"github.com/sluice-log/sluice/quorum"
)

// Replica fetcher settings, Kafka's defaults.
const (
	replicaFetchWaitMax          = 500 * time.Millisecond // replica.fetch.wait.max.ms
	replicaFetchMaxBytes         = 1 << 20                // replica.fetch.max.bytes
	replicaFetchResponseMaxBytes = 10 << 20               // replica.fetch.response.max.bytes
	replicaFetchBackoff          = time.Second            // replica.fetch.backoff.ms
	replicaSocketTimeout         = 30 * time.Second       // replica.socket.timeout.ms
	// maxResponseFrame bounds a response frame read from a leader.
	maxResponseFrame = replicaFetchResponseMaxBytes + 1<<20
	// FetchBackoff is how long a follower whose partition got an
	// error in a fetch answer (NOT_LEADER_OR_FOLLOWER while the metadata
	// moves, say) waits before asking again: shorter than Kafka's 1 s
	// replica.fetch.backoff.ms, because a new leader is usually known by then.
	FetchBackoff = 100 * time.Millisecond
)

// errLeaderUnreachable is what a follower's fetch gets when the leader
// could not be asked: the state machine fetches again on a later tick.
var errLeaderUnreachable = errors.New("replica: partition leader unreachable")

// fetcher is the replica fetcher for one leader broker (Kafka's
// ReplicaFetcherThread): it sends the fetches its followers queued as one
// Fetch request (v15: topics by ID, ReplicaState with this broker's id
// and epoch, last_fetched_epoch) and hands each partition's answer back to
// its replica. One request is in flight at a time; the leader long-polls
// it (replica.fetch.wait.max.ms). Requests use a fetch session (KIP-227):
// after the first, full one, a request carries only the partitions whose
// fetch position changed and those that left, and the answer only the
// partitions with news; the others stay pending in the session.
type fetcher struct {
	m      *Manager
	leader int32

	// queue holds each follower's latest fetch (its lock is a leaf,
	// taken under Replica.mu by enqueue).
	queue *queue[partition.FetchRequest]
	// deferred holds the fetches of throttled replicas held back until
	// the follower quota refills (requeue).
	deferred *queue[partition.FetchRequest]

	// scratch is the Fetch request that request rebuilds for each round,
	// and its topic index (run's goroutine only).
	scratch struct {
		req     kmsg.FetchRequest
		byTopic map[quorum.UUID]int
	}

	// mu is a leaf: taken under Manager.fetch by stopFetchers.
	mu struct {
		sync.Mutex
		// conn is used by run's goroutine only (closed by stopFetchers):
		// the record batches of the last response alias its buffer until
		// they are appended and the next fetch reuses it.
		conn *kafka.ClientConn
	}
}

// fetcher returns (starting if needed) the fetcher for leader.
func (m *Manager) fetcher(leader int32) *fetcher {
	m.fetch.Lock()
	defer m.fetch.Unlock()
	f := m.fetch.fetchers[leader]
	if f == nil {
		f = &fetcher{m: m, leader: leader, queue: newQueue[partition.FetchRequest](), deferred: newQueue[partition.FetchRequest]()}
		m.fetch.fetchers[leader] = f
		if !m.fetch.stopped {
			m.wg.Add(1)
			go f.run()
		}
	}
	return f
}

// stopFetchers closes the fetchers' connections so that a fetch in flight
// returns at once; run them no more.
func (m *Manager) stopFetchers() {
	m.fetch.Lock()
	defer m.fetch.Unlock()
	m.fetch.stopped = true
	for _, f := range m.fetch.fetchers {
		f.mu.Lock()
		if f.mu.conn != nil {
			f.mu.conn.Close()
		}
		f.mu.Unlock()
	}
}

// enqueue queues a follower's fetch. It never blocks.
func (f *fetcher) enqueue(r *Replica, req partition.FetchRequest) { f.queue.put(r, req) }

// fetchKey names a partition in a Fetch: topic ID and index.
type fetchKey struct {
	topic     quorum.UUID
	partition int32
}

type fetchItem struct {
	r   *Replica
	req partition.FetchRequest
	// maxBytes is the partition's max bytes in the request: less than
	// replica.fetch.max.bytes for a throttled replica.
	maxBytes int32
	// throttled: its records count against the follower quota.
	throttled bool
}

// requeue puts the fetches the follower quota held back in the queue
// again.
func (f *fetcher) requeue() {
	for r, req := range f.deferred.take() {
		f.queue.put(r, req)
	}
}

// sentPart is a partition's fetch position (and max bytes: a throttle
// changes it) as the leader's fetch session holds it.
type sentPart struct {
	offset                    int64
	leaderEpoch, fetchedEpoch int32
	maxBytes                  int32
}

func sentOf(it fetchItem) sentPart {
	return sentPart{it.req.FetchOffset, it.req.CurrentLeaderEpoch, it.req.LastFetchedEpoch, it.maxBytes}
}

// fetchSession is this fetcher's side of its fetch session (KIP-227) with
// the leader, used by run's goroutine only: at epoch 0 the next request
// is full and asks for a new session (closing session id, if any: Kafka's
// nextCloseExisting, so that a reset leaves no session behind on the
// leader); sent is what the leader's session holds.
type fetchSession struct {
	id, epoch int32
	sent      map[fetchKey]sentPart
}

func (s *fetchSession) reset() { s.epoch, s.sent = 0, nil }

func (f *fetcher) run() {
	defer f.m.wg.Done()
	defer f.closeConn()
	var failing error
	var sess fetchSession
	// pending holds the fetches sent and not yet answered: in a session,
	// a partition without news is left out of the answer and stays in
	// the session, so its fetch goes on in the next request without
	// being sent again. An idle follower's requests carry nothing.
	pending := map[fetchKey]fetchItem{}
	// queued is the fetcher's spare map for f.queue.swap.
	queued := map[*Replica]partition.FetchRequest{}
	for {
		if len(pending) == 0 {
			select {
			case <-f.m.stop:
				return
			case <-f.queue.wake:
			}
		} else {
			select {
			case <-f.m.stop:
				return
			default:
			}
		}
		var wait time.Duration
		queued = f.queue.swap(queued)
		for r, req := range queued {
			it := fetchItem{r: r, req: req, maxBytes: replicaFetchMaxBytes}
			if r.followerThrottled() {
				// follower.replication.throttled.rate (throttle.go):
				// past the quota the replica waits out of the request
				// (and so leaves the session until it is back).
				avail, w := f.m.followerQuota.available(time.Now())
				if avail <= 0 {
					f.deferred.put(r, req)
					wait = max(wait, w)
					continue
				}
				it.maxBytes, it.throttled = int32(min(avail, replicaFetchMaxBytes)), true
			}
			pending[fetchKey{r.topicID, r.partition}] = it
		}
		clear(queued) // the spare of the next swap
		if wait > 0 {
			time.AfterFunc(wait, f.requeue)
		}
		// A fetch whose replica moved on (a new leader, a truncation,
		// a repair, removal) leaves the session.
		for k, it := range pending {
			if !it.r.fetchWanted(it.req.Seq) {
				delete(pending, k)
			}
		}
		if len(pending) == 0 {
			continue
		}
		req, full := f.request(&sess, pending)
		resp, err := f.fetch(req)
		if err == nil && sessionError(resp.ErrorCode) {
			// The leader lost the session (restart, eviction) or we
			// lost count: start over with a full fetch, at once.
			sess.reset()
			continue
		}
		if err == nil && resp.ErrorCode != 0 {
			err = fmt.Errorf("fetch from broker %d: error code %d", f.leader, resp.ErrorCode)
		}
		if err != nil {
			sess.reset()
			f.closeConn()
			if failing == nil || failing.Error() != err.Error() {
				f.m.log.Warn("node: replica fetch failed; retrying", "leader", f.leader, "err", err)
			}
			failing = err
			// replica.fetch.backoff.ms before the followers ask again.
			t := time.NewTimer(replicaFetchBackoff)
			select {
			case <-f.m.stop:
				t.Stop()
				return
			case <-t.C:
			}
			for k, it := range pending {
				delete(pending, k)
				it.r.fetched(it.req, nil, errLeaderUnreachable)
			}
			continue
		}
		if failing != nil {
			f.m.log.Info("node: replica fetch works again", "leader", f.leader)
			failing = nil
		}
		sess.answered(req, resp, full, pending)
		// Each partition's answer goes to its pending fetch, found by
		// topic ID and partition.
		var flushes []<-chan struct{}
		for i := range resp.Topics {
			t := &resp.Topics[i]
			for j := range t.Partitions {
				rp := &t.Partitions[j]
				k := fetchKey{t.TopicID, rp.Partition}
				it, ok := pending[k]
				if !ok {
					continue
				}
				delete(pending, k)
				if it.throttled {
					f.m.followerQuota.record(len(rp.RecordBatches), time.Now())
				}
				if it.r.adding(f.m.nodeID) {
					f.m.reassignIn.Add(int64(len(rp.RecordBatches)))
				}
				if ch := it.r.fetched(it.req, rp, nil); ch != nil {
					flushes = append(flushes, ch)
				}
			}
		}
		if resp.SessionID == 0 {
			// No session: every partition should have been answered.
			for k, it := range pending {
				delete(pending, k)
				it.r.fetched(it.req, nil, errLeaderUnreachable)
			}
		}
		// Sync durability: a follower fetches again only once it fsynced
		// what it got. Wait for those fsyncs (they run in parallel) so the
		// next request carries every partition, instead of leaving one
		// behind a long poll of the others.
		for _, ch := range flushes {
			select {
			case <-ch:
			case <-f.m.stop:
				return
			}
		}
	}
}

// sessionError says code is a fetch session error, after which the
// fetcher starts a new session.
func sessionError(code int16) bool {
	return code == kerr.FetchSessionIDNotFound.Code || code == kerr.InvalidFetchSessionEpoch.Code ||
		code == kerr.FetchSessionTopicIDError.Code
}

// answered records what the leader's session holds after resp answered
// req (full says req carried every pending partition).
func (s *fetchSession) answered(req *kmsg.FetchRequest, resp *kmsg.FetchResponse, full bool, pending map[fetchKey]fetchItem) {
	if resp.SessionID == 0 || !full && resp.SessionID != s.id {
		s.id = resp.SessionID
		s.reset() // none kept (cache full, or the session emptied)
		return
	}
	if full {
		s.id, s.epoch, s.sent = resp.SessionID, 1, make(map[fetchKey]sentPart, len(pending))
	} else {
		s.epoch = nextSessionEpoch(s.epoch)
		for _, t := range req.ForgottenTopics {
			for _, p := range t.Partitions {
				delete(s.sent, fetchKey{t.TopicID, p})
			}
		}
	}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			s.sent[fetchKey{t.TopicID, p.Partition}] = sentPart{p.FetchOffset, p.CurrentLeaderEpoch, p.LastFetchedEpoch, p.PartitionMaxBytes}
		}
	}
}

// nextSessionEpoch is the epoch after e: 1, 2, …, MaxInt32, then 1.
func nextSessionEpoch(e int32) int32 {
	if e == 1<<31-1 {
		return 1
	}
	return e + 1
}

// request builds the next Fetch for the pending fetches: in a session,
// only the partitions whose position the leader does not hold and the
// ones to forget; else all of them, at epoch 0 to open a session. full
// says it carries every pending partition.
//
// The request is the fetcher's own, rebuilt in place each time (run's
// goroutine only): valid until the next call, its slices and index maps
// recycled, so a round allocates nothing once they have grown.
func (f *fetcher) request(sess *fetchSession, pending map[fetchKey]fetchItem) (req *kmsg.FetchRequest, full bool) {
	req = &f.scratch.req
	topics, forgotten := req.Topics[:0], req.ForgottenTopics[:0]
	*req = kmsg.NewFetchRequest()
	// v15: topics by ID, and ReplicaState with this broker's id and epoch
	// (KIP-903), without which the leader counts nothing.
	req.SetVersion(15)
	req.ReplicaID = -1
	req.ReplicaState.ID, req.ReplicaState.Epoch = f.m.nodeID, f.m.host.BrokerEpoch()
	req.MaxWaitMillis = int32(replicaFetchWaitMax / time.Millisecond)
	req.MinBytes = 1
	req.MaxBytes = replicaFetchResponseMaxBytes
	req.SessionID, req.SessionEpoch = sess.id, sess.epoch
	full = sess.epoch == 0
	byTopic := f.scratch.byTopic
	if byTopic == nil {
		byTopic = map[quorum.UUID]int{}
		f.scratch.byTopic = byTopic
	}
	clear(byTopic)
	for k, it := range pending {
		if !full {
			if sent, ok := sess.sent[k]; ok && sent == sentOf(it) {
				continue
			}
		}
		i, ok := byTopic[k.topic]
		if !ok {
			i = len(topics)
			byTopic[k.topic] = i
			topics = appendTopic(topics, k.topic)
		}
		req.Topics = topics
		p := kmsg.NewFetchRequestTopicPartition()
		p.Partition = k.partition
		p.CurrentLeaderEpoch = it.req.CurrentLeaderEpoch
		p.FetchOffset = it.req.FetchOffset
		p.LastFetchedEpoch = it.req.LastFetchedEpoch
		p.LogStartOffset = -1
		p.PartitionMaxBytes = it.maxBytes
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, p)
	}
	req.Topics = topics
	if !full {
		var forget map[quorum.UUID]int
		for k := range sess.sent {
			if _, ok := pending[k]; ok {
				continue
			}
			if forget == nil {
				forget = map[quorum.UUID]int{}
			}
			i, ok := forget[k.topic]
			if !ok {
				i = len(forgotten)
				forget[k.topic] = i
				if len(forgotten) < cap(forgotten) {
					forgotten = forgotten[:i+1]
					forgotten[i] = kmsg.FetchRequestForgottenTopic{TopicID: k.topic, Partitions: forgotten[i].Partitions[:0]}
				} else {
					ft := kmsg.NewFetchRequestForgottenTopic()
					ft.TopicID = k.topic
					forgotten = append(forgotten, ft)
				}
			}
			forgotten[i].Partitions = append(forgotten[i].Partitions, k.partition)
		}
	}
	req.ForgottenTopics = forgotten
	return req, full
}

// appendTopic appends topic id with no partitions to topics, reusing the
// partitions slice an element past its length kept from an earlier
// request.
func appendTopic(topics []kmsg.FetchRequestTopic, id quorum.UUID) []kmsg.FetchRequestTopic {
	if i := len(topics); i < cap(topics) {
		topics = topics[:i+1]
		topics[i] = kmsg.FetchRequestTopic{TopicID: id, Partitions: topics[i].Partitions[:0]}
		return topics
	}
	t := kmsg.NewFetchRequestTopic()
	t.TopicID = id
	return append(topics, t)
}

// fetch sends req to the leader and returns its answer.
func (f *fetcher) fetch(req *kmsg.FetchRequest) (*kmsg.FetchResponse, error) {
	conn, reused, err := f.dial()
	if err != nil {
		return nil, err
	}
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	err = conn.RoundTrip(req, resp, replicaFetchWaitMax+replicaSocketTimeout)
	if err != nil && reused && !isTimeout(err) {
		// A connection kept from an earlier fetch may have been closed
		// by the leader's previous process while no fetch was in flight
		// (a leader that restarted, then got leaderships back: a
		// rolling restart). One fresh connection, at once, before the
		// replica.fetch.backoff.ms that a failed fetch costs: it cost
		// acks=all produce a second during a roll.
		f.closeConn()
		if conn, _, err = f.dial(); err != nil {
			return nil, err
		}
		resp = req.ResponseKind().(*kmsg.FetchResponse)
		err = conn.RoundTrip(req, resp, replicaFetchWaitMax+replicaSocketTimeout)
	}
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// dial returns the connection to the leader, opening it if needed at the
// address the metadata image gives for the leader's Kafka listener;
// reused says it was open already.
func (f *fetcher) dial() (_ *kafka.ClientConn, reused bool, _ error) {
	f.mu.Lock()
	c := f.mu.conn
	f.mu.Unlock()
	if c != nil {
		return c, true, nil
	}
	addr := f.m.host.KafkaEndpoint(f.leader)
	if addr == "" {
		return nil, false, fmt.Errorf("broker %d has no registered endpoint for this node's inter.broker.listener.name (give every broker the same inter-broker listener name)", f.leader)
	}
	var nc *kafka.ClientConn
	var err error
	if f.m.fetchTLS != nil {
		nc, err = kafka.DialTLS(addr, replicaSocketTimeout, f.m.fetchTLS(addr))
	} else {
		nc, err = kafka.Dial(addr, replicaSocketTimeout)
	}
	if err != nil {
		return nil, false, err
	}
	if a := f.m.fetchSASL; a != nil {
		nc.ClientID = "sluice-replica-fetcher"
		if err := nc.Authenticate(*a, replicaSocketTimeout); err != nil {
			nc.Close()
			return nil, false, fmt.Errorf("authenticating to broker %d at %s: %w", f.leader, addr, err)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-f.m.stop:
		nc.Close()
		return nil, false, errLeaderUnreachable
	default:
	}
	nc.ClientID, nc.MaxResponseBytes = "sluice-replica-fetcher", maxResponseFrame
	f.mu.conn = nc
	return f.mu.conn, false, nil
}

// isTimeout says err is a deadline: a leader that does not answer, which
// a second try would wait for again.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func (f *fetcher) closeConn() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mu.conn != nil {
		f.mu.conn.Close()
		f.mu.conn = nil
	}
}
