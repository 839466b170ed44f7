package quorum

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// peerMayPropose says whether a peer whose certificate proved it is node
// peer (Config.AuthorizePeerNode; -1: not proven, nothing to check) may
// forward cmd. A broker speaks for itself only: it registers, shuts down,
// unfences, reports a failed log directory and changes the ISRs of the
// partitions it leads under its own id, and never fences another broker
// (the active controller decides that from its own evidence). Commands a
// broker forwards for a client (topics, configs, ACLs, ...) were
// authorized by that broker against the client's principal, as Kafka's
// controller trusts its brokers' forwarded requests.
func (c *Controller) peerMayPropose(peer int32, cmd Command) error {
	if peer < 0 {
		return nil
	}
	var about int32
	switch cmd := cmd.(type) {
	case *RegisterBroker:
		about = cmd.ID
	case *FenceBroker:
		about = cmd.ID
	case *UnfenceBroker:
		about = cmd.ID
	case *ControlledShutdown:
		about = cmd.ID
	case *LogDirOffline:
		about = cmd.ID
	case *AlterPartition:
		about = cmd.BrokerID
	case *AlterPartitions:
		about = cmd.BrokerID
	default:
		return nil
	}
	if about == peer {
		return nil
	}
	return c.refusePeer(peer, fmt.Sprintf("%s for broker %d", cmd.CommandType(), about))
}

// refusePeer logs and answers a forwarded request that node peer may not
// make (what: the request).
func (c *Controller) refusePeer(peer int32, what string) error {
	c.mux.refused.Add(1) // sluice_raft_refused_connections_total
	if c.cfg.PeerLog != nil {
		c.cfg.PeerLog.Warn("quorum: refused a forwarded request: a node speaks only for itself", "peer-node", peer, "request", what)
	}
	return kerrf(kerr.ClusterAuthorizationFailed, "node %d may not forward %s: a node speaks only for itself", peer, what)
}
