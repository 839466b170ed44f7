package soak

import (
	"strings"
	"testing"
	"time"
)

var (
	tpC0 = TP{Topic: "soak-compacted", Partition: 0}
	tpC1 = TP{Topic: "soak-compacted", Partition: 1}
)

// chist builds crafted compacted-topic histories beside a healthy soak
// topic: keyed sends acknowledged at given offsets, and a final read
// that holds whichever of them the test says the cleaner kept.
type chist struct {
	*hist
	c *CompactHistory
}

func newCompactHist() *chist {
	b := healthy()
	c := &CompactHistory{Topic: "soak-compacted", Partitions: []TP{tpC0, tpC1}, FinalHW: map[TP]int64{},
		FinalAt: b.h.End.Add(time.Second), DeleteRetention: 10 * time.Second}
	b.h.Compact = c
	return &chist{hist: b, c: c}
}

// put records producer 0's send seq of key to tp with outcome o (acked at
// off, sent at second sec); tomb makes it a tombstone.
func (b *chist) put(seq int64, key string, tomb bool, tp TP, o Outcome, off int64, sec float64) *chist {
	at := t0.Add(time.Duration(sec * float64(time.Second)))
	if o != Acked {
		off = -1
	}
	b.c.Sends = append(b.c.Sends, Send{Key: Key{0, seq}, TP: tp, Outcome: o, Offset: off, Sent: at, Done: at, RecordKey: key, Tombstone: tomb})
	if hw := b.c.FinalHW[tp]; off >= hw {
		b.c.FinalHW[tp] = off + 1
	}
	return b
}

// keep puts the record of send seq into the final read at off.
func (b *chist) keep(seq int64, off int64) *chist {
	for _, s := range b.c.Sends {
		if s.Key.Seq != seq {
			continue
		}
		rd := Read{TP: s.TP, Offset: off, Key: []byte(s.RecordKey), HW: -1, At: b.c.FinalAt, Tombstone: s.Tombstone}
		if !s.Tombstone {
			rd.Value = EncodeValue(s.Key, 32)
		}
		b.c.Final = append(b.c.Final, rd)
		return b
	}
	panic("keep: no send with that seq")
}

func (b *chist) raw(tp TP, off int64, key string, value []byte) *chist {
	rd := Read{TP: tp, Offset: off, Value: value, HW: -1, At: b.c.FinalAt, Tombstone: value == nil}
	if key != "" {
		rd.Key = []byte(key)
	}
	b.c.Final = append(b.c.Final, rd)
	return b
}

// compacted is a healthy compacted history: key a overwritten twice
// (only the last kept), key b deleted long ago (tombstone removed), key c
// deleted recently (tombstone kept), key d on the other partition never
// cleaned, an unknown send of a that was not written.
func compacted() *chist {
	b := newCompactHist()
	b.put(0, "a", false, tpC0, Acked, 0, 0).put(1, "a", false, tpC0, Acked, 1, 0.1).
		put(2, "b", false, tpC0, Acked, 2, 0.2).put(3, "b", true, tpC0, Acked, 3, 0.3).
		put(4, "c", false, tpC0, Acked, 4, 8).put(5, "a", false, tpC0, Acked, 5, 8.5).
		put(6, "c", true, tpC0, Acked, 6, 9).put(7, "a", false, tpC0, Unknown, 0, 9.5).
		put(8, "d", false, tpC1, Acked, 0, 1).put(9, "d", false, tpC1, Acked, 1, 2)
	return b.keep(5, 5).keep(6, 6).keep(8, 0).keep(9, 1)
}

func TestCompactionHealthy(t *testing.T) {
	r := Check(&compacted().h, CheckOptions{})
	if !r.OK {
		t.Fatalf("crafted healthy compacted history: %+v", r.Violations)
	}
	cc := r.Compact
	if cc == nil {
		t.Fatal("no compacted-topic counts in the report")
	}
	// a (latest 5) and d (latest 9) present; b and c deleted, c's
	// tombstone kept; offsets 0-4 of partition 0 compacted away.
	want := CompactCounts{Sent: 10, Acked: 9, Tombstones: 2, Unknown: 1, Read: 4, Holes: 5, Keys: 4, LatestPresent: 2, Deleted: 2, TombstonesKept: 1}
	if *cc != want {
		t.Errorf("counts %+v, want %+v", *cc, want)
	}
	if _, ok := r.PerTP[tpC0.String()]; ok {
		t.Errorf("the compacted topic is in the soak topic's per-partition table: %v", r.PerTP)
	}
}

