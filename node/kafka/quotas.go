package kafka

import (
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/quorum"
)

// Client quotas are enforced as Kafka's ClientQuotaManager does (KIP-13,
// KIP-124, KIP-219):
//
//   - What is measured: producer_byte_rate counts the record bytes of each
//     Produce; consumer_byte_rate the record bytes of each consumer Fetch
//     answer (replica fetches are replication, not consumption: never
//     counted); request_percentage the time the server spent handling the
//     connection's requests, as a percentage of one thread (replica
//     fetches are exempt).
//   - Who shares a measurement: the quota that applies to a connection is
//     found by Kafka's precedence (quorum.Image.ResolveQuota) from its
//     principal's name and client id; connections that resolve to the same
//     entity with the same tags (the same user, for a user quota; the same
//     user and client id, for a user/client-id quota, and so on) share one
//     sensor.
//   - The rate: over quota.window.num samples of quota.window.size.seconds,
//     the elapsed span counted as at least num-1 whole samples (so a new
//     client's first burst is spread over the whole window, as in Kafka).
//   - The throttle: over the bound, (rate - bound) / bound × the window's
//     span, at most one sample's size. It goes back in the response's
//     throttle_time_ms and the connection reads no further request until
//     it has passed (KIP-219: clients back off on their side too). A
//     throttled consumer Fetch is answered at once with no data (Kafka's
//     behaviour), so a consumer over its quota waits rather than reads.
//
// Sensors unused for an hour are dropped (Kafka's inactive sensor expiry);
// with no quota configured nothing is measured and nothing allocated.
type quotaManager struct {
	admin QuotaAdmin
	num   int
	size  time.Duration

	mu        sync.Mutex
	sensors   map[sensorKey]*sensor
	lastSweep time.Time
	// throttled counts the throttles and their time by quota key.
	throttled map[string]*QuotaThrottles
}

// QuotaThrottles counts the throttles of one quota key.
type QuotaThrottles struct {
	Count int64
	Time  time.Duration
}

// QuotaStats returns the throttles so far by quota key (a copy); nil
// without client quotas.
func (s *Server) QuotaStats() map[string]QuotaThrottles {
	q := s.quotas
	if q == nil {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make(map[string]QuotaThrottles, len(q.throttled))
	for k, t := range q.throttled {
		out[k] = *t
	}
	return out
}

// sensorKey names one measurement: the quota key and the resolved tags.
type sensorKey struct{ key, user, client string }

type sensor struct {
	samples []sample
	cur     int
	used    time.Time
}

type sample struct {
	start time.Time
	v     float64
}

// sensorExpiry is how long an unused sensor is kept.
const sensorExpiry = time.Hour

func newQuotaManager(admin QuotaAdmin, num int, size time.Duration) *quotaManager {
	return &quotaManager{admin: admin, num: num, size: size, sensors: map[sensorKey]*sensor{}, throttled: map[string]*QuotaThrottles{}}
}

// quotaUser is the user name quotas know a principal by ("User:alice"
// is alice; an unauthenticated connection is ANONYMOUS).
func quotaUser(principal string) string {
	if _, name, ok := strings.Cut(principal, ":"); ok {
		return name
	}
	return principal
}

// record adds v to the measurement of key for the connection and returns
// how long it is to be throttled (0 if within its quota or without one).
// With v 0 it only reports the current throttle.
func (q *quotaManager) record(key, principal, clientID string, v float64, now time.Time) time.Duration {
	if q == nil {
		return 0
	}
	user := quotaUser(principal)
	m, ok := q.admin.ResolveQuota(user, clientID, key)
	if !ok || m.Bound <= 0 {
		return 0
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.sweep(now)
	sk := sensorKey{key, m.UserTag, m.Client}
	s := q.sensors[sk]
	if s == nil {
		s = &sensor{samples: make([]sample, q.num)}
		s.samples[0].start = now
		q.sensors[sk] = s
	}
	s.used = now
	s.add(now, v, q.size)
	rate, span := s.rate(now, q.size)
	if rate <= m.Bound {
		return 0
	}
	t := min(time.Duration((rate-m.Bound)/m.Bound*float64(span)), q.size)
	qt := q.throttled[key]
	if qt == nil {
		qt = &QuotaThrottles{}
		q.throttled[key] = qt
	}
	qt.Count++
	qt.Time += t
	return t
}

// sweep drops sensors unused for sensorExpiry, at most once a minute.
func (q *quotaManager) sweep(now time.Time) {
	if now.Sub(q.lastSweep) < time.Minute {
		return
	}
	q.lastSweep = now
	for k, s := range q.sensors {
		if now.Sub(s.used) > sensorExpiry {
			delete(q.sensors, k)
		}
	}
}

// add counts v in the current sample, starting a new one when its time
// is up.
func (s *sensor) add(now time.Time, v float64, size time.Duration) {
	if now.Sub(s.samples[s.cur].start) >= size {
		s.cur = (s.cur + 1) % len(s.samples)
		s.samples[s.cur] = sample{start: now}
	}
	s.samples[s.cur].v += v
}

// rate is the sensor's rate per second over the samples still inside the
// window, and the span it was measured over (Kafka's Rate: at least
// num-1 whole samples).
func (s *sensor) rate(now time.Time, size time.Duration) (float64, time.Duration) {
	window := time.Duration(len(s.samples)) * size
	var total float64
	oldest := now
	for _, sm := range s.samples {
		if sm.start.IsZero() || now.Sub(sm.start) >= window {
			continue
		}
		total += sm.v
		if sm.start.Before(oldest) {
			oldest = sm.start
		}
	}
	span := now.Sub(oldest)
	if least := time.Duration(len(s.samples)-1) * size; span < least {
		span = least
	}
	return total / span.Seconds(), span
}

// produceBytes is the record bytes of a Produce request.
func produceBytes(req *kmsg.ProduceRequest) float64 {
	n := 0
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			n += len(p.Records)
		}
	}
	return float64(n)
}

