package node

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-log/sluice/quorum"
)

// TestRestartKeepsData: records written before a clean stop are served
// after a restart on the same directory; the node registered as cleanly
// shut down and leads its partition again at a higher leader epoch. The
// topic is auto-created by the producer's first metadata request.
func TestRestartKeepsData(t *testing.T) {
	dir := t.TempDir()
	tn := startNode(t, dir)
	ctx := testCtx(t)
	prod := newClient(t, tn, kgo.DefaultProduceTopic("auto"), kgo.AllowAutoTopicCreation())
	const n = 500
	for i := range n {
		prod.Produce(ctx, &kgo.Record{Value: fmt.Appendf(nil, "r%d", i)}, nil)
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	prod.Close()
	epoch := tn.replica("auto", 0).Epoch()
	brokerEpoch := tn.epoch.Load()
	tn.close(t)
	// The marker names the broker epoch it was written by (KIP-966's
	// clean-shutdown detection by broker epoch).
	if b, err := os.ReadFile(filepath.Join(dir, CleanShutdownFile)); err != nil || markerEpoch(b) != brokerEpoch || brokerEpoch <= 0 {
		t.Fatalf("clean-shutdown marker %q (%v), want broker epoch %d", b, err, brokerEpoch)
	}

	tn2 := startNode(t, dir)
	var clean bool
	tn2.ctrl.View(func(im *quorum.Image) { clean = im.Brokers[1].CleanShutdown })
	if !clean {
		t.Fatal("restart after a clean stop registered as unclean")
	}
	if _, err := os.Stat(filepath.Join(dir, CleanShutdownFile)); !os.IsNotExist(err) {
		t.Fatalf("clean-shutdown marker still there while running: %v", err)
	}
	r := tn2.replica("auto", 0)
	if r == nil || r.Epoch() <= epoch || r.Log().LogEndOffset() != n {
		t.Fatalf("after restart: replica %+v", r)
	}
	cons := newClient(t, tn2, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"auto": {0: kgo.NewOffset().AtStart()}}))
	for got := 0; got < n; {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if want := fmt.Sprintf("r%d", got); r.Offset != int64(got) || string(r.Value) != want {
				t.Fatalf("record %d: offset %d value %q", got, r.Offset, r.Value)
			}
			got++
		})
	}
}
