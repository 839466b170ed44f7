package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

const (
	plainJAAS       = `org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="broker-secret" user_broker="broker-secret" user_alice="alice-secret";`
	brokerScramJAAS = `org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="broker-secret";`
)

func scram256(user, pass string) kgo.Opt {
	return kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha256Mechanism())
}

func scram512(user, pass string) kgo.Opt {
	return kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism())
}

func plainAuth(user, pass string) kgo.Opt {
	return kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism())
}

// produceConsume writes n records to topic (acks=all, idempotent) through
// one client and reads them back through another, in order.
func produceConsume(ctx context.Context, t *testing.T, prod, cons *kgo.Client, topic string, n int) {
	t.Helper()
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "%s-%d", topic, i)})
	}
	produced := make(chan error, 1)
	go func() { produced <- prod.ProduceSync(ctx, recs...).FirstErr() }()
	select {
	case err := <-produced:
		if err != nil {
			t.Fatalf("produce to %s: %v", topic, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("produce to %s not acknowledged in 30 s", topic)
	}
	cons.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}})
	for got := 0; got < n; {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("consume %s: %v", topic, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if want := fmt.Sprintf("%s-%d", topic, got); string(r.Value) != want {
				t.Fatalf("%s offset %d: %q, want %q", topic, r.Offset, r.Value, want)
			}
			got++
		})
	}
}

// refused checks that a client with opts is refused with
// SASL_AUTHENTICATION_FAILED.
func refused(ctx context.Context, t *testing.T, seed string, why string, opts ...kgo.Opt) {
	t.Helper()
	refusedWith(ctx, t, kerr.SaslAuthenticationFailed, seed, why, opts...)
}

// refusedWith checks that a client with opts is refused with want.
func refusedWith(ctx context.Context, t *testing.T, want error, seed string, why string, opts ...kgo.Opt) {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seed), kgo.RequestRetries(0), kgo.RetryTimeout(0)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.Ping(ctx); !errors.Is(err, want) {
		t.Fatalf("%s: %v, want %v", why, err, want)
	}
}

