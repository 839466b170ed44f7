package node

import (
	"context"
	"maps"

	"github.com/sluice-log/sluice/node/kafka"
	"github.com/sluice-log/sluice/quorum"
)

var _ kafka.QuotaAdmin = (*broker)(nil)

// AlterClientQuotas implements kafka.QuotaAdmin: the alterations go
// through the quorum and are answered once every live broker has them in
// effect (publish), so a new quota throttles on every broker right after
// the answer. A quorum failure fails every entry with its code.
func (b *broker) AlterClientQuotas(ctx context.Context, c *quorum.AlterClientQuotas) (*quorum.AlterClientQuotasReply, error) {
	reply, err := b.node().publish(ctx, c)
	if err != nil {
		out := &quorum.AlterClientQuotasReply{}
		code, msg := quorum.ErrorCode(controllerError(err)), err.Error()
		for range c.Entries {
			out.Results = append(out.Results, quorum.QuotaResult{Code: code, Message: msg})
		}
		return out, nil
	}
	return reply.(*quorum.AlterClientQuotasReply), nil
}

// ClientQuotas implements kafka.QuotaAdmin from the local image.
func (b *broker) ClientQuotas() []quorum.ClientQuota {
	var out []quorum.ClientQuota
	b.node().ctrl.View(func(im *quorum.Image) {
		for _, q := range im.Quotas {
			out = append(out, quorum.ClientQuota{Entity: q.Entity, Values: maps.Clone(q.Values)})
		}
	})
	return out
}

// ResolveQuota implements kafka.QuotaAdmin on the local image.
func (b *broker) ResolveQuota(user, clientID, key string) (m quorum.QuotaMatch, ok bool) {
	b.node().ctrl.View(func(im *quorum.Image) { m, ok = im.ResolveQuota(user, clientID, key) })
	return m, ok
}
