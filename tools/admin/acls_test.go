package admin

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// TestACLsCLI: on a SASL_PLAINTEXT node with StandardAuthorizer, the CLI
// (as the super user admin, through --command-config) adds READ on the
// prefix a- for alice as kafka-acls.sh does; alice may then describe
// a-x and not b-x; --list shows the binding (text and JSON); --remove
// takes it away again, and alice is refused.
func TestACLsCLI(t *testing.T) {
	const jaas = `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`
	admin := kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism())
	nodes, bootstrap := startSecureCluster(t, 1, clusterSecurity{
		listener: "SASL_PLAINTEXT",
		args: []string{"--sasl.enabled.mechanisms=PLAIN", "--authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
			"--super.users=User:admin"},
		env:        []string{"SLUICE_LISTENER_NAME_SASL_PLAINTEXT_PLAIN_SASL_JAAS_CONFIG=" + jaas},
		clientOpts: []kgo.Opt{admin},
	})
	props := filepath.Join(t.TempDir(), "client.properties")
	if err := os.WriteFile(props, []byte("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config="+jaas+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cc := []string{"--command-config", props}
	for _, topic := range []string{"a-x", "b-x"} {
		mustRun(t, bootstrap, append([]string{"topics", "create", topic, "--partitions", "1", "--replication-factor", "1"}, cc...)...)
	}
	describe := func(topic string) int16 {
		cl, err := kgo.NewClient(kgo.SeedBrokers(nodes[0].kafkaAddr), kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()), kgo.RequestRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || len(resp.Topics) != 1 {
			t.Fatalf("alice's metadata for %s: %+v %v", topic, resp, err)
		}
		return resp.Topics[0].ErrorCode
	}
	if code := describe("a-x"); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("alice describes a-x without ACLs: %v", kerr.ErrorForCode(code))
	}
	out := mustRun(t, bootstrap, append([]string{"acls", "--add", "--allow-principal", "User:alice", "--operation", "Read",
		"--topic", "a-", "--resource-pattern-type", "prefixed"}, cc...)...)
	if !strings.Contains(out, "Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=a-, patternType=PREFIXED)`") ||
		!strings.Contains(out, "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)") {
		t.Fatalf("add: %s", out)
	}
	if code := describe("a-x"); code != 0 {
		t.Fatalf("alice describes a-x with READ on a-*: %v", kerr.ErrorForCode(code))
	}
	if code := describe("b-x"); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("alice describes b-x with READ on a-*: %v", kerr.ErrorForCode(code))
	}
	acls := decode[[]ACL](t, mustRun(t, bootstrap, append([]string{"acls", "--list", "--format", "json"}, cc...)...))
	want := ACL{ResourceType: "TOPIC", ResourceName: "a-", PatternType: "PREFIXED", Principal: "User:alice", Host: "*", Operation: "READ", Permission: "ALLOW"}
	if len(acls) != 1 || acls[0] != want {
		t.Fatalf("list: %+v, want %+v", acls, want)
	}
	if acls := decode[[]ACL](t, mustRun(t, bootstrap, append([]string{"acls", "--list", "--topic", "a-x", "--resource-pattern-type", "match", "--format", "json"}, cc...)...)); len(acls) != 1 {
		t.Fatalf("list the ACLs that apply to a-x: %+v", acls)
	}
	if acls := decode[[]ACL](t, mustRun(t, bootstrap, append([]string{"acls", "--list", "--principal", "User:bob", "--format", "json"}, cc...)...)); len(acls) != 0 {
		t.Fatalf("list bob's ACLs: %+v", acls)
	}
	out = mustRun(t, bootstrap, append([]string{"acls", "--remove", "--topic", "a-", "--resource-pattern-type", "prefixed"}, cc...)...)
	if !strings.Contains(out, "Removed ACLs for resource") || !strings.Contains(out, "principal=User:alice") {
		t.Fatalf("remove: %s", out)
	}
	if code := describe("a-x"); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("alice describes a-x after the removal: %v", kerr.ErrorForCode(code))
	}
	// Without --command-config the CLI is not even authenticated.
	if _, err := run(t, bootstrap, "acls", "--list"); err == nil {
		t.Fatal("acls --list without credentials succeeded")
	}
	if _, err := run(t, bootstrap, append([]string{"acls", "--add", "--operation", "Read", "--topic", "x"}, cc...)...); err == nil || !strings.Contains(err.Error(), "--allow-principal or --deny-principal") {
		t.Fatalf("add without a principal: %v", err)
	}
}

