package config

import (
	"slices"
	"strings"
	"testing"
)

// TestAuthorizerKeys: Kafka's class name turns authorization on, empty
// leaves it off; super.users and the mapping rules are parsed; mistakes
// are refused at Load, naming the key.
func TestAuthorizerKeys(t *testing.T) {
	c, err := load(t, minimal, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Authorizer || c.AllowEveryoneIfNoACLFound || len(c.SuperUsers) != 0 {
		t.Fatalf("defaults: authorizer %v, allow everyone %v, super users %v", c.Authorizer, c.AllowEveryoneIfNoACLFound, c.SuperUsers)
	}
	if name, err := c.PrincipalRules.Map("CN=x,O=y"); err != nil || name != "CN=x,O=y" {
		t.Fatalf("default mapping: %q %v", name, err)
	}
	c, err = load(t, minimal+"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer\n"+
		"super.users=User:admin; User:broker\nallow.everyone.if.no.acl.found=true\n"+
		"ssl.principal.mapping.rules=RULE:^CN=(.*?),.*$/$1/L,DEFAULT\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Authorizer || !c.AllowEveryoneIfNoACLFound || !slices.Equal(c.SuperUsers, []string{"User:admin", "User:broker"}) {
		t.Fatalf("set: authorizer %v, allow everyone %v, super users %v", c.Authorizer, c.AllowEveryoneIfNoACLFound, c.SuperUsers)
	}
	if name, err := c.PrincipalRules.Map("CN=Alice,O=y"); err != nil || name != "alice" {
		t.Fatalf("mapping: %q %v", name, err)
	}
	for _, tc := range []struct{ name, file, err string }{
		{"zookeeper authorizer", "authorizer.class.name=kafka.security.authorizer.AclAuthorizer\n", "authorizer.class.name"},
		{"super user without type", "super.users=admin\n", "super.users"},
		{"bad rules", "ssl.principal.mapping.rules=RULE:(/x/\n", "ssl.principal.mapping.rules"},
		{"allow everyone", "allow.everyone.if.no.acl.found=maybe\n", "allow.everyone.if.no.acl.found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, minimal+tc.file, nil)
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.err)
			}
		})
	}
}
