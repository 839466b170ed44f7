package kafka

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/segment"
)

// sessionFetch is a Fetch v12 of "orders" in session id at epoch with
// the given partitions (partition → fetch offset) and forgotten ones.
func sessionFetch(id, epoch int32, wait int32, parts map[int32]int64, forget ...int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.SessionID, req.SessionEpoch = 12, id, epoch
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = wait, 1, 1<<20
	req.ReplicaID = -1
	if len(parts) > 0 {
		t := kmsg.NewFetchRequestTopic()
		t.Topic = "orders"
		keys := make([]int32, 0, len(parts))
		for p := range parts {
			keys = append(keys, p)
		}
		sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
		for _, p := range keys {
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = p, parts[p], 1<<20, -1
			t.Partitions = append(t.Partitions, fp)
		}
		req.Topics = []kmsg.FetchRequestTopic{t}
	}
	if len(forget) > 0 {
		ft := kmsg.NewFetchRequestForgottenTopic()
		ft.Topic, ft.Partitions = "orders", forget
		req.ForgottenTopics = []kmsg.FetchRequestForgottenTopic{ft}
	}
	return req
}

// answered lists a response's partitions as "p<n>:hw<h>:<records>".
func answered(resp *kmsg.FetchResponse) string {
	var out []string
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			s := fmt.Sprintf("p%d:hw%d", p.Partition, p.HighWatermark)
			if len(p.RecordBatches) > 0 {
				s += ":records"
			}
			if p.ErrorCode != 0 {
				s += ":" + kerr.ErrorForCode(p.ErrorCode).Error()
			}
			out = append(out, s)
		}
	}
	return strings.Join(out, " ")
}

// TestFetchSessionWire walks a fetch session (KIP-227) over the wire: a
// full fetch at epoch 0 opens it; incremental fetches carry only changed
// partitions and get only partitions with news (records, a new high
// watermark); a long poll of an idle session is woken by an append and
// answers that partition alone; wrong epochs and unknown ids get their
// errors; forgetting every partition closes the session; epoch -1 and a
// cache without slots fetch without one.
func TestFetchSessionWire(t *testing.T) {
	ts, _ := startDataServer(t)
	c := dial(t, ts.addr)
	produce := func(p int32) {
		t.Helper()
		if r := c.roundTrip(produceReq(1, p, segment.BuildBatch(1, []byte("v")))).(*kmsg.ProduceResponse); r.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("produce: %+v", r)
		}
	}
	fetch := func(req *kmsg.FetchRequest, wantErr *kerr.Error, want string) *kmsg.FetchResponse {
		t.Helper()
		resp := c.roundTrip(req).(*kmsg.FetchResponse)
		if wantErr != nil {
			if resp.ErrorCode != wantErr.Code {
				t.Fatalf("session %d epoch %d: error %d, want %v", req.SessionID, req.SessionEpoch, resp.ErrorCode, wantErr)
			}
			return resp
		}
		if resp.ErrorCode != 0 {
			t.Fatalf("session %d epoch %d: error %v", req.SessionID, req.SessionEpoch, kerr.ErrorForCode(resp.ErrorCode))
		}
		if got := answered(resp); got != want {
			t.Fatalf("session %d epoch %d answered %q, want %q", req.SessionID, req.SessionEpoch, got, want)
		}
		return resp
	}

	resp := fetch(sessionFetch(0, 0, 0, map[int32]int64{0: 0, 1: 0}), nil, "p0:hw0 p1:hw0")
	id := resp.SessionID
	if id == 0 {
		t.Fatal("a full fetch at epoch 0 opened no session")
	}
	if st := ts.FetchSessionStats(); st.Sessions != 1 || st.Partitions != 2 {
		t.Fatalf("cache holds %+v, want 1 session of 2 partitions", st)
	}
	// Nothing changed: the answer carries nothing.
	if r := fetch(sessionFetch(id, 1, 0, nil), nil, ""); r.SessionID != id {
		t.Fatalf("incremental answer names session %d, want %d", r.SessionID, id)
	}
	produce(0)
	fetch(sessionFetch(id, 2, 0, nil), nil, "p0:hw1:records")
	// The client moves partition 0 on: no news at the log end.
	fetch(sessionFetch(id, 3, 0, map[int32]int64{0: 1}), nil, "")
	// A long poll of the idle session is woken by an append to p1.
	corr := c.send(sessionFetch(id, 4, 60_000, nil))
	p2 := dial(t, ts.addr)
	start := time.Now()
	if r := p2.roundTrip(produceReq(1, 1, segment.BuildBatch(1, []byte("w")))).(*kmsg.ProduceResponse); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("produce: %+v", r)
	}
	poll := sessionFetch(id, 4, 60_000, nil)
	if got := answered(c.recv(poll, corr, poll.Version).(*kmsg.FetchResponse)); got != "p1:hw1:records" {
		t.Fatalf("long poll answered %q, want p1 alone", got)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("long poll answered after %v: not woken by the append", d)
	}
	// Epochs: a replay of an old one, a skipped one, an unknown id.
	fetch(sessionFetch(id, 4, 0, nil), kerr.InvalidFetchSessionEpoch, "")
	fetch(sessionFetch(id, 7, 0, nil), kerr.InvalidFetchSessionEpoch, "")
	fetch(sessionFetch(id+1, 5, 0, nil), kerr.FetchSessionIDNotFound, "")
	// The errors did not move the session on: epoch 5 still works.
	fetch(sessionFetch(id, 5, 0, map[int32]int64{1: 1}), nil, "")
	// An unknown partition added: its error is news, every time.
	fetch(sessionFetch(id, 6, 0, map[int32]int64{9: 0}), nil, "p9:hw-1:"+kerr.UnknownTopicOrPartition.Error())
	fetch(sessionFetch(id, 7, 0, nil, 9), nil, "")
	// Forgetting the rest closes the session.
	if r := fetch(sessionFetch(id, 8, 0, nil, 0, 1), nil, ""); r.SessionID != 0 {
		t.Fatalf("emptied session answered id %d, want 0", r.SessionID)
	}
	fetch(sessionFetch(id, 9, 0, nil), kerr.FetchSessionIDNotFound, "")
	if st := ts.FetchSessionStats(); st.Sessions != 0 {
		t.Fatalf("cache holds %+v after the session closed", st)
	}
	// Epoch -1: a full fetch without a session.
	if r := fetch(sessionFetch(0, -1, 0, map[int32]int64{0: 1}), nil, "p0:hw1"); r.SessionID != 0 {
		t.Fatalf("epoch -1 opened session %d", r.SessionID)
	}
	// A new full fetch naming a session closes it and opens another.
	a := fetch(sessionFetch(0, 0, 0, map[int32]int64{0: 1}), nil, "p0:hw1").SessionID
	b := fetch(sessionFetch(a, 0, 0, map[int32]int64{0: 1}), nil, "p0:hw1").SessionID
	if a == 0 || b == 0 || a == b {
		t.Fatalf("sessions %d then %d: want two distinct ones", a, b)
	}
	fetch(sessionFetch(a, 1, 0, nil), kerr.FetchSessionIDNotFound, "")
}

