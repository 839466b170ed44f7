package config

import (
	"errors"
	"testing"

	"github.com/sluice-log/sluice/node/meta"
	"github.com/sluice-log/sluice/quorum"
)

// TestFormatNoInitialControllers: a container's replacement controller
// (SLUICE_SLUICE_FORMAT_NO_INITIAL_CONTROLLERS=true) formats its empty
// volume without initial controllers, so its node joins instead of
// bootstrapping; with initial.controllers as well it is refused.
func TestFormatNoInitialControllers(t *testing.T) {
	dir := t.TempDir()
	id := quorum.NewUUID().String()
	env := []string{"SLUICE_NODE_ID=3", "SLUICE_LOG_DIRS=" + dir, "SLUICE_CLUSTER_ID=" + id,
		"SLUICE_CONTROLLER_QUORUM_VOTERS=1@a:9093,2@b:9093,3@c:9093", "SLUICE_SLUICE_FORMAT_NO_INITIAL_CONTROLLERS=true"}
	c, err := load(t, "", env)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := c.FormatIfEmpty(); !ok || err != nil {
		t.Fatalf("formatted %v, %v", ok, err)
	}
	m, err := meta.ReadMeta(dir)
	if err != nil || m.Bootstraps() || m.NodeID != 3 {
		t.Fatalf("%+v %v: want node 3 without initial controllers", m, err)
	}
	c, err = load(t, "", append(env, "SLUICE_INITIAL_CONTROLLERS=1@a:9093"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.FormatIfEmpty(); !errors.Is(err, ErrInvalid) {
		t.Fatalf("both initial.controllers and sluice.format.no.initial.controllers: %v, want ErrInvalid", err)
	}
}
