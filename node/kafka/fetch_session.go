package kafka

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Fetch sessions (KIP-227): Kafka's FetchSessionCache and FetchContext.
//
// A client opens a session with a full Fetch at epoch 0; the answer
// carries the session's id. Its next requests name the id and the next
// epoch (1, 2, … wrapping to 1 after MaxInt32) and carry only the
// partitions whose fetch position changed (added or updated) and those
// to drop (forgotten topics); the broker reads every partition of the
// session and answers only those with news: records, an error, a
// diverging epoch, or a high watermark, last stable offset or log start
// offset other than last answered. An idle follower's fetch carries no
// partition and its answer none.
//
// The cache is pure: every method takes the time it runs at and nothing
// here reads a clock, sleeps or starts a goroutine.

// DefaultFetchSessionCacheSlots is Kafka's
// max.incremental.fetch.session.cache.slots default.
const DefaultFetchSessionCacheSlots = 1000

// fetchSessionEvictAfter is Kafka's FetchSessionCache eviction time: a
// session unused this long is stale, and the first to go when the cache
// is full.
const fetchSessionEvictAfter = 120 * time.Second

// sessionKey names a partition of a session: by topic ID from Fetch v13
// on, by topic name before.
type sessionKey struct {
	id        [16]byte
	topic     string
	partition int32
}

// sessionPartition is one partition of a session: the client's fetch
// position as last sent, and what the last answer told it (hw -1: never
// answered, so the next answer includes it).
type sessionPartition struct {
	key                                  sessionKey
	fetchOffset, logStartOffset          int64
	currentLeaderEpoch, lastFetchedEpoch int32
	maxBytes                             int32
	hw, lastStable, logStart             int64
	answered                             bool
	rotate                               bool // had records: moves to the end
	topicIndex, partitionIndex           int  // place in the read plan
}

// fetchSession is one client's session.
type fetchSession struct {
	id         int32
	epoch      int32 // the epoch the next request must carry
	privileged bool  // a follower's (replica id >= 0)
	topicIDs   bool  // created by a v13+ Fetch: keyed by topic ID
	lastUsed   time.Time
	parts      []*sessionPartition // in answer order
	index      map[sessionKey]*sessionPartition
}

func (s *fetchSession) size() int { return len(s.parts) }

// nextEpoch is the epoch after e: 1, 2, …, MaxInt32, then 1 again.
func nextEpoch(e int32) int32 {
	if e < 0 || e == 1<<31-1 {
		return 1
	}
	return e + 1
}

// fetchSessionCache holds the sessions (Kafka's FetchSessionCache): at
// most slots of them. When full, a new session takes the place of the
// least recently used one if that was unused for 120 s; else of the
// least valuable one — sessions of consumers before followers', then
// fewer partitions first — if the new one is worth more (a follower's
// against a consumer's, or more partitions). Else it is not created and
// the client fetches without a session.
type fetchSessionCache struct {
	mu struct {
		sync.Mutex
		slots     int
		sessions  map[int32]*fetchSession
		rng       *rand.Rand
		evictions int64
		// incremental counts the incremental fetches answered, and
		// answered the partitions their answers carried.
		incremental, answered int64
	}
}

func newFetchSessionCache(slots int, seed uint64) *fetchSessionCache {
	c := &fetchSessionCache{}
	c.mu.slots = slots
	c.mu.sessions = map[int32]*fetchSession{}
	c.mu.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return c
}

// FetchSessionStats is what the cache holds (Kafka's FetchSessionCache
// metrics: NumIncrementalFetchSessions, NumIncrementalFetchPartitionsCached,
// IncrementalFetchSessionEvictionsPerSec as a count).
type FetchSessionStats struct {
	Sessions, Partitions int
	Evictions            int64
	// IncrementalFetches counts the incremental fetches answered, and
	// IncrementalPartitions the partitions their answers carried (what
	// idle followers cost: none).
	IncrementalFetches, IncrementalPartitions int64
}

// FetchSessionStats reports the server's fetch session cache.
func (s *Server) FetchSessionStats() FetchSessionStats {
	return s.sessions.stats()
}

