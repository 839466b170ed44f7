package soak

import (
	"fmt"
	"path/filepath"

	"github.com/sluice-log/sluice/tools/cluster"
	"github.com/sluice-log/sluice/tools/soak/powerfs"
)

// powerLoss runs every node on powerfs (a journal of what was made
// durable) and, between a SIGKILL and the restart, throws away what the
// node had not fsynced.
type powerLoss struct{}

func journalPath(n cluster.Node) string {
	return filepath.Join(filepath.Dir(n.DataDir), "power.journal")
}

func (*powerLoss) nodeArgs(n cluster.Node) []string {
	return []string{"--" + powerfs.Flag, journalPath(n)}
}

// drop is run on a killed node: it cuts its files back to what was
// durable and says what it threw away. A node without a journal is an
// error (powerfs.ErrNoJournal): it did not run on powerfs.
func (p *powerLoss) drop(l cluster.Layout, id int32) (powerfs.Stats, error) {
	for _, n := range l.Nodes {
		if n.ID == id {
			st, err := powerfs.Recover(journalPath(n))
			if err != nil {
				return st, fmt.Errorf("node %d: %w", id, err)
			}
			return st, nil
		}
	}
	return powerfs.Stats{}, fmt.Errorf("power loss: no node %d", id)
}
