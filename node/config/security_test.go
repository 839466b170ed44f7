package config

import (
	"bytes"
	"crypto/tls"
	"encoding/base64"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-log/sluice/node/tlstest"
)

// TestControllerSSL: CONTROLLER mapped to SSL takes the ssl.* keys (with
// listener.name.controller.ssl.* overrides) and always requires client
// certificates; controller.listener.names=CONTROLLER, Kafka's KRaft
// setting, is accepted.
func TestControllerSSL(t *testing.T) {
	dir, ca, _ := certs(t)
	c, err := load(t, minimal+sslListeners+"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,CONTROLLER:SSL\n"+
		"controller.listener.names=CONTROLLER\nlistener.name.controller.ssl.keystore.location="+dir+"/broker.pem\n"+
		"listener.name.controller.ssl.truststore.location="+dir+"/ca.pem\n"+
		"ssl.keystore.location="+dir+"/broker.pem\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	ct := c.TLS[ListenerController]
	if ct == nil {
		t.Fatalf("no CONTROLLER TLS in %v", c.TLS)
	}
	if ct.ClientAuth != "required" || ct.Server.ClientAuth != tls.RequireAndVerifyClientCert {
		t.Fatalf("CONTROLLER client auth %q/%v, want required (mutual TLS) though ssl.client.auth is none", ct.ClientAuth, ct.Server.ClientAuth)
	}
	if c.TLS["SSL"].ClientAuth != "none" {
		t.Fatalf("the SSL listener's client auth became %q", c.TLS["SSL"].ClientAuth)
	}
	if !ct.Trusted().Equal(ca.Pool()) || len(ct.ClientFor("127.0.0.1:9093").Certificates) != 1 {
		t.Fatal("the controller's client side does not trust the CA or present the keystore")
	}
}

// TestGossipKeys: base64 keys of 16, 24 or 32 bytes, the first primary;
// anything else is refused with how to make one, and the keys are never
// described.
func TestGossipKeys(t *testing.T) {
	k16, k32 := bytes.Repeat([]byte{1}, 16), bytes.Repeat([]byte{2}, 32)
	enc := base64.StdEncoding.EncodeToString
	c, err := load(t, minimal+"sluice.gossip.encryption.keys="+enc(k32)+", "+enc(k16)+"\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.GossipKeys) != 2 || !bytes.Equal(c.GossipKeys[0], k32) || !bytes.Equal(c.GossipKeys[1], k16) {
		t.Fatalf("keys %x", c.GossipKeys)
	}
	if c.Values["sluice.gossip.encryption.keys"] != "" || !Sensitive("sluice.gossip.encryption.keys") {
		t.Fatal("the gossip keys are described")
	}
	for _, tc := range []struct{ v, err string }{
		{"not base64!", "key 1 is not base64"},
		{enc(k16) + "," + enc([]byte("short")), "key 2 has 5 bytes: want 16, 24 or 32"},
	} {
		if _, err := load(t, minimal+"sluice.gossip.encryption.keys="+tc.v+"\n", nil); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%q: %v, want %q", tc.v, err, tc.err)
		}
	}
}

