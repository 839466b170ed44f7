package kafka

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/quorum"
)

// QuotaAdmin is the optional capability behind client quotas (KIP-13,
// KIP-546): the APIs that alter and describe them, and the lookup the
// server's quota managers measure connections by (quotas.go).
type QuotaAdmin interface {
	// AlterClientQuotas carries out c through the quorum and returns its
	// reply; an error means no answer (the connection closes).
	AlterClientQuotas(ctx context.Context, c *quorum.AlterClientQuotas) (*quorum.AlterClientQuotasReply, error)
	// ClientQuotas returns every entity's quotas (the metadata image's).
	ClientQuotas() []quorum.ClientQuota
	// ResolveQuota is quorum.Image.ResolveQuota on the current image.
	ResolveQuota(user, clientID, key string) (quorum.QuotaMatch, bool)
}

// AlterClientQuotas (key 49), versions 0-1. Each entry succeeds or fails
// as a whole (INVALID_REQUEST for an unknown entity type or key, a type
// or key given twice, a value that is not positive, or a byte rate that
// is not whole), and is answered once every live broker has it in
// effect. Entity types are user and client-id (a null name is the
// default); Kafka's ip entities and connection or controller-mutation
// rates are refused as unsupported.
func handleAlterClientQuotas(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.AlterClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	cmd := &quorum.AlterClientQuotas{ValidateOnly: req.ValidateOnly}
	for _, e := range req.Entries {
		a := quorum.QuotaAlteration{}
		parts := make([]entityPart, 0, len(e.Entity))
		for _, p := range e.Entity {
			parts = append(parts, entityPart{p.Type, p.Name})
		}
		a.Entity, a.Invalid = quotaEntity(parts)
		for _, op := range e.Ops {
			a.Ops = append(a.Ops, quorum.QuotaOp{Key: op.Key, Value: op.Value, Remove: op.Remove})
		}
		cmd.Entries = append(cmd.Entries, a)
	}
	reply, err := s.broker.(QuotaAdmin).AlterClientQuotas(ctx, cmd)
	if err != nil {
		return nil, fmt.Errorf("broker alter client quotas: %w", err)
	}
	for i, e := range req.Entries {
		re := kmsg.NewAlterClientQuotasResponseEntry()
		for _, p := range e.Entity {
			re.Entity = append(re.Entity, kmsg.AlterClientQuotasResponseEntryEntity{Type: p.Type, Name: p.Name})
		}
		if i < len(reply.Results) && reply.Results[i].Code != 0 {
			re.ErrorCode = reply.Results[i].Code
			re.ErrorMessage = kmsg.StringPtr(reply.Results[i].Message)
		}
		resp.Entries = append(resp.Entries, re)
	}
	return resp, nil
}

type entityPart struct {
	typ  string
	name *string
}

// quotaEntity is the entity the request's components name, or why they
// name none.
func quotaEntity(parts []entityPart) (quorum.QuotaEntity, string) {
	var e quorum.QuotaEntity
	for _, p := range parts {
		switch p.typ {
		case quorum.QuotaEntityUser:
			if e.HasUser() {
				return e, "entity type user given twice"
			}
			e.User, e.UserDefault = p.name, p.name == nil
		case quorum.QuotaEntityClientID:
			if e.HasClient() {
				return e, "entity type client-id given twice"
			}
			e.Client, e.ClientDefault = p.name, p.name == nil
		case "ip":
			return e, "ip quotas (connection_creation_rate) are not supported by Sluice"
		default:
			return e, fmt.Sprintf("unknown entity type %q (valid: user, client-id)", p.typ)
		}
	}
	return e, ""
}

// DescribeClientQuotas (key 48), versions 0-1: the entities that match
// every component (exact name, the default, or any), with only those
// component types when strict; INVALID_REQUEST for an unknown or repeated
// entity type or an unknown match type.
func handleDescribeClientQuotas(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DescribeClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	fail := func(msg string) (kmsg.Response, error) {
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(msg)
		return resp, nil
	}
	seen := map[string]bool{}
	for _, c := range req.Components {
		if c.EntityType != quorum.QuotaEntityUser && c.EntityType != quorum.QuotaEntityClientID {
			return fail(fmt.Sprintf("unknown entity type %q (valid: user, client-id)", c.EntityType))
		}
		if seen[c.EntityType] {
			return fail("entity type " + c.EntityType + " given twice")
		}
		seen[c.EntityType] = true
		if c.MatchType < 0 || c.MatchType > 2 {
			return fail(fmt.Sprintf("unknown match type %d", c.MatchType))
		}
		if c.MatchType == 0 && c.Match == nil {
			return fail("an exact match needs a name")
		}
	}
	quotas := s.broker.(QuotaAdmin).ClientQuotas()
	slices.SortFunc(quotas, func(a, b quorum.ClientQuota) int { return strings.Compare(a.Entity.Key(), b.Entity.Key()) })
	for _, q := range quotas {
		if !matchesQuota(q.Entity, req.Components, req.Strict) {
			continue
		}
		e := kmsg.NewDescribeClientQuotasResponseEntry()
		add := func(typ string, name *string, def bool) {
			if name == nil && !def {
				return
			}
			e.Entity = append(e.Entity, kmsg.DescribeClientQuotasResponseEntryEntity{Type: typ, Name: name})
		}
		add(quorum.QuotaEntityUser, q.Entity.User, q.Entity.UserDefault)
		add(quorum.QuotaEntityClientID, q.Entity.Client, q.Entity.ClientDefault)
		keys := make([]string, 0, len(q.Values))
		for k := range q.Values {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			e.Values = append(e.Values, kmsg.DescribeClientQuotasResponseEntryValue{Key: k, Value: q.Values[k]})
		}
		resp.Entries = append(resp.Entries, e)
	}
	return resp, nil
}

// matchesQuota reports whether e matches every component (and, strict,
// has no other component type).
func matchesQuota(e quorum.QuotaEntity, comps []kmsg.DescribeClientQuotasRequestComponent, strict bool) bool {
	matched := 0
	for _, c := range comps {
		var name *string
		var def, has bool
		switch c.EntityType {
		case quorum.QuotaEntityUser:
			name, def, has = e.User, e.UserDefault, e.HasUser()
		default:
			name, def, has = e.Client, e.ClientDefault, e.HasClient()
		}
		if !has {
			return false
		}
		switch c.MatchType {
		case 0: // exact
			if def || name == nil || *name != *c.Match {
				return false
			}
		case 1: // default
			if !def {
				return false
			}
		}
		matched++
	}
	present := 0
	if e.HasUser() {
		present++
	}
	if e.HasClient() {
		present++
	}
	return !strict || matched == present
}
