package partition

import "testing"

func TestHighWatermark(t *testing.T) {
	acked := func(kv ...int64) map[int32]int64 {
		m := map[int32]int64{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[int32(kv[i])] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		name string
		in   HWInput
		want int64
	}{
		{"single replica", HWInput{Current: 0, Acked: acked(1, 5), ISR: []int32{1}, MinISR: 1}, 5},
		{"minimum over the ISR", HWInput{Current: 0, Acked: acked(1, 10, 2, 7, 3, 9), ISR: []int32{1, 2, 3}, MinISR: 2}, 7},
		{"replicas outside the ISR do not count", HWInput{Current: 0, Acked: acked(1, 10, 2, 7, 3, 1), ISR: []int32{1, 2}, MinISR: 1}, 7},
		{"never backward", HWInput{Current: 8, Acked: acked(1, 10, 2, 7), ISR: []int32{1, 2}, MinISR: 1}, 8},
		{"a member that acknowledged nothing holds it", HWInput{Current: 3, Acked: acked(1, 10), ISR: []int32{1, 2}, MinISR: 1}, 3},
		{"below min.insync it does not advance (KIP-966)", HWInput{Current: 3, Acked: acked(1, 10), ISR: []int32{1}, MinISR: 2}, 3},
		{"exactly min.insync advances", HWInput{Current: 3, Acked: acked(1, 10, 2, 6), ISR: []int32{1, 2}, MinISR: 2}, 6},
		{"shrink in flight: the removed member still counts (KIP-497)", HWInput{Current: 0, Acked: acked(1, 10, 2, 9, 3, 2), ISR: []int32{1, 2, 3}, Pending: []int32{1, 2}, MinISR: 2}, 2},
		{"expand in flight: the added member already counts (KIP-497)", HWInput{Current: 0, Acked: acked(1, 10, 2, 9, 3, 4), ISR: []int32{1, 2}, Pending: []int32{1, 2, 3}, MinISR: 1}, 4},
		{"shrink below min.insync in flight: the committed ISR decides", HWInput{Current: 0, Acked: acked(1, 10, 2, 9), ISR: []int32{1, 2}, Pending: []int32{1}, MinISR: 2}, 9},
		{"empty ISR never advances", HWInput{Current: 4, Acked: acked(1, 10), MinISR: 0}, 4},
		{"min.insync 0 behaves as 1", HWInput{Current: 0, Acked: acked(1, 10), ISR: []int32{1}, MinISR: 0}, 10},
		{"sync mode: flushed offsets", HWInput{Current: 0, Acked: acked(1, 4, 2, 6, 3, 5), ISR: []int32{1, 2, 3}, MinISR: 2}, 4},
	} {
		if got := HighWatermark(tc.in); got != tc.want {
			t.Errorf("%s: HighWatermark(%+v) = %d, want %d", tc.name, tc.in, got, tc.want)
		}
	}
}
