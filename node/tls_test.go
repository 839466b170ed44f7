package node

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-log/sluice/node/tlstest"
)

// testPKI is a CA, a broker certificate for 127.0.0.1 (keystore and
// truststore files) and a client certificate, written into a directory.
type testPKI struct {
	ca                    *tlstest.CA
	broker, client        tlstest.Cert
	keystore, truststore  string
	clientCert, clientKey string
}

func newTestPKI(t testing.TB) testPKI {
	t.Helper()
	dir := t.TempDir()
	ca, err := tlstest.NewCA("sluice test CA")
	if err != nil {
		t.Fatal(err)
	}
	broker, err := ca.Issue("broker", "127.0.0.1", "localhost")
	if err != nil {
		t.Fatal(err)
	}
	client, err := ca.Issue("client")
	if err != nil {
		t.Fatal(err)
	}
	p := testPKI{ca: ca, broker: broker, client: client,
		keystore: filepath.Join(dir, "broker.pem"), truststore: filepath.Join(dir, "ca.pem"),
		clientCert: filepath.Join(dir, "client.crt"), clientKey: filepath.Join(dir, "client.key")}
	for path, b := range map[string][]byte{p.keystore: broker.KeyStorePEM(), p.truststore: ca.CertPEM, p.clientCert: client.CertPEM, p.clientKey: client.KeyPEM} {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// settings are the node settings of an SSL listener with this PKI.
func (p testPKI) settings(clientAuth string) []string {
	return []string{"ssl.keystore.location=" + p.keystore, "ssl.truststore.location=" + p.truststore, "ssl.client.auth=" + clientAuth}
}

// clientTLS is a client's TLS: trusting the CA, with the client
// certificate when withCert.
func (p testPKI) clientTLS(withCert bool) kgo.Opt {
	cfg := &tls.Config{RootCAs: p.ca.Pool()}
	if withCert {
		cfg.Certificates = []tls.Certificate{p.client.TLS()}
	}
	return kgo.DialTLSConfig(cfg)
}

// TestSSLClusterReplicates: three nodes whose only Kafka listener is SSL
// with ssl.client.auth=required, so replica fetchers dial it with TLS and
// their keystore as client certificate. A topic with RF=3 and
// min.insync.replicas=3 takes acks=all produce (which needs both
// followers to have fetched every record over TLS) and is read back
// through another node; a client without a certificate is refused.
func TestSSLClusterReplicates(t *testing.T) {
	pki := newTestPKI(t)
	nodes := startClusterWith(t, 3, "SSL", pki.settings("required")...)
	ctx := testCtx(t)
	adm := kadm.NewClient(newClient(t, nodes[0], pki.clientTLS(true)))
	three := "3"
	if _, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": &three}, "secure"); err != nil {
		t.Fatal(err)
	}
	prod := newClient(t, nodes[1], pki.clientTLS(true), kgo.DefaultProduceTopic("secure"), kgo.RequiredAcks(kgo.AllISRAcks()))
	const n = 200
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Value: fmt.Appendf(nil, "r%d", i)})
	}
	// An idempotent producer retries sent records forever, ignoring ctx
	// (kgo cannot fail them without a sequence gap): wait with a deadline
	// so a build whose fetchers cannot replicate fails here, not hangs.
	produced := make(chan error, 1)
	go func() { produced <- prod.ProduceSync(ctx, recs...).FirstErr() }()
	select {
	case err := <-produced:
		if err != nil {
			t.Fatalf("acks=all with min.insync.replicas=3 over SSL: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("acks=all with min.insync.replicas=3 over SSL not acknowledged in 30 s: do the replica fetchers reach the SSL listener?")
	}
	md, err := adm.Metadata(ctx, "secure")
	if err != nil {
		t.Fatal(err)
	}
	if p := md.Topics["secure"].Partitions[0]; len(p.ISR) != 3 {
		t.Fatalf("ISR %v, want all three replicas", p.ISR)
	}
	cons := newClient(t, nodes[2], pki.clientTLS(true), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"secure": {0: kgo.NewOffset().AtStart()}}))
	for got := 0; got < n; {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if want := fmt.Sprintf("r%d", got); string(r.Value) != want {
				t.Fatalf("offset %d: %q, want %q", r.Offset, r.Value, want)
			}
			got++
		})
	}
	// No client certificate: refused, and the node says why.
	bare := newClient(t, nodes[0], pki.clientTLS(false), kgo.RequestRetries(0))
	if err := bare.Ping(ctx); err == nil {
		t.Fatal("a client without a certificate was served with ssl.client.auth=required")
	}
	// Under TLS 1.3 the client learns of the refusal from the server's
	// alert, which leaves before the server counts it: wait for the count.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for nodes[0].srv.ConnStats().HandshakeFailed == 0 {
		select {
		case <-ctx.Done():
			t.Fatalf("the refused handshake was not counted: %+v", nodes[0].srv.ConnStats())
		case <-tick.C:
		}
	}
	// A plaintext client on the SSL port: refused too, the node intact.
	before := nodes[0].srv.ConnStats().HandshakeFailed
	plain := newClient(t, nodes[0], kgo.RequestRetries(0))
	if err := plain.Ping(ctx); err == nil {
		t.Fatal("a plaintext client was served on an SSL listener")
	}
	if st := nodes[0].srv.ConnStats(); st.HandshakeFailed <= before {
		t.Fatalf("the plaintext client's refusal was not counted: %+v", st)
	}
	if _, err := adm.Metadata(ctx, "secure"); err != nil {
		t.Fatalf("the TLS client after the refusals: %v", err)
	}
	if v := value(t, scrape(t, nodes[0]), "kafka_server_socket_server_metrics_failed_authentication_total", "listener=SSL"); v < 1 {
		t.Fatalf("failed_authentication_total{listener=SSL} = %v, want the refusal counted", v)
	}
}

