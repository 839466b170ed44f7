package txncoord

import (
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/node/kafka"
	"github.com/sluice-log/sluice/node/txn"
)

// The sending side of WriteTxnMarkers (Kafka's
// TransactionMarkerChannelManager): a shard's Markers are split by the
// current leader of each partition; each destination broker has one queue
// and sendersPerBroker goroutines, each with its own connection, that send
// everything queued as one WriteTxnMarkers request (v1), wait for the
// answer, and send again: markers queued while one request waits for its
// acks=all go out at once on the other (with several producers, markers
// otherwise wait a whole replication round behind each other). When every
// destination of a Markers answered, the shard is told which partitions
// failed (MarkersWritten); it retries those after its backoff, when they
// are split again by the leaders of the metadata then, so a moved leader
// is found. A partition without a leader fails at once; one of a deleted
// topic counts as written, as in Kafka.

// markerAPIVersion is the WriteTxnMarkers version sent: v1 (flexible),
// what Kafka 4.1 brokers send.
const markerAPIVersion = 1

// sendersPerBroker is how many WriteTxnMarkers requests may be in flight
// to one broker. Markers of one producer are never in two at once (a
// transaction's next markers wait for its last ones' answer).
const sendersPerBroker = 2

// markerSender is every destination's queue.
type markerSender struct {
	c *Coordinator

	mu struct {
		sync.Mutex
		dests  map[int32]*dest
		closed bool
	}
	// stats, under statsMu (a leaf).
	statsMu                    sync.Mutex
	queued                     int
	sent, failed, reqs, inReqs int64
	latency                    time.Duration
}

// markerJob is one shard Markers: its outcome once every part answered.
type markerJob struct {
	p, epoch int32
	m        txn.Markers

	mu     sync.Mutex
	left   int
	failed []txn.TopicPartition
}

// markerPart is the partitions of one job led by one broker.
type markerPart struct {
	job    *markerJob
	parts  []txn.TopicPartition
	queued time.Time
}

// dest is one destination broker's queue.
type dest struct {
	id   int32
	wake chan struct{}

	mu struct {
		sync.Mutex
		queue []*markerPart
	}
}

func newMarkerSender(c *Coordinator) *markerSender {
	ms := &markerSender{c: c}
	ms.mu.dests = map[int32]*dest{}
	return ms
}

// send queues the markers of m for shard (p, epoch). It may be called
// with a shard's lock held: it takes only leaf locks.
func (ms *markerSender) send(p, epoch int32, m txn.Markers) {
	job := &markerJob{p: p, epoch: epoch, m: m}
	byLeader := map[int32][]txn.TopicPartition{}
	for _, tp := range m.Partitions {
		leader, exists := ms.c.host.Leader(tp.Topic, tp.Partition)
		switch {
		case !exists:
			// A deleted topic: nothing to mark (Kafka's
			// removeMarkersForTxnTopicPartition).
		case leader < 0:
			job.failed = append(job.failed, tp)
		default:
			byLeader[leader] = append(byLeader[leader], tp)
		}
	}
	job.left = len(byLeader)
	if job.left == 0 {
		ms.c.wg.Go(func() { ms.c.markersDone(p, epoch, m.ID, job.failed) })
		return
	}
	now := time.Now()
	for leader, parts := range byLeader {
		ms.enqueue(leader, &markerPart{job: job, parts: parts, queued: now})
	}
}

