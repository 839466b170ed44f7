package soak

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/segment"
)

// The bad client's attacks: what a broken or hostile client sends. Each
// must be refused with an error code; a forged fetch must not change who
// leads, and a poison batch must not reach the log.
const (
	// BadForgedReplicaFetch claims a follower's replica id at the log end
	// with a broker epoch that is not the follower's (Fetch v15+,
	// ReplicaState): counted, it would acknowledge acks=all produces that
	// the real follower does not have.
	BadForgedReplicaFetch = "forged-replica-fetch"
	// BadOldReplicaFetch is the same claim in a Fetch below v15, which
	// carries no broker epoch to check.
	BadOldReplicaFetch = "old-replica-fetch"
	// BadFutureEpochFetch fetches with the leader's epoch + 1: the leader
	// must answer UNKNOWN_LEADER_EPOCH and keep leading.
	BadFutureEpochFetch = "future-epoch-fetch"
	// BadGarbageGzip is a batch flagged gzip whose payload is not gzip.
	BadGarbageGzip = "poison-garbage-gzip"
	// BadCountMismatch is a batch whose record count (and last offset
	// delta) claims far more records than it holds.
	BadCountMismatch = "poison-count-mismatch"
	// BadControlBatch is a control batch sent by a client.
	BadControlBatch = "poison-control-batch"
)

// BadKinds lists the bad client's attacks in the order it cycles through.
var BadKinds = []string{BadForgedReplicaFetch, BadOldReplicaFetch, BadFutureEpochFetch, BadGarbageGzip, BadCountMismatch, BadControlBatch}

// BadRequest is one request of the bad client and what the cluster said.
type BadRequest struct {
	Time   time.Time `json:"time"`
	Kind   string    `json:"kind"`
	TP     TP        `json:"tp"`
	Broker int32     `json:"broker"`
	// Code is the Kafka error code of the answer (0: accepted), or -1 when
	// no answer came (the broker was down: the request is not counted).
	Code int16 `json:"code"`
	// Err is the error name, or why no answer came.
	Err string `json:"err,omitempty"`
}

// Accepted says whether the cluster took the request.
func (b BadRequest) Accepted() bool { return b.Code == 0 }

// Answered says whether the request got an answer at all.
func (b BadRequest) Answered() bool { return b.Code >= 0 }

// badClient sends one bad request every `every`, cycling through
// BadKinds over random partitions, to the partition's leader on a raw
// connection (so the request versions and fields are exactly the forged
// ones, with no client library to correct them).
type badClient struct {
	cl    *kgo.Client // for metadata only
	tps   []TP
	every time.Duration
	rng   *rand.Rand

	mu   sync.Mutex
	reqs []BadRequest
}

func newBadClient(cl *kgo.Client, tps []TP, every time.Duration, seed int64) *badClient {
	return &badClient{cl: cl, tps: tps, every: every, rng: rand.New(rand.NewPCG(uint64(seed), 0xbad))}
}

// run sends until ctx ends.
func (b *badClient) run(ctx context.Context) {
	t := time.NewTicker(b.every)
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		kind := BadKinds[i%len(BadKinds)]
		tp := b.tps[b.rng.IntN(len(b.tps))]
		r := b.send(ctx, kind, tp)
		b.mu.Lock()
		b.reqs = append(b.reqs, r)
		b.mu.Unlock()
	}
}

// requests returns what was sent so far.
func (b *badClient) requests() []BadRequest {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]BadRequest(nil), b.reqs...)
}

// partitionView is what the bad client needs to forge a request.
type partitionView struct {
	leader      int32
	leaderAddr  string
	leaderEpoch int32
	follower    int32 // -1 without one
	topicID     [16]byte
	hw          int64
}

func (b *badClient) view(ctx context.Context, tp TP) (partitionView, error) {
	req := kmsg.NewPtrMetadataRequest()
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr(tp.Topic)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, b.cl)
	if err != nil {
		return partitionView{}, err
	}
	v := partitionView{leader: -1, follower: -1}
	for _, mt := range resp.Topics {
		v.topicID = mt.TopicID
		for _, p := range mt.Partitions {
			if p.Partition != tp.Partition {
				continue
			}
			v.leader, v.leaderEpoch = p.Leader, p.LeaderEpoch
			for _, r := range p.Replicas {
				if r != p.Leader {
					v.follower = r
					break
				}
			}
		}
	}
	for _, br := range resp.Brokers {
		if br.NodeID == v.leader {
			v.leaderAddr = net.JoinHostPort(br.Host, fmt.Sprint(br.Port))
		}
	}
	if v.leader < 0 || v.leaderAddr == "" {
		return v, fmt.Errorf("%s has no leader", tp)
	}
	lo := kmsg.NewPtrListOffsetsRequest()
	lo.ReplicaID = -1
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = tp.Topic
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Partition, lp.Timestamp, lp.CurrentLeaderEpoch = tp.Partition, -1, -1
	lt.Partitions = append(lt.Partitions, lp)
	lo.Topics = append(lo.Topics, lt)
	lresp, err := lo.RequestWith(ctx, b.cl)
	if err != nil {
		return v, err
	}
	for _, t := range lresp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return v, fmt.Errorf("%s: list offsets: %w", tp, err)
			}
			v.hw = p.Offset
		}
	}
	return v, nil
}

