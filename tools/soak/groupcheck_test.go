package soak

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/node/group"
)

// ghist builds crafted group histories beside the healthy soak topic
// (healthy: producer 0's records 0–9 on tpA acknowledged at second i,
// producer 1's on tpB at i+0.5).
type ghist struct {
	*hist
	g *GroupHistory
}

func sec(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

// healthyGroup: group g, member m1 owns tpA and m2 tpB in generation 1;
// each record is delivered 0.2 s after its acknowledgement; each member
// commits 5 and then 10; a FetchOffsets between them reads 5 and 5; both
// leave; the final committed offsets are 10 and 10.
func healthyGroup() *ghist {
	b := &ghist{hist: healthy(), g: &GroupHistory{Topic: "soak", Partitions: []TP{tpA, tpB},
		Groups: map[string]string{"g": "range"}, FinalAt: sec(11), Final: map[string]map[TP]int64{"g": {tpA: 10, tpB: 10}}}}
	b.h.Groups = b.g
	for i := int64(0); i < 10; i++ {
		b.deliver("m1", 1, tpA, i, Key{0, i}, float64(i)+0.2)
		b.deliver("m2", 1, tpB, i, Key{1, i}, float64(i)+0.7)
	}
	b.assign("m1", 1, "assigned", 0.1, tpA).assign("m2", 1, "assigned", 0.1, tpB)
	b.commit("m1", 1, tpA, 5, Acked, 5, 5.1).commit("m2", 1, tpB, 5, Acked, 5, 5.1)
	b.commit("m1", 1, tpA, 10, Acked, 9.5, 9.6).commit("m2", 1, tpB, 10, Acked, 9.8, 9.9)
	b.snapshot(7, map[TP]int64{tpA: 5, tpB: 5})
	b.assign("m1", 1, "left", 9.95).assign("m2", 1, "left", 9.95)
	return b
}

func (b *ghist) deliver(m string, gen int32, tp TP, off int64, k Key, s float64) *ghist {
	b.g.Deliveries = append(b.g.Deliveries, Delivery{Group: "g", Member: m, Generation: gen, TP: tp, Offset: off, Key: k, Valid: true, At: sec(s)})
	return b
}

func (b *ghist) assign(m string, gen int32, ev string, s float64, owned ...TP) *ghist {
	b.g.Assignments = append(b.g.Assignments, Assignment{Group: "g", Member: m, Generation: gen, Event: ev, Owned: owned, At: sec(s)})
	return b
}

func (b *ghist) commit(m string, gen int32, tp TP, off int64, o Outcome, sent, done float64) *ghist {
	b.g.Commits = append(b.g.Commits, Commit{Group: "g", Member: m, Generation: gen, Sent: sec(sent), Done: sec(done),
		Parts: []CommitPart{{TP: tp, Offset: off, Outcome: o}}})
	return b
}

func (b *ghist) snapshot(s float64, offs map[TP]int64) *ghist {
	b.g.Snapshots = append(b.g.Snapshots, OffsetSnapshot{Group: "g", Offsets: offs, Sent: sec(s), Done: sec(s + 0.1)})
	return b
}

func mustPass(t *testing.T, r *Report) {
	t.Helper()
	if !r.OK {
		t.Fatalf("report fails: %+v", r.Violations)
	}
}

func mustSay(t *testing.T, r *Report, kind, want string) {
	t.Helper()
	for _, v := range r.Violations {
		if v.Kind == kind && strings.Contains(v.Detail, want) {
			return
		}
	}
	t.Errorf("no %s violation saying %q: %+v", kind, want, r.Violations)
}

func TestGroupHealthyHistoryPasses(t *testing.T) {
	r := Check(&healthyGroup().h, CheckOptions{})
	mustPass(t, r)
	g := r.Groups
	if g == nil || g.Deliveries != 20 || g.CommitAcked != 4 || g.Checked != 20 || g.Members != 2 || g.CommitLatency.N != 4 || g.Lag["g"] != 0 {
		t.Errorf("group counts %+v", g)
	}
}

// (a) A committed offset never moves backwards.
func TestGroupOffsetBackwards(t *testing.T) {
	b := healthyGroup().snapshot(8, map[TP]int64{tpA: 3, tpB: 5}) // after the commit of 5 was acknowledged
	r := Check(&b.h, CheckOptions{})
	mustOnly(t, r, KindGroupBackwards, 1)
	mustSay(t, r, KindGroupBackwards, "went back from 5 to 3")

	// An acknowledged commit that rewinds is as bad as a lost one.
	b = healthyGroup().commit("m1", 1, tpA, 2, Acked, 6, 6.1)
	mustOnly(t, Check(&b.h, CheckOptions{}), KindGroupBackwards, 1)
}

func TestGroupOffsetBackwardsExcused(t *testing.T) {
	// An explicit reset to 3 between the commit of 5 and the snapshot.
	b := healthyGroup().snapshot(8, map[TP]int64{tpA: 3, tpB: 5})
	b.g.Resets = append(b.g.Resets, Reset{Group: "g", TP: tpA, Offset: 3, Sent: sec(7.5), Done: sec(7.6)})
	mustPass(t, Check(&b.h, CheckOptions{}))
	// A snapshot in flight while the commit was: either value is fine.
	b = healthyGroup().snapshot(5.05, map[TP]int64{tpA: -1, tpB: -1})
	mustPass(t, Check(&b.h, CheckOptions{}))
	// An unknown-outcome commit of the lower offset may have landed late.
	b = healthyGroup().commit("m1", 1, tpA, 4, Unknown, 4, 8).snapshot(8, map[TP]int64{tpA: 4, tpB: 5})
	mustPass(t, Check(&b.h, CheckOptions{}))
}

// (b) At-least-once: delivered before the commit above it was acknowledged.
func TestGroupUndelivered(t *testing.T) {
	b := healthyGroup()
	b.g.Deliveries = b.g.Deliveries[2:] // tpA offset 0 and tpB offset 0 never delivered
	r := Check(&b.h, CheckOptions{})
	mustOnly(t, r, KindGroupUndelivered, 2)
	mustSay(t, r, KindGroupUndelivered, "never delivered")

	// Delivered, but only after the commit over it was acknowledged (a
	// member that commits ahead of what it processed).
	b = healthyGroup()
	b.g.Deliveries[14].At = sec(8)  // tpA offset 7: late, still before the commit of 10 (9.6)
	b.g.Deliveries[6].At = sec(5.5) // tpA offset 3: after the commit of 5 (5.1)
	r = Check(&b.h, CheckOptions{})
	mustOnly(t, r, KindGroupUndelivered, 1)
	mustSay(t, r, KindGroupUndelivered, "first delivered at +5.5s")
}

// A page-cache power loss cut tpA's offsets 7–9 (delivered and covered
// by the commit of 10) from every replica; producer 2's records took
// those offsets after it healed. They lie below the commit and were never
// delivered before it: explained by the power loss with page-cache
// durability (the commit is about the records it took), a violation with
// sync.
func TestGroupUndeliveredAfterPowerLossRewrite(t *testing.T) {
	b := healthyGroup()
	var final []Read
	for _, rd := range b.h.Final {
		if rd.TP != tpA || rd.Offset < 7 {
			final = append(final, rd)
		}
	}
	b.h.Final, b.h.FinalHW[tpA] = final, 7
	b.h.Faults = append(b.h.Faults, Fault{Kind: FaultPowerLoss, Target: "nodes [1 2 3]", Start: sec(9.7), Healed: sec(9.8), Effect: "dropped",
		Dropped: []Dropped{{Node: 1, TP: tpA, FirstOffset: 7, LastOffset: 9, Batches: 3, FirstWritten: sec(7), LastWritten: sec(9)}}})
	b.ack(2, 0, tpA, 7, 9.85).ack(2, 1, tpA, 8, 9.85).ack(2, 2, tpA, 9, 9.85).final(tpA, Key{2, 0}, Key{2, 1}, Key{2, 2})
	b.ack(1, 10, tpB, 10, 9.9).final(tpB, Key{1, 10})
	r := Check(&b.h, CheckOptions{PageCache: true})
	mustPass(t, r)
	if r.Groups.Explained != 3 {
		t.Errorf("group records explained %d, want 3", r.Groups.Explained)
	}
	if r := Check(&b.h, CheckOptions{}); r.ByKind[KindGroupUndelivered] != 3 {
		t.Errorf("with sync: %d group-undelivered, want 3: %+v", r.ByKind[KindGroupUndelivered], r.Violations)
	}
	// Without the power loss the same history is three violations.
	b.h.Faults = nil
	if r := Check(&b.h, CheckOptions{PageCache: true}); r.ByKind[KindGroupUndelivered] != 3 {
		t.Errorf("no power loss: %d group-undelivered, want 3: %+v", r.ByKind[KindGroupUndelivered], r.Violations)
	}
}

func TestGroupRedeliveryAllowed(t *testing.T) {
	b := healthyGroup().deliver("m2", 2, tpA, 3, Key{0, 3}, 9.7) // after a rebalance: again
	r := Check(&b.h, CheckOptions{})
	mustPass(t, r)
	if r.Groups.Redelivered != 1 {
		t.Errorf("redelivered %d, want 1", r.Groups.Redelivered)
	}
	// A record above every commit need not have been delivered.
	b = healthyGroup()
	b.ack(0, 10, tpA, 10, 9.9).final(tpA, Key{0, 10})
	mustPass(t, Check(&b.h, CheckOptions{}))
}

// (c) No partition owned by two members of one generation at once.
func TestGroupDoubleOwner(t *testing.T) {
	b := healthyGroup().assign("m2", 1, "assigned", 3, tpA, tpB)
	r := Check(&b.h, CheckOptions{})
	mustOnly(t, r, KindGroupDoubleOwner, 1)
	mustSay(t, r, KindGroupDoubleOwner, "generation 1: m1 owned it")
}

func TestGroupOwnersAcrossGenerations(t *testing.T) {
	// m2 takes tpA in generation 2 while m1 (a zombie) still thinks it
	// owns it in generation 1: allowed, the generation fences m1.
	b := healthyGroup().assign("m2", 2, "assigned", 3, tpA, tpB)
	mustPass(t, Check(&b.h, CheckOptions{}))
	// m1 gives tpA up before m2 gets it in the same generation
	// (cooperative): one after the other is not at once.
	b = healthyGroup().assign("m1", 1, "revoked", 2).assign("m2", 1, "assigned", 3, tpA, tpB)
	mustPass(t, Check(&b.h, CheckOptions{}))
}

// (d) The final committed offsets are what the members last committed.
func TestGroupCommitLost(t *testing.T) {
	b := healthyGroup()
	b.g.Final["g"][tpA] = 5 // the acknowledged commit of 10 is gone
	r := Check(&b.h, CheckOptions{})
	mustOnly(t, r, KindGroupCommitLost, 1)
	mustSay(t, r, KindGroupCommitLost, "final committed offset is 5")

	b = healthyGroup()
	b.g.Final["g"][tpB] = 12 // never committed by anyone
	mustOnly(t, Check(&b.h, CheckOptions{}), KindGroupCommitLost, 1)

	b = healthyGroup()
	b.g.FinalErr = map[string]string{"g": "NOT_COORDINATOR"}
	mustOnly(t, Check(&b.h, CheckOptions{}), KindGroupCommitLost, 1)
}

func TestGroupFinalAfterUnknownCommit(t *testing.T) {
	// The last commit timed out: it may or may not have been written.
	for _, final := range []int64{10, 11} {
		b := healthyGroup().commit("m1", 1, tpA, 11, Unknown, 9.7, 9.9)
		b.g.Final["g"][tpA] = final
		mustPass(t, Check(&b.h, CheckOptions{}))
	}
	// A refused commit (wrong generation) must not have been written.
	b := healthyGroup().commit("m1", 1, tpA, 11, Failed, 9.7, 9.9)
	b.g.Final["g"][tpA] = 11
	mustOnly(t, Check(&b.h, CheckOptions{}), KindGroupCommitLost, 1)
}

// The coordinator of a group (the kill-coordinator fault names it) is the
// leader of __consumer_offsets partition abs(String.hashCode(group)) mod
// partitions: group.Partition must give Java's values.
func TestOffsetsPartitionIsKafkas(t *testing.T) {
	for _, c := range []struct {
		group string
		n     int32
		want  int32
	}{
		{"", 50, 0},
		{"hello", 50, 99162322 % 50},        // "hello".hashCode() = 99162322
		{"Hello World", 50, 862545276 % 50}, // -862545276
		{"polygenelubricants", 50, 0},       // Integer.MIN_VALUE: Utils.abs gives 0
		{"soak-group-a", 1, 0},
	} {
		if got := group.Partition(c.group, c.n); got != c.want {
			t.Errorf("group.Partition(%q, %d) = %d, want %d", c.group, c.n, got, c.want)
		}
	}
}

// With page-cache durability a power loss may take acknowledged commits
// with it: a committed offset back across one is explained, not a
// violation; with sync durability it is one.
func TestGroupCommitLostToPowerLoss(t *testing.T) {
	b := healthyGroup()
	b.g.Final["g"][tpA] = 5
	b.h.Faults = append(b.h.Faults, Fault{Kind: FaultPowerLoss, Start: sec(9.7), Healed: sec(9.8), Effect: "dropped", BytesDropped: 1})
	b.ack(0, 10, tpA, 10, 9.9).final(tpA, Key{0, 10}).ack(1, 10, tpB, 10, 9.9).final(tpB, Key{1, 10})
	r := Check(&b.h, CheckOptions{PageCache: true})
	mustPass(t, r)
	if r.Groups.Explained != 1 {
		t.Errorf("explained %d, want 1", r.Groups.Explained)
	}
	mustOnly(t, Check(&b.h, CheckOptions{}), KindGroupCommitLost, 1)
}

// A commit's outcome per partition: 0 acked, a generation or member check
// refused (nothing written), anything else unknown; a request error makes
// every partition unknown.
func TestCommitParts(t *testing.T) {
	offs := map[string]map[int32]kgo.EpochOffset{"soak": {0: {Offset: 5}, 1: {Offset: 6}, 2: {Offset: 7}}}
	req := kmsg.NewPtrOffsetCommitRequest()
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = "soak"
	for p, o := range map[int32]int64{0: 5, 1: 6, 2: 7} {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = p, o
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp := kmsg.NewPtrOffsetCommitResponse()
	st := kmsg.NewOffsetCommitResponseTopic()
	st.Topic = "soak"
	for p, code := range map[int32]int16{0: 0, 1: kerr.IllegalGeneration.Code, 2: kerr.RequestTimedOut.Code} {
		sp := kmsg.NewOffsetCommitResponseTopicPartition()
		sp.Partition, sp.ErrorCode = p, code
		st.Partitions = append(st.Partitions, sp)
	}
	resp.Topics = append(resp.Topics, st)
	parts := commitParts(offs, req, resp, nil)
	want := []Outcome{Acked, Failed, Unknown}
	for i, p := range parts {
		if p.TP.Partition != int32(i) || p.Offset != int64(5+i) || p.Outcome != want[i] {
			t.Errorf("part %d: %+v, want partition %d offset %d %v", i, p, i, 5+i, want[i])
		}
	}
	for _, p := range commitParts(offs, req, nil, errors.New("connection reset")) {
		if p.Outcome != Unknown {
			t.Errorf("after a request error: %+v, want unknown", p)
		}
	}
}

// A generation handed out below one already assigned in is counted (a
// lost group record?), not a violation; one within a second is not
// counted (members see a new generation at slightly different times).
func TestGroupGenerationRegression(t *testing.T) {
	b := healthyGroup().assign("m2", 2, "assigned", 3, tpB).assign("m1", 2, "generation", 3.5, tpA).assign("m1", 1, "generation", 5, tpA)
	r := Check(&b.h, CheckOptions{})
	mustPass(t, r)
	if r.Groups.GenRegressions != 1 || len(r.Groups.GenExamples) != 1 || !strings.Contains(r.Groups.GenExamples[0], "joined generation 1 at +5s") {
		t.Errorf("regressions %d %v, want 1 saying m1 joined generation 1", r.Groups.GenRegressions, r.Groups.GenExamples)
	}
}