func TestCompactionLostLatest(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    *chist
		want string
	}{
		{"latest value gone, nothing left", func() *chist {
			b := compacted()
			b.c.Final = b.c.Final[1:] // drop a@5
			return b
		}(), "has no record left"},
		{"an older value instead of the latest", func() *chist {
			b := newCompactHist()
			b.put(0, "a", false, tpC0, Acked, 0, 0).put(1, "a", false, tpC0, Acked, 1, 0.1).put(2, "a", false, tpC0, Acked, 2, 0.2)
			return b.keep(1, 1)
		}(), "value p0#2 (acked) at offset 2 is missing; the key's last record is value p0#1"},
		{"tombstone gone within delete.retention.ms", func() *chist {
			b := compacted()
			b.c.Final = append(b.c.Final[:1], b.c.Final[2:]...) // drop c's tombstone
			return b
		}(), "within delete.retention.ms"},
		{"deleted key resurrected", func() *chist {
			b := compacted()
			b.c.Final = append(b.c.Final[:0:0], b.c.Final...)
			b.c.Final = append([]Read{b.c.Final[0]}, b.c.Final...)
			b.c.Final[0] = Read{TP: tpC0, Offset: 2, Key: []byte("b"), Value: EncodeValue(Key{0, 2}, 32), HW: -1}
			return b
		}(), "is missing; the key's last record is value p0#2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Check(&tc.b.h, CheckOptions{})
			mustOnly(t, r, KindCompactLostLatest, 1)
			if len(r.Violations) > 0 && !strings.Contains(r.Violations[0].Detail, tc.want) {
				t.Errorf("detail %q, want it to say %q", r.Violations[0].Detail, tc.want)
			}
			if r.Counts.CompactLostLatest != 1 {
				t.Errorf("Counts.CompactLostLatest %d, want 1", r.Counts.CompactLostLatest)
			}
		})
	}
}

// A latest value may be missing when a later tombstone of its key had an
// unknown outcome, and a later unknown write may stand in its place.
func TestCompactionUnknownLater(t *testing.T) {
	b := newCompactHist()
	b.put(0, "a", false, tpC0, Acked, 0, 0).put(1, "a", true, tpC0, Unknown, 0, 1).
		put(2, "b", false, tpC0, Acked, 1, 2).put(3, "b", false, tpC0, Unknown, 0, 3)
	b.keep(3, 2)
	if r := Check(&b.h, CheckOptions{}); !r.OK {
		t.Fatalf("unknown later writes should excuse: %+v", r.Violations)
	}
	// Without the unknown tombstone, a's loss is a violation.
	b.c.Sends[1].Outcome = Failed
	mustOnly(t, Check(&b.h, CheckOptions{}), KindCompactLostLatest, 1)
}

func TestCompactionPhantom(t *testing.T) {
	for _, tc := range []struct {
		name string
		add  func(*chist)
		want string
	}{
		{"value never sent", func(b *chist) { b.raw(tpC1, 7, "d", EncodeValue(Key{0, 42}, 32)) }, "never sent"},
		{"not the workload's", func(b *chist) { b.raw(tpC1, 7, "d", []byte("hello")) }, "not written by the workload"},
		{"no key", func(b *chist) { b.raw(tpC1, 7, "", EncodeValue(Key{0, 9}, 32)) }, "without a key"},
		{"tombstone nobody sent", func(b *chist) { b.raw(tpC1, 7, "d", nil) }, "no acknowledged or unknown send"},
		{"value under another key", func(b *chist) { b.raw(tpC1, 7, "e", EncodeValue(Key{0, 9}, 32)) }, `read with key "e"`},
		{"value from another partition", func(b *chist) { b.raw(tpC1, 7, "a", EncodeValue(Key{0, 5}, 32)) }, "was sent to soak-compacted/0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := compacted()
			tc.add(b)
			r := Check(&b.h, CheckOptions{})
			mustOnly(t, r, KindCompactPhantom, 1)
			if len(r.Violations) > 0 && !strings.Contains(r.Violations[0].Detail, tc.want) {
				t.Errorf("detail %q, want it to say %q", r.Violations[0].Detail, tc.want)
			}
		})
	}
}

