package segment

import (
	"errors"
	"testing"
)

// FuzzDecodeProducerState: a snapshot file's bytes, whatever they are,
// decode to a state or to ErrCorruptSnapshot, never a panic; what decodes
// encodes back to the same bytes.
func FuzzDecodeProducerState(f *testing.F) {
	s := newProducerState(true)
	for i := range 7 {
		h := BatchHeader{BaseOffset: int64(10 * i), LastOffsetDelta: 2, ProducerID: int64(i % 3), ProducerEpoch: 1, BaseSequence: int32(3 * i)}
		s.update(h, int64(1000+i))
	}
	f.Add(s.encode(70))
	empty := newProducerState(false)
	f.Add(empty.encode(0))
	f.Add([]byte("SLPS"))
	f.Fuzz(func(t *testing.T, b []byte) {
		off := int64(70)
		if len(b) >= snapHeaderSize {
			off = decodeU64(b[9:17])
		}
		st, err := decodeProducerState(b, off)
		if err != nil {
			if !errors.Is(err, ErrCorruptSnapshot) {
				t.Fatalf("error %v is not ErrCorruptSnapshot", err)
			}
			return
		}
		if got := st.encode(off); string(got) != string(b) {
			t.Fatalf("decoded and encoded again: %x, was %x", got, b)
		}
	})
}
