package quorum

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestDescribeQuorum: three voters and a non-voter; every member reports
// its own log, asked from a follower and from the non-voter; a stopped
// voter is reported unknown.
func TestDescribeQuorum(t *testing.T) {
	nodes := startQuorum(t, 3, nil)
	leader := leaderOf(t, nodes)
	registerBrokers(t, leader, 1, 2, 3)
	b := &testNode{id: 10, dir: t.TempDir()}
	b.start(t, listen(t), nil, nil)
	t.Cleanup(func() { b.stop(t) })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := b.c.Join(ctx, []string{leader.addr}); err != nil {
		t.Fatal(err)
	}
	createTopics(t, leader, "q", 2)
	waitSameImage(t, append(nodes, b), leader)

	var st QuorumStatus
	waitFor(t, 10*time.Second, "every member caught up in DescribeQuorum", func() bool {
		var err error
		if st, err = b.c.DescribeQuorum(ctx); err != nil {
			t.Fatal(err)
		}
		if st.LeaderID != leader.id || len(st.Voters) != 3 || len(st.Observers) != 1 {
			return false
		}
		for _, m := range append(st.Voters, st.Observers...) {
			if m.LastIndex < int64(st.CommitIndex) || m.LastContact.IsZero() || m.LastCaughtUp.IsZero() {
				return false
			}
		}
		return true
	})
	for i, v := range st.Voters {
		if v.ID != int32(i+1) || v.Addr != nodes[i].addr {
			t.Fatalf("voter %d: %+v, want id %d at %s", i, v, i+1, nodes[i].addr)
		}
	}
	if o := st.Observers[0]; o.ID != 10 || o.Addr != b.addr {
		t.Fatalf("observer %+v", o)
	}
	if st.Term == 0 || st.Term != leader.c.raft.CurrentTerm() || st.CommitIndex == 0 {
		t.Fatalf("term %d commit %d", st.Term, st.CommitIndex)
	}
	if since := time.Since(st.Voters[0].LastContact); since < 0 || since > time.Minute {
		t.Fatalf("last contact %v ago", since)
	}

	// A stopped follower: unknown log end and contact, but still a voter.
	f := followerOf(nodes, leader)
	f.stop(t)
	st, err := followerOf(nodes, leader).c.DescribeQuorum(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range st.Voters {
		if v.ID == f.id && (v.LastIndex != -1 || !v.LastContact.IsZero()) {
			t.Fatalf("stopped voter reported %+v", v)
		}
		if v.ID == f.id && v.LastCaughtUp.IsZero() {
			t.Fatalf("stopped voter forgot when it was last caught up: %+v", v)
		}
	}
}

// TestAddPartitionsReplayIsChecked: an add_partitions record replays only
// onto the partition count it was planned from, so a duplicate is stale.
func TestAddPartitionsReplayIsChecked(t *testing.T) {
	h := newHarness()
	for _, cmd := range []Command{&RegisterBroker{ID: 1}, &UnfenceBroker{ID: 1, Epoch: AnyEpoch},
		&CreateTopics{Topics: []TopicSpec{{Name: "t", Partitions: 1, ReplicationFactor: 1}}}} {
		recs, _, err := Plan(h.im, h.pol, cmd)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if err := h.im.Replay(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	recs, _, err := Plan(h.im, h.pol, &CreatePartitions{Topics: []PartitionsSpec{{Name: "t", Count: 3}}})
	if err != nil || len(recs) != 1 {
		t.Fatalf("plan: %v %v", recs, err)
	}
	if err := h.im.Replay(recs[0]); err != nil {
		t.Fatal(err)
	}
	if err := h.im.Replay(recs[0]); !errors.Is(err, ErrStaleRecord) {
		t.Fatalf("replayed twice: %v, want ErrStaleRecord", err)
	}
	if n := len(h.im.Topics["t"].Partitions); n != 3 {
		t.Fatalf("%d partitions", n)
	}
	if err := h.im.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}