// TestSASLListeners: one node with a SASL_PLAINTEXT listener (PLAIN, the
// inter-broker one) and a SASL_SSL one (PLAIN and SCRAM, a credential
// bootstrapped as `sluice init --add-scram` does). Real clients produce
// and consume over both; a SCRAM credential added with
// AlterUserScramCredentials works at once and, deleted, stops working for
// new connections; wrong passwords, unknown users and mechanisms are
// refused and counted in Kafka's authentication metrics.
func TestSASLListeners(t *testing.T) {
	pki := newTestPKI(t)
	sslL := listen(t)
	sslPort := port(sslL)
	sslL.Close() // the node binds it
	tn := startNodeWith(t, t.TempDir(), Options{}, append(pki.settings("none"),
		"listeners=SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:"+sslPort+",CONTROLLER://127.0.0.1:0",
		"advertised.listeners=SASL_PLAINTEXT://127.0.0.1:$KAFKA_PORT,SASL_SSL://127.0.0.1:"+sslPort+",CONTROLLER://127.0.0.1:$CONTROLLER_PORT",
		"inter.broker.listener.name=SASL_PLAINTEXT",
		"sasl.mechanism.inter.broker.protocol=PLAIN",
		"SLUICE_LISTENER_NAME_SASL_PLAINTEXT_SASL_ENABLED_MECHANISMS=PLAIN",
		"SLUICE_LISTENER_NAME_SASL_PLAINTEXT_PLAIN_SASL_JAAS_CONFIG="+plainJAAS,
		"SLUICE_LISTENER_NAME_SASL_SSL_PLAIN_SASL_JAAS_CONFIG="+plainJAAS,
		"bootstrap.scram=SCRAM-SHA-256=[name=admin,password=admin-secret],SCRAM-SHA-512=[name=admin,iterations=8192,password=admin-secret]",
	)...)
	ctx := testCtx(t)
	secure := "127.0.0.1:" + sslPort
	overTLS := func(opts ...kgo.Opt) []kgo.Opt {
		return append([]kgo.Opt{kgo.SeedBrokers(secure), pki.clientTLS(false)}, opts...)
	}

	alice := newClient(t, tn, plainAuth("alice", "alice-secret"))
	createTopic(ctx, t, alice, "sasl-plaintext", 1)
	createTopic(ctx, t, alice, "sasl-ssl", 1)
	produceConsume(ctx, t, alice, newClient(t, tn, plainAuth("alice", "alice-secret")), "sasl-plaintext", 200)
	admin := newClient(t, tn, overTLS(scram512("admin", "admin-secret"))...)
	produceConsume(ctx, t, admin, newClient(t, tn, overTLS(scram256("admin", "admin-secret"))...), "sasl-ssl", 200)

	// A credential added through the Kafka API authenticates at once.
	adm := kadm.NewClient(admin)
	up, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "carol", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "carol-secret"}})
	if err != nil || up.Error() != nil {
		t.Fatalf("add carol: %v %v", err, up.Error())
	}
	carol := newClient(t, tn, overTLS(scram256("carol", "carol-secret"))...)
	if err := carol.Ping(ctx); err != nil {
		t.Fatalf("carol right after her credential was added: %v", err)
	}
	desc, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil || len(desc) != 2 || len(desc["admin"].CredInfos) != 2 || desc["carol"].CredInfos[0].Iterations != 4096 {
		t.Fatalf("describe: %+v %v", desc, err)
	}
	// Deleted: new connections are refused; carol's open one stays, as in Kafka.
	del, err := adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "carol", Mechanism: kadm.ScramSha256}}, nil)
	if err != nil || del.Error() != nil {
		t.Fatalf("delete carol: %v %v", err, del.Error())
	}
	refused(ctx, t, secure, "carol after her credential was deleted", pki.clientTLS(false), scram256("carol", "carol-secret"))
	// Bad input to the admin API gets Kafka's codes, per user (raw, as
	// kadm refuses too few iterations itself).
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{{Name: "nobody", Mechanism: 1}}
	req.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{
		{Name: "dave", Mechanism: 2, Iterations: 100, Salt: []byte("salt"), SaltedPassword: []byte("salted")},
		{Name: "frank", Mechanism: 3, Iterations: 4096, Salt: []byte("salt"), SaltedPassword: []byte("salted")},
	}
	resp, err := req.RequestWith(ctx, admin)
	if err != nil || len(resp.Results) != 3 ||
		resp.Results[0].User != "nobody" || resp.Results[0].ErrorCode != kerr.ResourceNotFound.Code ||
		resp.Results[1].User != "dave" || resp.Results[1].ErrorCode != kerr.UnacceptableCredential.Code || *resp.Results[1].ErrorMessage != "Too few iterations" ||
		resp.Results[2].User != "frank" || resp.Results[2].ErrorCode != kerr.UnsupportedSaslMechanism.Code {
		t.Fatalf("bad alterations: %+v %v", resp, err)
	}

	before := value(t, scrape(t, tn), "kafka_server_socket_server_metrics_failed_authentication_total", "listener=SASL_SSL")
	refused(ctx, t, secure, "a wrong SCRAM password", pki.clientTLS(false), scram256("admin", "nope"))
	refused(ctx, t, secure, "an unknown SCRAM user", pki.clientTLS(false), scram512("mallory", "admin-secret"))
	refused(ctx, t, secure, "a wrong PLAIN password", pki.clientTLS(false), plainAuth("alice", "nope"))
	refusedWith(ctx, t, kerr.UnsupportedSaslMechanism, tn.KafkaAddr(), "SCRAM on the PLAIN-only listener", scram256("admin", "admin-secret"))
	// No SASL at all: franz-go sends Metadata first, and is closed unanswered.
	bare := newClient(t, tn, kgo.RequestRetries(0), kgo.RetryTimeout(0))
	if err := bare.Ping(ctx); err == nil {
		t.Fatal("a client without SASL was served on a SASL listener")
	}
	mfs := scrape(t, tn)
	if got := value(t, mfs, "kafka_server_socket_server_metrics_failed_authentication_total", "listener=SASL_SSL"); got < before+3 {
		t.Fatalf("failed authentications on SASL_SSL: %v, want at least %v", got, before+3)
	}
	if got := value(t, mfs, "kafka_server_socket_server_metrics_failed_authentication_total", "listener=SASL_PLAINTEXT"); got < 2 {
		t.Fatalf("failed authentications on SASL_PLAINTEXT: %v, want 2", got)
	}
	if got := value(t, mfs, "kafka_server_socket_server_metrics_successful_authentication_total", "listener=SASL_SSL"); got < 3 {
		t.Fatalf("successful authentications on SASL_SSL: %v", got)
	}
}

