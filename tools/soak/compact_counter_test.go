package soak

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluice-log/sluice/tools/cluster"
)

// TestCleanCounterFollowsReplacedNode: the counter reads the layout at
// every sample, so a node replaced at another address (a docker host
// loss) is summed from its first sample on, beside what the lost one
// counted.
func TestCleanCounterFollowsReplacedNode(t *testing.T) {
	serve := func(cleans int) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprintf(w, "sluice_log_cleaner_cleans_total %d\nsluice_log_cleaner_failures_total 0\n", cleans)
		}))
		t.Cleanup(s.Close)
		return s
	}
	lost, repl := serve(5), serve(7)
	var current atomic.Pointer[string]
	addr := strings.TrimPrefix(lost.URL, "http://")
	current.Store(&addr)
	c := newCleanCounter(func() cluster.Layout {
		return cluster.Layout{Nodes: []cluster.Node{{ID: 1, HTTP: *current.Load()}}}
	})
	ctx := context.Background()
	c.sample(ctx)
	next := strings.TrimPrefix(repl.URL, "http://")
	current.Store(&next)
	c.sample(ctx)
	if c.total[0] != 12 {
		t.Fatalf("cleans summed %d, want 12 (5 of the lost node, 7 of its replacement)", c.total[0])
	}
}