// TestKcatSSL: librdkafka (kcat) with -X security.protocol=ssl produces
// and consumes on an SSL listener, verifying the broker against
// ssl.ca.location and presenting its certificate (ssl.client.auth=required).
func TestKcatSSL(t *testing.T) {
	path := kcatPath(t)
	pki := newTestPKI(t)
	tn := startNode(t, t.TempDir(),
		"listeners=SSL://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"advertised.listeners=SSL://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$CONTROLLER_PORT",
		"inter.broker.listener.name=SSL",
		// The inline PEM form (KIP-651), as flags.
		"ssl.keystore.certificate.chain="+string(pki.broker.CertPEM), "ssl.keystore.key="+string(pki.broker.KeyPEM),
		"ssl.truststore.certificates="+string(pki.ca.CertPEM), "ssl.client.auth=required")
	ctx := testCtx(t)
	cl := newClient(t, tn, pki.clientTLS(true))
	createTopic(ctx, t, cl, "kcat-ssl", 1)
	// The private key is never described.
	bcs, err := kadm.NewClient(cl).DescribeBrokerConfigs(ctx, 1)
	if err != nil || len(bcs) != 1 {
		t.Fatalf("broker configs: %v %+v", err, bcs)
	}
	var sawKey bool
	for _, c := range bcs[0].Configs {
		if c.Key == "ssl.keystore.key" {
			sawKey = true
			if c.Value != nil || !c.Sensitive {
				t.Fatalf("ssl.keystore.key described as %+v, want a null sensitive value", c)
			}
		}
	}
	if !sawKey {
		t.Fatal("ssl.keystore.key missing from the broker's configs")
	}
	ssl := []string{"-b", tn.KafkaAddr(), "-t", "kcat-ssl", "-X", "security.protocol=ssl", "-X", "ssl.ca.location=" + pki.truststore,
		"-X", "ssl.certificate.location=" + pki.clientCert, "-X", "ssl.key.location=" + pki.clientKey}
	const n = 500
	var in bytes.Buffer
	for i := range n {
		fmt.Fprintf(&in, "tls-%04d\n", i)
	}
	kcat(ctx, t, path, in.Bytes(), append([]string{"-P", "-p", "0", "-X", "acks=all"}, ssl...)...)
	out := kcat(ctx, t, path, nil, append([]string{"-C", "-p", "0", "-o", "beginning", "-e", "-q", "-f", "%s\n"}, ssl...)...)
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != n || lines[0] != "tls-0000" || lines[n-1] != fmt.Sprintf("tls-%04d", n-1) {
		t.Fatalf("kcat over SSL consumed %d lines (first %q), want %d", len(lines), lines[:min(len(lines), 3)], n)
	}
}
