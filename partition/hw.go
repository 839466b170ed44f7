package partition

// HWInput is what the high watermark depends on. Offsets are exclusive ends
// ("log end offset" style): a replica with offset 10 holds offsets 0..9.
type HWInput struct {
	// Current is the high watermark now; the result is never lower.
	Current int64
	// Acked maps every replica that has acknowledged something in the
	// current leader epoch to the offset it acknowledged: its fetch offset
	// (page-cache mode) or its fsynced offset (sync mode); for the leader its
	// log end offset or flushed offset. A replica missing here has
	// acknowledged nothing and holds the HW where it is.
	Acked map[int32]int64
	// ISR is the committed ISR (the controller's).
	ISR []int32
	// Pending is the ISR of an AlterPartition in flight, nil if none. The
	// HW is computed over ISR ∪ Pending, the "maximal ISR" (KIP-497), so
	// that neither the old nor the new ISR can lose a committed record
	// whichever way the controller decides.
	Pending []int32
	// MinISR is min.insync.replicas: while the committed ISR is smaller the
	// HW does not advance (KIP-966).
	MinISR int
}

// HighWatermark returns the high watermark: the smallest acknowledged offset
// over the maximal ISR, but never below in.Current, and in.Current itself
// while the committed ISR is smaller than in.MinISR. It is pure; the
// table in hw_test.go is its specification.
func HighWatermark(in HWInput) int64 {
	if len(in.ISR) == 0 || len(in.ISR) < in.MinISR {
		return in.Current
	}
	hw := int64(-1)
	consider := func(id int32) bool {
		off, ok := in.Acked[id]
		if !ok {
			return false
		}
		if hw < 0 || off < hw {
			hw = off
		}
		return true
	}
	for _, id := range in.ISR {
		if !consider(id) {
			return in.Current
		}
	}
	for _, id := range in.Pending {
		if !consider(id) {
			return in.Current
		}
	}
	return max(hw, in.Current)
}