// TestFetchSessionsOff: max.incremental.fetch.session.cache.slots 0
// (Options -1) keeps no session: clients fetch in full.
func TestFetchSessionsOff(t *testing.T) {
	var fd *fakeData
	ts := startServerWith(t, Options{FetchSessionCacheSlots: -1}, func(fb *fakeBroker) Broker {
		fd = &fakeData{fakeAdmin: &fakeAdmin{fakeBroker: fb}, logs: map[int32][][]byte{}, sig: make(chan struct{})}
		return fd
	})
	c := dial(t, ts.addr)
	resp := c.roundTrip(sessionFetch(0, 0, 0, map[int32]int64{0: 0})).(*kmsg.FetchResponse)
	if resp.ErrorCode != 0 || resp.SessionID != 0 || answered(resp) != "p0:hw0" {
		t.Fatalf("without slots: error %d, session %d, %q", resp.ErrorCode, resp.SessionID, answered(resp))
	}
}

// TestFetchSessionEviction: Kafka's FetchSessionCache rules when full —
// a session unused for 120 s goes first (the least recently used); else
// the least valuable (a consumer's before a follower's, then fewer
// partitions) goes if the newcomer is worth more; else no session.
func TestFetchSessionEviction(t *testing.T) {
	t0 := time.Unix(1000, 0)
	parts := func(n int) []*sessionPartition {
		out := make([]*sessionPartition, n)
		for i := range out {
			out[i] = &sessionPartition{key: sessionKey{topic: "t", partition: int32(i)}}
		}
		return out
	}
	c := newFetchSessionCache(2, 1)
	open := func(at time.Duration, privileged bool, size int) int32 {
		c.mu.Lock()
		defer c.mu.Unlock()
		if s := c.createLocked(t0.Add(at), privileged, false, parts(size)); s != nil {
			return s.id
		}
		return 0
	}
	has := func(id int32) bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.mu.sessions[id] != nil
	}
	consumer1 := open(0, false, 1)
	consumer2 := open(time.Second, false, 2)
	if consumer1 == 0 || consumer2 == 0 {
		t.Fatal("an empty cache refused a session")
	}
	for _, tc := range []struct {
		name       string
		at         time.Duration
		privileged bool
		size       int
		want       bool
		evicted    int32
	}{
		{"a consumer no larger than the least", 2 * time.Second, false, 1, false, 0},
		{"a larger consumer evicts the smallest", 3 * time.Second, false, 3, true, consumer1},
	} {
		id := open(tc.at, tc.privileged, tc.size)
		if (id != 0) != tc.want {
			t.Fatalf("%s: created %v, want %v", tc.name, id != 0, tc.want)
		}
		if tc.evicted != 0 && has(tc.evicted) {
			t.Fatalf("%s: session %d still there", tc.name, tc.evicted)
		}
	}
	// The cache: consumer2 (2 partitions), a consumer of 3.
	follower := open(4*time.Second, true, 1)
	if follower == 0 || has(consumer2) {
		t.Fatalf("a follower's session did not take a consumer's place (follower %d, consumer2 there: %v)", follower, has(consumer2))
	}
	// A follower and a 3-partition consumer: another follower of 1 evicts
	// the consumer, whatever its size.
	follower2 := open(5*time.Second, true, 1)
	if follower2 == 0 {
		t.Fatal("a follower did not evict a consumer")
	}
	// Only followers now: a consumer of any size gets no session, and a
	// follower of the same size neither (no more valuable).
	if id := open(6*time.Second, false, 100); id != 0 {
		t.Fatal("a consumer evicted a follower")
	}
	if id := open(6*time.Second, true, 1); id != 0 {
		t.Fatal("a follower evicted an equal follower")
	}
	// 120 s unused: the least recently used goes, for anyone.
	c.mu.Lock()
	c.mu.sessions[follower2].lastUsed = t0.Add(10 * time.Second)
	c.mu.Unlock()
	consumer3 := open(4*time.Second+fetchSessionEvictAfter, false, 1)
	if consumer3 == 0 || has(follower) || !has(follower2) {
		t.Fatalf("stale eviction: consumer3 %d, follower there %v, follower2 there %v", consumer3, has(follower), has(follower2))
	}
	if st := c.stats(); st.Sessions != 2 || st.Evictions != 4 {
		t.Fatalf("stats %+v, want 2 sessions after 4 evictions", st)
	}
}

