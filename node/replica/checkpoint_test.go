package replica

import (
	"maps"
	"testing"
)

// TestParseHWCheckpoint: Kafka's format, "topic partition offset" lines,
// keyed by topic and partition; a topic whose name ends in "-<digits>"
// stays apart from its prefix.
func TestParseHWCheckpoint(t *testing.T) {
	got, err := parseHWCheckpoint([]byte("0\n3\na-1 0 7\na 1 9\nb.c_d 12 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[TP]int64{{"a-1", 0}: 7, {"a", 1}: 9, {"b.c_d", 12}: 0}
	if !maps.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if s := (TP{"a-1", 0}).String(); s != "a-1-0" {
		t.Fatalf("String = %q, want a-1-0", s)
	}
	for _, bad := range []string{"", "1\n0\n", "0\n1\n", "0\n1\na 0\n", "0\n1\na -1 0\n", "0\n1\na 0 -1\n"} {
		if _, err := parseHWCheckpoint([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
