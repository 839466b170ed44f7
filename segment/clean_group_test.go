package segment

import (
	"context"
	"maps"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestCleanGroupsKeepFilesFlat is the __consumer_offsets case: a small key
// space overwritten for ever with small segments. Without grouping every
// rolled segment stays a file after it is cleaned (150 -> 3,300 files in
// 172 s in the groups scale run); with it the files the log holds stay
// bounded by the live data, not by how many segments ever rolled. The
// key -> latest view is checked after every clean and after a reopen.
func TestCleanGroupsKeepFilesFlat(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 16))
	fs := vfs.NewMem()
	e := newEnv(t, fs)
	opts := Options{SegmentBytes: 1024, IndexIntervalBytes: 128, Now: testNow}
	l, _ := e.open(opts)
	w := written{}
	const rounds = 30
	rolled, most := 0, 0
	var segsAt []int
	for round := 0; round < rounds; round++ {
		before := len(l.Segments())
		appendKVs(t, l, rng, w, 10, 30, 1000+int64(round)*1000, 1)
		rolled += len(l.Segments()) - before
		leo := l.LogEndOffset()
		st, err := l.Clean(context.Background(), CleanOptions{Policy: compactPolicy(), UpTo: leo, Now: time.UnixMilli(200_000)})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if st.SegmentsWritten > st.SegmentsCleaned {
			t.Fatalf("round %d: %d segments written from %d", round, st.SegmentsWritten, st.SegmentsCleaned)
		}
		if round%10 == 9 { // a full read is slow under -race
			if got, want := readCheck(t, l, w, leo), latestWritten(w, leo); !maps.Equal(got, want) {
				t.Fatalf("round %d: key view\n got %v\nwant %v", round, got, want)
			}
		}
		n := len(l.Segments())
		most = max(most, n)
		segsAt = append(segsAt, n)
	}
	files := countSegmentFiles(t, fs, "/data/topic-0")
	t.Logf("%d segments rolled over %d rounds; segments per round %v; %d .log files at the end", rolled, rounds, segsAt, files)
	// 30 keys of ~30-byte records are ~1 KiB live: a handful of files,
	// whatever the number of rounds.
	if most > 8 || files > 8 {
		t.Fatalf("segments grew to %d (%d files) after %d rolled: grouping does not bound them", most, files, rolled)
	}
	if rolled < 5*most {
		t.Fatalf("only %d segments rolled: the test does not exercise grouping", rolled)
	}
	leo := l.LogEndOffset()
	want := latestWritten(w, leo)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, _ = e.open(opts)
	defer l.Close()
	if err := l.checkIndex(); err != nil {
		t.Fatal(err)
	}
	if got := readCheck(t, l, w, leo); !maps.Equal(got, want) {
		t.Fatalf("after reopen: key view\n got %v\nwant %v", got, want)
	}
}

func countSegmentFiles(t *testing.T, fs vfs.FS, dir string) int {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, name := range names {
		if strings.HasSuffix(name, segSuffix) {
			n++
		}
	}
	return n
}
