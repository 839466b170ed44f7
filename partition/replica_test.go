package partition

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func newTestLeader(t *testing.T, cfg Config, isr ...int32) (*Replica, *fakeLog) {
	t.Helper()
	l := &fakeLog{}
	r, err := New(cfg, l, LogState{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Step(BecomeLeader{LeaderEpoch: 1, ISR: isr, Replicas: []int32{1, 2, 3}}); err != nil {
		t.Fatal(err)
	}
	return r, l
}

func TestConfig(t *testing.T) {
	for s, want := range map[string]Durability{"": PageCache, "page-cache": PageCache, "sync": Sync} {
		if d, err := ParseDurability(s); err != nil || d != want {
			t.Errorf("ParseDurability(%q) = %v, %v", s, d, err)
		}
	}
	if _, err := ParseDurability("fsync"); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("ParseDurability(fsync): %v", err)
	}
	for _, c := range []Config{{ID: -1, LagTicks: 1}, {ID: 1}, {ID: 1, LagTicks: 1, MinInsyncReplicas: -1}, {ID: 1, LagTicks: 1, Durability: 7}} {
		if _, err := New(c, &fakeLog{}, LogState{}); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("New(%+v): %v", c, err)
		}
	}
	if _, err := New(Config{ID: 1, LagTicks: 1}, &fakeLog{}, LogState{LEO: 1, HW: 2}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("New with HW > LEO: %v", err)
	}
}

func TestCheckLeaderEpoch(t *testing.T) {
	r, _ := newTestLeader(t, Config{ID: 1, LagTicks: 5}, 1)
	for cur, want := range map[int32]error{-1: nil, 0: kerr.FencedLeaderEpoch, 1: nil, 2: kerr.UnknownLeaderEpoch} {
		if err := r.CheckLeaderEpoch(cur); err != want {
			t.Errorf("CheckLeaderEpoch(%d) = %v, want %v", cur, err, want)
		}
	}
	if err := r.Step(BecomeFollower{Leader: 2, LeaderEpoch: 2}); err != nil {
		t.Fatal(err)
	}
	if err := r.CheckLeaderEpoch(2); err != kerr.NotLeaderForPartition {
		t.Errorf("follower: %v", err)
	}
	// A follower serves consumers' reads (KIP-392), epochs checked alike.
	for cur, want := range map[int32]error{-1: nil, 1: kerr.FencedLeaderEpoch, 2: nil, 3: kerr.UnknownLeaderEpoch} {
		if err := r.CheckReadEpoch(cur); err != want {
			t.Errorf("follower: CheckReadEpoch(%d) = %v, want %v", cur, err, want)
		}
	}
}

func TestStaleAndUnknown(t *testing.T) {
	r, _ := newTestLeader(t, Config{ID: 1, LagTicks: 5}, 1)
	if err := r.Step(FetchResponse{Seq: 1}); !errors.Is(err, ErrStaleResponse) {
		t.Errorf("fetch response to a leader: %v", err)
	}
	if err := r.Step(AlterPartitionResult{}); !errors.Is(err, ErrStaleResponse) {
		t.Errorf("AlterPartition result with nothing in flight: %v", err)
	}
	if err := r.Step(BecomeFollower{Leader: 2, LeaderEpoch: 0}); !errors.Is(err, ErrStaleEpoch) {
		t.Errorf("stale BecomeFollower: %v", err)
	}
	if err := r.Step(nil); !errors.Is(err, ErrUnknownMsg) {
		t.Errorf("nil message: %v", err)
	}
	if err := r.Step(LocalAppend{ReqID: 1, LastOffset: 4, Acks: AcksLeader}); err != nil {
		t.Fatal(err)
	}
	if err := r.Step(LocalAppend{ReqID: 2, LastOffset: 3, Acks: AcksLeader}); !errors.Is(err, ErrOffsetRegress) {
		t.Errorf("append below the log end: %v", err)
	}
}

// TestStepBetweenReadyAndAdvance: completions stepped after Ready are not
// dropped by Advance (the contract forbids it, but the replica holds up).
func TestStepBetweenReadyAndAdvance(t *testing.T) {
	r, _ := newTestLeader(t, Config{ID: 1, LagTicks: 5}, 1)
	if err := r.Step(LocalAppend{ReqID: 1, LastOffset: 0, Acks: AcksAll, Deadline: 100}); err != nil {
		t.Fatal(err)
	}
	rd := r.Ready()
	if len(rd.Completed) != 1 || rd.Completed[0].ReqID != 1 || !rd.HWChanged || rd.HW != 1 {
		t.Fatalf("Ready = %+v", rd)
	}
	if err := r.Step(LocalAppend{ReqID: 2, LastOffset: 1, Acks: AcksAll, Deadline: 100}); err != nil {
		t.Fatal(err)
	}
	r.Advance(rd)
	rd = r.Ready()
	if len(rd.Completed) != 1 || rd.Completed[0].ReqID != 2 || rd.HW != 2 {
		t.Fatalf("second Ready = %+v", rd)
	}
	r.Advance(rd)
	if r.HasReady() {
		t.Fatalf("HasReady after everything was advanced: %+v", r.Ready())
	}
}