// TestSASLSSLClusterReplicates: three nodes whose only Kafka listener is
// SASL_SSL with SCRAM-SHA-512 for brokers (the broker's credential
// bootstrapped, its password in the listener's JAAS), so replica
// fetchers authenticate over TLS. acks=all with min.insync.replicas=3
// needs both followers to fetch; a credential added on one node works at
// once on every node, and once deleted stops working on every node.
func TestSASLSSLClusterReplicates(t *testing.T) {
	pki := newTestPKI(t)
	nodes := startClusterWith(t, 3, "SASL_SSL", append(pki.settings("none"),
		"sasl.enabled.mechanisms=SCRAM-SHA-512,SCRAM-SHA-256",
		"sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512",
		"SLUICE_LISTENER_NAME_SASL_SSL_SCRAM_SHA_512_SASL_JAAS_CONFIG="+brokerScramJAAS,
		"bootstrap.scram=SCRAM-SHA-512=[name=broker,password=broker-secret],SCRAM-SHA-256=[name=admin,password=admin-secret]",
		"connections.max.reauth.ms=1500",
	)...)
	ctx := testCtx(t)
	admin := func(i int, opts ...kgo.Opt) *kgo.Client {
		return newClient(t, nodes[i], append([]kgo.Opt{pki.clientTLS(false), scram256("admin", "admin-secret")}, opts...)...)
	}
	adm := kadm.NewClient(admin(0))
	three := "3"
	if _, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": &three}, "secure"); err != nil {
		t.Fatal(err)
	}
	produceConsume(ctx, t, admin(1, kgo.RequiredAcks(kgo.AllISRAcks())), admin(2), "secure", 200)
	md, err := adm.Metadata(ctx, "secure")
	if err != nil {
		t.Fatal(err)
	}
	if p := md.Topics["secure"].Partitions[0]; len(p.ISR) != 3 {
		t.Fatalf("ISR %v, want all three replicas", p.ISR)
	}

	// Sessions last 1.5 s: the fetchers (and the clients) re-authenticate
	// on their connections, and replication goes on.
	leader := nodes[md.Topics["secure"].Partitions[0].Leader-1]
	authed := func() int64 { return leader.srv.ConnStats().SASLAuthenticatedBy["SASL_SSL"] }
	before := authed()
	tick := time.NewTicker(50 * time.Millisecond)
	for authed() < before+4 {
		select {
		case <-ctx.Done():
			t.Fatalf("no re-authentications on the leader: %d, then %d", before, authed())
		case <-tick.C:
		}
	}
	tick.Stop()
	prod := admin(0, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("secure"))
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("after re-authentication")}).FirstErr(); err != nil {
		t.Fatalf("acks=all with min.insync.replicas=3 after the sessions ended: %v", err)
	}
	for i, tn := range nodes {
		if n := tn.srv.ConnStats().ExpiredClosed; n != 0 {
			t.Fatalf("node %d closed %d connections whose session expired: the fetchers or clients did not re-authenticate", i+1, n)
		}
	}

	up, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "erin", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "erin-secret"}})
	if err != nil || up.Error() != nil {
		t.Fatalf("add erin: %v %v", err, up.Error())
	}
	for i, tn := range nodes {
		cl := newClient(t, tn, pki.clientTLS(false), scram512("erin", "erin-secret"), kgo.RequestRetries(0))
		if err := cl.Ping(ctx); err != nil {
			t.Fatalf("erin on node %d right after the answer: %v", i+1, err)
		}
	}
	if del, err := adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "erin", Mechanism: kadm.ScramSha512}}, nil); err != nil || del.Error() != nil {
		t.Fatalf("delete erin: %v %v", err, del.Error())
	}
	for i, tn := range nodes {
		refused(ctx, t, tn.KafkaAddr(), fmt.Sprintf("erin on node %d after the delete", i+1), pki.clientTLS(false), scram512("erin", "erin-secret"))
	}
}

