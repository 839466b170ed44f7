package config

import (
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-log/sluice/node/tlstest"
)

// certs writes a CA, a broker keystore (key + chain) and the CA as
// truststore into a temporary directory.
func certs(t *testing.T) (dir string, ca *tlstest.CA, srv tlstest.Cert) {
	t.Helper()
	dir = t.TempDir()
	ca, err := tlstest.NewCA("test CA")
	if err != nil {
		t.Fatal(err)
	}
	if srv, err = ca.Issue("broker", "127.0.0.1", "localhost"); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"broker.pem": srv.KeyStorePEM(), "ca.pem": ca.CertPEM, "cert.pem": srv.CertPEM, "key.pem": srv.KeyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir, ca, srv
}

const sslListeners = "listeners=PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9094,CONTROLLER://127.0.0.1:9093\n"

// continued writes PEM as a properties value over continuation lines, as
// Kafka's docs do.
func continued(pem []byte) string {
	return strings.ReplaceAll(strings.TrimSpace(string(pem)), "\n", " \\\n    ")
}

// TestSSLListenerConfig: the PEM forms of KIP-651 build a listener's TLS,
// per-listener overrides win over the ssl.* keys, and secrets are never
// described.
func TestSSLListenerConfig(t *testing.T) {
	dir, ca, srv := certs(t)
	check := func(t *testing.T, c *Config, auth tls.ClientAuthType) {
		t.Helper()
		lt := c.TLS["SSL"]
		if lt == nil || len(c.TLS) != 1 {
			t.Fatalf("TLS = %v, want the SSL listener's only", c.TLS)
		}
		if lt.Server.ClientAuth != auth || lt.Leaf().Subject.CommonName != "broker" {
			t.Fatalf("server TLS: auth %v, certificate %s", lt.Server.ClientAuth, lt.Leaf().Subject)
		}
		if lt.Server.MinVersion != tls.VersionTLS12 || lt.Server.MaxVersion != tls.VersionTLS13 {
			t.Fatalf("versions %x-%x, want TLS 1.2 to 1.3", lt.Server.MinVersion, lt.Server.MaxVersion)
		}
		if got := lt.ClientFor("127.0.0.1:9094").ServerName; got != "127.0.0.1" {
			t.Fatalf("ClientFor server name %q", got)
		}
	}
	t.Run("location", func(t *testing.T) {
		c, err := load(t, minimal+sslListeners+"ssl.keystore.location="+dir+"/broker.pem\nssl.truststore.location="+dir+"/ca.pem\nssl.client.auth=required\n", nil)
		if err != nil {
			t.Fatal(err)
		}
		check(t, c, tls.RequireAndVerifyClientCert)
		if c.TLS["SSL"].ClientFor("127.0.0.1:9094").RootCAs == nil || !c.TLS["SSL"].ClientFor("127.0.0.1:9094").RootCAs.Equal(ca.Pool()) {
			t.Fatal("the client config does not trust the truststore's CA")
		}
	})
	t.Run("inline with continuations", func(t *testing.T) {
		file := minimal + sslListeners +
			"ssl.keystore.certificate.chain=" + continued(srv.CertPEM) + "\n" +
			"ssl.keystore.key=" + continued(srv.KeyPEM) + "\n" +
			"ssl.truststore.certificates=" + continued(ca.CertPEM) + "\n" +
			"ssl.client.auth=requested\n"
		c, err := load(t, file, nil)
		if err != nil {
			t.Fatal(err)
		}
		check(t, c, tls.VerifyClientCertIfGiven)
		if c.Values["ssl.keystore.key"] != "" || !Sensitive("ssl.keystore.key") || Sensitive("ssl.keystore.location") {
			t.Fatal("the private key is described, or sensitivity is wrong")
		}
	})
	t.Run("listener override", func(t *testing.T) {
		// The global keystore is broken; the SSL listener's own wins.
		c, err := load(t, minimal+sslListeners+"ssl.keystore.location=/nonexistent.pem\nlistener.name.ssl.ssl.keystore.location="+dir+"/broker.pem\n", nil)
		if err != nil {
			t.Fatal(err)
		}
		check(t, c, tls.NoClientCert)
	})
	t.Run("env override", func(t *testing.T) {
		c, err := load(t, minimal+sslListeners, []string{
			"SLUICE_LISTENER_NAME_SSL_SSL_KEYSTORE_CERTIFICATE_CHAIN=" + string(srv.CertPEM),
			"SLUICE_LISTENER_NAME_SSL_SSL_KEYSTORE_KEY=" + string(srv.KeyPEM),
		})
		if err != nil {
			t.Fatal(err)
		}
		check(t, c, tls.NoClientCert)
	})
}

