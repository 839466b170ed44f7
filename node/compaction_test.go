package node

import (
	"math"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/sluice-log/sluice/node/config"
	"github.com/sluice-log/sluice/segment"
)

// TestCleanPolicy: a topic's compaction settings are its overrides over
// the broker's log.cleaner.* defaults, with Kafka's Long.MAX_VALUE meaning
// never (max.compaction.lag.ms) or forever (the others).
func TestCleanPolicy(t *testing.T) {
	fs := pflag.NewFlagSet("node", pflag.ContinueOnError)
	config.Flags(fs)
	if err := fs.Parse([]string{"--node.id=1", "--log.dirs=" + t.TempDir(), "--listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"--log.cleanup.policy=compact", "--log.cleaner.min.cleanable.ratio=0.3", "--log.cleaner.delete.retention.ms=5000"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(fs, []string{})
	if err != nil {
		t.Fatal(err)
	}
	long := "9223372036854775807"
	for _, c := range []struct {
		name string
		over map[string]string
		want segment.CleanPolicy
	}{
		{"broker defaults", nil, segment.CleanPolicy{Compact: true, MinCleanableDirtyRatio: 0.3, DeleteRetention: 5 * time.Second}},
		{"delete", map[string]string{"cleanup.policy": "delete"}, segment.CleanPolicy{Delete: true, MinCleanableDirtyRatio: 0.3, DeleteRetention: 5 * time.Second}},
		{"overrides", map[string]string{"cleanup.policy": "delete,compact", "min.cleanable.dirty.ratio": "0.05", "min.compaction.lag.ms": "100",
			"max.compaction.lag.ms": "60000", "delete.retention.ms": "0"},
			segment.CleanPolicy{Compact: true, Delete: true, MinCleanableDirtyRatio: 0.05, MinCompactionLag: 100 * time.Millisecond, MaxCompactionLag: time.Minute}},
		{"Long.MAX_VALUE", map[string]string{"min.compaction.lag.ms": long, "max.compaction.lag.ms": long, "delete.retention.ms": long},
			segment.CleanPolicy{Compact: true, MinCleanableDirtyRatio: 0.3, MinCompactionLag: math.MaxInt64, DeleteRetention: math.MaxInt64}},
	} {
		if got := cleanPolicy(cfg, c.over); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}