// TestKcatSASL: librdkafka (kcat) authenticates with SCRAM-SHA-256 on a
// SASL_PLAINTEXT listener and with PLAIN on a SASL_SSL one, produces and
// consumes; with a wrong password it gets nothing and fails.
func TestKcatSASL(t *testing.T) {
	path := kcatPath(t)
	pki := newTestPKI(t)
	sslL := listen(t)
	sslPort := port(sslL)
	sslL.Close()
	tn := startNodeWith(t, t.TempDir(), Options{}, append(pki.settings("none"),
		"listeners=SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:"+sslPort+",CONTROLLER://127.0.0.1:0",
		"advertised.listeners=SASL_PLAINTEXT://127.0.0.1:$KAFKA_PORT,SASL_SSL://127.0.0.1:"+sslPort+",CONTROLLER://127.0.0.1:$CONTROLLER_PORT",
		"inter.broker.listener.name=SASL_PLAINTEXT",
		"sasl.enabled.mechanisms=SCRAM-SHA-256,PLAIN",
		"sasl.mechanism.inter.broker.protocol=PLAIN",
		"SLUICE_LISTENER_NAME_SASL_PLAINTEXT_PLAIN_SASL_JAAS_CONFIG="+plainJAAS,
		"SLUICE_LISTENER_NAME_SASL_SSL_PLAIN_SASL_JAAS_CONFIG="+plainJAAS,
		"bootstrap.scram=SCRAM-SHA-256=[name=admin,password=admin-secret]",
	)...)
	ctx := testCtx(t)
	createTopic(ctx, t, newClient(t, tn, scram256("admin", "admin-secret")), "kcat-sasl", 1)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"SCRAM-SHA-256 over SASL_PLAINTEXT", []string{"-b", tn.KafkaAddr(), "-X", "security.protocol=SASL_PLAINTEXT",
			"-X", "sasl.mechanism=SCRAM-SHA-256", "-X", "sasl.username=admin", "-X", "sasl.password=admin-secret"}},
		{"PLAIN over SASL_SSL", []string{"-b", "127.0.0.1:" + sslPort, "-X", "security.protocol=SASL_SSL", "-X", "ssl.ca.location=" + pki.truststore,
			"-X", "sasl.mechanism=PLAIN", "-X", "sasl.username=alice", "-X", "sasl.password=alice-secret"}},
	} {
		const n = 100
		var in bytes.Buffer
		for i := range n {
			fmt.Fprintf(&in, "%s-%03d\n", tc.name[:5], i)
		}
		args := append([]string{"-t", "kcat-sasl"}, tc.args...)
		kcat(ctx, t, path, in.Bytes(), append([]string{"-P", "-p", "0", "-X", "acks=all"}, args...)...)
		out := kcat(ctx, t, path, nil, append([]string{"-C", "-p", "0", "-o", "-" + fmt.Sprint(n), "-e", "-q", "-f", "%s\n"}, args...)...)
		lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
		if len(lines) != n || lines[0] != tc.name[:5]+"-000" || lines[n-1] != fmt.Sprintf("%s-%03d", tc.name[:5], n-1) {
			t.Fatalf("%s: consumed %d lines (first %q), want %d", tc.name, len(lines), lines[:min(len(lines), 3)], n)
		}
	}
	// A wrong password: kcat -L fails, having learnt nothing.
	cmd := exec.CommandContext(ctx, path, "-L", "-b", tn.KafkaAddr(), "-m", "5", "-X", "security.protocol=SASL_PLAINTEXT",
		"-X", "sasl.mechanism=SCRAM-SHA-256", "-X", "sasl.username=admin", "-X", "sasl.password=wrong")
	out, err := cmd.CombinedOutput()
	if err == nil || strings.Contains(string(out), "kcat-sasl") || !strings.Contains(string(out), "Authentication failed") {
		t.Fatalf("kcat with a wrong password: %v\n%s", err, out)
	}
}
