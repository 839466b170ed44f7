package admin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-log/sluice/tools/internal/cli"
)

// mustRunProblem is mustRun for commands that may find a problem (exit 2).
func mustRunProblem(t *testing.T, bootstrap string, args ...string) string {
	t.Helper()
	out, err := run(t, bootstrap, args...)
	if err != nil && !errors.Is(err, cli.ErrProblem) {
		t.Fatalf("sluice %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// TestHealthAndFiltersOnCluster: on a real 3-node cluster, `cluster health`
// reports an unclean election (a partition whose only replica restarted
// after a crash, on a topic that allows unclean elections), and the
// describe filters find partitions at and under min.insync.replicas, with
// exit status 2 (cli.ErrProblem) when they find some.
func TestHealthAndFiltersOnCluster(t *testing.T) {
	nodes, bootstrap := startCluster(t, 3)
	h := decode[Health](t, mustRun(t, bootstrap, "cluster", "health", "--format", "json"))
	if !h.Healthy || h.UncleanElectionsTotal != 0 || len(h.Brokers) != 3 {
		t.Fatalf("fresh cluster: %+v", h)
	}

	// Three RF=1 partitions: one of them is on node 3.
	mustRun(t, bootstrap, "topics", "create", "lossy", "--partitions", "3", "--replication-factor", "1", "--config", "unclean.leader.election.enable=true")
	nodes[2].restart(t, true)
	// Every node learns of the election on its own time.
	onEveryNode(t, nodes, "the unclean election", func(ctx context.Context, b *kgo.Broker) bool {
		_, unclean := topicHealthConfigs(ctx, b, []string{"lossy"})
		return unclean["lossy"] > 0
	})
	h = decode[Health](t, mustRunProblem(t, bootstrap, "cluster", "health", "--format", "json"))
	// Kafka's tools, asking for every config, never see the Sluice entry.
	cl, err := kgo.NewClient(kgo.SeedBrokers(nodes[2].kafkaAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	rc, err := kadm.NewClient(cl).DescribeTopicConfigs(context.Background(), "lossy")
	if err != nil || len(rc) != 1 || len(rc[0].Configs) == 0 {
		t.Fatalf("describe all configs: %v %+v", err, rc)
	}
	for _, c := range rc[0].Configs {
		if c.Key == uncleanElectionsKey {
			t.Fatalf("%s listed among all configs", c.Key)
		}
	}
	if h.UncleanElectionsTotal != 1 || h.UncleanElections["lossy"] != 1 {
		t.Fatalf("after node 3 crashed and came back: %+v", h)
	}
	if text := mustRunProblem(t, bootstrap, "cluster", "health"); !strings.Contains(text, "Unclean elections seen:      1 (lossy: 1; acknowledged records may have been lost)") {
		t.Fatalf("health text:\n%s", text)
	}

	// Filters, on topics created with every broker alive (full ISRs).
	mustRun(t, bootstrap, "topics", "create", "atmin", "--partitions", "2", "--replication-factor", "3", "--config", "min.insync.replicas=3")
	mustRun(t, bootstrap, "topics", "create", "undermin", "--partitions", "1", "--replication-factor", "3", "--config", "min.insync.replicas=4")
	onEveryNode(t, nodes, "the new topics", func(ctx context.Context, b *kgo.Broker) bool {
		return partitionCount(ctx, b, "atmin") == 2 && partitionCount(ctx, b, "undermin") == 1
	})
	for _, c := range []struct {
		filter string
		want   map[string]int // partitions listed per topic
	}{
		{"--at-min-isr-partitions", map[string]int{"atmin": 2}},
		{"--under-min-isr-partitions", map[string]int{"undermin": 1}},
	} {
		out, err := run(t, bootstrap, "topics", "describe", "atmin", "undermin", c.filter, "--format", "json")
		if !errors.Is(err, cli.ErrProblem) {
			t.Fatalf("%s: %v, want cli.ErrProblem (exit 2)", c.filter, err)
		}
		got := map[string]int{}
		for _, r := range decode[[]TopicRow](t, out) {
			got[r.Topic] = len(r.Partitions)
		}
		if len(got) != len(c.want) {
			t.Fatalf("%s: %v, want %v", c.filter, got, c.want)
		}
		for k, v := range c.want {
			if got[k] != v {
				t.Fatalf("%s: %v, want %v", c.filter, got, c.want)
			}
		}
	}
	// Nothing to report: exit 0 and no rows.
	if out := mustRun(t, bootstrap, "topics", "describe", "atmin", "--unavailable-partitions"); out != "" {
		t.Fatalf("unavailable partitions of a healthy topic: %q", out)
	}
}

// TestHealthSeesLeadersThatCannotServe: partitions whose leader cannot
// serve them while the metadata names it (here its log cannot open: a file
// where the partition's directory goes, on every node) make `cluster
// health` unhealthy with the partitions and the leaders' answers, though
// every ISR is full.
func TestHealthSeesLeadersThatCannotServe(t *testing.T) {
	nodes, bootstrap := startCluster(t, 3)
	for _, cn := range nodes {
		for p := range 3 {
			if err := os.WriteFile(filepath.Join(cn.dir, fmt.Sprintf("stuck-%d", p)), []byte("not a directory"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	mustRun(t, bootstrap, "topics", "create", "stuck", "--partitions", "3", "--replication-factor", "1")
	var h Health
	eventually(t, "health to see the three partitions", func() bool {
		h = decode[Health](t, mustRunProblem(t, bootstrap, "cluster", "health", "--format", "json"))
		return len(h.NotServing) == 3
	})
	if h.Healthy || !slices.Contains(h.Reasons, "leaders_not_serving") || len(h.UnderReplicated) != 0 ||
		!strings.HasPrefix(h.NotServing[0], "stuck/0: NOT_LEADER") {
		t.Fatalf("health: %+v", h)
	}
}
