package node

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

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
	// partitionFetchBackoff is how long a follower whose partition got an
	// error in a fetch answer (NOT_LEADER_OR_FOLLOWER while the metadata
	// moves, say) waits before asking again: shorter than Kafka's 1 s
	// replica.fetch.backoff.ms, because a new leader is usually known by then.
	partitionFetchBackoff = 100 * time.Millisecond
	// maxResponseFrame bounds a response frame read from a leader.
	maxResponseFrame = replicaFetchResponseMaxBytes + 1<<20
)

// errLeaderUnreachable is what a follower's fetch gets when the leader
// could not be asked: the state machine fetches again on a later tick.
var errLeaderUnreachable = errors.New("node: partition leader unreachable")

// fetcher is the replica fetcher for one leader broker (Kafka's
// ReplicaFetcherThread): it sends the fetches its followers queued as one
// Fetch request (v15: topics by ID, ReplicaState with this broker's id
// and epoch, last_fetched_epoch) and hands each partition's answer back to
// its replica. One request is in flight at a time; the leader long-polls
// it (replica.fetch.wait.max.ms).
type fetcher struct {
	n      *Node
	leader int32

	// mu is a leaf: taken under replica.mu by enqueue, under Node.fetch
	// by stopFetchers.
	mu struct {
		sync.Mutex
		queue map[*replica]partition.FetchRequest
		conn  net.Conn
	}
	wake chan struct{}

	// body holds the last response read (run's goroutine only): its
	// record batches are appended before the next fetch reuses it.
	body []byte
}

// fetcher returns (starting if needed) the fetcher for leader.
func (n *Node) fetcher(leader int32) *fetcher {
	n.fetch.Lock()
	defer n.fetch.Unlock()
	f := n.fetch.fetchers[leader]
	if f == nil {
		f = &fetcher{n: n, leader: leader, wake: make(chan struct{}, 1)}
		f.mu.queue = map[*replica]partition.FetchRequest{}
		n.fetch.fetchers[leader] = f
		if !n.fetch.stopped {
			n.wg.Add(1)
			go f.run()
		}
	}
	return f
}

// stopFetchers closes the fetchers' connections so that a fetch in flight
// returns at once; run them no more.
func (n *Node) stopFetchers() {
	n.fetch.Lock()
	defer n.fetch.Unlock()
	n.fetch.stopped = true
	for _, f := range n.fetch.fetchers {
		f.mu.Lock()
		if f.mu.conn != nil {
			f.mu.conn.Close()
		}
		f.mu.Unlock()
	}
}

// enqueue queues a follower's fetch. It never blocks.
func (f *fetcher) enqueue(r *replica, req partition.FetchRequest) {
	f.mu.Lock()
	f.mu.queue[r] = req
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

type fetchItem struct {
	r   *replica
	req partition.FetchRequest
}

func (f *fetcher) take() []fetchItem {
	f.mu.Lock()
	defer f.mu.Unlock()
	items := make([]fetchItem, 0, len(f.mu.queue))
	for r, req := range f.mu.queue {
		items = append(items, fetchItem{r, req})
	}
	clear(f.mu.queue)
	return items
}

func (f *fetcher) run() {
	defer f.n.wg.Done()
	defer f.closeConn()
	var failing error
	for {
		select {
		case <-f.n.stop:
			return
		case <-f.wake:
		}
		items := f.take()
		if len(items) == 0 {
			continue
		}
		resp, err := f.fetch(items)
		if err != nil {
			f.closeConn()
			if failing == nil || failing.Error() != err.Error() {
				f.n.log.Warn("node: replica fetch failed; retrying", "leader", f.leader, "err", err)
			}
			failing = err
			// replica.fetch.backoff.ms before the followers ask again.
			t := time.NewTimer(replicaFetchBackoff)
			select {
			case <-f.n.stop:
				t.Stop()
				return
			case <-t.C:
			}
			for _, it := range items {
				it.r.fetched(it.req, nil, errLeaderUnreachable)
			}
			continue
		}
		if failing != nil {
			f.n.log.Info("node: replica fetch works again", "leader", f.leader)
			failing = nil
		}
		answered := make(map[*replica]bool, len(items))
		var flushes []<-chan struct{}
		for i := range resp.Topics {
			t := &resp.Topics[i]
			for j := range t.Partitions {
				rp := &t.Partitions[j]
				for _, it := range items {
					if it.r.topicID == t.TopicID && it.r.partition == rp.Partition && !answered[it.r] {
						answered[it.r] = true
						if ch := it.r.fetched(it.req, rp, nil); ch != nil {
							flushes = append(flushes, ch)
						}
						break
					}
				}
			}
		}
		for _, it := range items {
			if !answered[it.r] {
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
			case <-f.n.stop:
				return
			}
		}
	}
}

// fetch sends one Fetch for items to the leader and returns its answer.
func (f *fetcher) fetch(items []fetchItem) (*kmsg.FetchResponse, error) {
	req := kmsg.NewPtrFetchRequest()
	// v15: topics by ID, and ReplicaState with this broker's id and epoch
	// (KIP-903), without which the leader counts nothing.
	req.SetVersion(15)
	req.ReplicaID = -1
	req.ReplicaState.ID, req.ReplicaState.Epoch = f.n.cfg.NodeID, f.n.epoch.Load()
	req.MaxWaitMillis = int32(replicaFetchWaitMax / time.Millisecond)
	req.MinBytes = 1
	req.MaxBytes = replicaFetchResponseMaxBytes
	req.SessionEpoch = -1
	byTopic := map[quorum.UUID]int{}
	for _, it := range items {
		i, ok := byTopic[it.r.topicID]
		if !ok {
			i = len(req.Topics)
			byTopic[it.r.topicID] = i
			t := kmsg.NewFetchRequestTopic()
			t.TopicID = it.r.topicID
			req.Topics = append(req.Topics, t)
		}
		p := kmsg.NewFetchRequestTopicPartition()
		p.Partition = it.r.partition
		p.CurrentLeaderEpoch = it.req.CurrentLeaderEpoch
		p.FetchOffset = it.req.FetchOffset
		p.LastFetchedEpoch = it.req.LastFetchedEpoch
		p.LogStartOffset = -1
		p.PartitionMaxBytes = replicaFetchMaxBytes
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, p)
	}
	conn, err := f.dial()
	if err != nil {
		return nil, err
	}
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	if f.body, err = roundTrip(conn, req, resp, replicaFetchWaitMax+replicaSocketTimeout, f.body); err != nil {
		return nil, err
	}
	if resp.ErrorCode != 0 {
		return nil, fmt.Errorf("fetch from broker %d: error code %d", f.leader, resp.ErrorCode)
	}
	return resp, nil
}

