package node

import (
	"context"

	"github.com/sluice-log/sluice/node/kafka"
	"github.com/sluice-log/sluice/node/sasl"
	"github.com/sluice-log/sluice/quorum"
)

var _ kafka.ScramAdmin = (*broker)(nil)

// AlterScram implements kafka.ScramAdmin: the alterations go through the
// quorum and are answered once every live broker has them in effect
// (publish), so a new credential authenticates on any broker right after
// the answer, and a deleted one is refused to new connections there.
// Connections already authenticated stay (as in Kafka).
func (b *broker) AlterScram(ctx context.Context, c *quorum.AlterScramCredentials) (*quorum.AlterScramReply, error) {
	reply, err := b.node().publish(ctx, c)
	if err != nil {
		out := &quorum.AlterScramReply{}
		seen := map[string]bool{}
		code, msg := quorum.ErrorCode(controllerError(err)), err.Error()
		add := func(u string) {
			if !seen[u] {
				seen[u] = true
				out.Results = append(out.Results, quorum.ScramResult{User: u, Code: code, Message: msg})
			}
		}
		for _, d := range c.Deletions {
			add(d.User)
		}
		for _, u := range c.Upsertions {
			add(u.User)
		}
		return out, nil
	}
	return reply.(*quorum.AlterScramReply), nil
}

// ScramUsers implements kafka.ScramAdmin from the local image.
func (b *broker) ScramUsers(context.Context) (map[string]map[string]int32, error) {
	out := map[string]map[string]int32{}
	b.node().ctrl.View(func(im *quorum.Image) {
		for u, byMech := range im.Scram {
			out[u] = map[string]int32{}
			for m, c := range byMech {
				out[u][m] = c.Iterations
			}
		}
	})
	return out, nil
}

// scramCredential finds a SCRAM credential in the local image for the
// Kafka listeners (kafka.SASL.Scram). The image's slices are never
// modified in place (Replay replaces credentials), so they are shared.
func (n *Node) scramCredential(mechanism, user string) (sasl.Credential, bool) {
	var c quorum.ScramCredential
	var ok bool
	n.ctrl.View(func(im *quorum.Image) { c, ok = im.ScramCredential(user, mechanism) })
	return sasl.Credential{Salt: c.Salt, StoredKey: c.StoredKey, ServerKey: c.ServerKey, Iterations: int(c.Iterations)}, ok
}

// listenerSecurity is the TLS and SASL of Kafka listener name.
func (n *Node) listenerSecurity(name string) kafka.Security {
	var sec kafka.Security
	if lt := n.cfg.TLS[name]; lt != nil {
		sec.TLS = lt.Server
		sec.MapPrincipal = n.cfg.PrincipalRules.Map
	}
	if ls := n.cfg.SASL[name]; ls != nil {
		sec.SASL = &kafka.SASL{Mechanisms: ls.Mechanisms, Plain: ls.Plain, Scram: n.scramCredential, OAuth: n.oauth[name], ReauthAfter: n.cfg.ConnectionsMaxReauth}
	}
	return sec
}

// interBrokerSASL is how replica fetchers authenticate to a SASL
// inter-broker listener; nil when it has no SASL.
func (n *Node) interBrokerSASL() *kafka.ClientSASL {
	ls := n.cfg.SASL[n.cfg.InterBrokerListener]
	if ls == nil {
		return nil
	}
	return &kafka.ClientSASL{Mechanism: ls.Mechanism, User: ls.Username, Password: ls.Password}
}