// fetchBytes is the record bytes of a Fetch answer, in memory or in
// files.
func fetchBytes(resp *kmsg.FetchResponse, files []fetchFile) float64 {
	n := 0
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			n += len(p.RecordBatches)
		}
	}
	for _, f := range files {
		n += int(f.f.Len())
	}
	return float64(n)
}

// throttle notes t on r (the connection waits it out after answering)
// and in resp's throttle_time_ms, keeping the larger. Only the
// connection's serving goroutine calls it.
func throttle(r *request, resp kmsg.Response, t time.Duration) {
	if t <= 0 {
		return
	}
	r.throttle = max(r.throttle, t)
	setThrottle(resp, r.throttle)
}

// setThrottle raises resp's throttle_time_ms to t (a deferred response
// has none to set until it is complete).
func setThrottle(resp kmsg.Response, t time.Duration) {
	ms := int32(min(t.Milliseconds(), 1<<31-1))
	if tr, ok := resp.(kmsg.ThrottleResponse); ok && ms > 0 {
		if cur, _ := tr.Throttle(); cur < ms {
			if st, ok := resp.(kmsg.SetThrottleResponse); ok {
				st.SetThrottle(ms)
			}
		}
	}
}

// quotaAnswer measures r, just handled into resp from start, against the
// client quotas that apply: a Produce's record bytes, a consumer Fetch
// answer's record bytes, and the handling time.
func (s *Server) quotaAnswer(r *request, resp kmsg.Response, start time.Time) {
	now := time.Now()
	cid := quotaClientID(r)
	switch req := r.body.(type) {
	case *kmsg.ProduceRequest:
		throttle(r, resp, s.quotas.record(quorum.QuotaProducerByteRate, r.principal, cid, produceBytes(req), now))
	case *kmsg.FetchRequest:
		if replica, _ := fetchReplica(req); replica < 0 {
			var n float64
			switch f := resp.(type) {
			case *kmsg.FetchResponse:
				n = fetchBytes(f, nil)
			case *fileFetchResponse:
				n = fetchBytes(f.FetchResponse, f.files)
			}
			throttle(r, resp, s.quotas.record(quorum.QuotaConsumerByteRate, r.principal, cid, n, now))
		}
	}
	s.requestQuota(r, resp, now.Sub(start), now)
}

// quotaClientID is r's client id for quotas ("" when null).
func quotaClientID(r *request) string { return derefOr(r.clientID, "") }

// requestQuota measures the time a request took to handle against
// request_percentage and throttles r and resp by it. The brokers' own
// requests are exempt, as Kafka exempts cluster actions: replica fetches,
// a replica's OffsetForLeaderEpoch, WriteTxnMarkers and the verification
// form of AddPartitionsToTxn (v4+), so a default user quota never slows
// replication or transaction markers.
func (s *Server) requestQuota(r *request, resp kmsg.Response, took time.Duration, now time.Time) {
	if brokerRequest(r.body) {
		return
	}
	throttle(r, resp, s.quotas.record(quorum.QuotaRequestPercentage, r.principal, quotaClientID(r), took.Seconds()*100, now))
}

// brokerRequest says req is one only brokers send.
func brokerRequest(req kmsg.Request) bool {
	switch req := req.(type) {
	case *kmsg.FetchRequest:
		replica, _ := fetchReplica(req)
		return replica >= 0
	case *kmsg.OffsetForLeaderEpochRequest:
		return req.ReplicaID >= 0
	case *kmsg.WriteTxnMarkersRequest:
		return true
	case *kmsg.AddPartitionsToTxnRequest:
		return req.Version >= 4
	}
	return false
}
