package metrics

import (
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/node/kafka"
)

// timedRequests are the requests with time metrics (Kafka has them for
// every API; these are the ones operators watch, and each costs 6 summaries).
var timedRequests = []string{"Produce", "FetchConsumer", "FetchFollower"}

// timeMetrics are the phases of a request, Kafka's RequestMetrics names.
var timeMetrics = []string{"requestqueuetimems", "localtimems", "remotetimems", "responsequeuetimems", "responsesendtimems", "totaltimems"}

// maxVersion bounds the versions counted per API key.
const maxVersion = 32

// Requests implements kafka.Observer and kafka.TopicObserver: Kafka's
// request metrics and broker topic metrics. Its methods may be called
// concurrently.
type Requests struct {
	// times[i][j] observes timeMetrics[j] of timedRequests[i].
	times [3][6]prometheus.Observer

	requests *prometheus.CounterVec
	// counters are the children of requests by key and version; the
	// last row is FetchFollower (Fetch's row is FetchConsumer).
	counters [kmsg.MaxKey + 2][maxVersion]atomic.Pointer[prometheus.Counter]

	topicsMu sync.RWMutex
	topics   map[string]*topicCounters
	total    *topicCounters // the topic="" aggregate, as Kafka's no-topic MBean

	messagesIn, bytesIn, bytesOut, replBytesOut, failedProduce, totalProduce, totalFetch *prometheus.CounterVec
}

var (
	_ kafka.Observer      = (*Requests)(nil)
	_ kafka.TopicObserver = (*Requests)(nil)
)

// topicCounters are one topic's BrokerTopicMetrics.
type topicCounters struct {
	messagesIn, bytesIn, bytesOut, replBytesOut, failedProduce, totalProduce, totalFetch prometheus.Counter
}

func newRequests(reg prometheus.Registerer) *Requests {
	r := &Requests{topics: map[string]*topicCounters{}}
	for j, m := range timeMetrics {
		tm := newTimer("kafka_network_requestmetrics_"+m, "Kafka RequestMetrics "+m+" by request.", "request", timedRequests)
		reg.MustRegister(tm)
		for i := range timedRequests {
			r.times[i][j] = tm.child(i)
		}
	}
	r.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kafka_network_requestmetrics_requests_total",
		Help: "Kafka RequestMetrics RequestsPerSec: requests answered, by request and version.",
	}, []string{"request", "version"})
	reg.MustRegister(r.requests)

	counter := func(name, help string) *prometheus.CounterVec {
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kafka_server_brokertopicmetrics_" + name + "_total", Help: help}, []string{"topic"})
		reg.MustRegister(v)
		return v
	}
	r.messagesIn = counter("messagesin", "Kafka BrokerTopicMetrics MessagesInPerSec: records appended as leader, by topic (topic=\"\": all).")
	r.bytesIn = counter("bytesin", "Kafka BrokerTopicMetrics BytesInPerSec: record bytes appended as leader, by topic (topic=\"\": all).")
	r.bytesOut = counter("bytesout", "Kafka BrokerTopicMetrics BytesOutPerSec: record bytes sent to consumers, by topic (topic=\"\": all).")
	r.replBytesOut = counter("replicationbytesout", "Kafka BrokerTopicMetrics ReplicationBytesOutPerSec: record bytes sent to follower replicas.")
	r.failedProduce = counter("failedproducerequests", "Kafka BrokerTopicMetrics FailedProduceRequestsPerSec: produce partitions answered with an error.")
	r.totalProduce = counter("totalproducerequests", "Kafka BrokerTopicMetrics TotalProduceRequestsPerSec: produce partitions handled.")
	r.totalFetch = counter("totalfetchrequests", "Kafka BrokerTopicMetrics TotalFetchRequestsPerSec: fetch responses by topic.")
	r.total = r.newTopic("")
	return r
}

func (r *Requests) newTopic(topic string) *topicCounters {
	return &topicCounters{
		messagesIn: r.messagesIn.WithLabelValues(topic), bytesIn: r.bytesIn.WithLabelValues(topic),
		bytesOut: r.bytesOut.WithLabelValues(topic), replBytesOut: r.replBytesOut.WithLabelValues(topic),
		failedProduce: r.failedProduce.WithLabelValues(topic), totalProduce: r.totalProduce.WithLabelValues(topic),
		totalFetch: r.totalFetch.WithLabelValues(topic),
	}
}

