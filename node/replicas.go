package node

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"github.com/sluice-log/sluice/node/replica"
	"github.com/sluice-log/sluice/quorum"
)

// replicaHost is the node seen by its replica manager (replica.Host): the
// broker epoch, the leaders' endpoints from the metadata image, the
// controller for ISR changes, and the node's wake-ups and log directory.
type replicaHost struct{ n *Node }

var _ replica.Host = replicaHost{}

// BrokerEpoch implements replica.Host.
func (h replicaHost) BrokerEpoch() int64 { return h.n.epoch.Load() }

// KafkaEndpoint implements replica.Host from the metadata image: the
// broker's endpoint of inter.broker.listener.name.
func (h replicaHost) KafkaEndpoint(broker int32) string {
	var addr string
	h.n.ctrl.View(func(im *quorum.Image) {
		if b := im.Brokers[broker]; b != nil {
			for _, e := range b.Endpoints {
				if e.Name == h.n.cfg.InterBrokerListener {
					addr = net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port)))
				}
			}
		}
	})
	return addr
}

// AlterPartitions implements replica.Host through the quorum.
func (h replicaHost) AlterPartitions(ctx context.Context, cmd *quorum.AlterPartitions) (*quorum.AlterPartitionsReply, error) {
	reply, err := h.n.ctrl.Propose(ctx, cmd)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", controllerError(err), err)
	}
	return reply.(*quorum.AlterPartitionsReply), nil
}

// Poke implements replica.Host: it wakes the reconciler.
func (h replicaHost) Poke() { h.n.poke() }

// Signal implements replica.Host: it wakes long-polling fetches.
func (h replicaHost) Signal() { h.n.signal() }

// DiskError implements replica.Host (logdir.go).
func (h replicaHost) DiskError(err error) bool { return h.n.checkDiskError(err) }