func TestCompactionOffsetOrder(t *testing.T) {
	b := compacted()
	b.keep(9, 1) // partition 1's offset 1 read twice
	mustOnly(t, Check(&b.h, CheckOptions{}), KindCompactOrder, 1)
}

func TestCompactionOffsetConflict(t *testing.T) {
	// The offset where d's first value was acknowledged holds e's value,
	// acknowledged (and read) at offset 1 too: the refilled offset and
	// the value away from its acknowledged offset are two conflicts.
	b := newCompactHist()
	b.put(0, "d", false, tpC1, Acked, 0, 0).put(1, "e", false, tpC1, Acked, 1, 1).put(2, "d", false, tpC1, Acked, 2, 2)
	b.keep(1, 0).keep(1, 1).keep(2, 2)
	r := Check(&b.h, CheckOptions{})
	mustOnly(t, r, KindCompactConflict, 2)
}

// A lost latest value is put down, in the losses table, to the fault
// that healed after it was acknowledged, like any lost record.
func TestCompactionLossAttributed(t *testing.T) {
	b := compacted()
	b.c.Final = b.c.Final[1:] // a@5, acknowledged at 8.5 s
	b.h.Faults = []Fault{{Kind: ScenarioCompaction, Target: "soak-compacted/0", Start: t0.Add(8 * time.Second), Healed: t0.Add(9 * time.Second), Effect: "crafted"}}
	r := Check(&b.h, CheckOptions{})
	mustOnly(t, r, KindCompactLostLatest, 1)
	if len(r.Losses) != 1 || r.Losses[0].Kind != ScenarioCompaction || r.Losses[0].TP != tpC0 || r.Losses[0].FirstOffset != 5 {
		t.Errorf("losses %+v, want one of %s on %s at offset 5", r.Losses, ScenarioCompaction, tpC0)
	}
}

// The compaction flags: the control needs the compacted topic with
// followers, and the topic its own name, a rate and keys.
func TestCompactionOptions(t *testing.T) {
	base := func() Options {
		return Options{Dir: t.TempDir(), Nodes: 3, Partitions: 2, RF: 3, Producers: 2, Rate: 10, Duration: time.Minute, RecoveryBound: 10 * time.Second,
			Durability: "sync", Topic: "soak", CompactPartitions: 2, CompactTopic: "soak-compacted", CompactRate: 10, CompactKeys: 10}
	}
	for _, tc := range []struct {
		name string
		mod  func(*Options)
		err  string
	}{
		{"defaults", func(*Options) {}, ""},
		{"off", func(o *Options) { o.CompactPartitions, o.CompactTopic = 0, "" }, ""},
		{"control", func(o *Options) { o.NegativeControl = NegCompaction }, ""},
		{"control without the topic", func(o *Options) { o.NegativeControl, o.CompactPartitions = NegCompaction, 0 }, "needs the compacted topic"},
		{"control without followers", func(o *Options) { o.NegativeControl, o.RF = NegCompaction, 1 }, "with followers"},
		{"same name", func(o *Options) { o.CompactTopic = "soak" }, "a name other than --topic"},
		{"no keys", func(o *Options) { o.CompactKeys = 0 }, "--compacted-keys 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := base()
			tc.mod(&o)
			err := o.validate()
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("validate: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("validate: %v, want an error saying %q", err, tc.err)
			}
			if tc.name == "control" && (len(o.Faults) != 1 || o.Faults[0] != ScenarioCompaction || o.CompactKeys != minControlKeys) {
				t.Errorf("control: faults %v, keys %d; want only %s, %d keys", o.Faults, o.CompactKeys, ScenarioCompaction, minControlKeys)
			}
		})
	}
	o := base()
	cfg := o.compactTopicConfigs()
	for k, want := range map[string]string{"cleanup.policy": "compact", "segment.bytes": "16384", "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "10000"} {
		if got := cfg[k]; got == nil || *got != want {
			t.Errorf("compacted topic config %s: %v, want %s", k, got, want)
		}
	}
}
