package admin

import (
	"strings"
	"testing"
)

// TestFeaturesCommands: `sluice features` against a real node, as
// kafka-features.sh: describe shows transaction.version finalized at
// the bootstrap level 2; downgrade, upgrade (dry run first) and disable
// change it for ApiVersions, with the epoch growing; an upgrade to a
// lower level, an unknown feature and a level out of range are refused
// with the reason, and bad flags before any request.
func TestFeaturesCommands(t *testing.T) {
	_, bootstrap := startCluster(t, 1)
	describe := func() Feature {
		t.Helper()
		rows := decode[[]Feature](t, mustRun(t, bootstrap, "features", "describe", "--format", "json"))
		if len(rows) != 1 || rows[0].Feature != "transaction.version" || rows[0].SupportedMinVersion != 0 || rows[0].SupportedMaxVersion != 2 {
			t.Fatalf("describe: %+v", rows)
		}
		return rows[0]
	}
	f0 := describe()
	if f0.FinalizedVersionLevel != 2 || f0.Epoch < 1 {
		t.Fatalf("bootstrap: %+v, want level 2 at an epoch >= 1", f0)
	}
	text := mustRun(t, bootstrap, "features", "describe")
	if want := "Feature: transaction.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 2\tFinalizedVersionLevel: 2\tEpoch: "; !strings.HasPrefix(text, want) {
		t.Fatalf("describe text %q, want it to start %q", text, want)
	}

	if out := mustRun(t, bootstrap, "features", "downgrade", "--feature", "transaction.version=1"); strings.TrimSpace(out) != "transaction.version was downgraded to 1." {
		t.Fatalf("downgrade: %q", out)
	}
	if f := describe(); f.FinalizedVersionLevel != 1 || f.Epoch <= f0.Epoch {
		t.Fatalf("after the downgrade: %+v (before %+v)", f, f0)
	}
	out, err := run(t, bootstrap, "features", "upgrade", "--feature", "transaction.version=0")
	if err == nil || !strings.Contains(err.Error(), "at least 1") {
		t.Fatalf("upgrade to 0: %v\n%s", err, out)
	}
	if out := mustRun(t, bootstrap, "features", "upgrade", "--feature", "transaction.version=2", "--dry-run"); strings.TrimSpace(out) != "transaction.version can be upgraded to 2." {
		t.Fatalf("dry run: %q", out)
	}
	if f := describe(); f.FinalizedVersionLevel != 1 {
		t.Fatalf("a dry run changed the level: %+v", f)
	}
	mustRun(t, bootstrap, "features", "upgrade", "--feature", "transaction.version=2")
	if f := describe(); f.FinalizedVersionLevel != 2 {
		t.Fatalf("after the upgrade: %+v", f)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"upgrade", "--feature", "transaction.version=1"}, "can't downgrade from 2"},
		{[]string{"upgrade", "--feature", "metadata.version=20"}, "does not support the given feature"},
		{[]string{"upgrade", "--feature", "transaction.version=3"}, "only supports levels 0-2"},
	} {
		out, err := run(t, bootstrap, append([]string{"features"}, c.args...)...)
		if err == nil || !strings.Contains(out, "Could not ") || !strings.Contains(out, c.want) {
			t.Errorf("features %v: %v\n%s\nwant a refusal saying %q", c.args, err, out, c.want)
		}
	}
	if f := describe(); f.FinalizedVersionLevel != 2 {
		t.Fatalf("a refused update changed the level: %+v", f)
	}
	for _, args := range [][]string{{"upgrade"}, {"upgrade", "--feature", "transaction.version"}, {"disable", "--feature", "transaction.version=1"}} {
		if _, err := run(t, bootstrap, append([]string{"features"}, args...)...); err == nil {
			t.Errorf("features %v: no error", args)
		}
	}

	if out := mustRun(t, bootstrap, "features", "disable", "--feature", "transaction.version"); strings.TrimSpace(out) != "transaction.version was disabled." {
		t.Fatalf("disable: %q", out)
	}
	if f := describe(); f.FinalizedVersionLevel != 0 {
		t.Fatalf("after disable: %+v", f)
	}
}
