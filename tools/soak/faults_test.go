package soak

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func schedule(seed uint64, n int) []string {
	f := &faulter{rng: rand.New(rand.NewPCG(seed, seed^0x5eed)), kinds: AllFaults}
	var kinds []string
	for range n {
		kinds = append(kinds, fmt.Sprintf("%s/%d", f.pick(), f.rng.IntN(6)))
	}
	return kinds
}

func TestFaultScheduleReplaysFromSeed(t *testing.T) {
	a, b := schedule(42, 100), schedule(42, 100)
	if !slices.Equal(a, b) {
		t.Fatalf("same seed, different schedules:\n%v\n%v", a, b)
	}
	if slices.Equal(a, schedule(43, 100)) {
		t.Fatal("another seed gave the same schedule")
	}
	seen := map[string]bool{}
	for _, k := range schedule(42, 200) {
		seen[k[:len(k)-2]] = true
	}
	for _, k := range AllFaults {
		if !seen[k] {
			t.Errorf("fault kind %s never picked in 200 faults", k)
		}
	}
}

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		err  error
		want Outcome
	}{
		{nil, Acked},
		{kerr.MessageTooLarge, Failed},
		{fmt.Errorf("wrapped: %w", kerr.InvalidRecord), Failed},
		// Rejected up front, but an earlier attempt may have been appended.
		{kerr.NotEnoughReplicas, Unknown},
		{kerr.NotEnoughReplicasAfterAppend, Unknown},
		{kerr.NotLeaderForPartition, Unknown},
		{kgo.ErrRecordTimeout, Unknown},
		{context.DeadlineExceeded, Unknown},
		{errors.New("connection reset"), Unknown},
	} {
		if got := classify(c.err); got != c.want {
			t.Errorf("classify(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
