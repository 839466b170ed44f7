package segment

import "hash/maphash"

// offsetMap maps keys to the latest offset seen for them, by a 128-bit
// hash of the key (Kafka's SkinnyOffsetMap keeps an MD5, 128 bits too):
// an open-addressing table of (hash, offset) slots with linear probing,
// in at most maxBytes of memory (see Fits). It grows by doubling. A
// collision of 128-bit hashes (two keys taken for one) is the only way it
// can be wrong; at 2^-128 per pair it is not a concern.
type offsetMap struct {
	seeds [2]maphash.Seed
	slots []offsetSlot // len is a power of two
	n     int          // slots in use
	max   int          // the most slots maxBytes allows (a power of two)
	bytes int          // maxBytes
	sink  uint64       // keeps touch's loads
}

type offsetSlot struct {
	h0, h1 uint64 // h0 == 0 && h1 == 0: empty (a key hashing to that is remapped)
	offset int64
}

const offsetSlotBytes = 24

func newOffsetMap(maxBytes int) *offsetMap {
	m := &offsetMap{seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}, max: 4, bytes: maxBytes}
	for m.max*2*offsetSlotBytes <= maxBytes {
		m.max *= 2
	}
	return m
}

// reset empties the map, keeping its memory.
func (m *offsetMap) reset() {
	clear(m.slots)
	m.n = 0
}

// Fits says whether k more keys fit in the map's memory bound (at a load
// of 3/4). put takes more (the map grows past the bound): the cleaner
// adds a batch's keys even when they do not fit if it is a pass's first.
func (m *offsetMap) Fits(k int) bool { return m.n+k <= m.max-m.max/4 }

func (m *offsetMap) hash(key []byte) (uint64, uint64) {
	h0, h1 := maphash.Bytes(m.seeds[0], key), maphash.Bytes(m.seeds[1], key)
	if h0 == 0 && h1 == 0 {
		h1 = 1
	}
	return h0, h1
}

// put records offset as key's latest (offsets come in rising order).
func (m *offsetMap) put(h0, h1 uint64, offset int64) {
	if m.n+1 > len(m.slots)-len(m.slots)/4 {
		m.grow()
	}
	mask := uint64(len(m.slots) - 1)
	for i := h0 & mask; ; i = (i + 1) & mask {
		s := &m.slots[i]
		if s.h0 == 0 && s.h1 == 0 {
			*s = offsetSlot{h0, h1, offset}
			m.n++
			return
		}
		if s.h0 == h0 && s.h1 == h1 {
			s.offset = offset
			return
		}
	}
}

// touch loads the first slot each of ks probes (h0 == h1 == 0: none), in
// a loop with no dependency between its loads, so that the cache misses
// of a batch's keys overlap; put and get then find the slots in cache.
func (m *offsetMap) touch(ks []keyAt) {
	if len(m.slots) == 0 {
		return
	}
	mask := uint64(len(m.slots) - 1)
	var s uint64
	for _, k := range ks {
		s += m.slots[k.h0&mask].h1
	}
	m.sink = s
}

// get returns key's latest offset, if the map has it.
func (m *offsetMap) get(h0, h1 uint64) (int64, bool) {
	if len(m.slots) == 0 {
		return 0, false
	}
	mask := uint64(len(m.slots) - 1)
	for i := h0 & mask; ; i = (i + 1) & mask {
		s := &m.slots[i]
		if s.h0 == h0 && s.h1 == h1 {
			return s.offset, true
		}
		if s.h0 == 0 && s.h1 == 0 {
			return 0, false
		}
	}
}

func (m *offsetMap) grow() {
	old := m.slots
	m.slots = make([]offsetSlot, max(len(old)*2, min(1024, m.max)))
	m.n = 0
	for _, s := range old {
		if s.h0 != 0 || s.h1 != 0 {
			m.put(s.h0, s.h1, s.offset)
		}
	}
}