// TestLateAlterPartitionResult: the answer to a proposal dropped by a
// metadata update does not settle the proposal made after it.
func TestLateAlterPartitionResult(t *testing.T) {
	r, _ := newTestLeader(t, Config{ID: 1, LagTicks: 1}, 1, 2, 3)
	r.Tick()
	r.Tick()
	old := r.Ready().AlterPartition
	if old == nil {
		t.Fatal("no shrink proposal")
	}
	r.Advance(r.Ready())
	if err := r.Step(BecomeLeader{LeaderEpoch: 1, PartitionEpoch: 1, ISR: []int32{1, 2}, Replicas: []int32{1, 2, 3}}); err != nil {
		t.Fatal(err)
	}
	r.Tick()
	r.Tick()
	rd := r.Ready()
	cur := rd.AlterPartition
	if cur == nil || cur == old {
		t.Fatalf("no new proposal: %+v", rd)
	}
	r.Advance(rd)
	if err := r.Step(AlterPartitionResult{Proposal: old, LeaderEpoch: 1, PartitionEpoch: 1, ISR: []int32{1}}); !errors.Is(err, ErrStaleResponse) {
		t.Fatalf("late result: %v", err)
	}
	if err := r.Step(AlterPartitionResult{Proposal: cur, LeaderEpoch: 1, PartitionEpoch: 2, ISR: []int32{1}}); err != nil {
		t.Fatal(err)
	}
	if s := r.Status(); s.PartitionEpoch != 2 || len(s.ISR) != 1 {
		t.Fatalf("status %+v", s)
	}
}

func TestBecomeAndFollowerStatus(t *testing.T) {
	if m, ok := Become(1, 1, 4, 5, []int32{1}, []int32{1, 2}).(BecomeLeader); !ok || m.LeaderEpoch != 4 || m.PartitionEpoch != 5 {
		t.Errorf("Become as leader = %#v", m)
	}
	if m, ok := Become(2, 1, 4, 5, []int32{1}, []int32{1, 2}).(BecomeFollower); !ok || m.Leader != 1 || m.LeaderEpoch != 4 {
		t.Errorf("Become as follower = %#v", m)
	}
	r, _ := newTestLeader(t, Config{ID: 1, LagTicks: 5}, 1, 2)
	if err := r.Step(FollowerFetch{ReqID: 1, Replica: 2, BrokerEpoch: 7, FetchOffset: 0, LastFetchedEpoch: -1, CurrentLeaderEpoch: 1}); err != nil {
		t.Fatal(err)
	}
	r.Tick()
	got := r.Status().Followers
	want := []FollowerStatus{{ID: 2, Acked: 0, BehindTicks: 1, BrokerEpoch: 7}, {ID: 3, Acked: -1, BehindTicks: 1, BrokerEpoch: AnyBrokerEpoch}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("Followers = %+v, want %+v", got, want)
	}
}

func TestDeadlines(t *testing.T) {
	r, _ := newTestLeader(t, Config{ID: 1, LagTicks: 100}, 1, 2)
	r.Tick()
	if r.Now() != 1 {
		t.Fatalf("Now = %d", r.Now())
	}
	_ = r.Step(LocalAppend{ReqID: 1, LastOffset: 0, Acks: AcksAll})                        // no deadline
	_ = r.Step(LocalAppend{ReqID: 2, LastOffset: 1, Acks: AcksAll, Deadline: r.Now() + 2}) // two ticks
	r.Tick()
	if rd := r.Ready(); len(rd.Completed) != 0 {
		t.Fatalf("completed early: %+v", rd.Completed)
	}
	r.Tick()
	rd := r.Ready()
	if len(rd.Completed) != 1 || rd.Completed[0].ReqID != 2 || rd.Completed[0].Err != kerr.RequestTimedOut {
		t.Fatalf("completed %+v", rd.Completed)
	}
	r.Advance(rd)
	for range 1000 {
		r.Tick()
	}
	if rd := r.Ready(); len(rd.Completed) != 0 {
		t.Fatalf("a request without a deadline timed out: %+v", rd.Completed)
	}
}

// TestTruncationBelowAsked: segment truncates at a batch start, which may be
// below the offset asked for; the replica goes on from the real log end.
func TestTruncationBelowAsked(t *testing.T) {
	l := &fakeLog{epochs: []int32{1, 1, 1, 1, 1, 1, 1, 1}}
	r, err := New(Config{ID: 2, LagTicks: 5}, l, LogState{LEO: 8, Flushed: 8})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Step(BecomeFollower{Leader: 1, LeaderEpoch: 2}); err != nil {
		t.Fatal(err)
	}
	rd := r.Ready()
	r.Advance(rd)
	if err := r.Step(FetchResponse{Seq: rd.Fetch.Seq, Diverging: &EpochEndOffset{Epoch: 1, EndOffset: 6}}); err != nil {
		t.Fatal(err)
	}
	rd = r.Ready()
	if rd.Truncate == nil || rd.Truncate.Offset != 6 {
		t.Fatalf("Ready %+v", rd)
	}
	l.epochs = l.epochs[:4] // the batch holding 4..7 goes whole
	r.Advance(rd)
	rd = r.Ready()
	if rd.Fetch == nil || rd.Fetch.FetchOffset != 4 || r.Status().LEO != 4 {
		t.Fatalf("after truncation: Ready %+v, status %+v", rd, r.Status())
	}
}

