package node

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/node/kafka"
	"github.com/sluice-log/sluice/quorum"
	"github.com/sluice-log/sluice/segment"
)

// forgeFetch sends one Fetch for topic/partition at version v to addr on a
// connection of its own, as anyone on the network can: replica id and
// broker epoch are what the sender claims (v15+ carries them in
// ReplicaState). It returns the partition's answer.
func forgeFetch(t testing.TB, addr string, v int16, replica int32, brokerEpoch int64, topic string, topicID [16]byte, partition int32, offset int64, leaderEpoch int32) kmsg.FetchResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(v)
	req.ReplicaID = replica
	if v >= 15 {
		req.ReplicaID = -1
		req.ReplicaState.ID, req.ReplicaState.Epoch = replica, brokerEpoch
	}
	req.MaxBytes, req.SessionEpoch = 1<<20, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, topicID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.CurrentLeaderEpoch, rp.PartitionMaxBytes = partition, offset, leaderEpoch, 1<<20
	rp.LastFetchedEpoch = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	if err := kafka.NewClientConn(c).RoundTrip(req, resp, 10*time.Second); err != nil {
		t.Fatalf("forged fetch v%d: %v", v, err)
	}
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("forged fetch v%d: %+v", v, resp)
	}
	return resp.Topics[0].Partitions[0]
}

// TestNewerLeaderEpochDoesNotFenceLeader: a Fetch claiming a leader epoch
// newer than the leader's, from a broker that is not even a replica, is
// answered UNKNOWN_LEADER_EPOCH and nothing else; the leader keeps
// serving (issue 14: one such packet fenced it until a restart).
func TestNewerLeaderEpochDoesNotFenceLeader(t *testing.T) {
	tn := startNode(t, t.TempDir())
	ctx := testCtx(t)
	cl := newClient(t, tn)
	createTopic(ctx, t, cl, "t", 1)
	r := tn.replica("t", 0)
	epoch := r.Epoch()
	for _, from := range []int32{999, 1} {
		p := forgeFetch(t, tn.KafkaAddr(), 12, from, -1, "t", [16]byte{}, 0, 0, epoch+1)
		if p.ErrorCode != kerr.UnknownLeaderEpoch.Code {
			t.Fatalf("fetch from %d at leader epoch %d: error %d, want UNKNOWN_LEADER_EPOCH", from, epoch+1, p.ErrorCode)
		}
	}
	if pr := produceRaw(ctx, t, cl, "t", 0, -1, segment.BuildBatch(1, []byte("after"))); pr.ErrorCode != 0 {
		t.Fatalf("produce after the forged fetch: %v", kerr.ErrorForCode(pr.ErrorCode))
	}
	st := r.Status()
	if st.Fenced || st.HW != 1 {
		t.Fatalf("leader after the forged fetch: fenced=%v hw=%d", st.Fenced, st.HW)
	}
}

// pauseProxy forwards TCP connections to a node's Kafka listener. Paused,
// it cuts every connection it carries and refuses new ones: the node's
// followers, which reach it at the address it advertises (the proxy's),
// cannot fetch, while everything else (quorum, gossip, the test's direct
// connections) goes on.
type pauseProxy struct {
	ln     net.Listener
	mu     sync.Mutex
	target string
	paused bool
	conns  map[net.Conn]bool
}

func newPauseProxy(t testing.TB) *pauseProxy {
	p := &pauseProxy{ln: listen(t), conns: map[net.Conn]bool{}}
	go p.serve()
	t.Cleanup(func() {
		p.ln.Close()
		p.pause(true)
	})
	return p
}

func (p *pauseProxy) addr() string { return p.ln.Addr().String() }

func (p *pauseProxy) to(target string) {
	p.mu.Lock()
	p.target = target
	p.mu.Unlock()
}

