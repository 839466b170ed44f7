package admin

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTopicsAlterPartitions: `sluice topics alter --partitions` grows a
// topic on a real cluster; validate-only, shrinking, an unknown topic and
// a missing count are refused with errors that say what to do.
func TestTopicsAlterPartitions(t *testing.T) {
	nodes, bootstrap := startCluster(t, 3)
	mustRun(t, bootstrap, "topics", "create", "grow", "--partitions", "2", "--replication-factor", "1")
	hasPartitions := func(n int) {
		onEveryNode(t, nodes, fmt.Sprintf("grow to have %d partitions", n), func(ctx context.Context, b *kgo.Broker) bool {
			return partitionCount(ctx, b, "grow") == n
		})
	}
	hasPartitions(2)
	partitions := func() int {
		rows := decode[[]TopicRow](t, mustRun(t, bootstrap, "topics", "describe", "grow", "--format", "json"))
		return rows[0].PartitionCount
	}

	out := mustRun(t, bootstrap, "topics", "alter", "grow", "--partitions", "5", "--validate-only")
	if !strings.Contains(out, "validate only") || partitions() != 2 {
		t.Fatalf("validate-only changed the topic or said nothing: %q, %d partitions", out, partitions())
	}
	out = mustRun(t, bootstrap, "topics", "alter", "grow", "--partitions", "5")
	if out != "Topic grow now has 5 partitions.\n" {
		t.Fatalf("alter output %q", out)
	}
	hasPartitions(5)
	if n := partitions(); n != 5 {
		t.Fatalf("%d partitions after alter to 5", n)
	}
	rows := decode[[]TopicRow](t, mustRun(t, bootstrap, "topics", "describe", "grow", "--format", "json"))
	leaders := map[int32]bool{}
	for _, p := range rows[0].Partitions {
		if p.Leader < 1 || len(p.Replicas) != 1 {
			t.Fatalf("partition %+v", p)
		}
		leaders[p.Leader] = true
	}
	if len(leaders) != 3 {
		t.Fatalf("five partitions led by %v: new partitions not spread over the brokers", leaders)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"topics", "alter", "grow", "--partitions", "3"}, "INVALID_PARTITIONS"},
		{[]string{"topics", "alter", "nope", "--partitions", "3"}, "UNKNOWN_TOPIC_OR_PARTITION"},
		{[]string{"topics", "alter", "grow"}, "--partitions N is required"},
	} {
		if _, err := run(t, bootstrap, c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error naming %s", c.args, err, c.want)
		}
	}
	res := decode[[]AlterResult](t, mustRun(t, bootstrap, "topics", "alter", "grow", "--partitions", "6", "--format", "json"))
	if len(res) != 1 || res[0].Topic != "grow" || res[0].Partitions != 6 || res[0].Error != "" {
		t.Fatalf("json %+v", res)
	}

	// kafka-topics.sh's --replica-assignment: every partition listed, the
	// new ones' replicas used.
	hasPartitions(6)
	mustRun(t, bootstrap, "topics", "alter", "grow", "--partitions", "8", "--replica-assignment", "1,1,1,1,1,1,3,2")
	hasPartitions(8)
	rows = decode[[]TopicRow](t, mustRun(t, bootstrap, "topics", "describe", "grow", "--format", "json"))
	if p := rows[0].Partitions; len(p) != 8 || !slices.Equal(p[6].Replicas, []int32{3}) || !slices.Equal(p[7].Replicas, []int32{2}) {
		t.Fatalf("after an assigned alter: %+v", p)
	}
	for _, c := range []struct {
		assign, want string
	}{
		{"1,1,1,1,1,1,1,1,2", "lists 9 partitions, --partitions asks for 10"},
		{"1,1,1,1,1,1,1,1,x,2", "is not a broker id"},
		{"1,1,1,1,1,1,1,1,9,2", "INVALID_REPLICA_ASSIGNMENT"},
	} {
		if _, err := run(t, bootstrap, "topics", "alter", "grow", "--partitions", "10", "--replica-assignment", c.assign); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("assignment %s: %v, want an error naming %q", c.assign, err, c.want)
		}
	}
}
