package kafka

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Observer receives the timing of every request, for request metrics
// (Kafka's kafka.network:type=RequestMetrics). Set it in Options.Observer;
// without one the server takes no timestamps at all.
//
// ObserveRequest is called once per request, after its response was written
// to the socket (or, for a request without a response such as Produce with
// acks=0, once it was handled), from one of the connection's goroutines;
// calls for different connections are concurrent. t is valid only during
// the call. It must not block: the connection waits for it.
type Observer interface {
	ObserveRequest(t *RequestTiming)
}

// TopicObserver is an optional capability of an Observer, found by type
// assertion: the per-topic traffic of Produce and Fetch (Kafka's
// BrokerTopicMetrics). Its methods are called from the handlers, one call
// per partition (Produced) or per topic of a response (Fetched), and must
// not block.
type TopicObserver interface {
	// Produced reports one partition of a Produce request: the records
	// and bytes it carried, and the error it was answered with (nil when
	// appended).
	Produced(topic string, records, bytes int, err error)
	// Fetched reports the record bytes one Fetch response returned for a
	// topic; follower is set for a replica's fetch (replication traffic).
	Fetched(topic string, bytes int, follower bool)
}

// RequestTiming splits the life of one request the way Kafka's request
// metrics do. Total = RequestQueue + Local + Remote + ResponseQueue +
// ResponseSend.
type RequestTiming struct {
	// Key and Version of the request's API.
	Key, Version int16
	// Follower is set for a Fetch from a replica (replica id >= 0):
	// Kafka's FetchFollower, as opposed to FetchConsumer.
	Follower bool
	// NoResponse is set when the API sent no response (Produce acks=0).
	NoResponse bool
	// RequestQueue: from the whole frame read until its handler started
	// (decoding, and waiting behind earlier requests of the connection).
	RequestQueue time.Duration
	// Local: the handler's own work, Remote excluded.
	Local time.Duration
	// Remote: the time the handler waited on other brokers or for data
	// (acks=all replication, a long-polling fetch), as reported through
	// BeginRemote.
	Remote time.Duration
	// ResponseQueue: from the encoded response until the writer took it.
	ResponseQueue time.Duration
	// ResponseSend: from the writer taking it until the write buffer
	// holding it was flushed to the socket.
	ResponseSend time.Duration
	// Total: from the whole frame read until the response was sent.
	Total time.Duration
}

// Name is the request's name in Kafka's request metrics: the API name,
// with Fetch split into FetchConsumer and FetchFollower.
func (t *RequestTiming) Name() string {
	if t.Key == int16(kmsg.Fetch) {
		if t.Follower {
			return "FetchFollower"
		}
		return "FetchConsumer"
	}
	return kmsg.NameForKey(t.Key)
}

// stamps are the timestamps of one request, kept on the request; zero when
// the server has no Observer.
type stamps struct {
	received, dequeued, handled, picked time.Time
	remote                              time.Duration
}

// waited moves the time since the handler returned into the remote time:
// a deferred response (a Produce waiting for acks=all) is complete only
// now, after waiting on the connection's finisher.
func (s *stamps) waited() {
	now := time.Now()
	s.remote += now.Sub(s.handled)
	s.handled = now
}

// remoteKey is the context key of a connection's remote-time clock.
type remoteKey struct{}

// RemoteWait measures one wait of a handler (or of the Broker it calls) on
// other brokers or for data; see BeginRemote. The zero value does nothing.
type RemoteWait struct {
	clock *atomic.Int64
	start time.Time
}

// BeginRemote starts measuring a wait that belongs to the request's
// RemoteTimeMs: acks=all waiting for replication, a fetch waiting for data.
// ctx is the context the server passed to the Broker method; call End on
// the result when the wait is over. Without an Observer (or with another
// context) it costs a context lookup and measures nothing. It does not
// allocate.
func BeginRemote(ctx context.Context) RemoteWait {
	c, _ := ctx.Value(remoteKey{}).(*atomic.Int64)
	if c == nil {
		return RemoteWait{}
	}
	return RemoteWait{clock: c, start: time.Now()}
}

// End adds the time since BeginRemote to the request's remote time.
func (w RemoteWait) End() {
	if w.clock != nil {
		w.clock.Add(int64(time.Since(w.start)))
	}
}

// timing fills t from the stamps of r, sent being when the response left.
func (r *request) timing(t *RequestTiming, sent time.Time) {
	s := &r.stamps
	*t = RequestTiming{Key: r.key, Version: r.version, Follower: r.follower()}
	t.RequestQueue = s.dequeued.Sub(s.received)
	t.Remote = s.remote
	t.Local = max(s.handled.Sub(s.dequeued)-s.remote, 0)
	if s.picked.IsZero() {
		t.NoResponse = true
		t.Total = s.handled.Sub(s.received)
		return
	}
	t.ResponseQueue = s.picked.Sub(s.handled)
	t.ResponseSend = sent.Sub(s.picked)
	t.Total = sent.Sub(s.received)
}

// follower reports whether r is a Fetch from a replica.
func (r *request) follower() bool {
	f, ok := r.body.(*kmsg.FetchRequest)
	if !ok {
		return false
	}
	id, _ := fetchReplica(f)
	return id >= 0
}

// produced reports one partition of a Produce to the Observer's
// TopicObserver capability, if any: the records the log appended
// (ProduceResult.Records, counted by its parse) and the bytes received.
func (s *Server) produced(topic string, records int64, bytes int, err error) {
	if s.topics != nil {
		s.topics.Produced(topic, int(records), bytes, err)
	}
}

// fetched reports the bytes of a Fetch response by topic, leaving out
// topics unknown here.
func (s *Server) fetched(req *kmsg.FetchRequest, resp *kmsg.FetchResponse, files []fetchFile) {
	if s.topics == nil {
		return
	}
	replica, _ := fetchReplica(req)
	for i := range resp.Topics {
		n, known := 0, false
		for _, f := range files {
			if f.topic == i {
				n += f.f.Len()
			}
		}
		for j := range resp.Topics[i].Partitions {
			p := &resp.Topics[i].Partitions[j]
			n += len(p.RecordBatches)
			known = known || p.ErrorCode != kerr.UnknownTopicOrPartition.Code && p.ErrorCode != kerr.UnknownTopicID.Code
		}
		if known { // a client may name any topic: report only those served
			s.topics.Fetched(resp.Topics[i].Topic, n, replica >= 0)
		}
	}
}
