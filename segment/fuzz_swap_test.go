package segment

import (
	"errors"
	"slices"
	"testing"
)

// FuzzSwapRecord: decodeSwapRecord never panics on a damaged swap record
// (version 1: bases; version 2: groups); what it accepts encodes back to
// the same bytes (version 2) or names the same bases (version 1); what it
// refuses is ErrCorruptIndex. Seeds in testdata/fuzz/FuzzSwapRecord.
func FuzzSwapRecord(f *testing.F) {
	seg := func(base int64) *segment { return &segment{base: base} }
	f.Add(swapRecord([]cleanedSeg{{olds: []*segment{seg(0), seg(40), seg(97)}}, {olds: []*segment{seg(130)}}}))
	f.Add(u64bytes(512))
	f.Add([]byte{2, 0, 0, 0, 0, 0, 0, 0, 7, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		gs, err := decodeSwapRecord(b)
		if err != nil {
			if !errors.Is(err, ErrCorruptIndex) {
				t.Fatalf("error %v is not ErrCorruptIndex", err)
			}
			return
		}
		if len(b)%8 == 0 {
			for i, g := range gs {
				if g.head != decodeU64(b[8*i:]) || len(g.gone) != 0 {
					t.Fatalf("version 1 group %d: %+v", i, g)
				}
			}
			return
		}
		var outs []cleanedSeg
		for _, g := range gs {
			o := cleanedSeg{olds: []*segment{seg(g.head)}}
			for _, b := range g.gone {
				o.olds = append(o.olds, seg(b))
			}
			outs = append(outs, o)
		}
		if again := swapRecord(outs); !slices.Equal(again, b) {
			t.Fatalf("decoded %+v encodes to %x, not %x", gs, again, b)
		}
	})
}
