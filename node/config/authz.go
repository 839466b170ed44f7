package config

import (
	"fmt"
	"strings"

	"github.com/sluice-log/sluice/node/sasl"
)

// StandardAuthorizer is the authorizer.class.name that turns
// authorization on: Kafka's KRaft authorizer, whose rules Sluice
// implements (quorum.Authorizer).
const StandardAuthorizer = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

// authzKeys are the authorization keys and ssl.principal.mapping.rules.
var authzKeys = []key{
	{"authorizer.class.name", "", "authorize every request by the ACLs in the metadata quorum: " + StandardAuthorizer + "; empty: no authorization", func(c *Config, v string) error {
		switch v = strings.TrimSpace(v); v {
		case "":
			c.Authorizer = false
		case StandardAuthorizer:
			c.Authorizer = true
		default:
			return fmt.Errorf("%q is not served: set %s, or nothing for no authorization", v, StandardAuthorizer)
		}
		return nil
	}},
	{"super.users", "", "principals allowed everything, separated by semicolons (User:admin;User:broker)", func(c *Config, v string) error {
		c.SuperUsers = nil
		for p := range strings.SplitSeq(v, ";") {
			if p = strings.TrimSpace(p); p == "" {
				continue
			}
			if typ, name, ok := strings.Cut(p, ":"); !ok || typ == "" || name == "" {
				return fmt.Errorf("%q is not a principal (Type:name, e.g. User:admin)", p)
			}
			c.SuperUsers = append(c.SuperUsers, p)
		}
		return nil
	}},
	{"allow.everyone.if.no.acl.found", "false", "allow a request on a resource that no ACL names (with an authorizer)", func(c *Config, v string) error {
		return parseBool(&c.AllowEveryoneIfNoACLFound, v)
	}},
	{"ssl.principal.mapping.rules", "DEFAULT", "rules from a TLS client certificate's distinguished name to its principal: RULE:pattern/replacement/[L|U],...,DEFAULT (KIP-371)", func(c *Config, v string) (err error) {
		c.PrincipalRules, err = sasl.ParsePrincipalRules(v)
		return err
	}},
}
