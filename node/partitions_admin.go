package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-log/sluice/node/kafka"
	"github.com/sluice-log/sluice/quorum"
)

var _ kafka.PartitionAdmin = (*broker)(nil)

// CreatePartitions implements kafka.PartitionAdmin: it proposes the new
// counts to the quorum (or, with validateOnly, only plans them against the
// local image) and answers once every live broker has the new partitions
// in effect, as CreateTopics does.
//
// Internal topics keep the partitions they were created with (a group's
// coordinator is its hash mod the partition count): INVALID_REQUEST.
func (b *broker) CreatePartitions(ctx context.Context, topics []kafka.NewPartitions, validateOnly bool) ([]kafka.PartitionsResult, error) {
	out := make([]kafka.PartitionsResult, len(topics))
	var rest []kafka.NewPartitions
	var at []int
	for i, t := range topics {
		if isInternal(t.Topic) {
			out[i].Err, out[i].ErrMessage = internalTopicError(t.Topic, "add partitions to")
			continue
		}
		rest = append(rest, t)
		at = append(at, i)
	}
	if len(rest) == 0 {
		return out, nil
	}
	res, err := b.createPartitions(ctx, rest, validateOnly)
	if err != nil {
		return nil, err
	}
	for j, i := range at {
		out[i] = res[j]
	}
	return out, nil
}

// createPartitions is CreatePartitions of topics that are not internal.
func (b *broker) createPartitions(ctx context.Context, topics []kafka.NewPartitions, validateOnly bool) ([]kafka.PartitionsResult, error) {
	n := b.node()
	cmd := &quorum.CreatePartitions{}
	for _, t := range topics {
		cmd.Topics = append(cmd.Topics, quorum.PartitionsSpec{Name: t.Topic, Count: t.Count, Assignments: t.Assignment})
	}
	out := make([]kafka.PartitionsResult, len(topics))
	total := 0
	n.ctrl.View(func(im *quorum.Image) {
		for _, t := range topics {
			if tp := im.Topics[t.Topic]; tp != nil && int(t.Count) > len(tp.Partitions) {
				total += int(t.Count) - len(tp.Partitions)
			}
		}
	})
	if err := n.checkPartitionsPerRequest(total); err != nil {
		for i := range out {
			out[i] = kafka.PartitionsResult{Err: kerr.PolicyViolation, ErrMessage: err.Error()}
		}
		return out, nil
	}
	res, err := n.decideTopics(ctx, cmd, validateOnly)
	if err != nil {
		for i := range out {
			out[i] = kafka.PartitionsResult{Err: controllerError(err), ErrMessage: err.Error()}
		}
		return out, nil
	}
	for i := range out {
		if i >= len(res) {
			out[i].Err = kerr.UnknownServerError
			continue
		}
		out[i] = kafka.PartitionsResult{Err: kerr.ErrorForCode(res[i].Code), ErrMessage: res[i].Message}
	}
	return out, nil
}
