package coord

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/node/group"
	"github.com/sluice-log/sluice/node/kafka"
	"github.com/sluice-log/sluice/segment"
)

// The real node/group runs in node/'s tests on real nodes; these drive the
// driver's own paths (load, append order, leadership loss, timers) with a
// machine small enough to see through: each OffsetCommit becomes one
// record "group/offset", answered once it is committed.

type fakeMachine struct {
	replayed []string
	loaded   bool
	waiting  map[uint64]uint64 // append id -> request id
	nextID   uint64
	ready    group.Ready
	appended []string
	due      time.Time
	ticks    int
	ticked   chan struct{}
}

func (m *fakeMachine) Replay(off int64, k, v []byte) error {
	m.replayed = append(m.replayed, fmt.Sprintf("%d:%s=%s", off, k, v))
	return nil
}
func (m *fakeMachine) ReplayTxn(off, pid int64, k, v []byte) error {
	m.replayed = append(m.replayed, fmt.Sprintf("%d:%s=%s(txn %d)", off, k, v, pid))
	return nil
}
func (m *fakeMachine) ReplayMarker(pid int64, commit bool) {
	m.replayed = append(m.replayed, fmt.Sprintf("marker %d commit=%v", pid, commit))
}
func (m *fakeMachine) CompleteTxn(_ time.Time, pid int64, commit bool) {
	m.replayed = append(m.replayed, fmt.Sprintf("complete %d commit=%v loaded=%v", pid, commit, m.loaded))
}
func (m *fakeMachine) LoadDone(time.Time) { m.loaded = true }
func (m *fakeMachine) Step(_ time.Time, r group.Request) {
	req := r.Body.(*kmsg.OffsetCommitRequest)
	m.nextID++
	m.waiting[m.nextID] = r.ID
	m.ready.Appends = append(m.ready.Appends, group.Append{ID: m.nextID, Records: []group.Record{
		{Key: []byte(req.Group), Value: fmt.Appendf(nil, "%d", req.Topics[0].Partitions[0].Offset)}}})
}
func (m *fakeMachine) Appended(_ time.Time, id uint64, err error) {
	m.appended = append(m.appended, fmt.Sprintf("%d:%v", id, err))
	resp := kmsg.NewPtrOffsetCommitResponse()
	if err != nil {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rp := kmsg.NewOffsetCommitResponseTopicPartition()
		rp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		rt.Partitions = append(rt.Partitions, rp)
		resp.Topics = append(resp.Topics, rt)
	}
	m.ready.Responses = append(m.ready.Responses, group.Response{ID: m.waiting[id], Body: resp})
	delete(m.waiting, id)
}
func (m *fakeMachine) TickTo(now time.Time) {
	if !m.due.IsZero() && !now.Before(m.due) {
		m.ticks++
		m.due = time.Time{}
		if m.ticked != nil {
			close(m.ticked)
		}
	}
}
func (m *fakeMachine) NextDue() time.Time { return m.due }
func (m *fakeMachine) Ready() group.Ready {
	rd := m.ready
	m.ready = group.Ready{}
	return rd
}
func (m *fakeMachine) ListGroups([]string, []string) []kmsg.ListGroupsResponseGroup { return nil }
func (m *fakeMachine) TopicsDeleted(time.Time, []string)                            {}
func (m *fakeMachine) Stats() group.Stats                                           { return group.Stats{} }

// fakeHost is one offsets partition 0 in memory: its batches, a high
// watermark the test moves, and appends whose acknowledgement the test
// gives (ack) or that fail at once (failNext).
type fakeHost struct {
	mu       sync.Mutex
	log      [][]byte // batches, base offsets set
	leo, hw  int64
	leading  bool
	changed  chan struct{}
	pending  []chan error
	failNext error
}

func newFakeHost() *fakeHost { return &fakeHost{leading: true, changed: make(chan struct{})} }

func (h *fakeHost) signal() {
	close(h.changed)
	h.changed = make(chan struct{})
}

func (h *fakeHost) write(recs ...group.Record) { h.writeBatch(encodeBatch(1, recs), len(recs)) }

func (h *fakeHost) writeBatch(b []byte, n int) {
	for i := range 8 {
		b[i] = byte(uint64(h.leo) >> (56 - 8*i))
	}
	h.log = append(h.log, b)
	h.leo += int64(n)
}

func (h *fakeHost) Append(_ context.Context, p int32, batch []byte) kafka.ProduceResult {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.failNext; err != nil {
		h.failNext = nil
		return kafka.ProduceResult{Err: err}
	}
	it := segment.NewBatchIter(batch)
	hd, b, _ := it.Next()
	var recs []record
	recs, _ = decodeBatch(recs, hd, b)
	var grs []group.Record
	for _, r := range recs {
		grs = append(grs, group.Record{Key: r.Key, Value: r.Value})
	}
	h.write(grs...)
	h.signal()
	ch := make(chan error, 1)
	h.pending = append(h.pending, ch)
	return kafka.ProduceResult{Pending: ch}
}

