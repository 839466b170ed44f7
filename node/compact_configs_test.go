package node

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCompactionConfigs: the compaction topic configs through kadm, with
// Kafka's names, defaults, types and validation; a live topic switches
// policies with IncrementalAlterConfigs.
func TestCompactionConfigs(t *testing.T) {
	tn := startNode(t, t.TempDir(), "log.cleaner.min.compaction.lag.ms=1000")
	ctx := testCtx(t)
	adm := kadm.NewClient(newClient(t, tn))
	describe := func(topic string) map[string]kadm.Config {
		t.Helper()
		rcs, err := adm.DescribeTopicConfigs(ctx, topic)
		if err != nil || rcs[0].Err != nil {
			t.Fatalf("describe %s: %v %v", topic, err, rcs)
		}
		m := map[string]kadm.Config{}
		for _, c := range rcs[0].Configs {
			m[c.Key] = c
		}
		return m
	}
	s := kmsg.StringPtr

	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": s("compact")}, "table"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "plain"); err != nil {
		t.Fatal(err)
	}
	c := describe("table")
	for _, want := range []struct {
		key, value string
		source     kmsg.ConfigSource
	}{
		{"cleanup.policy", "compact", kmsg.ConfigSourceDynamicTopicConfig},
		{"min.cleanable.dirty.ratio", "0.5", kmsg.ConfigSourceDefaultConfig},
		{"max.compaction.lag.ms", "9223372036854775807", kmsg.ConfigSourceDefaultConfig},
		{"delete.retention.ms", "86400000", kmsg.ConfigSourceDefaultConfig},
		// Set on the broker (log.cleaner.min.compaction.lag.ms).
		{"min.compaction.lag.ms", "1000", kmsg.ConfigSourceStaticBrokerConfig},
	} {
		if got := c[want.key]; got.MaybeValue() != want.value || got.Source != want.source {
			t.Errorf("%s = %q from %v, want %q from %v", want.key, got.MaybeValue(), got.Source, want.value, want.source)
		}
	}
	if p := describe("plain")["cleanup.policy"]; p.MaybeValue() != "delete" || p.Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("plain cleanup.policy = %q from %v, want the default delete", p.MaybeValue(), p.Source)
	}

	// Switch a live topic: delete -> compact,delete (either order) -> back.
	for _, v := range []string{"compact,delete", "delete,compact", "compact"} {
		alt, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "cleanup.policy", Value: s(v)}}, "plain")
		if err != nil || alt[0].Err != nil {
			t.Fatalf("alter cleanup.policy=%s: %v %+v", v, err, alt)
		}
		if got := describe("plain")["cleanup.policy"]; got.MaybeValue() != v {
			t.Fatalf("after alter to %s: %s", v, got.MaybeValue())
		}
	}
	alt, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "cleanup.policy"}}, "plain")
	if err != nil || alt[0].Err != nil {
		t.Fatalf("delete cleanup.policy: %v %+v", err, alt)
	}
	if got := describe("plain")["cleanup.policy"]; got.MaybeValue() != "delete" {
		t.Fatalf("after deleting the override: %s", got.MaybeValue())
	}

	// Refused values: INVALID_CONFIG, at create and at alter, nothing changed.
	for _, bad := range []map[string]string{
		{"cleanup.policy": "compress"},
		{"cleanup.policy": "compact,compact"},
		{"cleanup.policy": ""},
		{"min.cleanable.dirty.ratio": "1.5"},
		{"min.cleanable.dirty.ratio": "-0.1"},
		{"max.compaction.lag.ms": "0"},
		{"min.compaction.lag.ms": "-1"},
		{"delete.retention.ms": "-1"},
		{"min.compaction.lag.ms": "5000", "max.compaction.lag.ms": "4000"},
		{"max.compaction.lag.ms": "500"}, // below the broker's min.compaction.lag.ms
	} {
		cfg := map[string]*string{}
		var changes []kadm.AlterConfig
		for k, v := range bad {
			cfg[k] = s(v)
			changes = append(changes, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: s(v)})
		}
		created, _ := adm.CreateTopics(ctx, 1, 1, cfg, "bad")
		if err := created["bad"].Err; err != kerr.InvalidConfig {
			t.Errorf("create with %v: %v, want INVALID_CONFIG", bad, err)
		}
		alt, err := adm.AlterTopicConfigs(ctx, changes, "table")
		if err != nil || len(alt) != 1 || alt[0].Err != kerr.InvalidConfig {
			t.Errorf("alter to %v: %v %+v, want INVALID_CONFIG", bad, err, alt)
		}
	}
	if got, pol := describe("table"), describe("table")["cleanup.policy"]; pol.MaybeValue() != "compact" || got["max.compaction.lag.ms"].Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("refused alters changed the topic: %+v", got)
	}
	// Valid values, one at a time and together.
	good := []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "min.cleanable.dirty.ratio", Value: s("0.01")},
		{Op: kadm.SetConfig, Name: "max.compaction.lag.ms", Value: s("60000")},
		{Op: kadm.SetConfig, Name: "delete.retention.ms", Value: s("0")},
	}
	if alt, err := adm.AlterTopicConfigs(ctx, good, "table"); err != nil || alt[0].Err != nil {
		t.Fatalf("alter: %v %+v", err, alt)
	}
	if got := describe("table")["min.cleanable.dirty.ratio"]; got.MaybeValue() != "0.01" || got.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("min.cleanable.dirty.ratio = %+v", got)
	}
}