// TestFetchSessionTopicIDs: a session opened by a v13+ Fetch (topic IDs)
// keys its partitions by ID, takes forgotten topics by ID, and refuses a
// Fetch below v13 with FETCH_SESSION_TOPIC_ID_ERROR (and back).
func TestFetchSessionTopicIDs(t *testing.T) {
	now := time.Unix(1000, 0)
	c := newFetchSessionCache(10, 1)
	id1, id2 := [16]byte{1}, [16]byte{2}
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.SessionEpoch = 13, 0
	for _, id := range [][16]byte{id1, id2} {
		rt := kmsg.NewFetchRequestTopic()
		rt.TopicID = id
		rp := kmsg.NewFetchRequestTopicPartition()
		rt.Partitions = []kmsg.FetchRequestTopicPartition{rp}
		req.Topics = append(req.Topics, rt)
	}
	sr := c.begin(now, req)
	if !sr.create || sr.err != nil {
		t.Fatalf("full fetch at epoch 0: %+v", sr)
	}
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	for range req.Topics {
		rt := kmsg.NewFetchResponseTopic()
		rt.Partitions = []kmsg.FetchResponseTopicPartition{kmsg.NewFetchResponseTopicPartition()}
		resp.Topics = append(resp.Topics, rt)
	}
	c.finish(now, req, &sr, resp, nil, true)
	if resp.SessionID == 0 {
		t.Fatal("no session")
	}
	inc := kmsg.NewPtrFetchRequest()
	inc.Version, inc.SessionID, inc.SessionEpoch = 12, resp.SessionID, 1
	if sr := c.begin(now, inc); sr.err != kerr.FetchSessionTopicIDError {
		t.Fatalf("v12 in a v13 session: %v", sr.err)
	}
	inc.Version = 13
	ft := kmsg.NewFetchRequestForgottenTopic()
	ft.TopicID, ft.Partitions = id1, []int32{0}
	inc.ForgottenTopics = []kmsg.FetchRequestForgottenTopic{ft}
	sr = c.begin(now, inc)
	if sr.err != nil || sr.session == nil || len(sr.topics) != 1 || sr.topics[0].TopicID != id2 {
		t.Fatalf("forgetting topic 1 by ID: %+v", sr)
	}
}

// TestRefusedReplicaFetchNotPrivileged: a replica fetch refused (here: on
// a client listener) opens at most a consumer's session, which cannot
// evict others' as a follower's could; the same fetch on the replica
// listener opens a follower's.
func TestRefusedReplicaFetchNotPrivileged(t *testing.T) {
	s, err := NewServer(newFakeData("127.0.0.1:9092"), Options{ReplicaListener: "INTERNAL"})
	if err != nil {
		t.Fatal(err)
	}
	privileged := func(listener string) bool {
		t.Helper()
		req := sessionFetch(0, 0, 0, map[int32]int64{0: 0})
		req.ReplicaID = 2
		r := &request{key: req.Key(), version: req.GetVersion(), body: req, api: s.table.lookup(req.Key()), listener: listener, host: "h"}
		resp, err := r.api.handle(context.Background(), s, r)
		if err != nil {
			t.Fatal(err)
		}
		id := resp.(*kmsg.FetchResponse).SessionID
		s.sessions.mu.Lock()
		defer s.sessions.mu.Unlock()
		sess := s.sessions.mu.sessions[id]
		if sess == nil {
			t.Fatalf("replica fetch on %s opened no session", listener)
		}
		return sess.privileged
	}
	if privileged("EXTERNAL") {
		t.Fatal("a replica fetch refused on the client listener opened a follower's session")
	}
	if !privileged("INTERNAL") {
		t.Fatal("a replica fetch on the replica listener opened a consumer's session")
	}
}
