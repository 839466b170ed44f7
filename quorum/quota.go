package quorum

import (
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Client quotas (KIP-13, KIP-546) live in the image as KRaft's
// ClientQuotaRecord: per entity (a user, a client id, or a user and a
// client id; each either named or the default) a value per quota key.
// Brokers enforce them (node/kafka's quota managers); the image only
// stores them and resolves which entity's quota applies to a connection,
// by Kafka's precedence:
//
//	/users/<user>/clients/<client-id>
//	/users/<user>/clients/<default>
//	/users/<user>
//	/users/<default>/clients/<client-id>
//	/users/<default>/clients/<default>
//	/users/<default>
//	/clients/<client-id>
//	/clients/<default>

// The quota keys Sluice enforces, by Kafka's names. Kafka's
// controller_mutation_rate and connection_creation_rate (ip entities) are
// refused as unsupported rather than stored and ignored.
const (
	QuotaProducerByteRate  = "producer_byte_rate"
	QuotaConsumerByteRate  = "consumer_byte_rate"
	QuotaRequestPercentage = "request_percentage"
)

// The entity types, by Kafka's names.
const (
	QuotaEntityUser     = "user"
	QuotaEntityClientID = "client-id"
)

// CmdAlterClientQuotas names AlterClientQuotas on the wire.
const CmdAlterClientQuotas CommandType = "alter_client_quotas"

// TypeClientQuota is the record type; part of the on-disk format.
const TypeClientQuota RecordType = "client_quota"

// QuotaEntity names the entity a quota belongs to: a component is named
// (User, Client), the default (UserDefault, ClientDefault), or absent
// (nil and false).
type QuotaEntity struct {
	User          *string `json:"user,omitempty"`
	UserDefault   bool    `json:"user_default,omitempty"`
	Client        *string `json:"client,omitempty"`
	ClientDefault bool    `json:"client_default,omitempty"`
}

// HasUser and HasClient say whether the entity has that component.
func (e QuotaEntity) HasUser() bool   { return e.User != nil || e.UserDefault }
func (e QuotaEntity) HasClient() bool { return e.Client != nil || e.ClientDefault }

// Key is the entity's key in Image.Quotas: each component as
// type=<default> or type="name" (Go-quoted), user first.
func (e QuotaEntity) Key() string {
	var parts []string
	part := func(typ string, name *string, def bool) {
		switch {
		case def:
			parts = append(parts, typ+"=<default>")
		case name != nil:
			parts = append(parts, typ+"="+strconv.Quote(*name))
		}
	}
	part(QuotaEntityUser, e.User, e.UserDefault)
	part(QuotaEntityClientID, e.Client, e.ClientDefault)
	return strings.Join(parts, ",")
}

func (e QuotaEntity) String() string { return e.Key() }

// QuotaOp sets or removes one key of an entity.
type QuotaOp struct {
	Key    string  `json:"key"`
	Value  float64 `json:"value,omitempty"`
	Remove bool    `json:"remove,omitempty"`
}

// QuotaAlteration is one entry of AlterClientQuotas.
type QuotaAlteration struct {
	Entity QuotaEntity `json:"entity"`
	// Invalid, when set, is why the request's entity could not be
	// named (an unknown entity type, a type given twice): the entry
	// fails with INVALID_REQUEST and this message.
	Invalid string    `json:"invalid,omitempty"`
	Ops     []QuotaOp `json:"ops"`
}

// AlterClientQuotas is Kafka's AlterClientQuotas: each entry succeeds or
// fails as a whole. Reply: *AlterClientQuotasReply, one result per entry
// in order.
type AlterClientQuotas struct {
	Entries      []QuotaAlteration `json:"entries"`
	ValidateOnly bool              `json:"validate_only,omitempty"`
}

// QuotaResult is the outcome of one entry; Code is a Kafka error code.
type QuotaResult struct {
	Code    int16  `json:"code"`
	Message string `json:"message,omitempty"`
}

// AlterClientQuotasReply is the reply of AlterClientQuotas.
type AlterClientQuotasReply struct {
	Results []QuotaResult `json:"results"`
}

func (*AlterClientQuotas) CommandType() CommandType { return CmdAlterClientQuotas }
func (*AlterClientQuotas) newReply() any            { return &AlterClientQuotasReply{} }

// ClientQuotaRecord sets (or, with Remove, clears) one key of an entity.
type ClientQuotaRecord struct {
	Entity QuotaEntity `json:"entity"`
	Key    string      `json:"key"`
	Value  float64     `json:"value,omitempty"`
	Remove bool        `json:"remove,omitempty"`
}

func (*ClientQuotaRecord) Type() RecordType { return TypeClientQuota }

func (r *ClientQuotaRecord) String() string {
	if r.Remove {
		return fmt.Sprintf("client-quota %s remove %s", r.Entity, r.Key)
	}
	return fmt.Sprintf("client-quota %s %s=%g", r.Entity, r.Key, r.Value)
}

// ClientQuota is one entity's quotas (Image.Quotas' values).
type ClientQuota struct {
	Entity QuotaEntity        `json:"entity"`
	Values map[string]float64 `json:"values"`
}

// quotaErr is a refusal with the client's message.
func quotaErr(code *kerr.Error, msg string) error { return &scramError{code, msg} }

// validQuota checks one operation as Kafka's ClientQuotaControlManager
// does; nil if fine.
func validQuota(op QuotaOp) error {
	switch op.Key {
	case QuotaProducerByteRate, QuotaConsumerByteRate:
		if !op.Remove && (op.Value != math.Trunc(op.Value) || op.Value > math.MaxInt64) {
			return quotaErr(kerr.InvalidRequest, op.Key+" must be a whole number of bytes per second")
		}
	case QuotaRequestPercentage:
	case "controller_mutation_rate", "connection_creation_rate":
		return quotaErr(kerr.InvalidRequest, op.Key+" is not supported by Sluice")
	default:
		return quotaErr(kerr.InvalidRequest, "unknown quota key "+strconv.Quote(op.Key)+
			" (valid: producer_byte_rate, consumer_byte_rate, request_percentage)")
	}
	if !op.Remove && !(op.Value > 0) {
		return quotaErr(kerr.InvalidRequest, op.Key+" must be greater than 0")
	}
	return nil
}

func (p *planner) alterClientQuotas(c *AlterClientQuotas) ([]Record, any, error) {
	reply := &AlterClientQuotasReply{}
	var recs []Record
	for _, a := range c.Entries {
		var err error
		seen := map[string]bool{}
		switch {
		case a.Invalid != "":
			err = quotaErr(kerr.InvalidRequest, a.Invalid)
		case !a.Entity.HasUser() && !a.Entity.HasClient():
			err = quotaErr(kerr.InvalidRequest, "the entity names no user and no client-id")
		}
		var out []Record
		for _, op := range a.Ops {
			if err != nil {
				break
			}
			if seen[op.Key] {
				err = quotaErr(kerr.InvalidRequest, "key "+op.Key+" altered twice")
				break
			}
			seen[op.Key] = true
			if err = validQuota(op); err == nil {
				out = append(out, &ClientQuotaRecord{Entity: a.Entity, Key: op.Key, Value: op.Value, Remove: op.Remove})
			}
		}
		res := QuotaResult{}
		if err != nil {
			res.Code, res.Message = ErrorCode(err), errMessage(err)
		} else if !c.ValidateOnly {
			recs = append(recs, out...)
		}
		reply.Results = append(reply.Results, res)
	}
	return recs, reply, nil
}

// replayClientQuota applies a ClientQuotaRecord (called by Replay).
// Removing a key that is not set is not stale: Kafka answers such an
// alteration with success.
func (im *Image) replayClientQuota(r *ClientQuotaRecord) error {
	key := r.Entity.Key()
	q, ok := im.Quotas[key]
	if r.Remove {
		if ok {
			delete(q.Values, r.Key)
			if len(q.Values) == 0 {
				delete(im.Quotas, key)
			}
		}
		return nil
	}
	if im.Quotas == nil {
		im.Quotas = map[string]*ClientQuota{}
	}
	if !ok {
		q = &ClientQuota{Entity: r.Entity, Values: map[string]float64{}}
		im.Quotas[key] = q
	}
	q.Values[r.Key] = r.Value
	return nil
}

// cloneQuotas deep-copies the image's quotas.
func cloneQuotas(m map[string]*ClientQuota) map[string]*ClientQuota {
	if m == nil {
		return nil
	}
	out := make(map[string]*ClientQuota, len(m))
	for k, q := range m {
		out[k] = &ClientQuota{Entity: q.Entity, Values: maps.Clone(q.Values)}
	}
	return out
}

// QuotaMatch is the quota that applies to a connection for one key: the
// bound, and the tags of the sensor it is measured on (Kafka's metric
// tags): the connection's user when the matched entity has a user
// component, its client id when it has a client component, "" otherwise.
// Connections with equal tags share one measurement.
type QuotaMatch struct {
	Bound           float64
	UserTag, Client string
}

// ResolveQuota returns the quota for key that applies to a connection of
// user (the principal's name; "ANONYMOUS" unauthenticated) with clientID,
// by Kafka's precedence; false when none does.
func (im *Image) ResolveQuota(user, clientID, key string) (QuotaMatch, bool) {
	if len(im.Quotas) == 0 {
		return QuotaMatch{}, false
	}
	u, c := user, clientID
	for _, e := range [...]QuotaEntity{
		{User: &u, Client: &c},
		{User: &u, ClientDefault: true},
		{User: &u},
		{UserDefault: true, Client: &c},
		{UserDefault: true, ClientDefault: true},
		{UserDefault: true},
		{Client: &c},
		{ClientDefault: true},
	} {
		q, ok := im.Quotas[e.Key()]
		if !ok {
			continue
		}
		v, ok := q.Values[key]
		if !ok {
			continue
		}
		m := QuotaMatch{Bound: v}
		if e.HasUser() {
			m.UserTag = user
		}
		if e.HasClient() {
			m.Client = clientID
		}
		return m, true
	}
	return QuotaMatch{}, false
}