func (b *badClient) send(ctx context.Context, kind string, tp TP) BadRequest {
	r := BadRequest{Time: time.Now(), Kind: kind, TP: tp, Broker: -1, Code: -1}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	v, err := b.view(rctx, tp)
	if err != nil {
		r.Err = err.Error()
		return r
	}
	r.Broker = v.leader
	var req kmsg.Request
	switch kind {
	case BadForgedReplicaFetch, BadOldReplicaFetch, BadFutureEpochFetch:
		f := kmsg.NewPtrFetchRequest()
		f.MaxWaitMillis, f.MinBytes, f.MaxBytes = 0, 1, 1<<20
		f.SessionEpoch = -1
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = tp.Topic
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition = tp.Partition
		fp.CurrentLeaderEpoch = v.leaderEpoch
		fp.PartitionMaxBytes = 1 << 20
		// At the high watermark: a valid offset, which a leader that
		// trusts the claim answers with records and counts as the
		// follower's acknowledgement.
		fp.FetchOffset = v.hw
		f.Version = 12
		switch kind {
		case BadForgedReplicaFetch:
			if v.follower < 0 {
				r.Err = "no follower to claim"
				return r
			}
			f.Version = 15
			ft.TopicID = v.topicID // v13+ names topics by id
			f.ReplicaState.ID = v.follower
			f.ReplicaState.Epoch = 1<<40 + b.rng.Int64N(1<<20)
		case BadOldReplicaFetch:
			if v.follower < 0 {
				r.Err = "no follower to claim"
				return r
			}
			f.ReplicaID = v.follower
		case BadFutureEpochFetch:
			f.ReplicaID = -1
			fp.CurrentLeaderEpoch = v.leaderEpoch + 1
			fp.FetchOffset = 0
		}
		ft.Partitions = append(ft.Partitions, fp)
		f.Topics = append(f.Topics, ft)
		req = f
	default:
		p := kmsg.NewPtrProduceRequest()
		p.Version = 9
		p.Acks = 1
		p.TimeoutMillis = 5000
		pt := kmsg.NewProduceRequestTopic()
		pt.Topic = tp.Topic
		pp := kmsg.NewProduceRequestTopicPartition()
		pp.Partition = tp.Partition
		pp.Records = PoisonBatch(kind, time.Now().UnixMilli())
		pt.Partitions = append(pt.Partitions, pp)
		p.Topics = append(p.Topics, pt)
		req = p
	}
	resp, err := rawRequest(rctx, v.leaderAddr, req)
	if err != nil {
		r.Err = err.Error()
		return r
	}
	r.Code = answerCode(resp)
	if e := kerr.ErrorForCode(r.Code); e != nil {
		r.Err = e.Error()
	}
	return r
}

// answerCode is the request's error: the top-level code where there is
// one, else the one partition's.
func answerCode(resp kmsg.Response) int16 {
	switch resp := resp.(type) {
	case *kmsg.FetchResponse:
		if resp.ErrorCode != 0 {
			return resp.ErrorCode
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				return p.ErrorCode
			}
		}
	case *kmsg.ProduceResponse:
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				return p.ErrorCode
			}
		}
	}
	return kerr.UnknownServerError.Code
}

// PoisonBatch builds a RecordBatch of the given Bad* kind with a valid
// CRC-32C, so only its content is wrong.
func PoisonBatch(kind string, ts int64) []byte {
	b := segment.BuildBatch(ts, []byte("bad client"), []byte("poison"))
	be := binary.BigEndian
	const (
		offLastOffsetDelta = 23
		offAttributes      = 21
		offRecordCount     = 57
		offCRC             = 17
	)
	switch kind {
	case BadGarbageGzip:
		be.PutUint16(b[offAttributes:], 1) // gzip
		for i := segment.BatchHeaderSize; i < len(b); i++ {
			b[i] ^= 0x5a
		}
	case BadCountMismatch:
		be.PutUint32(b[offLastOffsetDelta:], 999_999)
		be.PutUint32(b[offRecordCount:], 1_000_000)
	case BadControlBatch:
		be.PutUint16(b[offAttributes:], 0x20)
	}
	be.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// rawRequest sends req at its own version on a new connection to addr and
// reads the answer: no client library between the forger and the broker.
func rawRequest(ctx context.Context, addr string, req kmsg.Request) (kmsg.Response, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	const corr = 7
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("sluice-soak-bad-client")).AppendRequest(nil, req, corr)
	if _, err := conn.Write(frame); err != nil {
		return nil, err
	}
	rd := bufio.NewReader(conn)
	var size [4]byte
	if _, err := io.ReadFull(rd, size[:]); err != nil {
		return nil, fmt.Errorf("no answer (connection closed: %w)", err)
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 4 || n > 64<<20 {
		return nil, fmt.Errorf("answer of %d bytes", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(rd, body); err != nil {
		return nil, err
	}
	if got := int32(binary.BigEndian.Uint32(body)); got != corr {
		return nil, fmt.Errorf("answer to correlation id %d, sent %d", got, corr)
	}
	body = body[4:]
	if req.IsFlexible() {
		// Response header v1: tagged fields (none are sent).
		if len(body) < 1 || body[0] != 0 {
			return nil, errors.New("response header with tagged fields")
		}
		body = body[1:]
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("answer does not decode: %w", err)
	}
	return resp, nil
}
