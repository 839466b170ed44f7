package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/node/kafka"
	"github.com/sluice-log/sluice/quorum"
)

var (
	_ kafka.ACLAdmin   = (*broker)(nil)
	_ kafka.Authorizer = (*authorizer)(nil)
)

// CreateACLs implements kafka.ACLAdmin: the bindings go through the
// quorum and are answered once every live broker has them in effect
// (publish), as AlterScram.
func (b *broker) CreateACLs(ctx context.Context, bs []quorum.ACLBinding) (*quorum.CreateACLsReply, error) {
	reply, err := b.node().publish(ctx, &quorum.CreateACLs{Bindings: bs})
	if err != nil {
		out := &quorum.CreateACLsReply{}
		res := quorum.ACLResult{Code: quorum.ErrorCode(controllerError(err)), Message: err.Error()}
		for range bs {
			out.Results = append(out.Results, res)
		}
		return out, nil
	}
	return reply.(*quorum.CreateACLsReply), nil
}

// DeleteACLs implements kafka.ACLAdmin, published as CreateACLs: when
// answered, no live broker authorizes by the removed bindings.
func (b *broker) DeleteACLs(ctx context.Context, fs []quorum.ACLFilter) (*quorum.DeleteACLsReply, error) {
	reply, err := b.node().publish(ctx, &quorum.DeleteACLs{Filters: fs})
	if err != nil {
		out := &quorum.DeleteACLsReply{}
		res := quorum.DeleteACLsResult{ACLResult: quorum.ACLResult{Code: quorum.ErrorCode(controllerError(err)), Message: err.Error()}}
		for range fs {
			out.Results = append(out.Results, res)
		}
		return out, nil
	}
	return reply.(*quorum.DeleteACLsReply), nil
}

// DescribeACLs implements kafka.ACLAdmin from the local image.
func (b *broker) DescribeACLs(_ context.Context, f quorum.ACLFilter) ([]quorum.ACLBinding, error) {
	return b.node().aclSet().Bindings(&f), nil
}

// aclSet is the local image's ACLs (immutable: kept without the lock).
func (n *Node) aclSet() *quorum.ACLSet {
	var s *quorum.ACLSet
	n.ctrl.View(func(im *quorum.Image) { s = im.ACLSet() })
	return s
}

// authorizer is Kafka's StandardAuthorizer over the local image's ACLs
// (authorizer.class.name): every Kafka listener's requests pass it
// (kafka.Options.Authorizer). A change of the ACLs is in effect for the
// next request once the local image has replayed it.
type authorizer struct {
	n    *Node
	rule quorum.Authorizer
}

func (a *authorizer) Authorize(principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	return a.rule.Authorize(a.n.aclSet(), principal, host, op, rt, name)
}

func (a *authorizer) AuthorizeAny(principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	return a.rule.AuthorizeAny(a.n.aclSet(), principal, host, op, rt)
}

// kafkaAuthorizer is the Kafka server's authorizer, nil without
// authorizer.class.name.
func (n *Node) kafkaAuthorizer() kafka.Authorizer {
	if !n.cfg.Authorizer {
		return nil
	}
	return &authorizer{n: n, rule: quorum.Authorizer{SuperUsers: n.cfg.SuperUsers, AllowEveryoneIfNoACL: n.cfg.AllowEveryoneIfNoACLFound}}
}
