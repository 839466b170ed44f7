package quorum

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// The primitives of the binary encoding of entries (codec_records.go) and
// snapshots (codec_snapshot.go). Integers are varints (signed ones
// zigzag), strings a uvarint length and the bytes, UUIDs their 16 bytes.
// A slice or map is "nullable": uvarint(n+1), 0 for nil, so that nil and
// empty survive a round trip exactly and images decoded from either
// encoding compare equal. Maps are written in key order: the same image
// always encodes to the same bytes.

// encoder appends to b.
type encoder struct{ b []byte }

func (e *encoder) uvarint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *encoder) varint(v int64)   { e.b = binary.AppendVarint(e.b, v) }
func (e *encoder) uuid(u UUID)      { e.b = append(e.b, u[:]...) }

func (e *encoder) str(s string) {
	e.uvarint(uint64(len(s)))
	e.b = append(e.b, s...)
}

func (e *encoder) boolean(v bool) {
	if v {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}

// count writes the length of a nullable slice or map.
func (e *encoder) count(n int, null bool) {
	if null {
		e.uvarint(0)
		return
	}
	e.uvarint(uint64(n) + 1)
}

func (e *encoder) int32s(s []int32) {
	e.count(len(s), s == nil)
	for _, v := range s {
		e.varint(int64(v))
	}
}

func (e *encoder) bytes(s []byte) {
	e.count(len(s), s == nil)
	e.b = append(e.b, s...)
}

func (e *encoder) strs(s []string) {
	e.count(len(s), s == nil)
	for _, v := range s {
		e.str(v)
	}
}

func (e *encoder) strMap(m map[string]string) {
	e.count(len(m), m == nil)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		e.str(k)
		e.str(m[k])
	}
}

// decoder reads what encoder wrote. The first error sticks: later reads
// return zero values, and err says what was wrong where.
type decoder struct {
	b   []byte
	off int
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: at byte %d: %s", ErrCorruptEntry, d.off, fmt.Sprintf(format, args...))
	}
}

func (d *decoder) rest() int { return len(d.b) - d.off }

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.fail("bad uvarint")
		return 0
	}
	d.off += n
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b[d.off:])
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.off += n
	return v
}

func (d *decoder) int32() int32 {
	v := d.varint()
	if v < math.MinInt32 || v > math.MaxInt32 {
		d.fail("%d does not fit an int32", v)
		return 0
	}
	return int32(v)
}

func (d *decoder) byte1() byte {
	if d.err != nil {
		return 0
	}
	if d.rest() < 1 {
		d.fail("short")
		return 0
	}
	d.off++
	return d.b[d.off-1]
}

func (d *decoder) boolean() bool {
	switch d.byte1() {
	case 0:
		return false
	case 1:
		return true
	}
	d.fail("bad boolean")
	return false
}

func (d *decoder) raw(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > d.rest() {
		d.fail("%d bytes wanted, %d left", n, d.rest())
		return nil
	}
	d.off += n
	return d.b[d.off-n : d.off : d.off]
}

func (d *decoder) str() string {
	n := d.uvarint()
	if n > uint64(d.rest()) {
		d.fail("string of %d bytes, %d left", n, d.rest())
		return ""
	}
	return string(d.raw(int(n)))
}

func (d *decoder) uuid() UUID {
	var u UUID
	copy(u[:], d.raw(len(u)))
	return u
}

// count reads the length of a nullable slice or map whose elements take
// at least minSize bytes each, so a corrupt count cannot make the decoder
// allocate more than the input justifies.
func (d *decoder) count(minSize int) (n int, null bool) {
	v := d.uvarint()
	if v == 0 {
		return 0, d.err == nil
	}
	if v-1 > uint64(d.rest()/minSize) {
		d.fail("%d elements, %d bytes left", v-1, d.rest())
		return 0, false
	}
	return int(v - 1), false
}

func (d *decoder) int32s() []int32 {
	n, null := d.count(1)
	if null || d.err != nil {
		return nil
	}
	s := make([]int32, n)
	for i := range s {
		s[i] = d.int32()
	}
	return s
}

// int32sInto is int32s with the elements carved out of *arena (grown as
// needed), capacity-limited so that an append copies: the many small
// slices of a topic's partitions then take one allocation.
func (d *decoder) int32sInto(arena *[]int32) []int32 {
	n, null := d.count(1)
	if null || d.err != nil {
		return nil
	}
	if cap(*arena)-len(*arena) < n {
		*arena = make([]int32, 0, max(n, 1024))
	}
	start := len(*arena)
	for range n {
		*arena = append(*arena, d.int32())
	}
	return (*arena)[start:len(*arena):len(*arena)]
}

func (d *decoder) bytes() []byte {
	n, null := d.count(1)
	if null || d.err != nil {
		return nil
	}
	return slices.Clone(d.raw(n))
}

func (d *decoder) strs() []string {
	n, null := d.count(1)
	if null || d.err != nil {
		return nil
	}
	s := make([]string, n)
	for i := range s {
		s[i] = d.str()
	}
	return s
}

func (d *decoder) strMap() map[string]string {
	n, null := d.count(2)
	if null || d.err != nil {
		return nil
	}
	m := make(map[string]string, n)
	for range n {
		k := d.str()
		m[k] = d.str()
	}
	return m
}

// done fails unless every byte was read.
func (d *decoder) done() {
	if d.err == nil && d.rest() != 0 {
		d.fail("%d bytes left over", d.rest())
	}
}