// TestSSLConfigErrors: each mistake is refused with an error that names
// the key and says what to do.
func TestSSLConfigErrors(t *testing.T) {
	dir, _, srv := certs(t)
	other, err := tlstest.NewCA("other")
	if err != nil {
		t.Fatal(err)
	}
	otherCert, err := other.Issue("x", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	mismatched := filepath.Join(dir, "mismatch.pem")
	if err := os.WriteFile(mismatched, append(append([]byte{}, otherCert.KeyPEM...), srv.CertPEM...), 0o600); err != nil {
		t.Fatal(err)
	}
	ks := "ssl.keystore.location=" + dir + "/broker.pem\n"
	for _, tc := range []struct{ name, file, err string }{
		{"no keystore", sslListeners, "an SSL listener needs a certificate: set ssl.keystore.location"},
		{"jks", sslListeners + ks + "ssl.keystore.type=JKS\n", "JKS and PKCS12 are not supported yet"},
		{"pkcs12 truststore", sslListeners + ks + "ssl.truststore.type=PKCS12\n", "ssl.truststore.type: \"PKCS12\" is not supported yet"},
		{"keystore password", sslListeners + ks + "ssl.keystore.password=secret\n", "PEM stores take no password: remove it"},
		{"key password", sslListeners + ks + "ssl.key.password=secret\n", "encrypted private keys are not supported yet: decrypt the key"},
		{"missing file", sslListeners + "ssl.keystore.location=" + dir + "/nope.pem\n", "ssl.keystore.location: open"},
		{"certificate without key", sslListeners + "ssl.keystore.location=" + dir + "/cert.pem\n", "no PEM private key found"},
		{"key without certificate", sslListeners + "ssl.keystore.location=" + dir + "/key.pem\n", "no PEM certificate found"},
		{"chain without key", sslListeners + "ssl.keystore.certificate.chain=" + continued(srv.CertPEM) + "\n", "ssl.keystore.certificate.chain and ssl.keystore.key go together"},
		{"both forms", sslListeners + ks + "ssl.keystore.key=" + continued(srv.KeyPEM) + "\n", "set either ssl.keystore.location or"},
		{"bad base64", sslListeners + "ssl.keystore.certificate.chain=-----BEGIN CERTIFICATE----- !!!! -----END CERTIFICATE-----\nssl.keystore.key=" + continued(srv.KeyPEM) + "\n", "bad base64"},
		{"mismatched key", sslListeners + "ssl.keystore.location=" + mismatched + "\n", "the private key does not match the first certificate"},
		{"required without truststore", sslListeners + ks + "ssl.client.auth=required\n", "set ssl.truststore.location or ssl.truststore.certificates"},
		{"bad client auth", sslListeners + ks + "ssl.client.auth=always\n", "want none, requested or required"},
		{"old protocol", sslListeners + ks + "ssl.enabled.protocols=TLSv1.1\n", "TLSv1.2 and TLSv1.3"},
		{"bad cipher", sslListeners + ks + "ssl.cipher.suites=TLS_RSA_WITH_RC4_128_SHA\n", "not a cipher suite Go offers as secure"},
		{"bad truststore", sslListeners + ks + "ssl.truststore.certificates=hello\n", "ssl.truststore.certificates: no PEM certificate found"},
		{"override of a plaintext listener", sslListeners + ks + "listener.name.plaintext.ssl.keystore.location=/x\n", "PLAINTEXT is not a Kafka listener mapped to SSL"},
		{"sasl without keystore", "listeners=SASL_SSL://127.0.0.1:9094,CONTROLLER://127.0.0.1:9093\ninter.broker.listener.name=SASL_SSL\nsasl.enabled.mechanisms=SCRAM-SHA-256\nlistener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"b\" password=\"p\";\n", "an SSL listener needs a certificate"},
		{"controller ssl without truststore", sslListeners + ks + "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,CONTROLLER:SSL\n", "listener CONTROLLER (SSL): ssl.client.auth: required verifies client certificates against the truststore"},
		{"controller ssl without client auth", sslListeners + ks + "ssl.truststore.location=" + dir + "/ca.pem\nlistener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,CONTROLLER:SSL\nlistener.name.controller.ssl.client.auth=none\n", "the CONTROLLER listener always requires client certificates"},
		{"controller sasl", sslListeners + ks + "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,CONTROLLER:SASL_SSL\n", "the CONTROLLER listener speaks PLAINTEXT or SSL"},
		{"gossip ssl", "listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093,GOSSIP://127.0.0.1:7946\nlistener.security.protocol.map=PLAINTEXT:PLAINTEXT,GOSSIP:SSL\n", "encrypt gossip with sluice.gossip.encryption.keys"},
		{"http sasl", "listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093,HTTP://127.0.0.1:9644\nlistener.security.protocol.map=PLAINTEXT:PLAINTEXT,HTTP:SASL_SSL\n", "the HTTP listener speaks PLAINTEXT or SSL (HTTPS"},
		{"http ssl without keystore", "listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093,HTTP://127.0.0.1:9644\nlistener.security.protocol.map=PLAINTEXT:PLAINTEXT,HTTP:SSL\n", "listener HTTP (SSL): ssl.keystore.location: an SSL listener needs a certificate"},
		{"controller listener name", sslListeners + ks + "controller.listener.names=CTRL\n", "Sluice's controller listener is named CONTROLLER"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, minimal+tc.file, nil)
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.err)
			}
		})
	}
}