// TestBehindLogStart: a follower whose next offset the leader's retention
// already deleted empties its log and starts at the leader's log start.
func TestBehindLogStart(t *testing.T) {
	l := &fakeLog{epochs: []int32{1, 1}}
	r, err := New(Config{ID: 2, LagTicks: 5}, l, LogState{LEO: 2, HW: 1, Flushed: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Step(BecomeFollower{Leader: 1, LeaderEpoch: 3}); err != nil {
		t.Fatal(err)
	}
	rd := r.Ready()
	r.Advance(rd)
	if err := r.Step(FetchResponse{Seq: rd.Fetch.Seq, Err: kerr.OffsetOutOfRange, LogStartOffset: 10}); err != nil {
		t.Fatal(err)
	}
	rd = r.Ready()
	if tr := rd.Truncate; tr == nil || !tr.Fully || tr.Offset != 10 || tr.From != 2 || tr.BelowHW != -1 {
		t.Fatalf("Ready %+v", rd)
	}
	l.epochs = make([]int32, 10) // TruncateFullyAndStartAt(10): empty, log end 10
	r.Advance(rd)
	rd = r.Ready()
	if s := r.Status(); rd.Fetch == nil || rd.Fetch.FetchOffset != 10 || s.LEO != 10 || s.HW != 10 {
		t.Fatalf("after: Ready %+v status %+v", rd, s)
	}
}

func TestEndOffsetForEpoch(t *testing.T) {
	h := &harness{}
	l := &fakeLog{epochs: h.parseLog("1:5,2:3")}
	r, err := New(Config{ID: 1, LagTicks: 5}, l, LogState{LEO: 8})
	if err != nil {
		t.Fatal(err)
	}
	if e, end := r.EndOffsetForEpoch(1); e != 1 || end != 5 {
		t.Errorf("follower: epoch 1 -> (%d, %d)", e, end)
	}
	if err := r.Step(BecomeLeader{LeaderEpoch: 4, ISR: []int32{1}, Replicas: []int32{1}}); err != nil {
		t.Fatal(err)
	}
	for req, want := range map[int32][2]int64{0: {0, 0}, 1: {1, 5}, 2: {2, 8}, 3: {2, 8}, 4: {4, 8}, 5: {4, 8}} {
		if e, end := r.EndOffsetForEpoch(req); int64(e) != want[0] || end != want[1] {
			t.Errorf("leader at 4: epoch %d -> (%d, %d), want %v", req, e, end, want)
		}
	}
}

// TestSetConfig: raising min.insync.replicas above the ISR fails waiting
// acks=all requests as an ISR shrink would; the broker id is fixed.
func TestSetConfig(t *testing.T) {
	r, _ := newTestLeader(t, Config{ID: 1, LagTicks: 5}, 1, 2)
	if err := r.Step(LocalAppend{ReqID: 1, LastOffset: 0, Acks: AcksAll, Deadline: 100}); err != nil {
		t.Fatal(err)
	}
	if rd := r.Ready(); len(rd.Completed) != 0 {
		t.Fatalf("completed before follower 2 fetched: %+v", rd.Completed)
	}
	if err := r.SetConfig(Config{ID: 2, LagTicks: 5}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("SetConfig with another broker id: %v", err)
	}
	if err := r.SetConfig(Config{ID: 1, LagTicks: 5, MinInsyncReplicas: 3}); err != nil {
		t.Fatal(err)
	}
	rd := r.Ready()
	if len(rd.Completed) != 1 || rd.Completed[0].Err != kerr.NotEnoughReplicasAfterAppend {
		t.Fatalf("after min.insync.replicas=3: %+v", rd.Completed)
	}
	r.Advance(rd)
	if err := r.CheckProduce(AcksAll); err != kerr.NotEnoughReplicas {
		t.Errorf("CheckProduce(acks=all) with ISR 2 < 3: %v", err)
	}
}

// TestFetchBackoff: after a failed fetch the follower asks again only
// after FetchBackoffTicks.
func TestFetchBackoff(t *testing.T) {
	r, err := New(Config{ID: 2, LagTicks: 5, FetchBackoffTicks: 3}, &fakeLog{}, LogState{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Step(BecomeFollower{Leader: 1, LeaderEpoch: 1}); err != nil {
		t.Fatal(err)
	}
	rd := r.Ready()
	if rd.Fetch == nil {
		t.Fatal("no first fetch")
	}
	r.Advance(rd)
	if err := r.Step(FetchResponse{Seq: rd.Fetch.Seq, Err: kerr.NotLeaderForPartition}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if r.HasReady() && r.Ready().Fetch != nil {
			t.Fatalf("fetch again %d ticks after the error", i)
		}
		r.Tick()
	}
	if rd := r.Ready(); rd.Fetch == nil {
		t.Fatal("no fetch after the backoff")
	}
}
