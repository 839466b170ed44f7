package soak

import (
	"context"
	"time"

	"github.com/sluice-log/sluice/tools/cluster"
)

// netFaults cuts traffic between nodes with iptables (see newNetFaults).
type netFaults struct {
	l cluster.Layout
}

// newNetFaults reports why network partitions are not possible here ("" if they are).
func newNetFaults(want bool, _ *cluster.Options) (*netFaults, string) {
	if !want {
		return nil, "not asked for"
	}
	return nil, "not implemented yet"
}

func (n *netFaults) isolate(ctx context.Context, leader int32, others []int32, controller int32, hold time.Duration) error {
	return nil
}

func (n *netFaults) healAll() {}