// TestTLSReload: replacing the keystore file makes the next handshake
// present the new certificate while a connection made before goes on
// with the old one; a half-written file is an error and changes nothing;
// an unchanged file is no reload.
func TestTLSReload(t *testing.T) {
	dir, ca, _ := certs(t)
	c, err := load(t, minimal+sslListeners+"ssl.keystore.location="+dir+"/broker.pem\nssl.truststore.location="+dir+"/ca.pem\nsluice.ssl.reload.interval.ms=0\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.TLSReloadInterval != 0 {
		t.Fatalf("reload interval %v", c.TLSReloadInterval)
	}
	lt := c.TLS["SSL"]
	ln, err := tls.Listen("tcp", "127.0.0.1:0", lt.Server)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // an echo server
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer nc.Close()
				buf := make([]byte, 64)
				for {
					n, err := nc.Read(buf)
					if err != nil {
						return
					}
					if _, err := nc.Write(buf[:n]); err != nil {
						return
					}
				}
			}()
		}
	}()
	dial := func() (*tls.Conn, string) {
		t.Helper()
		d := &net.Dialer{Timeout: 10 * time.Second}
		conn, err := tls.DialWithDialer(d, "tcp", ln.Addr().String(), &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		return conn, conn.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	echo := func(conn *tls.Conn) {
		t.Helper()
		if _, err := conn.Write([]byte("ping")); err != nil {
			t.Fatalf("old connection after the reload: %v", err)
		}
		buf := make([]byte, 4)
		if _, err := conn.Read(buf); err != nil || string(buf) != "ping" {
			t.Fatalf("old connection after the reload: %q, %v", buf, err)
		}
	}
	old, cn := dial()
	if cn != "broker" {
		t.Fatalf("first certificate %q", cn)
	}
	// Session tickets: a second connection resumes the first's session.
	cache := tls.NewLRUClientSessionCache(4)
	resumed := func() bool {
		t.Helper()
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", ln.Addr().String(),
			&tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1", ClientSessionCache: cache})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		echo(conn) // reads the ticket the server sends after the handshake
		return conn.ConnectionState().DidResume
	}
	resumed()
	if !resumed() {
		t.Fatal("a second connection did not resume the session")
	}
	if changed, err := c.ReloadTLS(); err != nil || len(changed) != 0 {
		t.Fatalf("reload of unchanged files: %v, %v", changed, err)
	}
	renewed, err := ca.Issue("broker-renewed", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	ks := filepath.Join(dir, "broker.pem")
	if err := os.WriteFile(ks, renewed.CertPEM, 0o600); err != nil { // half written: no key yet
		t.Fatal(err)
	}
	if changed, err := c.ReloadTLS(); err == nil || len(changed) != 0 || !strings.Contains(err.Error(), "no PEM private key") {
		t.Fatalf("reload of a half-written keystore: %v, %v", changed, err)
	}
	if _, cn := dial(); cn != "broker" {
		t.Fatalf("after a failed reload the listener presents %q", cn)
	}
	if err := os.WriteFile(ks, renewed.KeyStorePEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	if changed, err := c.ReloadTLS(); err != nil || len(changed) != 1 || changed[0] != "SSL" {
		t.Fatalf("reload: %v, %v", changed, err)
	}
	if _, cn := dial(); cn != "broker-renewed" {
		t.Fatalf("a new handshake after the reload presents %q, want broker-renewed", cn)
	}
	if resumed() {
		t.Fatal("a session ticket from before the reload resumed after it")
	}
	if lt.Leaf().Subject.CommonName != "broker-renewed" {
		t.Fatalf("Leaf %q", lt.Leaf().Subject.CommonName)
	}
	echo(old)
	if got := old.ConnectionState().PeerCertificates[0].Subject.CommonName; got != "broker" {
		t.Fatalf("the old connection's certificate %q", got)
	}

	// A new CA in the truststore: clients it signs are then trusted.
	other, err := tlstest.NewCA("other CA")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.pem"), append(append([]byte{}, ca.CertPEM...), other.CertPEM...), 0o600); err != nil {
		t.Fatal(err)
	}
	if changed, err := c.ReloadTLS(); err != nil || len(changed) != 1 {
		t.Fatalf("truststore reload: %v, %v", changed, err)
	}
	both := ca.Pool()
	both.AppendCertsFromPEM(other.CertPEM)
	if !lt.Trusted().Equal(both) {
		t.Fatal("the truststore does not hold both CAs after the reload")
	}
}

// FuzzGossipKeys: sluice.gossip.encryption.keys either fails with an
// error or yields only keys memberlist takes (16, 24 or 32 bytes).
func FuzzGossipKeys(f *testing.F) {
	f.Add(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32)))
	f.Add("AAAAAAAAAAAAAAAAAAAAAA==,  ,BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB")
	f.Add("not base64!,")
	i := slices.IndexFunc(securityKeys, func(k key) bool { return k.name == gossipKeysKey })
	parse := securityKeys[i].parse
	f.Fuzz(func(t *testing.T, v string) {
		var c Config
		if err := parse(&c, v); err != nil {
			return
		}
		for _, k := range c.GossipKeys {
			if n := len(k); n != 16 && n != 24 && n != 32 {
				t.Fatalf("%q gave a key of %d bytes", v, n)
			}
		}
	})
}
