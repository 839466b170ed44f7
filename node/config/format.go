package config

import (
	"errors"
	"fmt"

	"github.com/sluice-log/sluice/node/meta"
)

// Format holds how a node formats an empty data directory on its first
// start (containers: no `sluice init` step).
type Format struct {
	// NoInitialControllers is sluice.format.no.initial.controllers:
	// format an empty directory as `sluice init --no-initial-controllers`
	// does (a replacement controller, quorum/voters.go).
	NoInitialControllers bool
}

// formatKeys are Format's keys.
func formatKeys() []key {
	return []key{
		{"sluice.format.no.initial.controllers", "false", "with cluster.id: format an empty log.dirs on first start without initial controllers (a replacement for a controller lost with its disk): the node joins the running quorum (controller.quorum.voters) as an observer and never bootstraps one; then `sluice cluster add-controller`", func(c *Config, v string) error {
			return parseBool(&c.Format.NoInitialControllers, v)
		}},
	}
}

// FormatIfEmpty formats the data directory for cluster.id, this node and
// initial.controllers when initial.controllers is set (or, with
// sluice.format.no.initial.controllers, without initial controllers) and
// the directory has no meta.properties yet (first start of a container),
// and reports whether it did. Otherwise it does nothing: Verify then
// checks what is there (another cluster's volume is refused, not
// reformatted).
func (c *Config) FormatIfEmpty() (bool, error) {
	noInitial := c.Format.NoInitialControllers
	switch {
	case noInitial && len(c.InitialControllers) > 0:
		return false, fmt.Errorf("%w: sluice.format.no.initial.controllers formats without initial controllers, but initial.controllers is set: drop one of them", ErrInvalid)
	case noInitial && c.ClusterID == "":
		return false, fmt.Errorf("%w: sluice.format.no.initial.controllers needs cluster.id", ErrInvalid)
	case noInitial && len(c.ControllerQuorumVoters) == 0:
		return false, fmt.Errorf("%w: sluice.format.no.initial.controllers needs controller.quorum.voters: the node finds the running quorum there", ErrInvalid)
	case len(c.InitialControllers) == 0 && !noInitial:
		return false, nil
	}
	_, err := meta.ReadMeta(c.LogDirs[0])
	if !errors.Is(err, meta.ErrNotFormatted) {
		return false, nil
	}
	if _, err := meta.Format(c.LogDirs[0], meta.Meta{ClusterID: c.ClusterID, NodeID: c.NodeID, InitialControllers: c.InitialControllers}); err != nil {
		return false, fmt.Errorf("format %s: %w", c.LogDirs[0], err)
	}
	return true, nil
}