func (h *fakeHost) Read(p int32, off, upTo int64, _ int, _ []byte) ([]byte, int64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []byte
	next := off
	for _, b := range h.log {
		it := segment.NewBatchIter(b)
		hd, _, _ := it.Next()
		if hd.NextOffset() <= off || hd.BaseOffset >= upTo {
			continue
		}
		out = append(out, b...)
		next = hd.NextOffset()
	}
	return out, next, nil
}

func (h *fakeHost) Offsets(p, epoch int32) (int64, int64, int64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return 0, h.hw, h.leo, h.leading
}

func (h *fakeHost) NextSequence(int32, int64, int16) int32 { return 0 }

func (h *fakeHost) Changed() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.changed
}

func (h *fakeHost) setHW(hw int64) {
	h.mu.Lock()
	h.hw = hw
	h.signal()
	h.mu.Unlock()
}

// ack acknowledges the oldest pending append with err.
func (h *fakeHost) ack(t *testing.T, err error) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		h.mu.Lock()
		if len(h.pending) > 0 {
			ch := h.pending[0]
			h.pending = h.pending[1:]
			h.mu.Unlock()
			ch <- err
			return
		}
		ch := h.changed
		h.mu.Unlock()
		select {
		case <-ch:
		case <-time.After(time.Until(deadline)):
			t.Fatal("no append to acknowledge")
		}
	}
}

func commitReq(group string, off int64) kafka.GroupRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group = group
	rt := kmsg.NewOffsetCommitRequestTopic()
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Offset = off
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return kafka.GroupRequest{Body: req}
}

func newTestCoordinator(h *fakeHost) (*Coordinator, *[]*fakeMachine, *sync.Mutex) {
	var mu sync.Mutex
	var made []*fakeMachine
	c := New(h, Options{NewMachine: func(int32, int32, group.Config) Machine {
		m := &fakeMachine{waiting: map[uint64]uint64{}}
		mu.Lock()
		made = append(made, m)
		mu.Unlock()
		return m
	}})
	return c, &made, &mu
}

// waitLoaded waits until partition p's shard is loaded.
func waitLoaded(t *testing.T, c *Coordinator, p int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.WaitLoaded(ctx, p); err != nil {
		t.Fatalf("shard %d not loaded: %v", p, err)
	}
}

// TestLoadWaitsForHighWatermark: a new leader loads only once its high
// watermark reached the log end it started with, replays every record in
// order, and answers COORDINATOR_LOAD_IN_PROGRESS until then.
func TestLoadWaitsForHighWatermark(t *testing.T) {
	h := newFakeHost()
	h.write(group.Record{Key: []byte("a"), Value: []byte("1")}, group.Record{Key: []byte("b"), Value: []byte("2")})
	h.write(group.Record{Key: []byte("a")}) // tombstone
	c, made, mu := newTestCoordinator(h)
	defer c.Close()
	c.Sync(map[int32]int32{0: 1})
	if _, err := c.Do(context.Background(), 0, commitReq("g", 1)); err != kerr.CoordinatorLoadInProgress {
		t.Fatalf("before the load: %v, want COORDINATOR_LOAD_IN_PROGRESS", err)
	}
	if _, err := c.Do(context.Background(), 9, commitReq("g", 1)); err != kerr.NotCoordinator {
		t.Fatalf("shard not led: %v, want NOT_COORDINATOR", err)
	}
	h.setHW(2)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if c.WaitLoaded(ctx, 0) == nil {
		t.Fatal("loaded below the log end")
	}
	h.setHW(3)
	waitLoaded(t, c, 0)
	mu.Lock()
	m := (*made)[len(*made)-1]
	mu.Unlock()
	if got := fmt.Sprint(m.replayed); got != "[0:a=1 1:b=2 2:a=]" {
		t.Errorf("replayed %s", got)
	}
}