// pause cuts and refuses connections (on) or lets them through again.
func (p *pauseProxy) pause(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.paused = on
	if on {
		for c := range p.conns {
			c.Close()
		}
		clear(p.conns)
	}
}

// track registers c, false (c closed) while paused.
func (p *pauseProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused {
		c.Close()
		return false
	}
	p.conns[c] = true
	return true
}

func (p *pauseProxy) serve() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		target := p.target
		p.mu.Unlock()
		if !p.track(in) {
			continue
		}
		out, err := net.Dial("tcp", target)
		if err != nil || !p.track(out) {
			in.Close()
			continue
		}
		go func() {
			_, _ = io.Copy(out, in)
			out.Close()
		}()
		go func() {
			_, _ = io.Copy(in, out)
			in.Close()
		}()
	}
}

// TestForgedReplicaFetchesDoNotAcknowledge is issue 14's scenario: both
// followers of an RF=3, min.insync.replicas=2 partition cannot fetch (the
// leader's advertised address is cut), an acks=all produce waits, and
// others send Fetches claiming to be those followers at the log end —
// below v15 (no broker epoch), with wrong broker epochs, as the leader
// itself. None is answered with records, the produce is not acknowledged
// and the high watermark does not move; once the real followers fetch
// again (v15, their registered epochs) it commits.
func TestForgedReplicaFetchesDoNotAcknowledge(t *testing.T) {
	c := newReplCluster(t, 3, false, "replica.lag.time.max.ms=60000")
	for _, rn := range c.nodes {
		rn.proxy = newPauseProxy(t)
	}
	c.start()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const topic = "forged"
	adm := kadm.NewClient(c.client())
	if _, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, topic); err != nil {
		t.Fatal(err)
	}
	var id quorum.UUID
	var leaderEpoch int32
	epochs := map[int32]int64{}
	c.waitImage(ctx, "the topic with a full ISR", func(im *quorum.Image) bool {
		tp := im.Topics[topic]
		if tp == nil || len(tp.Partitions[0].ISR) != 3 {
			return false
		}
		id, leaderEpoch = tp.ID, tp.Partitions[0].LeaderEpoch
		for bid, b := range im.Brokers {
			epochs[bid] = b.Epoch
		}
		return true
	})
	leader := c.leaderOf(topic, 0)
	var followers []int32
	for _, rn := range c.nodes {
		if rn != leader {
			followers = append(followers, rn.id)
		}
	}
	r := leader.replica(topic, 0)
	hw := r.HighWatermark()
	leader.proxy.pause(true)

	produced := make(chan kmsg.ProduceResponseTopicPartition, 1)
	go func() {
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(9)
		req.Acks, req.TimeoutMillis = -1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = segment.BuildBatch(1, []byte("must not be acknowledged"))
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		conn, err := net.Dial("tcp", leader.KafkaAddr())
		if err == nil {
			defer conn.Close()
			err = kafka.NewClientConn(conn).RoundTrip(req, resp, 30*time.Second)
		}
		if err != nil {
			t.Error(err)
			close(produced)
			return
		}
		produced <- resp.Topics[0].Partitions[0]
	}()
	waitUntil(ctx, t, &testNode{Node: leader.Node}, func() bool { return r.Log().LogEndOffset() > hw })
	end := r.Log().LogEndOffset()

	type forged struct {
		v       int16
		replica int32
		epoch   int64
	}
	var tries []forged
	for _, f := range followers {
		tries = append(tries,
			forged{12, f, -1},            // the packet: no broker epoch
			forged{15, f, -1},            // v15 without an epoch
			forged{15, f, epochs[f] + 1}, // a newer incarnation than registered
			forged{15, f, epochs[f] - 1}, // an older one
		)
	}
	tries = append(tries, forged{15, leader.id, epochs[leader.id]}, forged{15, 99, 1})
	for _, f := range tries {
		p := forgeFetch(t, leader.KafkaAddr(), f.v, f.replica, f.epoch, topic, id, 0, end, leaderEpoch)
		if p.ErrorCode != kerr.NotLeaderForPartition.Code {
			t.Errorf("fetch v%d as replica %d, broker epoch %d: error %v, want NOT_LEADER_OR_FOLLOWER", f.v, f.replica, f.epoch, kerr.ErrorForCode(p.ErrorCode))
		}
	}
	select {
	case pr, ok := <-produced:
		if ok && pr.ErrorCode == 0 {
			t.Fatalf("the produce was acknowledged (offset %d) with no follower fetching", pr.BaseOffset)
		}
		if ok && pr.ErrorCode != kerr.RequestTimedOut.Code {
			t.Errorf("produce: %v, want REQUEST_TIMED_OUT", kerr.ErrorForCode(pr.ErrorCode))
		}
	case <-ctx.Done():
		t.Fatal("no produce answer")
	}
	if got := r.HighWatermark(); got != hw {
		t.Fatalf("high watermark moved from %d to %d with no follower fetching", hw, got)
	}

	// The real followers fetch again: the record commits.
	leader.proxy.pause(false)
	waitUntil(ctx, t, &testNode{Node: leader.Node}, func() bool { return r.HighWatermark() >= end })
}