// dial returns the connection to the leader, opening it if needed at the
// address the metadata image gives for the leader's Kafka listener.
func (f *fetcher) dial() (net.Conn, error) {
	f.mu.Lock()
	c := f.mu.conn
	f.mu.Unlock()
	if c != nil {
		return c, nil
	}
	var addr string
	f.n.ctrl.View(func(im *quorum.Image) {
		if b := im.Brokers[f.leader]; b != nil {
			for _, e := range b.Endpoints {
				if e.Name == f.n.cfg.InterBrokerListener {
					addr = net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port)))
				}
			}
		}
	})
	if addr == "" {
		return nil, fmt.Errorf("broker %d has no registered endpoint for inter.broker.listener.name=%s (give every broker the same inter-broker listener name)", f.leader, f.n.cfg.InterBrokerListener)
	}
	nc, err := net.DialTimeout("tcp", addr, replicaSocketTimeout)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-f.n.stop:
		nc.Close()
		return nil, errLeaderUnreachable
	default:
	}
	f.mu.conn = &bufConn{Conn: nc, r: bufio.NewReaderSize(nc, 64<<10)}
	return f.mu.conn, nil
}

func (f *fetcher) closeConn() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mu.conn != nil {
		f.mu.conn.Close()
		f.mu.conn = nil
	}
}

// bufConn reads through a buffer.
type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// roundTrip writes req (header v1/v2 as its version needs, correlation id
// 1: one request in flight) and reads the response into resp. The response
// is read into buf when it fits (returned, grown if need be): resp's byte
// fields alias it.
func roundTrip(c net.Conn, req kmsg.Request, resp kmsg.Response, timeout time.Duration, buf []byte) ([]byte, error) {
	const corr = 1
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("sluice-replica-fetcher")).AppendRequest(nil, req, corr)
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return buf, err
	}
	if _, err := c.Write(frame); err != nil {
		return buf, err
	}
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return buf, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 4 || n > maxResponseFrame {
		return buf, fmt.Errorf("response frame of %d bytes", n)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	body := buf[:n]
	if _, err := io.ReadFull(c, body); err != nil {
		return buf, err
	}
	if got := int32(binary.BigEndian.Uint32(body)); got != corr {
		return buf, fmt.Errorf("response correlation id %d, want %d", got, corr)
	}
	body = body[4:]
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() {
		// Response header v1: tagged fields; we know none.
		var err error
		if body, err = skipTags(body); err != nil {
			return buf, err
		}
	}
	return buf, resp.ReadFrom(body)
}

// skipTags skips a tagged-field section.
func skipTags(b []byte) ([]byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, errors.New("bad tagged fields")
	}
	b = b[k:]
	for range n {
		if _, k = binary.Uvarint(b); k <= 0 {
			return nil, errors.New("bad tag")
		}
		b = b[k:]
		l, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < l {
			return nil, errors.New("bad tag length")
		}
		b = b[k+int(l):]
	}
	return b, nil
}