// TestAppendsInOrderAndLeadershipLoss: commits are written as batches and
// answered only once acknowledged, Appended in write order; a shard
// dropped by Sync answers its waiting requests NOT_COORDINATOR; a failed
// write reaches the machine as its error.
func TestAppendsInOrderAndLeadershipLoss(t *testing.T) {
	h := newFakeHost()
	c, made, mu := newTestCoordinator(h)
	defer c.Close()
	c.Sync(map[int32]int32{0: 1})
	waitLoaded(t, c, 0)

	type answer struct {
		resp kmsg.Response
		err  error
	}
	do := func(g string, off int64) chan answer {
		ch := make(chan answer, 1)
		go func() {
			r, err := c.Do(context.Background(), 0, commitReq(g, off))
			ch <- answer{r, err}
		}()
		return ch
	}
	first := do("g", 5)
	h.ack(t, nil)
	if a := <-first; a.err != nil || len(a.resp.(*kmsg.OffsetCommitResponse).Topics) != 0 {
		t.Fatalf("first commit: %+v", a)
	}
	h.mu.Lock()
	h.failNext = kerr.NotEnoughReplicas
	h.mu.Unlock()
	if a := <-do("g", 6); a.err != nil || a.resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("failed write: %+v", a)
	}
	mu.Lock()
	m := (*made)[len(*made)-1]
	mu.Unlock()
	c.shard(0).mu.Lock()
	got := fmt.Sprint(m.appended)
	c.shard(0).mu.Unlock()
	if want := fmt.Sprintf("[1:<nil> 2:%v]", kerr.NotEnoughReplicas); got != want {
		t.Errorf("appended %s, want %s", got, want)
	}

	waiting := do("g", 7)
	h.mu.Lock()
	for len(h.pending) == 0 {
		ch := h.changed
		h.mu.Unlock()
		<-ch
		h.mu.Lock()
	}
	h.mu.Unlock()
	c.Sync(nil)
	if a := <-waiting; a.err != kerr.NotCoordinator {
		t.Fatalf("after losing the partition: %+v, want NOT_COORDINATOR", a)
	}
	if _, err := c.Do(context.Background(), 0, commitReq("g", 8)); err != kerr.NotCoordinator {
		t.Fatalf("dropped shard: %v", err)
	}
}

// TestTimerAtNextDue: the machine is ticked when it asked to be, and an
// idle machine (NextDue zero) holds no timer.
func TestTimerAtNextDue(t *testing.T) {
	h := newFakeHost()
	c, made, mu := newTestCoordinator(h)
	defer c.Close()
	c.Sync(map[int32]int32{0: 1})
	waitLoaded(t, c, 0)
	s := c.shard(0)
	s.mu.Lock()
	if s.mu.timer != nil {
		t.Error("an idle shard set a timer")
	}
	mu.Lock()
	m := (*made)[len(*made)-1]
	mu.Unlock()
	ticked := make(chan struct{})
	m.ticked = ticked
	m.due = time.Now().Add(20 * time.Millisecond)
	s.scheduleLocked(time.Now())
	s.mu.Unlock()
	select {
	case <-ticked:
	case <-time.After(5 * time.Second):
		t.Fatal("the machine was not ticked at NextDue")
	}
}

// TestLoadTransactions: a transactional batch's records are replayed as
// the producer's, a control batch as its marker; a CompleteTxn while the
// shard loads reaches the machine that loads, before LoadDone, and one
// after the load at once.
func TestLoadTransactions(t *testing.T) {
	h := newFakeHost()
	h.write(group.Record{Key: []byte("a"), Value: []byte("1")})
	h.writeBatch(frameBatch(1, []group.Record{{Key: []byte("b"), Value: []byte("2")}}, &producer{id: 42, epoch: 3}), 1)
	h.writeBatch(markerBatch(42, true), 1)
	h.writeBatch(markerBatch(43, false), 1)
	c, made, mu := newTestCoordinator(h)
	defer c.Close()
	c.Sync(map[int32]int32{0: 1})
	c.CompleteTxn(0, 44, true) // loading: kept
	c.CompleteTxn(5, 44, true) // no such shard: nothing
	h.setHW(4)
	waitLoaded(t, c, 0)
	c.CompleteTxn(0, 45, false)
	mu.Lock()
	m := (*made)[len(*made)-1]
	mu.Unlock()
	c.shard(0).mu.Lock()
	got := fmt.Sprint(m.replayed)
	c.shard(0).mu.Unlock()
	want := "[0:a=1 1:b=2(txn 42) marker 42 commit=true marker 43 commit=false complete 44 commit=true loaded=false complete 45 commit=false loaded=true]"
	if got != want {
		t.Errorf("replayed\n%s\nwant\n%s", got, want)
	}
}

// markerBatch is a control batch as a partition leader writes it
// (segment.Log.AppendMarker): one EndTransactionMarker record.
func markerBatch(pid int64, commit bool) []byte {
	typ := byte(0)
	if commit {
		typ = 1
	}
	b := frameBatch(1, []group.Record{{Key: []byte{0, 0, 0, typ}, Value: []byte{0, 0, 0, 0, 0, 7}}}, &producer{id: pid, epoch: 1, seq: -1})
	binary.BigEndian.PutUint16(b[21:], attrTransactional|0x20)
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], castagnoli))
	return b
}
