package config

import (
	"fmt"
	"strconv"
	"strings"
)

// nodePrincipalKey ties a node's principal to its id.
const nodePrincipalKey = "sluice.node.principal.pattern"

// identityKeys: sluice.node.principal.pattern (Security.NodePrincipal).
var identityKeys = []key{
	{nodePrincipalKey, "", "the principal each node authenticates as, with {id} for its node.id (e.g. User:node-{id}, the CN of its certificate mapped by ssl.principal.mapping.rules, or its SASL user): a replica fetch claiming replica id N, and a controller-port peer saying it is node N, must be authenticated as that principal for N; empty: not checked (any principal with CLUSTER_ACTION, or any super user on the controller port, may claim any node id)", func(c *Config, v string) error {
		v = strings.TrimSpace(v)
		if v == "" {
			c.NodePrincipal = ""
			return nil
		}
		if !strings.HasPrefix(v, "User:") || strings.Count(v, "{id}") != 1 {
			return fmt.Errorf("%q: want User:<name> with {id} once, e.g. User:node-{id}", v)
		}
		c.NodePrincipal = v
		return nil
	}},
}

// NodePrincipalOf is the principal node id must authenticate as
// (sluice.node.principal.pattern), or "" when the pattern is not set.
func (s *Security) NodePrincipalOf(id int32) string {
	if s.NodePrincipal == "" {
		return ""
	}
	return strings.Replace(s.NodePrincipal, "{id}", strconv.Itoa(int(id)), 1)
}