// TestFetchByTopicID: Fetch v13+ names topics by ID; an unknown ID is
// UNKNOWN_TOPIC_ID, a known one reads as by name.
func TestFetchByTopicID(t *testing.T) {
	tn := startNode(t, t.TempDir())
	ctx := testCtx(t)
	cl := newClient(t, tn)
	createTopic(ctx, t, cl, "byid", 1)
	if pr := produceRaw(ctx, t, cl, "byid", 0, -1, segment.BuildBatch(1, []byte("a"), []byte("b"))); pr.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(pr.ErrorCode))
	}
	id := tn.replica("byid", 0).TopicID()
	for _, v := range []int16{13, 15} {
		p := forgeFetch(t, tn.KafkaAddr(), v, -1, -1, "", id, 0, 0, -1)
		if p.ErrorCode != 0 || p.HighWatermark != 2 || len(p.RecordBatches) == 0 {
			t.Fatalf("v%d by id: error %v hw %d, %d bytes", v, kerr.ErrorForCode(p.ErrorCode), p.HighWatermark, len(p.RecordBatches))
		}
		if p := forgeFetch(t, tn.KafkaAddr(), v, -1, -1, "", quorum.NewUUID(), 0, 0, -1); p.ErrorCode != kerr.UnknownTopicID.Code {
			t.Fatalf("v%d by an unknown id: %v", v, kerr.ErrorForCode(p.ErrorCode))
		}
	}
}

// TestLeaderThatCannotServeIsVisible: a partition led here whose log does
// not open (a file where its directory goes) makes /readyz answer 503 with
// the partition and the error, and the reason goes when the topic does.
func TestLeaderThatCannotServeIsVisible(t *testing.T) {
	dir := t.TempDir()
	tn := startNode(t, dir)
	ctx := testCtx(t)
	cl := newClient(t, tn)
	if err := os.WriteFile(filepath.Join(dir, "broken-0"), []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	createTopic(ctx, t, cl, "broken", 1)
	waitUntil(ctx, t, tn, func() bool { return len(tn.notServing()) > 0 })
	code, body := getStatus(t, "http://"+tn.http.Addr().String()+"/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "broken-0 (its log did not open") {
		t.Fatalf("/readyz with a partition that cannot serve: %d %q", code, body)
	}
	if _, err := kadm.NewClient(cl).DeleteTopics(ctx, "broken"); err != nil {
		t.Fatal(err)
	}
	waitUntil(ctx, t, tn, func() bool { return len(tn.notServing()) == 0 })
	if code, body := getStatus(t, "http://"+tn.http.Addr().String()+"/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz after the topic went: %d %q", code, body)
	}
}
