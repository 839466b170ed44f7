package replica

import (
	"maps"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
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

// createFS counts files created.
type createFS struct {
	vfs.FS
	creates int
}

func (fs *createFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	fs.creates++
	return fs.FS.Create(name, c)
}

// TestHWCheckpointOfIdleReplicas: the checkpoint is written when a high
// watermark moved, not again while none does (the node writes it every
// 5 s: idle replicas cost no fsyncs), and reads back as written.
func TestHWCheckpointOfIdleReplicas(t *testing.T) {
	r := openTestReplica(t)
	m := r.m
	fs := &createFS{FS: vfs.Default}
	m.fs = fs
	m.mu.replicas[TP{"t", 0}] = r
	write := func(what string, want int) {
		t.Helper()
		before := fs.creates
		if err := m.WriteHWCheckpoint(); err != nil {
			t.Fatal(err)
		}
		if got := fs.creates - before; got != want {
			t.Fatalf("%s: %d files written, want %d", what, got, want)
		}
	}
	write("first", 1)
	write("idle", 0)
	r.hw.Store(5)
	write("after the high watermark moved", 1)
	write("idle again", 0)
	got, err := readHWCheckpoint(m.fs, m.dir)
	if err != nil || !maps.Equal(got, map[TP]int64{{"t", 0}: 5}) {
		t.Fatalf("read back: %v, %v", got, err)
	}
}