func (c *fetchSessionCache) stats() FetchSessionStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := FetchSessionStats{Sessions: len(c.mu.sessions), Evictions: c.mu.evictions,
		IncrementalFetches: c.mu.incremental, IncrementalPartitions: c.mu.answered}
	for _, s := range c.mu.sessions {
		st.Partitions += s.size()
	}
	return st
}

// remove drops session id, if any.
func (c *fetchSessionCache) remove(id int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.mu.sessions, id)
}

// evictable ranks sessions for eviction: lower goes first.
func evictableLess(aPriv bool, aSize int, aID int32, bPriv bool, bSize int, bID int32) bool {
	if aPriv != bPriv {
		return !aPriv
	}
	if aSize != bSize {
		return aSize < bSize
	}
	return aID < bID
}

// create makes a session for parts if there is room (see the type) and
// returns it, or nil. c.mu must be held.
func (c *fetchSessionCache) createLocked(now time.Time, privileged, topicIDs bool, parts []*sessionPartition) *fetchSession {
	if c.mu.slots <= 0 || len(parts) == 0 {
		return nil
	}
	if len(c.mu.sessions) >= c.mu.slots && !c.evictLocked(now, privileged, len(parts)) {
		return nil
	}
	var id int32
	for id == 0 || c.mu.sessions[id] != nil {
		id = c.mu.rng.Int32() // positive
	}
	s := &fetchSession{id: id, epoch: 1, privileged: privileged, topicIDs: topicIDs, lastUsed: now,
		parts: parts, index: make(map[sessionKey]*sessionPartition, len(parts))}
	for _, p := range parts {
		s.index[p.key] = p
	}
	c.mu.sessions[id] = s
	return s
}

// evictLocked makes room for a new session of size partitions, as
// Kafka's tryEvict does; it says whether it did.
func (c *fetchSessionCache) evictLocked(now time.Time, privileged bool, size int) bool {
	var stale, least *fetchSession
	for _, s := range c.mu.sessions {
		if now.Sub(s.lastUsed) >= fetchSessionEvictAfter && (stale == nil || s.lastUsed.Before(stale.lastUsed)) {
			stale = s
		}
		if !privileged && s.privileged {
			continue // a consumer never evicts a follower
		}
		if least == nil || evictableLess(s.privileged, s.size(), s.id, least.privileged, least.size(), least.id) {
			least = s
		}
	}
	victim := stale
	if victim == nil && least != nil && !evictableLess(privileged, size, 0, least.privileged, least.size(), least.id) {
		victim = least
	}
	if victim == nil {
		return false
	}
	delete(c.mu.sessions, victim.id)
	c.mu.evictions++
	return true
}

// sessionRequest is what a Fetch asks of the cache, decided by begin.
type sessionRequest struct {
	// err is a session error for the whole request (FETCH_SESSION_ID_NOT_FOUND,
	// INVALID_FETCH_SESSION_EPOCH, FETCH_SESSION_TOPIC_ID_ERROR).
	err *kerr.Error
	// create: a full fetch at epoch 0 that asks for a new session.
	create bool
	// session, epoch: an incremental fetch of session at epoch (its
	// parts, in order, are what topics holds).
	session *fetchSession
	epoch   int32
	// topics is what to read: the request's own topics, or the session's.
	topics []kmsg.FetchRequestTopic
}

// sessionKeyOf names partition p of topic t as a request of version v does.
func sessionKeyOf(v int16, t *kmsg.FetchRequestTopic, p int32) sessionKey {
	if v >= 13 {
		return sessionKey{id: t.TopicID, partition: p}
	}
	return sessionKey{topic: t.Topic, partition: p}
}