func (ms *markerSender) enqueue(leader int32, mp *markerPart) {
	ms.mu.Lock()
	d := ms.mu.dests[leader]
	if d == nil && !ms.mu.closed {
		d = &dest{id: leader, wake: make(chan struct{}, 1)}
		ms.mu.dests[leader] = d
		for range sendersPerBroker {
			ms.c.wg.Go(func() { ms.run(d) })
		}
	}
	ms.mu.Unlock()
	if d == nil {
		return // closing: the shards are gone
	}
	ms.statsMu.Lock()
	ms.queued += len(mp.parts)
	ms.statsMu.Unlock()
	d.mu.Lock()
	d.mu.queue = append(d.mu.queue, mp)
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

func (ms *markerSender) close() {
	ms.mu.Lock()
	ms.mu.closed = true
	ms.mu.Unlock()
}

// run is one of a destination's senders: it sends what is queued, one
// request at a time on its own connection, until the coordinator closes.
func (ms *markerSender) run(d *dest) {
	var conn *kafka.ClientConn
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	for {
		select {
		case <-ms.c.ctx.Done():
			return
		case <-d.wake:
		}
		for {
			batch := d.take()
			if len(batch) == 0 {
				break
			}
			ms.sendBatch(d, &conn, batch)
			if ms.c.ctx.Err() != nil {
				return
			}
		}
	}
}

// take removes from the queue what one request carries: at most one
// part per producer id (the response is keyed by producer id).
func (d *dest) take() []*markerPart {
	d.mu.Lock()
	defer d.mu.Unlock()
	var batch, rest []*markerPart
	seen := map[int64]bool{}
	for _, mp := range d.mu.queue {
		if seen[mp.job.m.ProducerID] {
			rest = append(rest, mp)
			continue
		}
		seen[mp.job.m.ProducerID] = true
		batch = append(batch, mp)
	}
	d.mu.queue = rest
	return batch
}

// sendBatch sends one WriteTxnMarkers with batch and reports each part.
func (ms *markerSender) sendBatch(d *dest, conn **kafka.ClientConn, batch []*markerPart) {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Version = markerAPIVersion
	for _, mp := range batch {
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.ProducerEpoch, m.Committed = mp.job.m.ProducerID, mp.job.m.ProducerEpoch, mp.job.m.Commit
		m.CoordinatorEpoch = mp.job.epoch
		for _, tp := range mp.parts {
			if n := len(m.Topics); n == 0 || m.Topics[n-1].Topic != tp.Topic {
				t := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
				t.Topic = tp.Topic
				m.Topics = append(m.Topics, t)
			}
			m.Topics[len(m.Topics)-1].Partitions = append(m.Topics[len(m.Topics)-1].Partitions, tp.Partition)
		}
		req.Markers = append(req.Markers, m)
	}
	resp, err := ms.roundTrip(d, conn, req)
	if err != nil {
		ms.c.log.Debug("txncoord: WriteTxnMarkers failed", "broker", d.id, "markers", len(batch), "err", err)
	}
	codes := map[int64]map[txn.TopicPartition]int16{}
	if resp != nil {
		for _, m := range resp.Markers {
			byPart := map[txn.TopicPartition]int16{}
			for _, t := range m.Topics {
				for _, p := range t.Partitions {
					byPart[txn.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = p.ErrorCode
				}
			}
			codes[m.ProducerID] = byPart
		}
	}
	now := time.Now()
	var sent, failed int64
	var lat time.Duration
	for _, mp := range batch {
		var bad []txn.TopicPartition
		for _, tp := range mp.parts {
			code, ok := codes[mp.job.m.ProducerID][tp]
			if !ok {
				code = kerr.UnknownServerError.Code
				if err != nil {
					code = kerr.NetworkException.Code
				}
			}
			if ms.failedCode(tp, code, mp.job) {
				bad = append(bad, tp)
				failed++
			} else {
				sent++
			}
		}
		lat += time.Duration(len(mp.parts)) * now.Sub(mp.queued)
		mp.job.done(ms.c, bad)
	}
	ms.statsMu.Lock()
	ms.queued -= int(sent + failed)
	ms.sent += sent
	ms.failed += failed
	ms.latency += lat
	ms.reqs++
	ms.inReqs += int64(len(batch))
	ms.statsMu.Unlock()
}

// failedCode says whether a partition's answer means its marker must be
// sent again.
func (ms *markerSender) failedCode(tp txn.TopicPartition, code int16, job *markerJob) bool {
	switch code {
	case 0:
		return false
	case kerr.InvalidProducerEpoch.Code:
		// The partition has seen a newer epoch of this producer: the
		// coordinator bumped it after this transaction, so the
		// transaction is over there (Kafka's completion handler stops
		// sending too).
		ms.c.log.Warn("txncoord: a marker met a newer producer epoch; not resent", "topic", tp.Topic, "partition", tp.Partition,
			"producer_id", job.m.ProducerID, "epoch", job.m.ProducerEpoch)
		return false
	case kerr.UnknownTopicOrPartition.Code:
		if _, exists := ms.c.host.Leader(tp.Topic, tp.Partition); !exists {
			return false // deleted meanwhile
		}
	}
	return true
}

// roundTrip sends req to d on the sender's *conn, dialing first if
// needed; an error closes the connection (the next request dials again).
func (ms *markerSender) roundTrip(d *dest, conn **kafka.ClientConn, req *kmsg.WriteTxnMarkersRequest) (*kmsg.WriteTxnMarkersResponse, error) {
	if *conn == nil {
		c, err := ms.c.host.Dial(d.id)
		if err != nil {
			return nil, err
		}
		c.ClientID = "sluice-txn-markers"
		*conn = c
	}
	resp := kmsg.NewPtrWriteTxnMarkersResponse()
	// The leader waits up to its request.timeout.ms for the markers to be
	// replicated: wait a little longer than that.
	if err := (*conn).RoundTrip(req, resp, ms.c.opts.WriteTimeout+5*time.Second); err != nil {
		(*conn).Close()
		*conn = nil
		return nil, err
	}
	return resp, nil
}

// done records one part's failed partitions; the last part reports the
// job to its shard.
func (j *markerJob) done(c *Coordinator, failed []txn.TopicPartition) {
	j.mu.Lock()
	j.failed = append(j.failed, failed...)
	j.left--
	last := j.left == 0
	j.mu.Unlock()
	if last {
		c.markersDone(j.p, j.epoch, j.m.ID, j.failed)
	}
}

func (ms *markerSender) stats(st *Stats) {
	ms.statsMu.Lock()
	defer ms.statsMu.Unlock()
	st.MarkersQueued = ms.queued
	st.MarkersSent, st.MarkersFailed, st.MarkerLatency = ms.sent, ms.failed, ms.latency
	st.MarkerRequests, st.MarkerBatch = ms.reqs, ms.inReqs
}