// FuzzPEM: the PEM reader never panics, and what it accepts as a key
// pair has a certificate and a key.
func FuzzPEM(f *testing.F) {
	ca, err := tlstest.NewCA("fuzz")
	if err != nil {
		f.Fatal(err)
	}
	c, err := ca.Issue("x", "127.0.0.1")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(c.KeyStorePEM())
	f.Add([]byte(continued(c.KeyStorePEM())))
	f.Add([]byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END CERTIFICATE-----"))
	f.Fuzz(func(t *testing.T, b []byte) {
		cert, err := parseKeyPair(b, b)
		if err == nil && (cert.PrivateKey == nil || len(cert.Certificate) == 0) {
			t.Fatal("a key pair without key or certificate was accepted")
		}
		_, _ = parseCertificates(b)
	})
}

// handshake runs a TLS handshake between client and a server presenting
// cert, over loopback TCP, and returns the client's error.
func handshake(t *testing.T, client *tls.Config, cert tlstest.Cert) error {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert.TLS()}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			_ = c.(*tls.Conn).Handshake()
			_ = c.Close()
		}
	}()
	nc, err := net.DialTimeout("tcp", ln.Addr().String(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	return tls.Client(nc, client).Handshake()
}

// TestEndpointIdentification: the client side an SSL inter-broker
// listener gives replica fetchers checks the leader's chain against the
// truststore and, with ssl.endpoint.identification.algorithm=https (the
// default), its name; with it empty, the chain only — a certificate from
// another CA is refused either way.
func TestEndpointIdentification(t *testing.T) {
	dir, ca, _ := certs(t)
	otherName, err := ca.Issue("elsewhere", "10.9.9.9")
	if err != nil {
		t.Fatal(err)
	}
	right, err := ca.Issue("broker", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := tlstest.NewCA("stranger")
	if err != nil {
		t.Fatal(err)
	}
	forged, err := stranger.Issue("broker", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	base := minimal + sslListeners + "ssl.keystore.location=" + dir + "/broker.pem\nssl.truststore.location=" + dir + "/ca.pem\n"
	for _, tc := range []struct {
		algo                     string
		right, otherName, forged bool // handshake succeeds
	}{
		{"https", true, false, false},
		{"", true, true, false},
	} {
		c, err := load(t, base+"ssl.endpoint.identification.algorithm="+tc.algo+"\n", nil)
		if err != nil {
			t.Fatal(err)
		}
		client := c.TLS["SSL"].ClientFor("127.0.0.1:9094")
		for _, h := range []struct {
			name string
			cert tlstest.Cert
			ok   bool
		}{{"right", right, tc.right}, {"other name", otherName, tc.otherName}, {"other CA", forged, tc.forged}} {
			if err := handshake(t, client, h.cert); (err == nil) != h.ok {
				t.Errorf("algorithm %q, %s certificate: handshake error %v, want success %v", tc.algo, h.name, err, h.ok)
			}
		}
	}
}
