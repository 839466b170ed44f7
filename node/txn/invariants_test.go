package txn

import (
	"strings"
	"testing"
	"time"
)

// TestCheckInvariantsReportsBadStates: the checker finds what it is for.
func TestCheckInvariantsReportsBadStates(t *testing.T) {
	good := func() *Shard {
		s := NewShard(0, DefaultConfig())
		s.LoadDone(t0)
		s.txns["x"] = &txn{id: "x", lastEpoch: -1, meta: meta{pid: 1, epoch: 0, lastPid: -1, timeout: time.Minute,
			state: Ongoing, parts: []TopicPartition{{"t", 0}, {"t", 1}}, start: t0, updated: t0}}
		s.touch(s.txns["x"])
		s.flushTimers()
		return s
	}
	if err := good().checkInvariants(); err != nil {
		t.Fatalf("a good shard: %v", err)
	}
	for _, c := range []struct {
		name   string
		break_ func(s *Shard)
		want   string
	}{
		{"unsorted", func(s *Shard) { p := s.txns["x"].parts; p[0], p[1] = p[1], p[0] }, "unsorted"},
		{"idle with partitions", func(s *Shard) { s.txns["x"].state = CompleteCommit }, "with partitions"},
		{"ongoing without start", func(s *Shard) { s.txns["x"].start = time.Time{} }, "with start"},
		{"prepared without markers", func(s *Shard) { s.txns["x"].state = PrepareCommit }, "no markers"},
		{"busy with nothing", func(s *Shard) { s.txns["x"].pending = &op{} }, "busy with nothing"},
		{"held under another id", func(s *Shard) { s.txns["y"] = s.txns["x"] }, "held as"},
		{"timer lost", func(s *Shard) { s.timers = nil }, "due"},
		{"timer stale", func(s *Shard) { s.txns["x"].timeout = time.Hour }, "due"},
		{"waiting with ids left", func(s *Shard) { s.waitPID = []Request{{}}; s.pidEnd = 5 }, "wait for producer ids"},
	} {
		s := good()
		c.break_(s)
		if err := s.checkInvariants(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error with %q", c.name, err, c.want)
		}
	}
}