// begin decides how req uses sessions (Kafka's FetchManager.newContext):
// below v7, or at epoch -1, no session (a named one is closed); at epoch
// 0 a full fetch that creates one (closing a named one); above 0 the
// named session, updated with the request's partitions and forgotten
// topics, and its epoch moved on.
func (c *fetchSessionCache) begin(now time.Time, req *kmsg.FetchRequest) sessionRequest {
	if req.Version < 7 {
		return sessionRequest{topics: req.Topics}
	}
	if req.SessionEpoch == -1 || req.SessionEpoch == 0 {
		if req.SessionID != 0 {
			c.remove(req.SessionID)
		}
		return sessionRequest{topics: req.Topics, create: req.SessionEpoch == 0}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.mu.sessions[req.SessionID]
	switch {
	case s == nil:
		return sessionRequest{err: kerr.FetchSessionIDNotFound}
	case s.epoch != req.SessionEpoch:
		return sessionRequest{err: kerr.InvalidFetchSessionEpoch}
	case s.topicIDs != (req.Version >= 13):
		return sessionRequest{err: kerr.FetchSessionTopicIDError}
	}
	for ti := range req.Topics {
		t := &req.Topics[ti]
		for _, p := range t.Partitions {
			k := sessionKeyOf(req.Version, t, p.Partition)
			sp := s.index[k]
			if sp == nil {
				sp = &sessionPartition{key: k, hw: -1, lastStable: -1, logStart: -1}
				s.index[k] = sp
				s.parts = append(s.parts, sp)
			}
			sp.fetchOffset, sp.logStartOffset = p.FetchOffset, p.LogStartOffset
			sp.currentLeaderEpoch, sp.lastFetchedEpoch, sp.maxBytes = p.CurrentLeaderEpoch, p.LastFetchedEpoch, p.PartitionMaxBytes
		}
	}
	forgot := false
	for _, f := range req.ForgottenTopics {
		for _, p := range f.Partitions {
			k := sessionKey{topic: f.Topic, partition: p}
			if req.Version >= 13 {
				k = sessionKey{id: f.TopicID, partition: p}
			}
			if sp := s.index[k]; sp != nil {
				delete(s.index, k)
				forgot = true
			}
		}
	}
	if forgot {
		kept := s.parts[:0]
		for _, sp := range s.parts {
			if s.index[sp.key] == sp {
				kept = append(kept, sp)
			}
		}
		clear(s.parts[len(kept):])
		s.parts = kept
	}
	if len(s.parts) == 0 {
		// Kafka closes an emptied session and answers without one.
		delete(c.mu.sessions, s.id)
		return sessionRequest{topics: nil}
	}
	epoch := s.epoch
	s.epoch = nextEpoch(s.epoch)
	s.lastUsed = now
	return sessionRequest{session: s, epoch: epoch, topics: planTopics(s.parts)}
}

// planTopics is the read plan of a session's partitions: consecutive
// partitions of one topic form one topic entry. Each partition is told
// where it sits in the plan.
func planTopics(parts []*sessionPartition) []kmsg.FetchRequestTopic {
	var topics []kmsg.FetchRequestTopic
	for _, sp := range parts {
		if n := len(topics); n == 0 || topics[n-1].TopicID != sp.key.id || topics[n-1].Topic != sp.key.topic {
			t := kmsg.NewFetchRequestTopic()
			t.Topic, t.TopicID = sp.key.topic, sp.key.id
			topics = append(topics, t)
		}
		t := &topics[len(topics)-1]
		p := kmsg.NewFetchRequestTopicPartition()
		p.Partition = sp.key.partition
		p.FetchOffset, p.LogStartOffset = sp.fetchOffset, sp.logStartOffset
		p.CurrentLeaderEpoch, p.LastFetchedEpoch, p.PartitionMaxBytes = sp.currentLeaderEpoch, sp.lastFetchedEpoch, sp.maxBytes
		sp.topicIndex, sp.partitionIndex = len(topics)-1, len(t.Partitions)
		t.Partitions = append(t.Partitions, p)
	}
	return topics
}

// news says whether an incremental answer must carry rp, given what the
// session last answered for it (Kafka's CachedPartition.maybeUpdateResponseData,
// plus the last stable offset), and records what it answers.
func (sp *sessionPartition) news(rp *kmsg.FetchResponseTopicPartition, hasRecords bool) bool {
	must := hasRecords || !sp.answered || rp.ErrorCode != 0 ||
		rp.DivergingEpoch.Epoch >= 0 || rp.DivergingEpoch.EndOffset >= 0 ||
		rp.HighWatermark != sp.hw || rp.LastStableOffset != sp.lastStable || rp.LogStartOffset != sp.logStart
	if rp.ErrorCode != 0 {
		sp.hw = -1 // answer again once it is well
		sp.answered = false
	} else {
		sp.hw, sp.lastStable, sp.logStart, sp.answered = rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset, true
	}
	sp.rotate = hasRecords
	return must
}

// finish completes a request of sr once its answer resp (over sr.topics,
// with files) is read: it creates the session of a full fetch at epoch 0
// (resp.SessionID), or keeps only the partitions with news in an
// incremental answer, moving those with records to the session's end so
// that each gets its turn under max_bytes. It returns the files kept, in
// the order of the new resp.Topics, and releases the others.
func (c *fetchSessionCache) finish(now time.Time, req *kmsg.FetchRequest, sr *sessionRequest, resp *kmsg.FetchResponse, files []fetchFile, privileged bool) []fetchFile {
	switch {
	case sr.create:
		var parts []*sessionPartition
		fi := 0
		for ti := range resp.Topics {
			t := &req.Topics[ti]
			for pi := range resp.Topics[ti].Partitions {
				rp := &resp.Topics[ti].Partitions[pi]
				p := &t.Partitions[pi]
				sp := &sessionPartition{key: sessionKeyOf(req.Version, t, p.Partition),
					fetchOffset: p.FetchOffset, logStartOffset: p.LogStartOffset,
					currentLeaderEpoch: p.CurrentLeaderEpoch, lastFetchedEpoch: p.LastFetchedEpoch, maxBytes: p.PartitionMaxBytes}
				has := len(rp.RecordBatches) > 0
				if fi < len(files) && files[fi].topic == ti && files[fi].partition == pi {
					has = true
					fi++
				}
				sp.news(rp, has)
				parts = append(parts, sp)
			}
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if s := c.createLocked(now, privileged, req.Version >= 13, dedupe(parts)); s != nil {
			resp.SessionID = s.id
		}
		return files
	case sr.session == nil:
		return files
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s := sr.session
	if c.mu.sessions[s.id] != s || s.epoch != nextEpoch(sr.epoch) {
		// Closed, evicted or used by another request meanwhile.
		for _, f := range files {
			f.f.Release()
		}
		resp.Topics = nil
		resp.ErrorCode = kerr.InvalidFetchSessionEpoch.Code
		return nil
	}
	resp.SessionID = s.id
	filed := map[[2]int]FileRecords{}
	for _, f := range files {
		filed[[2]int{f.topic, f.partition}] = f.f
	}
	var topics []kmsg.FetchResponseTopic
	var kept []fetchFile
	var rotated []*sessionPartition
	order := make([]*sessionPartition, 0, len(s.parts))
	for _, sp := range s.parts {
		if sp.topicIndex >= len(resp.Topics) || sp.partitionIndex >= len(resp.Topics[sp.topicIndex].Partitions) {
			order = append(order, sp)
			continue
		}
		rt := &resp.Topics[sp.topicIndex]
		rp := rt.Partitions[sp.partitionIndex]
		f, hasFile := filed[[2]int{sp.topicIndex, sp.partitionIndex}]
		if !sp.news(&rp, hasFile || len(rp.RecordBatches) > 0) {
			order = append(order, sp)
			continue
		}
		if sp.rotate {
			rotated = append(rotated, sp)
		} else {
			order = append(order, sp)
		}
		if n := len(topics); n == 0 || topics[n-1].TopicID != rt.TopicID || topics[n-1].Topic != rt.Topic {
			nt := kmsg.NewFetchResponseTopic()
			nt.Topic, nt.TopicID = rt.Topic, rt.TopicID
			topics = append(topics, nt)
		}
		nt := &topics[len(topics)-1]
		if hasFile {
			kept = append(kept, fetchFile{topic: len(topics) - 1, partition: len(nt.Partitions), f: f})
			delete(filed, [2]int{sp.topicIndex, sp.partitionIndex})
		}
		nt.Partitions = append(nt.Partitions, rp)
	}
	for _, f := range filed {
		f.Release() // never happens: a file has records, which is news
	}
	s.parts = append(order, rotated...)
	resp.Topics = topics
	c.mu.incremental++
	for _, t := range topics {
		c.mu.answered += int64(len(t.Partitions))
	}
	return kept
}

// dedupe drops repeated partitions from a new session's list, keeping the
// first: a full request naming one twice gets one session entry.
func dedupe(parts []*sessionPartition) []*sessionPartition {
	seen := make(map[sessionKey]bool, len(parts))
	out := parts[:0]
	for _, p := range parts {
		if !seen[p.key] {
			seen[p.key] = true
			out = append(out, p)
		}
	}
	return out
}