// TestACLSpec: the flags become Kafka's bindings and filters as
// kafka-acls.sh makes them (every resource × principal × host ×
// operation), and bad flags say what is wrong.
func TestACLSpec(t *testing.T) {
	s := aclSpec{allowPrincipals: []string{"User:alice", "User:bob"}, allowHosts: []string{"10.0.0.1"}, denyPrincipals: []string{"User:eve"},
		operations: []string{"Read", "describe-configs", "READ"}, topics: []string{"t"}, cluster: true, patternType: "literal"}
	bs, err := s.bindings()
	if err != nil {
		t.Fatal(err)
	}
	// 2 resources × (2 allow + 1 deny) × 2 operations.
	if len(bs) != 12 {
		t.Fatalf("%d bindings, want 12", len(bs))
	}
	b := bs[0]
	if b.ResourceType != kmsg.ACLResourceTypeTopic || b.ResourceName != "t" || b.Principal != "User:alice" || b.Host != "10.0.0.1" ||
		b.Operation != kmsg.ACLOperationRead || b.PermissionType != kmsg.ACLPermissionTypeAllow || b.ResourcePatternType != kmsg.ACLResourcePatternTypeLiteral {
		t.Fatalf("first binding %+v", b)
	}
	if last := bs[11]; last.ResourceName != "kafka-cluster" || last.Principal != "User:eve" || last.Host != "*" || last.PermissionType != kmsg.ACLPermissionTypeDeny ||
		last.Operation != kmsg.ACLOperationDescribeConfigs {
		t.Fatalf("last binding %+v", last)
	}
	// --transactional-id, as kafka-acls.sh: a TRANSACTIONAL_ID binding,
	// prefixed when asked.
	tx, err := (&aclSpec{allowPrincipals: []string{"User:alice"}, operations: []string{"Write"}, txnIDs: []string{"tx-"}, patternType: "prefixed"}).bindings()
	if err != nil || len(tx) != 1 || tx[0].ResourceType != kmsg.ACLResourceTypeTransactionalId || tx[0].ResourceName != "tx-" ||
		tx[0].ResourcePatternType != kmsg.ACLResourcePatternTypePrefixed || tx[0].Operation != kmsg.ACLOperationWrite {
		t.Fatalf("--transactional-id tx- --resource-pattern-type prefixed: %+v %v", tx, err)
	}
	fs, err := (&aclSpec{groups: []string{"g"}, patternType: "any"}).filters()
	if err != nil || len(fs) != 1 || fs[0].Principal != nil || fs[0].Operation != kmsg.ACLOperationAny || *fs[0].ResourceName != "g" {
		t.Fatalf("remove all on a group: %+v %v", fs, err)
	}
	for _, bad := range []struct {
		s    aclSpec
		want string
	}{
		{aclSpec{allowPrincipals: []string{"alice"}, operations: []string{"Read"}, topics: []string{"t"}, patternType: "literal"}, "want Type:name"},
		{aclSpec{allowPrincipals: []string{"User:a"}, operations: []string{"Fly"}, topics: []string{"t"}, patternType: "literal"}, "--operation"},
		{aclSpec{allowPrincipals: []string{"User:a"}, operations: []string{"Any"}, topics: []string{"t"}, patternType: "literal"}, "--operation"},
		{aclSpec{allowPrincipals: []string{"User:a"}, operations: []string{"Read"}, patternType: "literal"}, "name a resource"},
		{aclSpec{allowPrincipals: []string{"User:a"}, operations: []string{"Read"}, topics: []string{"t"}, patternType: "match"}, "literal or prefixed"},
		{aclSpec{allowHosts: []string{"h"}, denyPrincipals: []string{"User:a"}, operations: []string{"Read"}, topics: []string{"t"}, patternType: "literal"}, "--allow-host needs"},
		{aclSpec{allowPrincipals: []string{"User:a"}, operations: []string{"Read"}, topics: []string{""}, patternType: "literal"}, "must not be empty"},
	} {
		if _, err := bad.s.bindings(); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%+v: %v, want %q", bad.s, err, bad.want)
		}
	}
}

// FuzzACLSpec: no combination of flag values crashes the spec, and
// every binding it makes is concrete (no ANY, no empty names).
func FuzzACLSpec(f *testing.F) {
	f.Add("User:alice", "*", "Read", "a-", "prefixed")
	f.Add("User:*", "10.0.0.1", "All", "*", "literal")
	f.Fuzz(func(t *testing.T, principal, host, op, topic, pattern string) {
		s := aclSpec{allowPrincipals: []string{principal}, allowHosts: []string{host}, operations: []string{op}, topics: []string{topic}, patternType: pattern}
		bs, err := s.bindings()
		if err != nil {
			return
		}
		for _, b := range bs {
			if b.ResourceName == "" || b.Operation <= kmsg.ACLOperationAny || b.PermissionType != kmsg.ACLPermissionTypeAllow ||
				b.ResourcePatternType != kmsg.ACLResourcePatternTypeLiteral && b.ResourcePatternType != kmsg.ACLResourcePatternTypePrefixed {
				t.Fatalf("binding %+v from %q %q %q %q %q", b, principal, host, op, topic, pattern)
			}
		}
		if _, err := s.filters(); err != nil {
			t.Fatalf("bindings made but filters refused: %v", err)
		}
	})
}
