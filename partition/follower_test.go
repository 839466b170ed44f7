package partition

import "testing"

// TestDiverged is the follower's truncation rule as a table (KIP-279): where
// it cuts its log given the leader's diverging-epoch answer.
func TestDiverged(t *testing.T) {
	h := &harness{}
	for _, tc := range []struct {
		name string
		log  string // follower log, epoch:count
		hw   int64
		d    EpochEndOffset
		want int64 // -1: no truncation
	}{
		{"same epoch, leader's ends first", "1:5,2:3", 0, EpochEndOffset{2, 6}, 6},
		{"same epoch, ours ends first", "1:5,2:3", 0, EpochEndOffset{1, 7}, 5},
		{"leader's epoch unknown here: our older epoch's end", "1:5,3:5", 0, EpochEndOffset{2, 8}, 5},
		{"leader's epoch older than all of ours: they differ from 0", "2:5", 0, EpochEndOffset{1, 3}, 0},
		{"undefined epoch, defined end", "1:5", 0, EpochEndOffset{UndefinedEpoch, 2}, 2},
		{"leader log without epochs: all of it, never to our HW", "1:5", 4, EpochEndOffset{UndefinedEpoch, UndefinedOffset}, 0},
		{"nothing past the answer", "1:5", 0, EpochEndOffset{1, 9}, -1},
		{"below the HW: reported", "1:5,2:3", 7, EpochEndOffset{1, 5}, 5},
	} {
		l := &fakeLog{epochs: h.parseLog(tc.log)}
		r, err := New(Config{ID: 2, LagTicks: 1}, l, LogState{LEO: l.LogEndOffset(), HW: tc.hw})
		if err != nil {
			t.Fatal(err)
		}
		r.diverged(tc.d)
		switch {
		case tc.want < 0 && r.trunc != nil:
			t.Errorf("%s: truncates to %d", tc.name, r.trunc.Offset)
		case tc.want >= 0 && (r.trunc == nil || r.trunc.Offset != tc.want):
			t.Errorf("%s: truncation %+v, want to %d", tc.name, r.trunc, tc.want)
		case r.trunc != nil && (r.trunc.BelowHW >= 0) != (tc.want < tc.hw):
			t.Errorf("%s: BelowHW %d with hw %d", tc.name, r.trunc.BelowHW, tc.hw)
		}
	}
}
