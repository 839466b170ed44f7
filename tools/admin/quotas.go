package admin

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
)

// Client quotas, as kafka-configs.sh manages them: `--entity-type users`
// or `clients`, `--entity-name N` or `--entity-default`, and the quota
// keys in --add-config / --delete-config (AlterClientQuotas and
// DescribeClientQuotas, KIP-546). A user's SCRAM credentials and quotas
// can be altered in one command; the user-and-client-id entities that
// Kafka names with two --entity-type flags are reachable through the
// admin API (kadm) but not this command.

// quotaKeys are the quota keys the brokers enforce.
var quotaKeys = []string{"producer_byte_rate", "consumer_byte_rate", "request_percentage"}

func isQuotaKey(item string) bool {
	k, _, _ := strings.Cut(strings.TrimSpace(item), "=")
	return slices.Contains(quotaKeys, k)
}

// splitQuotaItems splits --add-config or --delete-config values into the
// quota items and the rest.
func splitQuotaItems(vals []string) (quota, rest []string) {
	for _, v := range vals {
		var other []string
		for _, item := range splitOutsideBrackets(v) {
			if strings.TrimSpace(item) == "" {
				continue
			}
			if isQuotaKey(item) {
				quota = append(quota, item)
			} else {
				other = append(other, item)
			}
		}
		if len(other) > 0 {
			rest = append(rest, strings.Join(other, ","))
		}
	}
	return quota, rest
}

// quotaEntity is the entity --entity-type/--entity-name/--entity-default
// name.
func (c *configsCmd) quotaEntity() (kadm.ClientQuotaEntity, error) {
	typ := map[string]string{"users": "user", "clients": "client-id"}[c.entityType]
	switch {
	case c.entityDefault && c.entityName != "":
		return nil, fmt.Errorf("give --entity-name or --entity-default, not both")
	case c.entityDefault:
		return kadm.ClientQuotaEntity{{Type: typ}}, nil
	case c.entityName == "":
		return nil, fmt.Errorf("--entity-name: name the %s (or --entity-default)", typ)
	}
	name := c.entityName
	return kadm.ClientQuotaEntity{{Type: typ, Name: &name}}, nil
}

// alterQuotas sets and removes the quota keys of the entity.
func (c *configsCmd) alterQuotas(s session, adds, dels []string) error {
	entity, err := c.quotaEntity()
	if err != nil {
		return err
	}
	sets, err := parseKVs(adds)
	if err != nil {
		return err
	}
	var ops []kadm.AlterClientQuotaOp
	for _, k := range slices.Sorted(maps.Keys(sets)) {
		v, err := strconv.ParseFloat(sets[k], 64)
		if err != nil {
			return fmt.Errorf("--add-config %s=%s: not a number", k, sets[k])
		}
		ops = append(ops, kadm.AlterClientQuotaOp{Key: k, Value: v})
	}
	for _, d := range dels {
		ops = append(ops, kadm.AlterClientQuotaOp{Key: strings.TrimSpace(d), Remove: true})
	}
	res, err := s.adm.AlterClientQuotas(s.ctx, []kadm.AlterClientQuotaEntry{{Entity: entity, Ops: ops}})
	if err != nil {
		return c.unreachable(err)
	}
	for _, r := range res {
		if r.Err != nil {
			return fmt.Errorf("alter quotas of %s: %v%s", r.Entity, r.Err, detail(r.ErrMessage))
		}
	}
	return nil
}

// EntityQuotas is one entity of `sluice configs describe --entity-type
// users|clients` (its quotas).
type EntityQuotas struct {
	Entity string             `json:"entity"`
	Quotas map[string]float64 `json:"quotas"`
}

// describeQuotas lists the quotas of the entity named, or of every entity
// of the type when none is.
func (c *configsCmd) describeQuotas(s session) ([]EntityQuotas, error) {
	typ := map[string]string{"users": "user", "clients": "client-id"}[c.entityType]
	comp := kadm.DescribeClientQuotaComponent{Type: typ, MatchType: 2}
	switch {
	case c.entityDefault:
		comp.MatchType = 1
	case c.entityName != "":
		name := c.entityName
		comp.MatchType, comp.MatchName = 0, &name
	}
	res, err := s.adm.DescribeClientQuotas(s.ctx, true, []kadm.DescribeClientQuotaComponent{comp})
	if err != nil {
		return nil, c.unreachable(err)
	}
	var out []EntityQuotas
	for _, d := range res {
		var parts []string
		for _, c := range d.Entity {
			parts = append(parts, c.String())
		}
		e := EntityQuotas{Entity: strings.Join(parts, ","), Quotas: map[string]float64{}}
		for _, v := range d.Values {
			e.Quotas[v.Key] = v.Value
		}
		out = append(out, e)
	}
	return out, nil
}

// printQuotas prints quotas as kafka-configs.sh does.
func printQuotas(w io.Writer, qs []EntityQuotas) {
	for _, q := range qs {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(q.Quotas)) {
			parts = append(parts, k+"="+strconv.FormatFloat(q.Quotas[k], 'f', -1, 64))
		}
		fmt.Fprintf(w, "Quota configs for %s are %s\n", q.Entity, strings.Join(parts, ", "))
	}
}

// alterPrincipal is `sluice configs alter --entity-type users|clients`:
// the quota keys go to AlterClientQuotas, a user's SCRAM mechanisms to
// AlterUserScramCredentials.
func (c *configsCmd) alterPrincipal(s session, w io.Writer) error {
	qAdd, restAdd := splitQuotaItems(c.add)
	qDel, restDel := splitQuotaItems(c.del)
	if c.entityType == "clients" && len(restAdd)+len(restDel) > 0 {
		return fmt.Errorf("clients have quotas only (%s); got %s", strings.Join(quotaKeys, ", "), strings.Join(append(restAdd, restDel...), ","))
	}
	if len(qAdd)+len(qDel)+len(restAdd)+len(restDel) == 0 {
		return fmt.Errorf("nothing to alter: give --add-config KEY=VALUE or --delete-config KEY (quotas: %s)", strings.Join(quotaKeys, ", "))
	}
	if len(qAdd)+len(qDel) > 0 {
		if err := c.alterQuotas(s, qAdd, qDel); err != nil {
			return err
		}
	}
	if len(restAdd)+len(restDel) > 0 {
		if c.entityDefault {
			return fmt.Errorf("SCRAM credentials belong to a named user: give --entity-name")
		}
		c.add, c.del = restAdd, restDel
		return c.alterUsers(s, w)
	}
	if c.format == "text" {
		name := c.entityName
		if c.entityDefault {
			name = "<default>"
		}
		fmt.Fprintf(w, "Completed updating config for %s %s.\n", strings.TrimSuffix(c.entityType, "s"), name)
	}
	return nil
}
