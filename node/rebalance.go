package node

import (
	"context"
	"time"

	"github.com/sluice-log/sluice/quorum"
)

// leaderRebalanceLoop is the driver of auto.leader.rebalance.enable: every
// leader.imbalance.check.interval.seconds, on the active controller only,
// it plans the preferred elections (quorum.PlanLeaderRebalance, pure) and
// publishes them (answered once the new leaders lead). Elsewhere it
// does nothing; a failed election waits for the next check.
func (n *Node) leaderRebalanceLoop() {
	defer n.wg.Done()
	t := time.NewTicker(n.cfg.LeaderImbalanceCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
		}
		if !n.ctrl.IsLeader() {
			continue
		}
		var cmd *quorum.ElectLeaders
		n.ctrl.View(func(im *quorum.Image) {
			cmd = quorum.PlanLeaderRebalance(im, int(n.cfg.LeaderImbalancePerBrokerPercentage))
		})
		if cmd == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(n.ctx, n.cfg.LeaderImbalanceCheckInterval)
		reply, err := n.publish(ctx, cmd)
		cancel()
		if err != nil {
			n.log.Warn("node: leader rebalance: preferred elections not taken; retrying at the next check", "partitions", len(cmd.Partitions), "err", err)
			continue
		}
		moved := 0
		if r, ok := reply.(*quorum.ElectLeadersReply); ok {
			for _, p := range r.Partitions {
				if p.Code == 0 {
					moved++
				}
			}
		}
		n.log.Info("node: leader rebalance: leaderships moved back to preferred replicas", "moved", moved, "planned", len(cmd.Partitions))
	}
}
