package admin

import (
	"strings"
	"testing"
)

// TestCompactedTopicCLI: `sluice topics create --config
// cleanup.policy=compact` creates a compacted topic, `topics describe`
// shows every topic's policy (the default too), `configs alter` switches a
// live topic between policies, and a bad policy is refused with Kafka's
// error.
func TestCompactedTopicCLI(t *testing.T) {
	_, bootstrap := startCluster(t, 1)
	mustRun(t, bootstrap, "topics", "create", "table", "--config", "cleanup.policy=compact", "--config", "min.cleanable.dirty.ratio=0.1")
	mustRun(t, bootstrap, "topics", "create", "events")
	policy := func(topic string) string {
		rows := decode[[]TopicRow](t, mustRun(t, bootstrap, "topics", "describe", topic, "--format", "json"))
		if !strings.Contains(rows[0].Configs, "cleanup.policy="+rows[0].CleanupPolicy) {
			t.Fatalf("describe %s: configs %q do not show cleanup.policy %q", topic, rows[0].Configs, rows[0].CleanupPolicy)
		}
		return rows[0].CleanupPolicy
	}
	if p := policy("table"); p != "compact" {
		t.Fatalf("table: cleanup.policy %q, want compact", p)
	}
	if p := policy("events"); p != "delete" {
		t.Fatalf("events: cleanup.policy %q, want delete (the default)", p)
	}
	out := mustRun(t, bootstrap, "topics", "describe", "table")
	if !strings.Contains(out, "Configs: cleanup.policy=compact,min.cleanable.dirty.ratio=0.1\n") {
		t.Fatalf("describe text:\n%s", out)
	}

	// kafka-configs.sh writes a list value in brackets; bare works too.
	for _, c := range []struct{ arg, want string }{
		{"cleanup.policy=[compact,delete],min.compaction.lag.ms=10", "compact,delete"},
		{"cleanup.policy=delete,compact", "delete,compact"},
		{"cleanup.policy=compact", "compact"},
		{"cleanup.policy=delete", "delete"},
	} {
		mustRun(t, bootstrap, "configs", "alter", "--entity-name", "events", "--add-config", c.arg)
		if got := policy("events"); got != c.want {
			t.Fatalf("after configs alter --add-config %s: %s, want %s", c.arg, got, c.want)
		}
	}
	// Deleting the override goes back to the default.
	mustRun(t, bootstrap, "configs", "alter", "--entity-name", "table", "--delete-config", "cleanup.policy")
	if got := policy("table"); got != "delete" {
		t.Fatalf("after --delete-config: %s", got)
	}
	if _, err := run(t, bootstrap, "topics", "create", "bad", "--config", "cleanup.policy=compacted"); err == nil || !strings.Contains(err.Error(), "INVALID_CONFIG") {
		t.Fatalf("create with a bad policy: %v, want INVALID_CONFIG", err)
	}
	if _, err := run(t, bootstrap, "configs", "alter", "--entity-name", "events", "--add-config", "min.cleanable.dirty.ratio=2"); err == nil || !strings.Contains(err.Error(), "INVALID_CONFIG") {
		t.Fatalf("alter to a bad ratio: %v, want INVALID_CONFIG", err)
	}
}
