package soak

import (
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// quotaPer10m is the least number of faults of each kind a run gets per
// ten minutes of run (issue 7 asks for at least 20 leader kills and
// 5 controller kills in a 10-minute run, with pauses, partitions and power
// losses besides). A run of any length gets at least one of each kind.
var quotaPer10m = map[string]int{FaultKillLeader: 21, FaultKillController: 6, FaultPause: 3, FaultPowerLoss: 3, FaultPartition: 3, FaultKillCoordinator: 3, FaultKillTxnCoordinator: 3,
	// The docker backend's (dockerfaults.go): ten leader kills and ten
	// disconnects give the time to writable after each its percentiles.
	FaultStopLeader: 3, FaultDisconnect: 10, FaultLoss: 2, FaultHostLoss: 2}

// dockerQuotaPer10m overrides quotaPer10m for the docker backend, whose
// faults cost more (a container restart, a session timeout).
var dockerQuotaPer10m = map[string]int{FaultKillLeader: 10, FaultKillController: 3, FaultPause: 2, FaultPartition: 4}

// weights make leader kills the most common fault once the quota is done.
var weights = map[string]int{FaultKillLeader: 4, FaultKillController: 2, FaultPause: 2, FaultPowerLoss: 1, FaultPartition: 2, FaultKillCoordinator: 2, FaultKillTxnCoordinator: 2,
	FaultStopLeader: 2, FaultDisconnect: 2, FaultLoss: 1, FaultHostLoss: 1}

// Hold ranges: kills and power losses restart after 1–10 s, pauses and
// network partitions last 5–30 s. A step shortens them (never below the
// minimum) when the quota would not fit otherwise.
const (
	killHoldMin = time.Second
	killHoldMax = 10 * time.Second
	longHoldMin = 5 * time.Second
	longHoldMax = 30 * time.Second
	// disconnectHoldMin: see holdRange.
	disconnectHoldMin = 12 * time.Second
	minRest           = 500 * time.Millisecond
	stepOverhead      = 2 * time.Second // metadata lookup, kill, restart: what a step costs beyond rest and hold
)

// schedule is the seeded fault plan of a run: first the quota for the
// run's length (one of each kind, then the rest, each part in an order
// shuffled by the seed), then weighted draws.
// Kinds, partitions, rests and holds all come from the seeded generator in
// the same order every run, so a seed replays the schedule; the only thing
// the run's timing changes is how much a step is shortened to keep the
// quota inside the window (fit) and where the schedule stops.
type schedule struct {
	rng   *rand.Rand
	kinds []string
	gap   time.Duration // mean rest between a heal and the next fault
	quota []string      // what is left of the quota, in order
	parts int           // partitions to draw from
}

// step is one planned fault, before it is shortened to fit.
type step struct {
	Kind      string
	Partition int
	Rest      time.Duration
	Hold      time.Duration
	Quota     bool // part of the quota
	// FromController: a network partition cuts the leader off from the
	// controller rather than from its followers.
	FromController bool
}

// newSchedule plans the faults of a run of the given length.
func newSchedule(seed uint64, kinds []string, gap, length time.Duration, parts int) *schedule {
	return newScheduleFor(quotaFor(kinds, length), seed, kinds, gap, parts)
}

// newScheduleFor plans the faults of a run with quota q.
func newScheduleFor(q map[string]int, seed uint64, kinds []string, gap time.Duration, parts int) *schedule {
	s := &schedule{rng: rand.New(rand.NewPCG(seed, seed^0x5eed)), kinds: kinds, gap: gap, parts: parts}
	// One of each kind first, so that a run too slow for its whole quota
	// still covers every kind; then the rest of the quota.
	first := slices.Clone(kinds)
	var rest []string
	for _, k := range kinds {
		for range q[k] - 1 {
			rest = append(rest, k)
		}
	}
	for _, l := range [][]string{first, rest} {
		s.rng.Shuffle(len(l), func(i, j int) { l[i], l[j] = l[j], l[i] })
		s.quota = append(s.quota, l...)
	}
	return s
}

// quotaLeft is how many quota faults are still to come.
func (s *schedule) quotaLeft() int { return len(s.quota) }

// next draws the next step.
func (s *schedule) next() step {
	var st step
	if len(s.quota) > 0 {
		st.Kind, st.Quota = s.quota[0], true
		s.quota = s.quota[1:]
	} else {
		st.Kind = s.pick()
	}
	st.Partition = s.rng.IntN(s.parts)
	st.Rest = s.gap/2 + time.Duration(s.rng.Int64N(int64(max(s.gap, 1))))
	lo, hi := holdRange(st.Kind)
	st.Hold = lo + time.Duration(s.rng.Int64N(int64(hi-lo)))
	st.FromController = s.rng.IntN(2) == 0
	return st
}

func holdRange(kind string) (lo, hi time.Duration) {
	switch kind {
	case FaultPause, FaultPartition, FaultLoss:
		return longHoldMin, longHoldMax
	case FaultDisconnect:
		// Longer than the broker session timeout (10 s in compose.yaml's
		// defaults), so that the cut is detected, not only waited out.
		return disconnectHoldMin, longHoldMax
	}
	return killHoldMin, killHoldMax
}

func (s *schedule) pick() string {
	total := 0
	for _, k := range s.kinds {
		total += weights[k]
	}
	n := s.rng.IntN(total)
	for _, k := range s.kinds {
		if n -= weights[k]; n < 0 {
			return k
		}
	}
	return s.kinds[0]
}

// fit shortens st's rest and hold so that it and the quota left after it
// fit into left, the time until the last heal, assuming each later quota
// step costs its minimum plus stepOverhead plus a fair share of most of
// what is left over. It never goes below the minimum rest and hold, and leaves a
// step outside the quota as drawn.
func (s *schedule) fit(st step, left time.Duration) step {
	if !st.Quota {
		return st
	}
	var floor time.Duration // what the rest of the quota needs at least
	for _, k := range s.quota {
		lo, _ := holdRange(k)
		floor += minRest + lo + stepOverhead
	}
	lo, _ := holdRange(st.Kind)
	// This step's share of the slack: the time beyond every step's minimum,
	// split evenly over this step and the quota after it.
	slack := left - floor - (minRest + lo + stepOverhead)
	// Only 4/5 of it: real steps cost more than stepOverhead on a loaded
	// machine, and the last quota steps should still fit.
	share := max(slack*4/5/time.Duration(len(s.quota)+1), 0)
	if extra := st.Rest - minRest + st.Hold - lo; extra > share {
		// Shrink both by the same factor.
		f := float64(share) / float64(extra)
		st.Rest = minRest + time.Duration(float64(st.Rest-minRest)*f)
		st.Hold = lo + time.Duration(float64(st.Hold-lo)*f)
	}
	return st
}

// quotaFor is the quota of a run of the given length, by kind.
func quotaFor(kinds []string, length time.Duration) map[string]int {
	return quotaIn(quotaPer10m, kinds, length)
}

// dockerQuotaFor is the docker backend's quota: dockerQuotaPer10m, else
// quotaPer10m.
func dockerQuotaFor(kinds []string, length time.Duration) map[string]int {
	t := maps.Clone(quotaPer10m)
	maps.Copy(t, dockerQuotaPer10m)
	return quotaIn(t, kinds, length)
}

func quotaIn(table map[string]int, kinds []string, length time.Duration) map[string]int {
	q := map[string]int{}
	for _, k := range kinds {
		q[k] = max(int(math.Ceil(float64(table[k])*length.Minutes()/10)), 1)
	}
	return q
}