// topic returns the counters of topic, creating them on first use.
func (r *Requests) topic(name string) *topicCounters {
	r.topicsMu.RLock()
	tc := r.topics[name]
	r.topicsMu.RUnlock()
	if tc != nil {
		return tc
	}
	r.topicsMu.Lock()
	defer r.topicsMu.Unlock()
	if tc = r.topics[name]; tc == nil {
		tc = r.newTopic(name)
		r.topics[name] = tc
	}
	return tc
}

// ForgetTopic drops the series of a deleted topic.
func (r *Requests) ForgetTopic(name string) {
	r.topicsMu.Lock()
	defer r.topicsMu.Unlock()
	if _, ok := r.topics[name]; !ok {
		return
	}
	delete(r.topics, name)
	for _, v := range []*prometheus.CounterVec{r.messagesIn, r.bytesIn, r.bytesOut, r.replBytesOut, r.failedProduce, r.totalProduce, r.totalFetch} {
		v.DeleteLabelValues(name)
	}
}

// ObserveRequest implements kafka.Observer.
func (r *Requests) ObserveRequest(t *kafka.RequestTiming) {
	r.count(t)
	i := -1
	switch {
	case t.Key == int16(kmsg.Produce):
		i = 0
	case t.Key == int16(kmsg.Fetch) && !t.Follower:
		i = 1
	case t.Key == int16(kmsg.Fetch):
		i = 2
	}
	if i < 0 {
		return
	}
	o := &r.times[i]
	o[0].Observe(ms(t.RequestQueue))
	o[1].Observe(ms(t.Local))
	o[2].Observe(ms(t.Remote))
	o[3].Observe(ms(t.ResponseQueue))
	o[4].Observe(ms(t.ResponseSend))
	o[5].Observe(ms(t.Total))
}

// count increments RequestsPerSec of key and version, creating the series
// on first use and finding it without a lock afterwards.
func (r *Requests) count(t *kafka.RequestTiming) {
	row := int(t.Key)
	if t.Follower {
		row = len(r.counters) - 1
	}
	if t.Key < 0 || t.Key > kmsg.MaxKey || t.Version < 0 || t.Version >= maxVersion {
		return
	}
	slot := &r.counters[row][t.Version]
	c := slot.Load()
	if c == nil {
		nc := r.requests.WithLabelValues(t.Name(), strconv.Itoa(int(t.Version)))
		slot.CompareAndSwap(nil, &nc)
		c = slot.Load()
	}
	(*c).Inc()
}

// Produced implements kafka.TopicObserver. A partition answered
// NOT_LEADER_OR_FOLLOWER or UNKNOWN_TOPIC_OR_PARTITION only redirects the
// client: as in Kafka it is not a failure, and it creates no per-topic
// series (a client may name any topic; series are for topics served here).
func (r *Requests) Produced(topic string, records, bytes int, err error) {
	r.total.totalProduce.Inc()
	if errors.Is(err, kerr.NotLeaderForPartition) || errors.Is(err, kerr.UnknownTopicOrPartition) {
		return
	}
	tc := r.topic(topic)
	tc.totalProduce.Inc()
	if err != nil {
		tc.failedProduce.Inc()
		r.total.failedProduce.Inc()
		return
	}
	tc.messagesIn.Add(float64(records))
	tc.bytesIn.Add(float64(bytes))
	r.total.messagesIn.Add(float64(records))
	r.total.bytesIn.Add(float64(bytes))
}

// Fetched implements kafka.TopicObserver.
func (r *Requests) Fetched(topic string, bytes int, follower bool) {
	tc := r.topic(topic)
	if follower {
		tc.replBytesOut.Add(float64(bytes))
		r.total.replBytesOut.Add(float64(bytes))
		return
	}
	tc.totalFetch.Inc()
	r.total.totalFetch.Inc()
	tc.bytesOut.Add(float64(bytes))
	r.total.bytesOut.Add(float64(bytes))
}

// ms converts d to Kafka's milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
