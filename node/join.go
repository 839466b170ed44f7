package node

import (
	"context"
	"fmt"
	"time"

	"github.com/sluice-log/sluice/quorum"
)

// joinQuorum makes a node that is not an initial voter (process.roles=broker,
// or a controller outside the initial controllers) a Raft non-voter of the
// running quorum, so it receives the metadata log: it asks the voters
// (controller.quorum.voters, else meta.properties' initial controllers) to
// add it (Controller.Join, which follows the leader and retries). Joining again
// after a restart is harmless. Without a reachable quorum it fails within
// timeout with an error that says what to check.
func (n *Node) joinQuorum(voters []quorum.Voter, timeout time.Duration) error {
	if len(voters) == 0 {
		return fmt.Errorf("node: node %d is not a controller and knows none: set controller.quorum.voters or format with initial controllers (sluice init)", n.cfg.NodeID)
	}
	addrs := make([]string, len(voters))
	for i, v := range voters {
		addrs[i] = v.Addr
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := n.ctrl.Join(ctx, addrs); err != nil {
		return fmt.Errorf("node: join the metadata quorum at %v as a non-voter (are the controllers up?): %w", addrs, err)
	}
	return nil
}
