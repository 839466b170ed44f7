package admin

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
)

func TestInBatchesProgress(t *testing.T) {
	names := func(n int) []string {
		s := make([]string, n)
		for i := range s {
			s[i] = fmt.Sprintf("t%d", i)
		}
		return s
	}
	// One batch: one request, nothing on standard error (as before).
	var progress bytes.Buffer
	var sizes []int
	ask := func(batch []string) (int, error) {
		sizes = append(sizes, len(batch))
		return len(batch) - 1, nil // one topic of each batch fails
	}
	if err := inBatches(names(topicBatch), &progress, "created", ask); err != nil {
		t.Fatal(err)
	}
	if progress.Len() != 0 || !slices.Equal(sizes, []int{topicBatch}) {
		t.Fatalf("one batch: progress %q, batches %v", progress.String(), sizes)
	}

	// More: every topic asked once, in order, a line after each batch.
	progress.Reset()
	sizes = nil
	var asked []string
	all := names(2*topicBatch + 5)
	err := inBatches(all, &progress, "created", func(batch []string) (int, error) {
		asked = append(asked, batch...)
		return ask(batch)
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(asked, all) || !slices.Equal(sizes, []int{topicBatch, topicBatch, 5}) {
		t.Fatalf("batches %v", sizes)
	}
	want := fmt.Sprintf("created %d of %d topics\ncreated %d of %d topics\ncreated %d of %d topics\n",
		topicBatch-1, len(all), 2*topicBatch-2, len(all), 2*topicBatch+2, len(all))
	if progress.String() != want {
		t.Fatalf("progress:\n%s\nwant:\n%s", progress.String(), want)
	}

	// An error stops at the batch that failed.
	progress.Reset()
	sizes = nil
	boom := errors.New("boom")
	err = inBatches(all, &progress, "deleted", func(batch []string) (int, error) {
		if len(sizes) == 1 {
			return 0, boom
		}
		return ask(batch)
	})
	if !errors.Is(err, boom) || len(sizes) != 1 || progress.String() != fmt.Sprintf("deleted %d of %d topics\n", topicBatch-1, len(all)) {
		t.Fatalf("err %v, batches %v, progress %q", err, sizes, progress.String())
	}
}

// TestTopicsCreateDeleteInBatchesOnNode: a create and a delete of more
// topics than one batch print the same standard output as one request
// would, and a progress line per batch on standard error.
func TestTopicsCreateDeleteInBatchesOnNode(t *testing.T) {
	_, bootstrap := startCluster(t, 1)
	n := topicBatch + 3
	var topics, created, deleted []string
	for i := range n {
		name := fmt.Sprintf("bulk%03d", i)
		topics = append(topics, name)
		created = append(created, "Created topic "+name+".\n")
		deleted = append(deleted, "Deleted topic "+name+".\n")
	}
	check := func(verb string, args []string, wantOut []string) {
		t.Helper()
		out, errOut, err := runIO(t, bootstrap, "", append(args, "--timeout", "60s")...)
		if err != nil {
			t.Fatalf("topics %s: %v\n%s", verb, err, errOut)
		}
		// In kadm's order (by topic id for a create), as one request's.
		lines := strings.SplitAfter(out, "\n")
		slices.Sort(lines)
		if got, want := strings.Join(lines, ""), strings.Join(wantOut, ""); got != want {
			t.Fatalf("topics %s: stdout\n%s\nwant\n%s", verb, got, want)
		}
		want := fmt.Sprintf("%s %d of %d topics\n%s %d of %d topics\n", verb, topicBatch, n, verb, n, n)
		if errOut != want {
			t.Fatalf("topics %s: stderr %q, want %q", verb, errOut, want)
		}
	}
	check("created", append([]string{"topics", "create", "--partitions", "1", "--replication-factor", "1"}, topics...), created)
	check("deleted", append([]string{"topics", "delete"}, topics...), deleted)
}

func TestInternalTopicsHidden(t *testing.T) {
	details := kadm.TopicDetails{
		"orders":             {Topic: "orders"},
		"__consumer_offsets": {Topic: "__consumer_offsets", IsInternal: true},
		"__other":            {Topic: "__other"},
		"_single":            {Topic: "_single"},
		"flagged":            {Topic: "flagged", IsInternal: true},
	}
	for _, c := range []struct {
		f    internalFlags
		want []string
	}{
		{internalFlags{}, []string{"_single", "orders"}},
		{internalFlags{exclude: true}, []string{"_single", "orders"}},
		{internalFlags{include: true}, []string{"__consumer_offsets", "__other", "_single", "flagged", "orders"}},
	} {
		got, err := c.f.keep(details)
		if err != nil || !slices.Equal(got.Names(), c.want) {
			t.Errorf("%+v: %v, %v; want %v", c.f, got.Names(), err, c.want)
		}
	}
	if _, err := (&internalFlags{include: true, exclude: true}).keep(details); err == nil {
		t.Error("--include-internal with --exclude-internal accepted")
	}
}
