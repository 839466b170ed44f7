package group

import (
	"errors"
	"testing"
)

// Partition must agree with Kafka (abs of Java's String.hashCode, mod the
// partition count), or tooling and other brokers look for a group's
// coordinator elsewhere. Java's hash codes: "hello" 99162322, "Aa" and
// "BB" 2112, "polygenelubricants" Integer.MIN_VALUE (whose Utils.abs is
// 0), and a character outside the BMP hashes as its UTF-16 surrogates.
func TestPartition(t *testing.T) {
	for _, c := range []struct {
		group string
		n     int32
		want  int32
	}{
		{"hello", 50, 99162322 % 50},
		{"Aa", 50, 2112 % 50},
		{"BB", 50, 2112 % 50},
		{"polygenelubricants", 50, 0},
		{"", 50, 0},
		{"😀", 50, (0xD83D*31 + 0xDE00) % 50},
		{"hello", 1, 0},
	} {
		if got := Partition(c.group, c.n); got != c.want {
			t.Errorf("Partition(%q, %d) = %d, want %d", c.group, c.n, got, c.want)
		}
	}
	// A negative hash code: "hellohellohello" overflows.
	var h int32
	for _, r := range "hellohellohello" {
		h = 31*h + r
	}
	if h >= 0 {
		t.Fatalf("want a negative hash code, got %d", h)
	}
	if got, want := Partition("hellohellohello", 50), (-h)%50; got != want {
		t.Errorf("negative hash: %d, want %d", got, want)
	}
}

// Replay's errors: what it cannot decode is ErrCorruptRecord, what it does
// not keep ErrUnsupportedRecord; neither changes the shard.
func TestReplayErrors(t *testing.T) {
	good := offsetRecord("g", "t", 0, offset{offset: 1})
	gm := groupRecord(newGroup("g", t0))
	for _, c := range []struct {
		name       string
		key, value []byte
		want       error
	}{
		{"short key", []byte{0}, good.Value, ErrCorruptRecord},
		{"truncated offset key", good.Key[:5], good.Value, ErrCorruptRecord},
		{"truncated group key", gm.Key[:3], nil, ErrCorruptRecord},
		{"truncated 848 record", []byte{0, 3, 0, 1, 'g'}, []byte{0, 0}, ErrCorruptRecord},
		{"future 848 value", []byte{0, 3, 0, 1, 'g'}, []byte{0, 1, 0, 0, 0, 1, 0}, ErrUnsupportedRecord},
		{"truncated 848 key", []byte{0, 5, 0, 1, 'g'}, []byte{0, 0}, ErrCorruptRecord},
		{"share group record", []byte{0, 9, 0, 1, 'g'}, []byte{0, 0}, ErrUnsupportedRecord},
		{"negative key version", []byte{0xff, 0xff}, nil, ErrUnsupportedRecord},
		{"short value", good.Key, []byte{0}, ErrCorruptRecord},
		{"future offset value", good.Key, []byte{0, 9, 0, 0}, ErrUnsupportedRecord},
		{"truncated offset value", good.Key, good.Value[:9], ErrCorruptRecord},
		{"future group value", gm.Key, []byte{0, 5}, ErrUnsupportedRecord},
		{"truncated group value", gm.Key, gm.Value[:6], ErrCorruptRecord},
	} {
		s := NewShard(0, DefaultConfig())
		err := s.Replay(0, c.key, c.value)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
		if len(s.groups) != 0 {
			t.Errorf("%s: the shard changed: %s", c.name, persistedState(s))
		}
	}
	s := NewShard(0, DefaultConfig())
	s.LoadDone(t0)
	if err := s.Replay(0, good.Key, good.Value); err == nil || len(s.groups) != 0 {
		t.Errorf("Replay after LoadDone: %v", err)
	}
}
