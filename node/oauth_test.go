package node

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/oauth"

	"github.com/sluice-log/sluice/node/config"
	"github.com/sluice-log/sluice/node/tlstest"
)

// oauthNode starts a node whose only Kafka listener, SASL_PLAINTEXT,
// serves PLAIN (the broker's own) and OAUTHBEARER validated by jwksURL,
// audience kafka, issuer iss.
func oauthNode(t *testing.T, jwksURL, issuer string, extra ...string) *testNode {
	t.Helper()
	return startNodeWith(t, t.TempDir(), Options{}, append([]string{
		"listeners=SASL_PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"advertised.listeners=SASL_PLAINTEXT://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$CONTROLLER_PORT",
		"inter.broker.listener.name=SASL_PLAINTEXT",
		"sasl.mechanism.inter.broker.protocol=PLAIN",
		"SLUICE_LISTENER_NAME_SASL_PLAINTEXT_SASL_ENABLED_MECHANISMS=PLAIN,OAUTHBEARER",
		"SLUICE_LISTENER_NAME_SASL_PLAINTEXT_PLAIN_SASL_JAAS_CONFIG=" + plainJAAS,
		"sasl.oauthbearer.jwks.endpoint.url=" + jwksURL,
		"sasl.oauthbearer.expected.audience=kafka",
		"sasl.oauthbearer.expected.issuer=" + issuer,
		"sasl.oauthbearer.jwks.endpoint.retry.backoff.ms=50",
	}, extra...)...)
}

func bearer(tok string) kgo.Opt { return kgo.SASL(oauth.Auth{Token: tok}.AsMechanism()) }

// TestOAuthBearerJWKS: a node validating OAUTHBEARER tokens against an
// https JWKS endpoint. franz-go produces and consumes with a signed
// token; an expired token, a wrong audience and a signature by a key the
// JWKS lacks are refused with SASL_AUTHENTICATION_FAILED. When the issuer
// rotates in a new key, a token naming its kid makes the broker refetch
// the JWKS at once, and the token is accepted.
func TestOAuthBearerJWKS(t *testing.T) {
	k1, err := tlstest.NewIssuer("k1", "RS256")
	if err != nil {
		t.Fatal(err)
	}
	k2, err := tlstest.NewIssuer("k2", "ES256")
	if err != nil {
		t.Fatal(err)
	}
	var jwks atomic.Pointer[[]byte]
	set := tlstest.JWKS(k1)
	jwks.Store(&set)
	var fetches atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(*jwks.Load())
	}))
	ca, err := tlstest.NewCA("jwks CA")
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.Issue("jwks", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert.TLS()}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	trust := filepath.Join(t.TempDir(), "jwks-ca.pem")
	if err := os.WriteFile(trust, ca.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	tn := oauthNode(t, srv.URL+"/keys", k1.Name, "sluice.sasl.oauthbearer.jwks.endpoint.ssl.truststore.location="+trust)
	ctx := testCtx(t)
	tok := func(i *tlstest.Issuer, sub, aud string, ttl time.Duration) string {
		s, err := i.Token(sub, aud, ttl)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	alice := newClient(t, tn, bearer(tok(k1, "alice", "kafka", time.Hour)))
	createTopic(ctx, t, alice, "oauth", 1)
	produceConsume(ctx, t, alice, newClient(t, tn, bearer(tok(k1, "alice", "kafka", time.Hour))), "oauth", 100)

	refused(ctx, t, tn.KafkaAddr(), "an expired token", bearer(tok(k1, "alice", "kafka", -2*time.Minute)))
	refused(ctx, t, tn.KafkaAddr(), "a token for another audience", bearer(tok(k1, "alice", "elsewhere", time.Hour)))
	forger, _ := tlstest.NewIssuer("k1", "RS256") // k1's kid, another key
	refused(ctx, t, tn.KafkaAddr(), "a token signed by another key", bearer(tok(forger, "alice", "kafka", time.Hour)))
	refused(ctx, t, tn.KafkaAddr(), "a token of a key not yet in the JWKS", bearer(tok(k2, "bob", "kafka", time.Hour)))

	// Rotation: the issuer publishes k2; a k2 token triggers a refetch.
	set = tlstest.JWKS(k1, k2)
	jwks.Store(&set)
	before := fetches.Load()
	deadline := time.Now().Add(30 * time.Second)
	for {
		cl, err := kgo.NewClient(kgo.SeedBrokers(tn.KafkaAddr()), bearer(tok(k2, "bob", "kafka", time.Hour)), kgo.RequestRetries(0), kgo.RetryTimeout(0))
		if err != nil {
			t.Fatal(err)
		}
		err = cl.Ping(ctx)
		cl.Close()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a token of the rotated-in key is still refused: %v", err)
		}
		<-time.After(100 * time.Millisecond) // polling a condition with a deadline
	}
	if fetches.Load() <= before {
		t.Fatal("the JWKS was not refetched for the new kid")
	}
}

