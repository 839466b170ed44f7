package partition

import (
	"strings"
	"testing"
)

// The invariant checker must report a broken state, not just pass good
// ones: each case takes a valid leader (ISR 1,2,3, min.insync 2, LEO 10,
// HW 5, followers at 5), breaks one invariant and expects its report.
func TestCheckInvariantsReportsBadStates(t *testing.T) {
	valid := func(t *testing.T) *Replica {
		r, _ := newTestLeader(t, Config{ID: 1, LagTicks: 5, MinInsyncReplicas: 2}, 1, 2, 3)
		r.leo, r.hw, r.flushed, r.invHW = 10, 5, 10, 5
		r.followers[2].acked, r.followers[3].acked = 5, 5
		return r
	}
	if err := valid(t).checkInvariants(5); err != nil {
		t.Fatalf("a valid leader: %v", err)
	}
	for _, c := range []struct {
		name   string
		prevHW int64
		bad    func(r *Replica)
		want   string
	}{
		{"hw above leo", 5, func(r *Replica) { r.hw = 11 }, "offsets out of order"},
		{"flushed above leo", 5, func(r *Replica) { r.flushed = 11 }, "offsets out of order"},
		{"negative hw", 5, func(r *Replica) { r.hw = -1 }, "offsets out of order"},
		{"hw backwards", 6, func(*Replica) {}, "HW moved backwards"},
		{"hw below leadership start", 5, func(r *Replica) { r.invHW = 6 }, "HW moved backwards"},
		{"leader out of its isr", 5, func(r *Replica) { r.isr = []int32{2, 3} }, "not in its ISR"},
		{"proposal drops the leader", 5, func(r *Replica) { r.inflight = &Proposal{NewISR: []ISRMember{{ID: 2}}} }, "drops the leader"},
		{"hw advanced with isr below min.insync", 4, func(r *Replica) { r.isr = []int32{1} }, "below min.insync"},
		{"hw advanced past an isr member", 4, func(r *Replica) { r.followers[3].acked = 4 }, "past ISR member 3"},
		{"isr member not a replica", 4, func(r *Replica) { r.isr = []int32{1, 2, 3, 9} }, "not a replica"},
		{"waiting produce at leo", 5, func(r *Replica) { r.waiting = []pending{{id: 1, last: 10}} }, "out of order"},
		{"waiting produces out of order", 5, func(r *Replica) { r.waiting = []pending{{id: 1, last: 8}, {id: 2, last: 7}} }, "out of order"},
		{"follower with waiting produces", 5, func(r *Replica) { r.role = Follower; r.waiting = []pending{{id: 1, last: 8}} }, "a follower with 1 waiting"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := valid(t)
			c.bad(r)
			err := r.checkInvariants(c.prevHW)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("checkInvariants = %v, want an error containing %q", err, c.want)
			}
			if !invariantsOn {
				return
			}
			// With the invariants build tag (make test), check panics.
			defer func() {
				if p := recover(); p == nil || !strings.Contains(p.(string), c.want) {
					t.Fatalf("check: panic %v, want one containing %q", p, c.want)
				}
			}()
			r.check(c.prevHW)
		})
	}
}
