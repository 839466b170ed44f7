package node

import (
	"context"
	"errors"
	"time"

	"github.com/sluice-log/sluice/quorum"
)

// Admin writes (CreateTopics, CreatePartitions, DeleteTopics,
// IncrementalAlterConfigs) are answered once they are in effect on every
// live broker, so that a client that asks any broker right after the
// answer sees the change (quorum/publish.go: the controller nudges the
// followers with a Barrier, then the answering node asks each live
// broker to confirm). In effect here means applied to the image and
// reconciled: the logs of new partitions are open (a produce finds its
// leader), those of deleted ones are gone.

// publishWait bounds the wait for the live brokers after a commit. Kafka's
// brokers apply metadata within milliseconds; one that takes longer is
// paused, partitioned or about to be fenced, and the answer (the change is
// committed) goes out without it, with a warning in the log.
const publishWait = 5 * time.Second

// errStopped is returned by awaitReconciled on a node that is closing.
var errStopped = errors.New("node: stopped")

// publish proposes cmd and returns its reply once every live broker has it
// in effect, or after publishWait.
func (n *Node) publish(ctx context.Context, cmd quorum.Command) (any, error) {
	reply, index, err := n.ctrl.Publish(ctx, cmd)
	if err != nil {
		return nil, err
	}
	n.awaitPublished(ctx, index, string(cmd.CommandType()))
	return reply, nil
}

// awaitPublished waits, at most publishWait, until every live broker has
// the metadata at index in effect; a broker that did not confirm is
// logged.
func (n *Node) awaitPublished(ctx context.Context, index uint64, what string) {
	wctx, cancel := context.WithTimeout(ctx, publishWait)
	defer cancel()
	start := time.Now()
	if err := n.ctrl.AwaitBrokers(wctx, index); err != nil {
		n.log.Warn("node: admin change answered before every live broker had it in effect",
			"change", what, "index", index, "waited", time.Since(start).Round(time.Millisecond), "err", err)
	}
}

// awaitReconciled waits until the logs were reconciled with the metadata
// image at index or later: quorum.Config.AwaitApplied.
func (n *Node) awaitReconciled(ctx context.Context, index uint64) error {
	for {
		n.sig.Lock()
		done, ch := n.sig.reconciled >= index, n.sig.appended
		n.sig.Unlock()
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-n.stop:
			return errStopped
		}
	}
}
