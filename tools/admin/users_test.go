package admin

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sluice-log/sluice/node/sasl"
	"github.com/sluice-log/sluice/quorum"
)

// TestUsersSCRAM: on a three-node SASL_PLAINTEXT cluster (SCRAM only,
// an admin bootstrapped as `sluice init --add-scram` writes it), the CLI
// with --command-config adds a user's SCRAM credentials as
// kafka-configs.sh does; they authenticate at once on every broker and
// are described by iterations only; deleted, they are refused on every
// broker. Without --command-config the CLI is refused.
func TestUsersSCRAM(t *testing.T) {
	m, _ := sasl.Scram(sasl.MechanismScramSHA512)
	c, err := m.NewCredential("admin-secret", nil, 4096)
	if err != nil {
		t.Fatal(err)
	}
	const jaas = `org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret";`
	admin := kgo.SASL(scram.Auth{User: "admin", Pass: "admin-secret"}.AsSha512Mechanism())
	nodes, bootstrap := startSecureCluster(t, 3, clusterSecurity{
		listener: "SASL_PLAINTEXT",
		args:     []string{"--sasl.enabled.mechanisms=SCRAM-SHA-512,SCRAM-SHA-256"},
		env:      []string{"SLUICE_LISTENER_NAME_SASL_PLAINTEXT_SCRAM_SHA_512_SASL_JAAS_CONFIG=" + jaas},
		boot: []quorum.ScramCredentialRecord{{User: "admin", Mechanism: quorum.ScramSHA512, Credential: quorum.ScramCredential{
			Salt: c.Salt, StoredKey: c.StoredKey, ServerKey: c.ServerKey, Iterations: int32(c.Iterations)}}},
		clientOpts: []kgo.Opt{admin},
	})
	props := filepath.Join(t.TempDir(), "client.properties")
	if err := os.WriteFile(props, []byte("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config="+jaas+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cc := []string{"--command-config", props}
	out := mustRun(t, bootstrap, append([]string{"configs", "alter", "--entity-type", "users", "--entity-name", "alice",
		"--add-config", "SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=alice-secret]"}, cc...)...)
	if !strings.Contains(out, "Completed updating config for user alice.") {
		t.Fatalf("alter: %s", out)
	}
	ping := func(addr string, opt kgo.Opt) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), opt, kgo.RequestRetries(0), kgo.RetryTimeout(0))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return cl.Ping(ctx)
	}
	alice := kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism())
	for _, n := range nodes {
		if err := ping(n.kafkaAddr, alice); err != nil {
			t.Fatalf("alice on node %d right after the CLI returned: %v", n.cfg.NodeID, err)
		}
	}
	out = mustRun(t, bootstrap, append([]string{"configs", "describe", "--entity-type", "users"}, cc...)...)
	if !strings.Contains(out, "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096") ||
		!strings.Contains(out, "user-principal 'admin' are SCRAM-SHA-512=iterations=4096") || strings.Contains(out, "secret") {
		t.Fatalf("describe: %s", out)
	}
	mustRun(t, bootstrap, append([]string{"configs", "alter", "--entity-type", "users", "--entity-name", "alice", "--delete-config", "SCRAM-SHA-256"}, cc...)...)
	for _, n := range nodes {
		if err := ping(n.kafkaAddr, alice); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("alice's deleted SCRAM-SHA-256 on node %d: %v", n.cfg.NodeID, err)
		}
	}
	if err := ping(nodes[2].kafkaAddr, kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism())); err != nil {
		t.Fatalf("alice's SCRAM-SHA-512, not deleted: %v", err)
	}
	// Kafka's answers to bad alterations, through the CLI.
	if out, err := run(t, bootstrap, append([]string{"configs", "alter", "--entity-type", "users", "--entity-name", "bob", "--delete-config", "SCRAM-SHA-512"}, cc...)...); err == nil || !strings.Contains(err.Error(), "RESOURCE_NOT_FOUND") {
		t.Fatalf("deleting bob's missing credential: %v\n%s", err, out)
	}
	if _, err := run(t, bootstrap, "configs", "describe", "--entity-type", "users", "--timeout", "3s"); err == nil {
		t.Fatal("the CLI without --command-config was served on a SASL listener")
	}

	// Client quotas (KIP-546) as kafka-configs.sh sets them: a user's
	// quota beside its SCRAM credential, a client id's, the defaults.
	mustRun(t, bootstrap, append([]string{"configs", "alter", "--entity-type", "users", "--entity-name", "alice",
		"--add-config", "producer_byte_rate=1048576,SCRAM-SHA-256=[password=alice-secret]"}, cc...)...)
	mustRun(t, bootstrap, append([]string{"configs", "alter", "--entity-type", "clients", "--entity-name", "app", "--add-config", "consumer_byte_rate=2048,request_percentage=25.5"}, cc...)...)
	mustRun(t, bootstrap, append([]string{"configs", "alter", "--entity-type", "clients", "--entity-default", "--add-config", "producer_byte_rate=4096"}, cc...)...)
	out = mustRun(t, bootstrap, append([]string{"configs", "describe", "--entity-type", "users", "--entity-name", "alice"}, cc...)...)
	if !strings.Contains(out, "Quota configs for user=alice are producer_byte_rate=1048576") || !strings.Contains(out, "user-principal 'alice' are SCRAM-SHA-256=iterations=") {
		t.Fatalf("describe alice: %s", out)
	}
	out = mustRun(t, bootstrap, append([]string{"configs", "describe", "--entity-type", "clients"}, cc...)...)
	if !strings.Contains(out, "Quota configs for client-id=app are consumer_byte_rate=2048, request_percentage=25.5") ||
		!strings.Contains(out, "Quota configs for client-id=<default> are producer_byte_rate=4096") {
		t.Fatalf("describe clients: %s", out)
	}
	mustRun(t, bootstrap, append([]string{"configs", "alter", "--entity-type", "clients", "--entity-name", "app", "--delete-config", "consumer_byte_rate,request_percentage"}, cc...)...)
	if out = mustRun(t, bootstrap, append([]string{"configs", "describe", "--entity-type", "clients", "--entity-name", "app"}, cc...)...); strings.Contains(out, "app") {
		t.Fatalf("app's quotas after deleting them: %s", out)
	}
	if out, err := run(t, bootstrap, append([]string{"configs", "alter", "--entity-type", "clients", "--entity-name", "app", "--add-config", "producer_byte_rate=-1"}, cc...)...); err == nil || !strings.Contains(err.Error(), "INVALID_REQUEST") {
		t.Fatalf("a negative quota: %v\n%s", err, out)
	}
}