// TestOAuthBearerClients: librdkafka through python3-confluent-kafka's
// oauth_cb produces and consumes with a signed token against a file://
// JWKS and is refused with a wrong audience; kcat's unsecured JWT
// (librdkafka's enable.sasl.oauthbearer.unsecure.jwt) is served by a
// listener without a JWKS (Kafka's default unsecured validator) and
// refused by the one with.
func TestOAuthBearerClients(t *testing.T) {
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import confluent_kafka").Run(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("python3-confluent-kafka not installed, and CI is set: .ci/run must install it")
		}
		t.Skip("python3-confluent-kafka not installed (apt-get install python3-confluent-kafka)")
	}
	iss, err := tlstest.NewIssuer("k1", "ES256")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	jwksFile := filepath.Join(dir, "jwks.json")
	if err := os.WriteFile(jwksFile, tlstest.JWKS(iss), 0o600); err != nil {
		t.Fatal(err)
	}
	tn := oauthNode(t, "file://"+jwksFile, iss.Name)
	ctx := testCtx(t)
	script, err := filepath.Abs(filepath.Join("testdata", "oauth", "confluent_kafka_oauth.py"))
	if err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(dir, "token")
	run := func(aud, topic string, n int) (string, string, error) {
		tok, err := iss.Token("carol", aud, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(tokenFile, fmt.Appendf(nil, "%s %d carol", tok, time.Now().Add(time.Hour).Unix()), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(ctx, py, "-u", script, tn.KafkaAddr(), topic, tokenFile, fmt.Sprint(n))
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err = cmd.Run()
		return out.String(), errOut.String(), err
	}
	admin := newClient(t, tn, bearer(func() string { s, _ := iss.Token("admin", "kafka", time.Hour); return s }()))
	createTopic(ctx, t, admin, "oauth-py", 1)
	out, errOut, err := run("kafka", "oauth-py", 50)
	if err != nil {
		t.Fatalf("confluent-kafka with a valid token: %v\n%s", err, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 50 || lines[0] != "py-0" || lines[49] != "py-49" {
		t.Fatalf("confluent-kafka consumed %d lines (%q...)", len(lines), lines[:min(3, len(lines))])
	}
	_, errOut, err = run("elsewhere", "oauth-py", 1)
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 || !strings.Contains(errOut, "AUTH_FAILED") {
		t.Fatalf("confluent-kafka with a wrong audience: %v\n%s", err, errOut)
	}

	// kcat's unsecured JWT: refused here (a JWKS is set), served by a
	// node on Kafka's default.
	path := kcatPath(t)
	unsecured := []string{"-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanism=OAUTHBEARER",
		"-X", "enable.sasl.oauthbearer.unsecure.jwt=true", "-X", "sasl.oauthbearer.config=principal=dave"}
	cmd := exec.CommandContext(ctx, path, append([]string{"-L", "-b", tn.KafkaAddr(), "-m", "5"}, unsecured...)...)
	if b, err := cmd.CombinedOutput(); err == nil || strings.Contains(string(b), "oauth-py") {
		t.Fatalf("kcat's unsecured token against a JWKS listener: %v\n%s", err, b)
	}
	plain := startNodeWith(t, t.TempDir(), Options{},
		"listeners=SASL_PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"advertised.listeners=SASL_PLAINTEXT://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$CONTROLLER_PORT",
		"inter.broker.listener.name=SASL_PLAINTEXT",
		"sasl.mechanism.inter.broker.protocol=PLAIN",
		"SLUICE_LISTENER_NAME_SASL_PLAINTEXT_SASL_ENABLED_MECHANISMS=PLAIN,OAUTHBEARER",
		"SLUICE_LISTENER_NAME_SASL_PLAINTEXT_PLAIN_SASL_JAAS_CONFIG="+plainJAAS)
	createTopic(ctx, t, newClient(t, plain, plainAuth("alice", "alice-secret")), "unsecured", 1)
	args := append([]string{"-t", "unsecured", "-b", plain.KafkaAddr()}, unsecured...)
	kcat(ctx, t, path, []byte("a\nb\nc\n"), append([]string{"-P", "-p", "0", "-X", "acks=all"}, args...)...)
	got := kcat(ctx, t, path, nil, append([]string{"-C", "-p", "0", "-o", "beginning", "-e", "-q", "-f", "%s\n"}, args...)...)
	if string(got) != "a\nb\nc\n" {
		t.Fatalf("kcat over unsecured OAUTHBEARER consumed %q", got)
	}
}

// TestJWKSFileRefused: a file JWKS that does not load is an error at
// start, naming the key; an https one that does not answer is retried.
func TestJWKSFileRefused(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(bad, []byte(`{"keys":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse("file://" + bad)
	o := &config.OAuthBearer{JWKSURL: u, JWKSRefresh: time.Hour, JWKSRetryBackoff: 10 * time.Millisecond}
	_, err := newJWKSKeys(context.Background(), o, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "sasl.oauthbearer.jwks.endpoint.url") || !strings.Contains(err.Error(), "no RSA or EC signature key") {
		t.Fatalf("an empty JWKS file: %v", err)
	}
	u, _ = url.Parse("https://127.0.0.1:1/keys")
	o.JWKSURL = u
	keys, err := newJWKSKeys(context.Background(), o, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("an https JWKS down at start: %v", err)
	}
	if _, err := keys.Key("k", "RS256"); err == nil || !strings.Contains(err.Error(), "no key set loaded") {
		t.Fatalf("a key before the JWKS loaded: %v", err)
	}
}
